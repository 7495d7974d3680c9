"""LSP work-done progress for turns and long tools (``window/workDoneProgress/create``,
``$/progress`` begin / report / end, ``window/workDoneProgress/cancel``).

* :class:`WorkProgress` — one server-initiated progress: created only when the
  client declared ``window.workDoneProgress``; a client's cancel runs a callback.
  Progress is decoration: nothing waits on ``window/workDoneProgress/create``
  (the caller runs its work alongside :meth:`WorkProgress.begin`), and a token
  the client has not accepted within :data:`CREATE_TIMEOUT` seconds is given up
  (the request is withdrawn with ``$/cancelRequest``; no progress is shown).
* :class:`TurnProgressSink` — forwards a code-action turn's events to the session's
  sink and reports each step (model request, each call's status change) on the
  turn's progress.
* :class:`LongTools` — in any turn, a tool still running after :data:`LONG_TOOL_AFTER`
  seconds (git on a large repository, a big edit) gets its own cancellable progress,
  ended when the call ends; cancelling it cancels that call.

They are given the server as the narrow :class:`ProgressChannel`, never more of it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from lsprotocol import types

from toolwire.agent.events import AgentEvent, CallSnapshot, ToolCallChanged, TurnUpdate
from toolwire.rpc.protocol import Peer
from toolwire.workspace.names import display_name, display_text
from toolwire.workspace.shown_paths import call_path

if TYPE_CHECKING:
    from pygls.progress import Progress

log = logging.getLogger(__name__)

#: Seconds a tool runs before it gets its own progress (shorter ones would only flicker).
LONG_TOOL_AFTER = 0.5
#: Seconds the client has to answer ``window/workDoneProgress/create`` before the token is given up.
CREATE_TIMEOUT = 5.0

_TERMINAL = frozenset({"done", "errored", "canceled"})


class ProgressChannel(Protocol):
    """What work-done progress needs of the server.

    Attributes:
        progress_cancels: Per progress token, what the client's
            ``window/workDoneProgress/cancel`` of it runs.
    """

    progress_cancels: dict[str, Any]

    @property
    def client_capabilities(self) -> types.ClientCapabilities | None:
        """What the connected client declared in ``initialize``."""

    @property
    def protocol(self) -> Peer:
        """The connection of the moment (replaced when a client reconnects)."""

    @property
    def work_done_progress(self) -> "Progress":
        """pygls' ``$/progress`` sender of that connection."""

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """Run ``coro`` as a task the server owns."""


def supports_progress(server: ProgressChannel) -> bool:
    """True when the client declared ``window.workDoneProgress``."""
    caps = server.client_capabilities
    return bool(caps and caps.window and caps.window.work_done_progress)


def describe_call(call: CallSnapshot, root: Path | None = None) -> str:
    """``"edit_file a.py"``: a call's tool and target, for progress and summaries, in
    display form: the path as the tools resolve it under ``root`` (git's quoted form,
    ``edit_file "invoice\\342\\200\\256fdp.exe"``, as the approval subject names it; the
    written path in display form without a root), the tool name with escapes."""
    name = display_text(call.name or "tool")
    path = call.path
    if not path:
        return name
    return f"{name} {call_path(root, path).shown if root is not None else display_name(path)}"


class WorkProgress:
    """One server-initiated work-done progress.

    Args:
        server: The server, as far as progress goes.
        on_cancel: Called when the client cancels the progress.
    """

    def __init__(self, server: ProgressChannel, on_cancel: Callable[[], None]) -> None:
        self._server = server
        self._on_cancel = on_cancel
        self.token = f"toolwire-{uuid.uuid4().hex[:12]}"
        self.active = False
        self._ended = False

    async def begin(self, title: str, message: str | None = None) -> bool:
        """Create the token (``window/workDoneProgress/create``) and send ``begin`` (cancellable).

        Never run the work after this: run it alongside (a client may answer late or
        never). The create request is withdrawn (``$/cancelRequest``) when the client
        has not answered within :data:`CREATE_TIMEOUT` seconds, or when the task
        waiting for it is cancelled.

        Returns:
            True when ``begin`` was sent. False when the client does not support
            progress, refused the token, did not answer in time, or :meth:`end` was
            called meanwhile; :meth:`report` and :meth:`end` then send nothing.
        """
        if not supports_progress(self._server):
            return False
        protocol = self._server.protocol
        msg_id = f"progress-{uuid.uuid4().hex[:12]}"
        answered = False
        try:
            with anyio.move_on_after(CREATE_TIMEOUT):
                await protocol.send_request_async(types.WINDOW_WORK_DONE_PROGRESS_CREATE,
                                                  types.WorkDoneProgressCreateParams(token=self.token), msg_id=msg_id)
                answered = True
        except anyio.get_cancelled_exc_class():
            self._withdraw(msg_id)
            raise
        except Exception as exc:  # noqa: BLE001 - the client refused: no progress, the work goes on
            log.warning("window/workDoneProgress/create failed: %s", exc)
            return False
        if not answered:
            log.warning("window/workDoneProgress/create: no answer in %ss; going on without progress", CREATE_TIMEOUT)
            self._withdraw(msg_id)
            return False
        if self._ended:  # ended while the token was being created
            return False
        self._server.progress_cancels[self.token] = self._on_cancel
        self._server.work_done_progress.begin(
            self.token, types.WorkDoneProgressBegin(title=title, cancellable=True, message=message))
        self.active = True
        return True

    def _withdraw(self, msg_id: str) -> None:
        """Forget an unanswered create request and tell the client (a late answer is ignored)."""
        self._server.protocol.withdraw(msg_id)

    def report(self, message: str) -> None:
        """Send ``report`` with ``message``."""
        if self.active:
            self._server.work_done_progress.report(self.token, types.WorkDoneProgressReport(message=message))

    def end(self, message: str | None = None) -> None:
        """Send ``end`` (once) and forget the token."""
        self._ended = True
        if not self.active:
            return
        self.active = False
        self._server.progress_cancels.pop(self.token, None)
        self._server.work_done_progress.tokens.pop(self.token, None)
        self._server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))


