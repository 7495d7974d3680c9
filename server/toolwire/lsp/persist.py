"""``toolwire serve --socket PATH``: a server that outlives its client.

An editor window that reloads (VS Code's "Reload Window" restarts the extension
host) loses its stdio server and every session in it. Over ``--socket`` the
server is its own process, listening on a Unix socket, and a client may leave and
come back:

* One client at a time. A new connection takes over: the previous one is
  closed (a reloaded window connects while the old extension host may not have
  closed its socket yet). The socket file is ``0600`` in a folder only the user
  can enter (``0700``, owned by the user; created so when missing).
* Sessions, running turns and their calls stay when a client leaves. A client
  that connects sends ``initialize`` / ``initialized`` again (its settings apply
  to each session's next turn), re-opens its documents, and reads a session's
  state with ``toolwire/session/snapshot`` (its ``pendingPermissions`` lists the
  permission requests still open).
* Each connection has its own protocol object (:meth:`ClientLink.connect`):
  answers to the old client's requests are dropped, requests the server sent it
  fail with :class:`toolwire.rpc.errors.ClientGone`. A permission request that was
  not answered is sent again, with the same id, to the next client once it is
  ``initialized``; an edit of an open buffer whose answer was lost is settled by
  :mod:`toolwire.lsp.documents` (never applied twice).
* ``exit`` (after ``shutdown``) stops the server: that is an explicit stop (so does a
  client that disconnects after ``shutdown`` without sending ``exit``). A
  client that only disconnects may come back: the server exits by itself once no
  client has been connected for ``idle_exit`` seconds while no turn is running.
  A turn whose progress waits for a client (an approval, an edit of an open
  buffer) counts as idle; when the grace period ends such turns are cancelled
  (reason ``shutdown``) before the server exits.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pygls.io_ import run_async

import anyio

from toolwire.rpc.transport import READ_LOG, FrameReader
from toolwire.rpc.unix_socket import announce, detach_std_streams, listen_unix
from toolwire.streaming.state import CancelReason
from toolwire.workspace.documents import OpenDocument
from toolwire.workspace.errors import ToolError

if TYPE_CHECKING:
    from toolwire.agent.host import SessionHost
    from toolwire.rpc.protocol import RpcProtocol

log = logging.getLogger(__name__)

#: Default seconds the server waits, with no client and no running turn, before it exits.
DEFAULT_IDLE_EXIT = 60.0

#: Seconds the server gives cancelled turns to end before exiting anyway.
CANCEL_GRACE = 10.0

#: Seconds a reconnected editor has to re-open a file whose edit was not confirmed.
REOPEN_WAIT = 5.0


class LinkedServer(Protocol):
    """What the client link and the socket server need of the server (a pygls server).

    Attributes:
        protocol: The protocol object of the connection of the moment (replaced by
            :meth:`ClientLink.connect`).
        link: Whether a client is connected.
        host: The session host (absent before the first ``initialize``).
    """

    protocol: "RpcProtocol"
    link: "ClientLink"
    host: "SessionHost"
    _stop_event: threading.Event  # pygls' stop flag, which the read loop watches

    def reset_editor_state(self) -> None:
        """Forget what the server knew of the previous editor (buffers, progress, the fallback)."""

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls' error handler of the read loop."""

    def shutdown(self) -> None:
        """Stop pygls' server (its thread pool, the stop flag)."""


class ReopenedBuffer(Protocol):
    """A buffer of the reconnected editor (:class:`toolwire.lsp.buffers.EditorBuffer`)."""

    uri: str
    text: str
    version: int
    out_of_sync: str | None


class LostEditDocuments(Protocol):
    """What settling a lost edit needs of the tools' view of the editor
    (:class:`toolwire.lsp.documents.LspDocuments`)."""

    def matches(self, path: Path) -> "list[ReopenedBuffer]":
        """The open buffers of ``path``, whatever their URI."""

    async def replace(self, doc: OpenDocument, new_text: str) -> bool:
        """Send the edit of ``doc`` to the editor."""

    async def wait_for_client(self) -> bool:
        """Wait for an initialized client; False at once when none can come back."""

    async def wait_opened(self) -> None:
        """Wait for the editor's next ``didOpen``."""


