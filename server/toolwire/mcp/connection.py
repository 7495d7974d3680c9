"""One running MCP server: the SDK's client session over stdio or streamable HTTP, its
tools, its calls, cancellation, crash and restart.

A connection runs one long-lived task (the SDK's async context managers are entered and left
in one task): it opens the transport and a ``ClientSession``, does the ``initialize``
handshake, lists the tools (every page), is ``ready``, and then serves until it is stopped or
the server goes away. Calls from other tasks go through the session. Within the start timeout
it is ready or ``failed`` with one sentence saying why (``command not found: x``, ``exited
during start (code 1)``, ``did not start within 30 s``, ``http://host/mcp answered HTTP 401
Unauthorized``), secrets removed. A server that exits later is ``failed`` with ``exited (code
N)``; its running calls raise :class:`McpCallError` (``mcp_server_exited``) at once, and
:meth:`McpConnection.restart_if_due` starts it again after a backoff of 1 s, doubling to 60 s.
``notifications/tools/list_changed`` has the tools listed again: from the moment the
notification is read off the transport (before any answer read after it) the connection has a
re-list pending (:attr:`McpConnection.relisting`) until that ``tools/list`` is answered, fails
or the server goes away (:meth:`McpConnection.wait_relisted`), so the request a session makes
after a call that changed the list can offer the new tools.

Cancelling the task awaiting :meth:`McpConnection.call` cancels the request: the SDK's
dispatcher sends ``notifications/cancelled`` for it (shielded, bounded) and the caller returns
at once, whether the server stops the work or not.

A stdio server gets the SDK's default environment (``HOME``, ``PATH``, ``SHELL``, ``TERM``,
``USER``, ``LOGNAME``) plus its ``env``: Toolwire's own secrets are not passed on.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import anyio
import httpx2
import mcp_types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

import toolwire
from toolwire.mcp import process as proc
from toolwire.mcp.config import HttpServerConfig, StdioServerConfig
from toolwire.mcp.failures import RunEnd, reason
from toolwire.mcp.status import ServerState
from toolwire.redaction import Redactor, shared
from toolwire.workspace.errors import ToolError

if TYPE_CHECKING:
    from toolwire.mcp.config import ServerSpec

__all__ = ["McpCallError", "McpConnection", "Change", "FIRST_BACKOFF", "MAX_BACKOFF", "STOP_GRACE"]

_LOG = logging.getLogger(__name__)
_CLIENT = mcp_types.Implementation(name="toolwire", version=toolwire.__version__)

#: Seconds before the first restart of a failed server; each failure in a row doubles it.
FIRST_BACKOFF = 1.0
#: The longest wait between restarts, in seconds.
MAX_BACKOFF = 60.0
#: Seconds a ready server has to be stopped the SDK's way before its task is cancelled.
STOP_GRACE = 10.0
#: The SDK's HTTP timeouts (seconds): 30 to connect, write or get a connection, 300 between reads
#: (a server may hold a response stream open).
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
#: How long a call that lost its HTTP connection waits for a ping telling whether the server is there.
_PING_TIMEOUT = 5.0
#: A server listing more pages than this is taken as looping its cursors.
_MAX_PAGES = 1000
_MAX_REASON = 300
_LIST_CHANGED = "notifications/tools/list_changed"

#: What changed, as a connection tells its listeners: its state (and error), or its tools.
Change = Literal["state", "tools"]


class McpCallError(ToolError):
    """A ``tools/call`` that got no result (a tool failure: the call's result says it).

    Attributes:
        code: ``mcp_server_exited`` (the server exited, lost its connection or was stopped
            during the call), ``mcp_server_unavailable`` (not ready: the call was not sent),
            ``mcp_error`` (a JSON-RPC error answer, or an answer the SDK refused: its message),
            or ``timeout`` (no answer within the call's timeout: the request was cancelled).
        message: One sentence for the model, secrets removed.
    """


@dataclass(eq=False)
class _Run:
    """One start of the server, from the spawn to the end of its task."""

    gone: anyio.Event = field(default_factory=anyio.Event)  # the server went away (or, stopping, is let go)
    started: anyio.Event = field(default_factory=anyio.Event)  # ready, or the task ended
    done: anyio.Event = field(default_factory=anyio.Event)  # the task ended
    relist: anyio.Event = field(default_factory=anyio.Event)  # a list_changed not listed yet
    relisted: anyio.Event | None = None  # set when the pending re-list ends; None when none is pending
    scope: anyio.CancelScope | None = None
    stopping: bool = False
    broke: bool = False  # the start raised while the server was there (it exits in the teardown)
    step: str = "initialize"  # the request of the start under way: initialize, then tools/list
    ready: bool = False
    failed: bool = False
    session: ClientSession | None = None
    process: Any = None
    returncode: int | None = None
    http_error: str | None = None
    stderr: proc.StderrTail | None = None

    def list_changed(self) -> None:
        """A ``notifications/tools/list_changed`` arrived: a re-list is pending until it is listed."""
        if self.relisted is None:
            self.relisted = anyio.Event()
        self.relist.set()

    def relist_ended(self) -> None:
        """The pending re-list ended (listed, failed, or the run is over): release its waiters."""
        ended, self.relisted = self.relisted, None
        if ended is not None:
            ended.set()


class McpConnection:
    """One configured server, running (or failed, or stopped), shared by sessions with its ``key``.

    Attributes:
        name: The server's name as configured.
        spec: What runs (see :class:`toolwire.mcp.config.ServerSpec`).
        state: ``starting``, ``ready``, ``failed`` or ``stopped``.
        error: Why it failed (one sentence, secrets removed), None unless ``failed``.
        tools: The tools it lists, in its order (every page; a repeated name kept once);
            empty unless ready. The allowlist is the session's business.
        revision: Grows by one whenever :attr:`tools` or :attr:`state` change.
    """

    def __init__(self, spec: ServerSpec, *, start_timeout: float, redactor: Redactor | None = None) -> None:
        self.name = spec.name
        self.spec = spec
        self.state: ServerState = "stopped"
        self.error: str | None = None
        self.tools: tuple[mcp_types.Tool, ...] = ()
        self.revision = 0
        self._start_timeout = start_timeout
        self._redactor = redactor or shared()
        self._listeners: list[Callable[[McpConnection, Change], None]] = []
        self._run: _Run | None = None
        self._task: asyncio.Task[None] | None = None  # held: the loop keeps tasks by weak reference only
        self._failures = 0
        self._retry_at = 0.0
        self._was_ready = False
        self._tail = ""

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the server in the background (``starting``); nothing when it is starting or ready."""
        if self._run is not None and not self._run.done.is_set():
            return
        run = _Run()
        self._run = run
        self._set_state("starting", None)
        self._task = asyncio.get_running_loop().create_task(self._serve(run), name=f"mcp server {self.name}")

    def restart_if_due(self) -> bool:
        """Start a ``failed`` server again once its backoff has passed (and the failed start
        is torn down); True when started."""
        run = self._run
        if self.state != "failed" or time.monotonic() < self._retry_at or (run is not None and not run.done.is_set()):
            return False
        self.start()
        return True

    async def stop(self) -> None:
        """Stop the server and wait until it is down (its process group, for stdio): ``stopped``.

        A ready server is left the way the SDK leaves it (stdin closed and the process waited
        for; an HTTP session ended with ``DELETE``), within :data:`STOP_GRACE`; a starting one,
        or one past its grace, is cancelled (the SDK still stops the process).
        """
        run = self._run
        if run is None:
            return
        run.stopping = True
        if run.ready:
            run.gone.set()
            with anyio.move_on_after(STOP_GRACE):
                await run.done.wait()
        if run.scope is not None:
            run.scope.cancel()
        await run.done.wait()
        self._set_state("stopped", None)

    async def wait_started(self) -> None:
        """Return once the current start has ended: ready, failed or stopped."""
        if self._run is not None:
            await self._run.started.wait()

    @property
    def relisting(self) -> bool:
        """Whether a ``tools/list_changed`` was received and the ``tools/list`` it asks for is not answered yet."""
        return self._run is not None and self._run.relisted is not None

    async def wait_relisted(self) -> None:
        """Return once the pending re-list (:attr:`relisting`) has ended: :attr:`tools` is the new
        list, or listing it failed, or the server went away; at once when none is pending."""
        pending = self._run.relisted if self._run is not None else None
        if pending is not None:
            await pending.wait()

    # ------------------------------------------------------------------ listeners
    def watch(self, listener: Callable[[McpConnection, Change], None]) -> Callable[[], None]:
        """Call ``listener(connection, change)`` after each change; returns the unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _tell(self, change: Change) -> None:
        self.revision += 1
        for listener in list(self._listeners):
            try:
                listener(self, change)
            except Exception:
                _LOG.exception("an MCP server listener failed")

    def _set_state(self, state: ServerState, error: str | None) -> None:
        if state != "ready":
            self.tools = ()
        if (state, error) != (self.state, self.error):
            self.state, self.error = state, error
            self._tell("state")

    # ------------------------------------------------------------------ calls
    async def call(self, tool: str, arguments: dict[str, Any], *, timeout: float) -> mcp_types.CallToolResult:
        """Call ``tool`` of the server with ``arguments`` and return its result as given.

        Cancelling the awaiting task sends ``notifications/cancelled`` for the request and
        returns at once, whether the server stops or not; so does the end of ``timeout``
        (seconds: the ``mcpCallTimeout`` setting), which then raises ``timeout``.

        Raises:
            McpCallError: no result (see its codes).
        """
        run = self._run
        session = run.session if run is not None else None
        if run is None or session is None or self.state != "ready":
            raise McpCallError("mcp_server_unavailable", f"the MCP server {self.name} is not ready ({self._describe_state()})")
        with anyio.move_on_after(timeout):
            try:
                return await session.call_tool(tool, arguments)
            except MCPError as exc:
                if run.stopping:
                    raise McpCallError("mcp_server_exited", f"the MCP server {self.name} was stopped during the call") from None
                if run.gone.is_set() or (exc.code == mcp_types.CONNECTION_CLOSED and await self._lost(run, session)):
                    how = "exited" if isinstance(self.spec.config, StdioServerConfig) else "closed the connection"
                    raise McpCallError("mcp_server_exited", f"the MCP server {self.name} {how} during the call; "
                                                            "Toolwire starts it again for the next turn") from None
                raise McpCallError("mcp_error", self._clean(exc.message or f"error {exc.code}")) from None
            except (RuntimeError, ValidationError) as exc:  # an answer the SDK refused (schema, shape)
                raise McpCallError("mcp_error",
                                   self._clean(f"the MCP server {self.name} gave an invalid answer: {exc}")) from None
        raise McpCallError("timeout", f"{tool} of the MCP server {self.name} did not answer within {timeout:g} s "
                                      "(mcpCallTimeout); the call was cancelled")

    async def _lost(self, run: _Run, session: ClientSession) -> bool:
        """After a call lost its HTTP stream: whether the server is gone (then the run ends)."""
        if isinstance(self.spec.config, StdioServerConfig):
            return False
        with anyio.move_on_after(_PING_TIMEOUT):
            try:
                await session.send_ping()
                return False
            except Exception:
                pass
        run.gone.set()
        return True

    @property
    def pid(self) -> int | None:
        """The stdio server's process id (its process group) while it runs; None for HTTP."""
        run = self._run
        return run.process.pid if run is not None and run.process is not None and not run.done.is_set() else None

    def stderr_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the server's stderr (stdio; "" for HTTP), for the log only."""
        run = self._run
        text = run.stderr.text(lines) if run is not None and run.stderr is not None else self._tail
        return self._redactor.redact(text)

    def _describe_state(self) -> str:
        return f"{self.state}: {self.error}" if self.error else self.state

    def _clean(self, text: str) -> str:
        """One line, bounded, secrets removed."""
        line = " ".join(self._redactor.redact(text).split())
        return line if len(line) <= _MAX_REASON else line[: _MAX_REASON - 1] + "…"

    # ------------------------------------------------------------------ the server's task
    async def _serve(self, run: _Run) -> None:
        failure: BaseException | None = None
        try:
            try:
                with anyio.CancelScope() as scope:
                    run.scope = scope
                    if run.stopping:
                        scope.cancel()
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._deadline, run)
                        try:
                            await self._connected(run, tg)
                        finally:
                            tg.cancel_scope.cancel()
            except Exception as exc:
                failure = exc
            finally:
                if run.process is not None:
                    run.returncode = run.process.returncode
                    await proc.stop_group(run.process)
            if run.stderr is not None:
                self._tail = run.stderr.text(50)
            if not run.stopping:
                end = RunEnd(run.gone.is_set() and not run.broke, run.ready, run.returncode, run.http_error, failure,
                             run.step)
                self._failed(run, self._clean(reason(self.spec.config, end)))
        finally:
            run.relist_ended()
            run.started.set()
            run.done.set()
        if run.stopping and self._run is run:
            self._set_state("stopped", None)

    async def _deadline(self, run: _Run) -> None:
        """Fail the start at the start timeout (the server's teardown may take a while longer)."""
        await anyio.sleep(self._start_timeout)
        if not run.ready and not run.stopping:
            self._failed(run, f"did not start within {self._start_timeout:g} s")
            assert run.scope is not None
            run.scope.cancel()

    def _failed(self, run: _Run, reason: str) -> None:
        """The run failed: log it (with the stderr tail), schedule the restart, tell the listeners; once."""
        if run.failed:
            return
        run.failed = True
        self._failures += 1
        self._retry_at = time.monotonic() + min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** (self._failures - 1))
        tail = self.stderr_tail()
        _LOG.warning("MCP server %s failed: %s%s", self.name, reason, f"; its stderr ends:\n{tail}" if tail else "")
        run.started.set()
        if self._run is run:
            self._set_state("failed", reason)

    async def _connected(self, run: _Run, tg: anyio.abc.TaskGroup) -> None:
        """Open, initialize, list, serve: returns when the server went away (or raises)."""
        async with AsyncExitStack() as stack:
            read, write = await self._open(run, stack, tg)
            session = await stack.enter_async_context(
                ClientSession(_Watched(read, run), write, message_handler=self._handler(run), client_info=_CLIENT))
            try:
                started = await session.initialize()
                run.step = "tools/list"
                tools = await _list_tools(session) if started.capabilities.tools is not None else ()
            except Exception:
                run.broke = not run.gone.is_set()
                raise
            assert run.scope is not None
            run.scope.deadline = math.inf
            run.session, run.ready = session, True
            if self._run is run:
                self._failures = 0
                self.tools = tools
                self._set_state("ready", None)
                if self._was_ready:
                    self._tell("tools")
                self._was_ready = True
            run.started.set()
            tg.start_soon(self._relist, run, session)
            await run.gone.wait()

    async def _open(self, run: _Run, stack: AsyncExitStack, tg: anyio.abc.TaskGroup) -> tuple[Any, Any]:
        config = self.spec.config
        if isinstance(config, HttpServerConfig):
            client = httpx2.AsyncClient(
                headers=config.headers, timeout=_HTTP_TIMEOUT,
                event_hooks={"response": [self._http_hook(run)]})
            await stack.enter_async_context(client)
            return await stack.enter_async_context(streamable_http_client(config.url, http_client=client))
        # "replace": with the SDK's "strict", one byte that is not UTF-8 on stdout ends its reader
        # but not the session, and every later call waits for its timeout.
        params = StdioServerParameters(command=config.command, args=config.args, env=config.env, cwd=config.cwd,
                                       encoding_error_handler="replace")
        tail = run.stderr = proc.StderrTail()
        try:
            with proc.spawned() as processes:
                streams = await stack.enter_async_context(stdio_client(params, errlog=tail.errlog))
        except BaseException:
            tail.close()
            raise
        tail.spawned()
        tg.start_soon(tail.pump)
        if processes:
            run.process = processes[0]
            tg.start_soon(self._exit_watch, run, processes[0].pid)
        return streams

    async def _exit_watch(self, run: _Run, pid: int) -> None:
        await proc.wait_exit(pid)
        run.gone.set()

    def _http_hook(self, run: _Run) -> Callable[[httpx2.Response], Any]:
        async def hook(response: httpx2.Response) -> None:
            if response.status_code >= 400 and not run.ready and run.http_error is None:
                run.http_error = f"{response.status_code} {response.reason_phrase}".strip()
        return hook

    def _handler(self, run: _Run) -> Callable[[Any], Any]:
        async def on_message(message: Any) -> None:  # tools/list_changed is _Watched's (read in order)
            if isinstance(message, Exception):
                _LOG.debug("MCP server %s sent something unreadable: %s", self.name, self._clean(str(message)))
        return on_message

    async def _relist(self, run: _Run, session: ClientSession) -> None:
        """List the tools again after each ``notifications/tools/list_changed`` (coalesced: one
        received while listing has them listed once more); the re-list is pending until then."""
        while True:
            await run.relist.wait()
            run.relist = anyio.Event()
            try:
                tools = await _list_tools(session)
            except Exception as exc:
                _LOG.warning("MCP server %s: listing its changed tools failed: %s", self.name, self._clean(str(exc)))
            else:
                if self._run is run and self.state == "ready":
                    self.tools = tools
                    self._tell("tools")
            if not run.relist.is_set():
                run.relist_ended()


class _Watched:
    """The transport's read stream, setting the run's ``gone`` when it ends (the server closed its
    side) and noting each ``notifications/tools/list_changed`` as it is read, in wire order (the
    SDK hands notifications to a task of their own, which may run after the answer read next)."""

    def __init__(self, stream: Any, run: _Run) -> None:
        self._stream = stream
        self._run = run

    @property
    def last_context(self) -> Any:
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self._stream.receive()
        except anyio.EndOfStream:
            self._run.gone.set()
            raise
        if (isinstance(item, SessionMessage) and isinstance(item.message, mcp_types.JSONRPCNotification)
                and item.message.method == _LIST_CHANGED):
            self._run.list_changed()
        return item

    def __aiter__(self) -> _Watched:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Watched:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _list_tools(session: ClientSession) -> tuple[mcp_types.Tool, ...]:
    """Every page of ``tools/list``; a name listed twice is kept once (the first)."""
    tools: dict[str, mcp_types.Tool] = {}
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await session.list_tools(params=mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        for tool in page.tools:
            tools.setdefault(tool.name, tool)
        cursor = page.next_cursor
        if not cursor:
            break
    return tuple(tools.values())