class TurnProgressSink:
    """A sink for a code-action turn: every event goes to ``inner`` (the session's
    ``toolwire/session/update`` sink), and each step is reported on the progress.

    Reported: a model request, and each change of a call's status (``calling``
    "running edit_file a.py", ``generated`` "edit_file a.py: waiting for approval",
    terminal ones with their status). Argument streaming is not reported.
    Steps taken before the progress is attached (the turn does not wait for the
    client to accept the token) are kept, the last :data:`BACKLOG` of them, and
    reported when it is (:meth:`attach`).
    """

    #: Steps kept while no progress is attached.
    BACKLOG = 50

    def __init__(self, inner: Any, progress: WorkProgress | None = None, root: Path | None = None) -> None:
        self.inner = inner
        self.progress = progress
        self.root = root
        self._status: dict[str, str] = {}
        self._backlog: list[str] = []

    def attach(self, progress: WorkProgress) -> None:
        """Report on ``progress`` from now on, starting with the steps taken so far."""
        self.progress = progress
        backlog, self._backlog = self._backlog, []
        for message in backlog:
            progress.report(message)

    def emit(self, event: AgentEvent) -> None:
        """Forward ``event``; report it when it is a step."""
        self.inner.emit(event)
        message = self._step(event)
        if message is None:
            return
        progress = self.progress
        if progress is not None and progress.active:
            progress.report(message)
        elif progress is None:
            self._backlog = (self._backlog + [message])[-self.BACKLOG:]

    def _step(self, event: AgentEvent) -> str | None:
        """The progress message of ``event``, or None when it is not a step."""
        if type(event) is TurnUpdate and event.state == "model_request":
            return "asking the model…"
        if type(event) is not ToolCallChanged:
            return None
        call = event.call
        key = call.id or f"#{call.index}"
        status = call.status.value
        if self._status.get(key) == status:
            return None
        self._status[key] = status
        what = describe_call(call, self.root)
        if status == "calling":
            return f"running {what}"
        if status == "generated":
            return f"{what}: waiting for approval or its turn"
        if status in _TERMINAL:
            return f"{what}: {status}"
        return None


class LongTools:
    """Gives each tool call that runs longer than :data:`LONG_TOOL_AFTER` its own progress.

    Fed with every ``tool_call`` update of one session (:meth:`seen`).

    Args:
        server: The server, as far as progress goes.
        cancel_call: Cancels one call by id (the progress is cancellable).
        root: The session's folder (paths are shown relative to it).
    """

    def __init__(self, server: ProgressChannel, cancel_call: Callable[[str], Any], root: Path | None = None) -> None:
        self._server = server
        self._cancel_call = cancel_call
        self._root = root
        self._running: dict[str, tuple[asyncio.Task, WorkProgress]] = {}

    def seen(self, call: CallSnapshot) -> None:
        """A call changed: start watching it when it starts running, end its progress when it ends."""
        call_id = call.id
        status = call.status.value
        if not call_id:
            return
        if status == "calling" and call_id not in self._running:
            if not supports_progress(self._server):
                return
            progress = WorkProgress(self._server, lambda: self._cancel_call(call_id))
            task = self._server.spawn(self._watch(progress, describe_call(call, self._root)))
            self._running[call_id] = (task, progress)
        elif status in _TERMINAL and call_id in self._running:
            task, progress = self._running.pop(call_id)
            task.cancel()
            progress.end(f"{describe_call(call, self._root)}: {status}")

    async def _watch(self, progress: WorkProgress, what: str) -> None:
        await asyncio.sleep(LONG_TOOL_AFTER)
        await progress.begin(f"Toolwire: {what}", "running")