class ClientLink:
    """Whether a client is connected, for the parts that must wait for one.

    Over stdio or ``--tcp`` the server lives and dies with its one client:
    :attr:`persistent` is False and :meth:`wait_ready` returns False at once.

    Attributes:
        persistent: Clients may leave and come back (``--socket``).
        connected: A client's connection is open.
        waiting: Per session id, how many of its requests wait for a client.
    """

    def __init__(self) -> None:
        self.persistent = False
        self.connected = False
        self.waiting: Counter[str] = Counter()
        self._ready: asyncio.Event | None = None
        self._changed: asyncio.Event | None = None

    @property
    def ready(self) -> asyncio.Event:
        """Set while an initialized client is connected (created on first use, on the loop)."""
        if self._ready is None:
            self._ready = asyncio.Event()
        return self._ready

    @property
    def changed(self) -> asyncio.Event:
        """Set whenever something the idle rule looks at changed."""
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def poke(self) -> None:
        """Something the idle rule looks at changed (a turn ended, a client came or went)."""
        if self.persistent:
            self.changed.set()

    def connect(self, server: LinkedServer) -> "RpcProtocol":
        """A client connected: it gets a fresh protocol object and a fresh view of
        the editor (open buffers, capabilities); sessions are kept.

        Returns:
            The protocol object that serves the new connection (now ``server.protocol``).
        """
        old = server.protocol
        old.detach()
        new = type(old)(server, old._converter)
        for name in ("_features", "_feature_options", "_commands"):  # the handlers registered on the server
            setattr(new.fm, name, getattr(old.fm, name))
        server.protocol = new
        server.reset_editor_state()
        self.connected = True
        self.ready.clear()
        self.poke()
        return new

    def initialized(self) -> None:
        """The connected client sent ``initialized``: requests may be sent to it again."""
        if self.connected:
            self.ready.set()
            self.poke()

    def disconnect(self, server: LinkedServer, protocol: "RpcProtocol") -> None:
        """``protocol``'s connection ended (a newer connection may already have replaced it)."""
        protocol.detach()
        if server.protocol is protocol:
            self.connected = False
            self.ready.clear()
        self.poke()

    async def wait_ready(self, session_id: str) -> bool:
        """Wait until an initialized client is connected (for a request that must be
        sent again). Cancelled when the server gives up on idle clients.

        Returns:
            True once a client is ready; False at once when clients cannot come back.
        """
        if not self.persistent:
            return False
        self.waiting[session_id] += 1
        self.poke()
        try:
            await self.ready.wait()
        finally:
            self.waiting[session_id] -= 1
            if self.waiting[session_id] <= 0:
                del self.waiting[session_id]
            self.poke()
        return True

    def busy(self, server: LinkedServer) -> bool:
        """A turn or client-fed run is going on that does not merely wait for a client."""
        host = getattr(server, "host", None)  # none before the first ``initialize``
        return host is not None and host.busy(lambda session_id: bool(self.waiting.get(session_id)))


async def settle_lost_edit(documents: LostEditDocuments, doc: OpenDocument, new_text: str) -> bool:
    """An edit of the open buffer ``doc`` got no answer: the client went away before
    answering (or before it was sent). Wait for the next client and look at its buffer
    of the file: the new text means the edit was applied; the old text means it was not,
    and it is sent again (to that buffer and version); anything else, or a file no
    longer open whose disk text is not the new one, is refused with nothing more
    written. An edit is never applied twice and never half-applied (it is one text edit).

    Returns:
        True when the buffer (or the disk) has the edit.

    Raises:
        ToolError: ``editor_disconnected`` (also at once when clients cannot come back).
    """
    name = doc.path.name
    if not await documents.wait_for_client():
        raise ToolError("editor_disconnected", f"the editor disconnected before confirming the edit of {name}; "
                        "it may or may not have been applied (check the file); nothing more was written")
    found = await _reopened(documents, doc.path)
    if found is not None:
        if found.text == new_text:
            return True
        if found.text == doc.text and found.out_of_sync is None:
            log.info("re-sending the unconfirmed edit of %s to the reconnected editor", name)
            return await documents.replace(OpenDocument(path=doc.path, text=found.text, version=found.version,
                                                        uri=found.uri), new_text)
        raise ToolError("editor_disconnected", f"the editor reconnected with {name} changed meanwhile; the edit "
                        "was not applied and nothing more was written")
    try:
        on_disk = doc.path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        on_disk = None
    if on_disk == new_text:
        return True
    raise ToolError("editor_disconnected", f"the editor disconnected before confirming the edit of {name}, and "
                    "the file is no longer open in it; the file on disk does not have the edit; nothing more "
                    "was written")


