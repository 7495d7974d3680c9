"""The session host: where every session lives, whatever front-end serves it.

A front-end (LSP in :mod:`toolwire.lsp`, ACP in :mod:`toolwire.acp`) parses a
request, calls the host and encodes the answer; the host owns the rest
(docs/architecture.md, "Where a session lives"):

* opening and closing sessions (closing is the one place a session's model is closed);
* the one turn slot of a session (:meth:`SessionHost.begin_turn`, :meth:`SessionHost.run_turn`):
  a second turn while one runs is refused with :class:`TurnRunning`; Continue after a turn
  that stopped at the request cap (:meth:`SessionHost.continue_turn`);
* cancelling: a turn (:meth:`SessionHost.cancel_turn`), one call of a turn or of a
  client-fed run (:meth:`SessionHost.cancel_call`), everything (:meth:`SessionHost.cancel_all`,
  shutdown or a client that is gone), and whether anything runs (:meth:`SessionHost.busy`);
* client-fed streams (merge, run; oldest ended streams forgotten first);
* undo and redo of a turn, compacting its history, the snapshot of a session, a pending edit's preview;
* settings that change while the server runs and the model they build
  (:mod:`toolwire.agent.host_settings`);
* the workspace watchers: files changed outside the assistant are noted for the
  model and announced to the session's front-end (a :class:`WorkspaceChange` on its
  outlet), for every hosted session alike.
* saving every session after each turn, model change, undo, compaction and client-fed run, so it survives a
  restart (:mod:`toolwire.agent.session_saving`, files in :mod:`toolwire.agent.session_store`): the
  saved sessions of a folder (:meth:`SessionHost.list_sessions`), loading one in a new process
  (:meth:`SessionHost.load`), deleting one (:meth:`SessionHost.delete`); closing keeps its file;
* the models a person may switch to (:meth:`SessionHost.list_models`, :mod:`toolwire.agent.model_choices`);
* the MCP servers of every session (:mod:`toolwire.agent.mcp_session`): started with it, shared
  between sessions with the same configuration, their state changes and failures on its outlet,
  stopped with the last session using them; ``toolwire/tools/list`` (:meth:`SessionHost.tool_listing`).

The running turn, the client-fed streams and runs, and the session's event log live
in the host's record of the session (:class:`Hosted`), not in the
:class:`~toolwire.agent.session.Session` the tools see.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from toolwire.agent.budget import CONTINUE_PROMPT, continue_refusal
from toolwire.agent.call_ids import fed_call_id
from toolwire.agent.compaction import Compaction, compact_session
from toolwire.agent import prompt_blocks
from toolwire.agent.prompt_blocks import kept_blocks
from toolwire.agent.events import (AgentEvent, Approver, LoggedEvent, SessionInfo, Sink, ToolCallChanged, UserPrompt,
                                   WorkspaceChange, call_changed)
from toolwire.agent.fed import FedStream, FedStreamError, run_fed_calls
from toolwire.agent.host_settings import (MODEL_ERRORS, Origin, merge_settings, model_for, model_key, refreshed,
                                          session_settings)
from toolwire.agent.images import image_refusal
from toolwire.agent.mcp_session import McpLink, tool_listing
from toolwire.agent.model_choices import ModelChoices
from toolwire.agent.hosted import (TURN_ALREADY_RUNNING, UNDO_RUNNING, Hosted, HostError, KeptFromModel, Recorded,
                                   SessionState, TurnRunning, UnknownSession)
from toolwire.agent.opening import SessionSpecError, check_cwd, open_session
from toolwire.agent.preview import Preview, PreviewError, preview_call
from toolwire.agent.session import Session
from toolwire.agent.session_saving import delete_saved, read_saved, restore, save_session, saved_sessions, title_of
from toolwire.agent.session_store import SavedSession
from toolwire.agent.turn import Turn, TurnOutcome
from toolwire.agent.turn_undo import undo_in_session
from toolwire.agent.watching import WatchHub
from toolwire.mcp.pool import McpPool
from toolwire.redaction import Redactor, shared
from toolwire.settings import Settings
from toolwire.streaming.state import CancelReason, ToolCallState
from toolwire.tools.base import ImagePart
from toolwire.tools.editor_intel import EditorFeatures, EditorLink
from toolwire.workspace.documents import Documents

__all__ = [
    "CONTINUE_PROMPT", "Hosted", "HostError", "KeptFromModel", "MAX_FED_STREAMS", "SessionHost", "SessionState", "TURN_ALREADY_RUNNING", "TurnRunning",
    "UnknownSession",
    # what a host call returns or raises, for the front-ends (they import nothing else of the agent
    # but its events: tests/test_layers.py)
    "FedStreamError", "Preview", "PreviewError", "SavedSession", "Session", "SessionSpecError", "Turn", "TurnOutcome",
]

log = logging.getLogger(__name__)

#: Client-fed streams a session keeps; the oldest ended ones are forgotten first.
MAX_FED_STREAMS = 256


class SessionHost:
    """Every open session of one server process, and what can be done to them.

    Args:
        settings: The server's settings (each session's, before its own overrides).
        warn: Tells the user something went wrong outside a request (a changed
            setting that cannot apply); given text with secrets removed.
    """

    def __init__(self, settings: Settings, *, warn: Callable[[str], None] | None = None,
                 redactor: Redactor | None = None) -> None:
        self.settings = settings
        self.sessions: dict[str, Hosted] = {}
        self.redactor = redactor or shared()
        self._warn = warn
        self.watchers = WatchHub(self._external_changes)
        self.mcp = McpPool(redactor=self.redactor)
        self._listeners: list[Callable[[], None]] = []
        self._titled: list[Callable[[Hosted], None]] = []
        self._changed: asyncio.Event | None = None
        self._background: set[asyncio.Task] = set()
        self.model_choices = ModelChoices()

    # ------------------------------------------------------------- sessions
    def get(self, session_id: str) -> Hosted:
        """The hosted session.

        Raises:
            UnknownSession: no session has this id.
        """
        hosted = self.sessions.get(session_id)
        if hosted is None:
            raise UnknownSession(f"unknown session {session_id!r}", "sessionId")
        return hosted

    async def open(self, cwd: str | Path, model_spec: str | None, overrides: dict[str, Any] | None,
                   documents: Documents, outlet_for: Callable[[Session], Sink],
                   editor: EditorLink | None = None, mcp_servers: Mapping[str, Any] | None = None,
                   session_id: str | None = None) -> Hosted:
        """Open a session on the folder ``cwd``, start watching it and start its MCP servers.

        Args:
            cwd: The workspace folder (absolute, existing).
            model_spec: The model, over the ``model`` setting; None for the setting.
            overrides: Settings of this session over the server's.
            documents: The front-end's view of the editor's buffers.
            outlet_for: Given the new session, the sink of its events outside a turn.
            editor: The front-end's link to the editor's intelligence (:mod:`toolwire.tools.editor_intel`),
                or None: the editor tools are then not offered.
            mcp_servers: MCP server entries of the front-end's own (name → raw entry, e.g. ACP's
                ``session/new`` ones), used after the settings' (:meth:`McpLink.open`); their
                problems, like those of the settings' entries, are ``mcp_config`` warnings.
            session_id: The id of the session (a saved one being loaded: :meth:`load`); None for a new id.

        Raises:
            SessionSpecError: ``field`` ``cwd``, ``model`` or ``settings`` is unusable.
        """
        self.redactor.add_settings(overrides)
        settings, problems = session_settings(self.settings, overrides)
        if problems:
            raise SessionSpecError("settings", "; ".join(problems))
        spec = model_spec or settings.model
        session = open_session(Path(cwd), spec, settings, documents, editor)
        if session_id is not None:
            session.id = session_id
        session.compose_prompt()  # the project rules: the list is the answer's ``instructions``
        origin = Origin(model_spec, dict(overrides or {}), model_key(spec, settings))
        hosted = Hosted(session, outlet_for(session), origin)
        hosted.mcp = McpLink.open(session, self.mcp, self.redactor, mcp_servers, Recorded(hosted.log, hosted.outlet))
        self.sessions[session.id] = hosted
        await self.watchers.attach(session)
        log.info("session %s: %s on %s", session.id, session.model.model_id, session.root)
        return hosted

    async def load(self, session_id: str, cwd: str | Path | None, documents: Documents,
                   outlet_for: Callable[[Session], Sink], editor: EditorLink | None = None,
                   mcp_servers: Mapping[str, Any] | None = None, folders: Sequence[str | Path] = ()) -> Hosted:
        """The session ``session_id`` of the folder ``cwd``: the open one, else the saved one opened
        again in this process (as :meth:`open` does, with the model spec and settings overrides it was
        opened with) with its conversation, turn count, title, event log and turn checkpoints.
        With no ``cwd``, the open session of that id, else the first of ``folders`` (the front-end's
        workspace folders) that saved it.

        Raises:
            UnknownSession: (field ``sessionId``) no session of this folder has this id (or its file was skipped).
            SessionSpecError: ``field`` ``cwd``, ``model`` or ``settings`` is unusable now.
        """
        if cwd is None:
            cwd = self._folder_of(session_id, folders)
        root = check_cwd(cwd).resolve()  # a NUL, a relative or a missing folder: SessionSpecError (cwd)
        hosted = self.sessions.get(session_id)
        if hosted is not None:
            if str(hosted.session.root) != str(root):
                raise UnknownSession(f"the session {session_id!r} is not of the folder {str(cwd)[:200]!r}", "sessionId")
            return hosted
        saved = read_saved(session_id, root)
        if saved is None:
            raise UnknownSession(f"no saved session {session_id!r} in {str(cwd)[:200]!r}", "sessionId")
        hosted = await self.open(cwd, saved.model, saved.overrides, documents, outlet_for, editor, mcp_servers,
                                 session_id=session_id)
        restore(hosted, saved)
        log.info("session %s: loaded (%d turns)", session_id, hosted.session.turns)
        return hosted

    def _folder_of(self, session_id: str, folders: Sequence[str | Path]) -> Path:
        """The folder of the open session ``session_id``, else the first of ``folders`` that saved it.

        Raises:
            UnknownSession: (field ``sessionId``) neither.
        """
        hosted = self.sessions.get(session_id)
        if hosted is not None:
            return hosted.session.root
        for folder in folders:
            root = _saved_root(folder)
            if root is not None and read_saved(session_id, root) is not None:
                return root
        raise UnknownSession(f"no saved session {session_id!r} in the workspace folders", "sessionId")

    def history(self, hosted: Hosted) -> list[LoggedEvent]:
        """Everything the session logged as it is saved (:class:`~toolwire.agent.session_store.Journal`),
        oldest first: what a front-end tells again when a client loads it."""
        return hosted.log.journal.history()

    def list_sessions(self, cwd: str | Path | None = None) -> list[SavedSession]:
        """The saved sessions of the folder ``cwd`` (of every folder: None) kept by ``sessionRetentionDays``,
        the most recently updated first; an open session is listed once it ran a turn."""
        if cwd is None:
            return saved_sessions(None, self.settings.session_retention_days)
        root = _saved_root(cwd)
        return [] if root is None else saved_sessions(root, self.settings.session_retention_days)

    async def delete(self, session_id: str, cwd: str | Path | None = None, *, refuse_running: bool = False) -> bool:
        """Close the session if it is open and remove its saved file (of the folder ``cwd``, else of
        whichever folder has it). Returns False when there was neither.

        Raises:
            TurnRunning: ``refuse_running`` and a turn, an undo or a redo is running in the session.
        """
        hosted = self.sessions.get(session_id)
        if hosted is not None and cwd is not None and _saved_root(cwd) != hosted.session.root:
            return False  # open, but of another folder: not the session of ``cwd`` (as load refuses it)
        if refuse_running and hosted is not None:
            self.ensure_free(hosted, "a turn is running in this session; cancel it before deleting the session")
        root = hosted.session.root if hosted is not None else _saved_root(cwd) if cwd is not None else None
        if hosted is None and cwd is not None and root is None:
            return False  # no folder of that name can have saved sessions
        if hosted is not None:
            hosted.log.journal.deleted = True  # a turn still ending does not save it again
        closed = await self.close(session_id, keep=False)
        return delete_saved(session_id, root) or closed

    def tell(self, hosted: Hosted, event: AgentEvent) -> None:
        """Emit ``event`` on the session's outlet and keep it in its log (a front-end's own warning)."""
        Recorded(hosted.log, hosted.outlet).emit(event)

    def on_title(self, listener: Callable[[Hosted], None]) -> None:
        """Call ``listener`` with a session when its title is set (its first prompt)."""
        self._titled.append(listener)

    def save(self, hosted: Hosted) -> None:
        """Save the session (once it ran a turn) and prune the folder's saved sessions; a disk that
        refuses is logged, never raised."""
        save_session(hosted, self.redactor, self.settings.session_retention_days)

    async def close(self, session_id: str, keep: bool = True) -> bool:
        """Cancel the session's turn and client-fed runs, stop watching it, close its model; its saved
        file stays (``keep``; :meth:`delete` removes it).

        Returns:
            False when no session has this id.
        """
        hosted = self.sessions.pop(session_id, None)
        if hosted is None:
            return False
        if keep and hosted.turn is None:
            self.save(hosted)
        self._cancel(hosted, CancelReason.TURN_CANCELLED)
        self.watchers.detach(hosted.session)
        if hosted.mcp is not None:
            await hosted.mcp.close()
        await self.close_model(hosted.session.model)
        self._poke()
        return True

    async def close_all(self) -> None:
        """Close every session (the front-end's connection ended) and stop every MCP server."""
        self.watchers.close()
        for session_id in list(self.sessions):
            await self.close(session_id)
        await self.mcp.aclose()

    async def close_model(self, model: Any) -> None:
        """Close a model that is no longer used (its connection pool); the one place models are closed."""
        close = getattr(model, "aclose", None)
        if close is not None:
            try:
                await close()
            except Exception as exc:  # noqa: BLE001 - a model that fails to close is no reason to fail a request
                log.warning("closing the model %s failed: %s", getattr(model, "model_id", "?"), exc)

    # ------------------------------------------------------------- turns
    def begin_turn(self, hosted: Hosted, sink: Sink, approver: Approver, blocks: Sequence[dict[str, Any]] = (),
                   allow_excluded: bool = False) -> Turn:
        """Take the session's turn slot for a new turn (run it with :meth:`finish_turn`) of the prompt
        ``blocks`` (JSON content blocks): every front-end's prompt comes through here, so the refusal of
        a file kept from the model is made here (:meth:`refuse_kept`).

        Raises:
            TurnRunning: a turn is running in the session.
            KeptFromModel: see :meth:`refuse_kept`.
        """
        self.ensure_free(hosted, TURN_ALREADY_RUNNING)
        self.refuse_kept(hosted, blocks, allow_excluded)
        turn = Turn(hosted.session, Recorded(hosted.log, sink), approver)
        hosted.turn = hosted.last_turn = turn
        self._poke()
        return turn

    def refuse_kept(self, hosted: Hosted, blocks: Sequence[dict[str, Any]], allow_excluded: bool = False) -> None:
        """Refuse a prompt whose embedded resources hold the text of a workspace file ``modelExclude``
        keeps from the model, unless the user allowed it: on its block (``_meta.toolwire.allowExcluded``)
        or, ``allow_excluded``, for the whole prompt (the front-end's word: ACP's client attaches a
        resource only by the user's explicit choice; a code action's ``allowExcluded``).

        Raises:
            KeptFromModel: the files and their patterns; nothing was sent.
            HostError: (field ``prompt``) a block that cannot be read.
        """
        if allow_excluded or not blocks:
            return
        try:
            parsed = prompt_blocks.parse_blocks(blocks)
        except prompt_blocks.PromptBlockError as exc:
            raise HostError(str(exc), "prompt") from None
        kept = prompt_blocks.kept_resources(parsed, hosted.session.root, hosted.session.model_exclude())
        if kept:
            raise KeptFromModel(kept)

    def ensure_free(self, hosted: Hosted, turn_message: str | None = None) -> None:
        """Refuse to take the session's turn slot while a turn, an undo or a redo holds it.

        Raises:
            TurnRunning: with ``turn_message`` (or the default) for a turn, :data:`UNDO_RUNNING` for an undo.
        """
        if hosted.turn is not None:
            raise TurnRunning(turn_message) if turn_message else TurnRunning()
        if hosted.undoing:
            raise TurnRunning(UNDO_RUNNING)

    async def finish_turn(self, hosted: Hosted, turn: Turn, prompt: str,
                          blocks: Sequence[dict[str, Any]] = (), images: Sequence[ImagePart] = (),
                          shown: str | None = None) -> TurnOutcome:
        """Run ``turn`` (taken with :meth:`begin_turn`) to its end and free the slot; the prompt (and
        ``blocks``, the content blocks the front-end got it as) is logged first, the session's title
        set from its first prompt, the session saved when the turn ends. ``images``: the prompt's,
        image parts of its user message; ``shown``: the user's entry when it is not ``prompt``
        (the snapshot's ``userText``: :func:`toolwire.agent.prompt_blocks.shown_text`).

        A cancellation of the caller cancels the turn, which cleans up and records
        its outcome: that outcome is returned (``cancelled``), not the exception.
        The outcome's message has every known secret removed. Settings that
        changed while it ran apply now.
        """
        self._prompted(hosted, UserPrompt(turn.id, prompt, tuple(kept_blocks(blocks))))
        try:
            outcome = await turn.run(prompt, images, shown)
        except asyncio.CancelledError:
            outcome = turn.outcome or TurnOutcome("cancelled")  # run() records it before re-raising
        finally:
            if hosted.turn is turn:
                hosted.turn = None
            if hosted.origin.stale and self.sessions.get(hosted.id) is hosted:
                self._refresh(hosted)
            self.save(hosted)
            self._poke()
        if outcome.message:
            outcome.message = self.redactor.redact(outcome.message)
        return outcome

    async def run_turn(self, hosted: Hosted, prompt: str, sink: Sink, approver: Approver,
                       blocks: Sequence[dict[str, Any]] = (), images: Sequence[ImagePart] = (),
                       shown: str | None = None, allow_excluded: bool = False) -> TurnOutcome:
        """Run one turn of ``prompt`` (and its ``images``) in the session (:meth:`begin_turn`, which
        refuses a file kept from the model unless allowed, then :meth:`finish_turn`)."""
        turn = self.begin_turn(hosted, sink, approver, blocks, allow_excluded)
        return await self.finish_turn(hosted, turn, prompt, blocks, images, shown)

    async def continue_turn(self, hosted: Hosted, sink: Sink, approver: Approver,
                            blocks: Sequence[dict[str, Any]] = (), allow_excluded: bool = False) -> TurnOutcome:
        """Continue: after a turn that stopped at the request cap (``max_turn_requests``), run the
        next turn with :data:`CONTINUE_PROMPT` on the same history (:mod:`toolwire.agent.budget`).

        Raises:
            TurnRunning: a turn, an undo or a redo holds the session's turn slot.
            HostError: (field ``sessionId``) the session's last turn did not stop at the cap.
        """
        self.ensure_free(hosted, TURN_ALREADY_RUNNING)
        last = hosted.last_turn
        stopped = last.outcome.stop_reason if last is not None and last.outcome else None
        refusal = continue_refusal(stopped, last is None or hosted.session.conversation.holds_turn(last.id))
        if refusal is not None:
            raise HostError(refusal, "sessionId")
        return await self.run_turn(hosted, CONTINUE_PROMPT, sink, approver, blocks, allow_excluded=allow_excluded)

    def image_refusal(self, hosted: Hosted) -> str | None:
        """Why a prompt with images is refused before anything is sent, or None when the session's
        model is sent images (:func:`toolwire.agent.images.image_refusal`)."""
        return image_refusal(hosted.session)

    def cancel_turn(self, session_id: str, reason: CancelReason = CancelReason.TURN_CANCELLED) -> bool:
        """Cancel the session's running turn. Returns False when none runs (or no such session)."""
        hosted = self.sessions.get(session_id)
        if hosted is None or hosted.turn is None:
            return False
        hosted.turn.cancel(reason)
        return True

    def cancel_call(self, hosted: Hosted, call_id: str) -> bool:
        """Cancel one call of the session's turn or client-fed runs; the rest goes on.

        Returns:
            False for an unknown or finished call.
        """
        if hosted.turn is not None and hosted.turn.cancel_call(call_id):
            return True
        return any(scheduler.cancel_call(call_id) for scheduler in list(hosted.fed))

    def cancel_all(self, reason: CancelReason = CancelReason.SHUTDOWN) -> list[Turn]:
        """Cancel every running turn and client-fed run. Returns the turns cancelled."""
        turns = [hosted.turn for hosted in self.sessions.values() if hosted.turn is not None]
        for hosted in self.sessions.values():
            self._cancel(hosted, reason)
        return turns

    def busy(self, waiting: Callable[[str], bool] = lambda session_id: False) -> bool:
        """A turn, a client-fed run, an undo or a redo is going on in a session for which
        ``waiting`` is False (``waiting``: the session's progress only waits for a client to come back)."""
        return any(hosted.running and not waiting(hosted.id) for hosted in self.sessions.values())

    async def settled(self) -> None:
        """Wait until no turn, client-fed run, undo or redo is going on in any session."""
        while any(hosted.running for hosted in self.sessions.values()):
            changed = self._event()
            changed.clear()
            await changed.wait()

    def on_activity(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` whenever a turn, a client-fed run, an undo or a redo starts or ends,
        or a session closes."""
        self._listeners.append(listener)

    # ------------------------------------------------------------- client-fed streams
    def merge(self, hosted: Hosted, stream_id: str, chunks: list[Any], sink: Sink, *, fmt: str | None = None,
              end: bool = False) -> tuple[FedStream, list[ToolCallChanged]]:
        """Merge a batch of a client-fed stream; each changed call gets its session-unique
        id and one update, emitted on ``sink``.

        Returns:
            The stream and the updates emitted, in call order.

        Raises:
            FedStreamError, UnknownFormat: nothing of the batch was applied (a
                refused first batch opens no stream).
        """
        recorded = Recorded(hosted.log, sink)
        stream = hosted.streams.get(stream_id)
        opening = stream is None
        if stream is None:
            stream = FedStream(stream_id)
        changed = stream.merge(chunks, recorded, fmt=fmt, end=end)
        if opening:
            streams = hosted.streams
            ended = [sid for sid, s in streams.items() if s.ended]
            for sid in ended[: max(0, len(streams) + 1 - MAX_FED_STREAMS)]:
                del streams[sid]  # forget the oldest ended streams
            streams[stream_id] = stream
        updates = []
        for call in changed:
            hosted.session.call_ids.settle(call, fed_call_id(stream_id, call.index))
            update = call_changed(call)
            recorded.emit(update)
            updates.append(update)
        return stream, updates

    async def run_fed(self, hosted: Hosted, stream_id: str, call_ids: list[str] | None, sink: Sink,
                      approver: Approver) -> list[dict[str, Any]]:
        """Run an ended stream's calls (:func:`toolwire.agent.fed.run_fed_calls`).

        Raises:
            HostError: (field ``streamId``) no such stream.
            FedStreamError: the stream has not ended, or an id names no client call of it.
        """
        stream = hosted.streams.get(stream_id)
        if stream is None:
            raise HostError(f"unknown stream {stream_id!r}", "streamId")
        self._poke()
        try:
            return await run_fed_calls(hosted.session, stream, call_ids, Recorded(hosted.log, sink), approver,
                                       hosted.fed)
        finally:
            self.save(hosted)
            self._poke()

    # ------------------------------------------------------------- reading a session
    def find_call(self, hosted: Hosted, call_id: str) -> ToolCallState | None:
        """The call with this id in the running (else last) turn or the client-fed runs."""
        return hosted.find_call(call_id)

    async def preview(self, hosted: Hosted, call_id: str) -> Preview:
        """The before and after texts of a pending edit call (:func:`toolwire.agent.preview.preview_call`)."""
        return await preview_call(hosted.session, self.find_call(hosted, call_id), call_id)

    def tool_listing(self, hosted: Hosted | None, features: EditorFeatures | None = None) -> dict[str, Any]:
        """The ``toolwire/tools/list`` answer for ``hosted``, or (None) for a new session under the server's
        settings with the editor ``features`` its client declared (:func:`toolwire.agent.mcp_session.tool_listing`)."""
        if hosted is not None and not hosted.running:
            hosted.session.offer_listed_tools()  # what its next request offers
        return tool_listing(hosted.session if hosted is not None else None, self.settings.max_tools, features)

    def snapshot(self, hosted: Hosted) -> SessionState:
        """The session's state now (consistent with every event emitted before it)."""
        return hosted.state(self.redactor.redact)

    def compact(self, hosted: Hosted) -> Compaction:
        """Replace every tool result older than the last turn by the context-fitting rule's note
        (:mod:`toolwire.agent.compaction`). Not a turn.

        Raises:
            TurnRunning: a turn, an undo or a redo holds the session's turn slot.
        """
        self.ensure_free(hosted)
        compaction = compact_session(hosted.session)
        self.save(hosted)
        return compaction

    # ------------------------------------------------------------- undo and redo
    async def undo(self, hosted: Hosted, turn_id: str | None, *, redo: bool = False, force: list[str] | None = None,
                   partial: bool = False, rewind: bool = False) -> dict[str, Any]:
        """Undo (``redo``: redo) a turn of the session: ``turn_id``, else the last one that can be.

        Returns:
            ``{turnId, status, message, paths, git, unmatchedForce, notUndone}`` (protocol.md,
            ``toolwire/session/undoTurn``); ``nothing_to_do`` when no turn qualifies.

        Raises:
            TurnRunning: a turn, another undo or a redo is running in the session.
            HostError: (field ``turnId``) the session has no such turn.
        """
        self.ensure_free(hosted)
        session = hosted.session
        record = session.find_turn(turn_id, redo=redo)
        if record is None:
            if turn_id is not None:
                raise HostError(f"no turn {turn_id!r} in this session", "turnId")
            what = "undone turn to redo" if redo else "turn with changes to undo"
            return {"turnId": None, "status": "nothing_to_do", "message": f"There is no {what} in this session.",
                    "paths": [], "git": [], "unmatchedForce": list(dict.fromkeys(force or [])), "notUndone": []}
        hosted.undoing = True  # the turn slot: no turn and no other undo starts until it is done
        self._poke()
        try:
            result = await undo_in_session(session, record, redo=redo, force=force or [], partial=partial,
                                           rewind=rewind)
            if (rules := session.rules.take_change()) is not None:  # a rewound turn's nested rules are gone
                Recorded(hosted.log, hosted.outlet).emit(SessionInfo(rules))
            return result
        finally:
            hosted.undoing = False
            self.save(hosted)
            self._poke()

    # ------------------------------------------------------------- settings
    def replace_settings(self, settings: Settings) -> None:
        """New server settings: each idle session takes them now, a running one when its turn ends."""
        self.settings = settings
        for hosted in list(self.sessions.values()):
            if hosted.turn is None:
                self._refresh(hosted)
            else:
                hosted.origin.stale = True

    def change_settings(self, sent: dict[str, Any]) -> list[str]:
        """Some server settings changed (key by key, :func:`merge_settings`); each refused
        key is told with :meth:`warn` and keeps its value.

        Returns:
            One sentence per refused key.
        """
        self.redactor.add_settings(sent)
        settings, problems = merge_settings(self.settings, sent)
        for problem in problems:
            self.warn(problem)
        log.info("settings changed: %s", ", ".join(sorted(map(str, sent))) or "none")  # names only, never values
        self.replace_settings(settings)
        return problems

    async def list_models(self, hosted: Hosted | None = None) -> dict[str, Any]:
        """The models to switch to (:mod:`toolwire.agent.model_choices`): ``{"active", "models": [{"spec", "name",
        "source"}]}`` for the session (None: a new session under the server's settings)."""
        if hosted is None:
            return await self.model_choices.listing(self.settings.model, self.settings)
        return await self.model_choices.listing(hosted.session.model.model_id, hosted.session.settings)

    def known_models(self, hosted: Hosted) -> dict[str, Any]:
        """As :meth:`list_models` without asking the endpoint (its list when fetched before, else the configured)."""
        return self.model_choices.known(hosted.session.model.model_id, hosted.session.settings)

    async def set_model(self, hosted: Hosted, spec: str) -> None:
        """Answer the session's next turns with the model ``spec`` (its other settings kept).

        Raises:
            TurnRunning: a turn is running.
            SessionSpecError: (field ``model``) the spec cannot work.
        """
        self.ensure_free(hosted, "a turn is running; change the model after it ends")
        session = hosted.session
        try:
            model = model_for(spec, session.settings, session.root)
        except MODEL_ERRORS as exc:
            raise SessionSpecError("model", str(exc)) from None
        old, session.model = session.model, model
        hosted.origin.model, hosted.origin.model_key = spec, model_key(spec, session.settings)
        self.save(hosted)
        await self.close_model(old)

    def _refresh(self, hosted: Hosted) -> None:
        """Give an idle session the server's current settings (:func:`refreshed`); a replaced model is closed."""
        old = refreshed(hosted.session, hosted.origin, self.settings, self.warn)
        if hosted.mcp is not None and (stale := hosted.mcp.settings_changed()) is not None:
            self.spawn(self.mcp.detach(stale))
        if old is not None:
            self.spawn(self.close_model(old))

    def warn(self, text: str) -> None:
        """Tell the user (through the front-end) and log it, secrets removed."""
        text = self.redactor.redact(text)
        if self._warn is not None:
            self._warn(text)
        else:
            log.warning("%s", text)

    # ------------------------------------------------------------- internals
    def spawn(self, coro: Any) -> asyncio.Task:
        """Run ``coro`` as a task the host owns (kept until done; errors are logged)."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)

        def done(t: asyncio.Task) -> None:
            self._background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("background task failed: %s", t.exception())

        task.add_done_callback(done)
        return task

    def _prompted(self, hosted: Hosted, prompt: UserPrompt) -> None:
        """Log a turn's prompt; the first one gives the session its title (saved and told at once)."""
        hosted.log.append(prompt)
        journal = hosted.log.journal
        typed = next((b["text"] for b in prompt.blocks if b.get("type") == "text" and isinstance(b.get("text"), str)),
                     prompt.text)
        if journal.title is None and (title := title_of(typed)) is not None:
            journal.title = title
            self.save(hosted)
            for listener in list(self._titled):
                listener(hosted)

    def _cancel(self, hosted: Hosted, reason: CancelReason) -> None:
        if hosted.turn is not None:
            hosted.turn.cancel(reason)
        for scheduler in list(hosted.fed):
            if scheduler.scope is not None:
                scheduler.scope.cancel()

    def _external_changes(self, session: Session, paths: list[str]) -> None:
        """The watchers' report: files under ``session``'s folder changed outside the assistant
        (already noted for the model's next turn); its front-end is told."""
        hosted = self.sessions.get(session.id)
        if hosted is not None:
            outlet = Recorded(hosted.log, hosted.outlet)
            outlet.emit(WorkspaceChange(tuple(paths)))
            if (rules := session.reread_rules(paths)) is not None:  # for the next turn's prompt
                outlet.emit(SessionInfo(rules))

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def _poke(self) -> None:
        self._event().set()
        for listener in list(self._listeners):
            listener()


def _saved_root(cwd: str | Path) -> Path | None:
    """The resolved folder whose saved sessions ``cwd`` names (checked as a session's folder is:
    :func:`~toolwire.agent.opening.check_cwd`), or None when no session can be of it."""
    try:
        return check_cwd(cwd).resolve()
    except SessionSpecError:
        return None