async def _reopened(documents: LostEditDocuments, path: Path) -> ReopenedBuffer | None:
    """The reconnected client's buffer of ``path`` once it re-opened it (waiting up to
    :data:`REOPEN_WAIT` seconds for its ``didOpen``); None when it does not."""
    with anyio.move_on_after(REOPEN_WAIT):
        while True:
            found = documents.matches(path)
            if len(found) == 1:
                return found[0]
            await documents.wait_opened()
    return None


def serve_socket(server: LinkedServer, path: Path, idle_exit: float = DEFAULT_IDLE_EXIT,
                 detach_stdio: bool = False) -> None:
    """Serve clients one at a time on the Unix socket ``path`` until ``exit`` or idleness.

    Args:
        server: The pygls server.
        path: Where to listen (its folder is made private; a stale socket is replaced).
        idle_exit: Seconds without a client and without a running turn before the server exits.
        detach_stdio: After the "listening" line on stderr, point stdin/stdout/stderr at
            ``/dev/null`` (the process that started the server may go away; logs go to
            a ``--log-file``).

    Raises:
        toolwire.rpc.transport.ListenError: the path cannot be listened on, with the reason in one line.
    """
    link = server.link
    link.persistent = True
    stop_reading = threading.Event()
    server._stop_event = stop_reading
    writers: dict[Any, asyncio.StreamWriter] = {}
    stopped = _Flag(link)

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for old_protocol, old_writer in list(writers.items()):
            log.info("a new client takes over from the connected one")
            link.disconnect(server, old_protocol)
            old_writer.close()
        protocol = link.connect(server)
        writers[protocol] = writer
        protocol.set_writer(writer)
        log.info("client connected")
        try:
            await run_async(stop_event=stop_reading, reader=FrameReader(reader), protocol=protocol, logger=READ_LOG,
                            error_handler=server.report_server_error)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("client connection lost: %s", exc)
        finally:
            writers.pop(protocol, None)
            link.disconnect(server, protocol)
            writer.close()
            log.info("client disconnected")
            if protocol._shutdown:  # ``shutdown`` asked for a stop; the ``exit`` was lost
                stopped.set()

    async def watch_idle() -> None:
        changed = link.changed
        while not stopped.is_set():
            changed.clear()
            if link.connected or link.busy(server):
                await changed.wait()
                continue
            try:
                await asyncio.wait_for(changed.wait(), idle_exit)
            except TimeoutError:
                log.info("no client for %s s and no turn running: exiting", idle_exit)
                break
        await cancel_turns()

    async def cancel_turns() -> None:
        host = getattr(server, "host", None)
        if host is None:  # no client ever initialized: nothing ran
            return
        cancelled = host.cancel_all(CancelReason.SHUTDOWN)
        try:
            await asyncio.wait_for(host.settled(), CANCEL_GRACE)
        except TimeoutError:
            log.warning("turns did not end %s s after they were cancelled; exiting anyway", CANCEL_GRACE)
        for turn in cancelled:  # what the absent client would have been told
            log.info("turn %s cancelled (shutdown): %s", turn.id,
                     ", ".join(f"{call.id} {call.name} {call.status.value}" for call in turn.calls) or "no calls")

    bound = False

    async def main() -> None:
        nonlocal bound
        listener = await listen_unix(path, connection)
        bound = True
        announce(f"toolwire serve: listening on {path} (one client at a time; exits {idle_exit:g} s after "
                 "the last client leaves)\n")
        if detach_stdio:
            detach_std_streams()
        try:
            async with listener:
                await watch_idle()
        finally:
            for protocol, writer in list(writers.items()):
                link.disconnect(server, protocol)
                writer.close()

    try:
        asyncio.run(main())
    except SystemExit:  # ``exit``: the code is in the protocol's exit_code
        pass
    finally:
        if bound:  # never another server's socket
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
        server.shutdown()


class _Flag:
    """A stop asked for outside the idle rule; setting it wakes the idle watcher."""

    def __init__(self, link: ClientLink) -> None:
        self._link = link
        self._set = False

    def set(self) -> None:
        self._set = True
        self._link.changed.set()

    def is_set(self) -> bool:
        return self._set
