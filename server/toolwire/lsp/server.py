"""The ``toolwire/`` methods and the rest of LSP, on the server of :mod:`toolwire.lsp.boot`.

Imported right after ``initialize`` is answered (``ToolwireServer.after_initialize``):
the server, its ``initialize`` handler and the features that shape the capabilities
live in :mod:`toolwire.lsp.boot`, which imports nothing heavy; ``make_converter``,
``server`` and ``ToolwireServer`` are re-exported here.

Handlers are a few lines each: validate params into a pydantic model (a bad
params object gets InvalidParams naming the field), call the agent, return plain
data. Custom params reach handlers as plain dicts: :func:`make_converter` stops
pygls from turning them into namedtuples, which would mangle arbitrary keys.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from toolwire.agent.fed import FedStream, FedStreamError, run_fed_calls
from toolwire.agent.preview import PreviewError, preview_call
from toolwire.agent.events import ToolCallUpdate, WorkspaceChange
from toolwire.agent.session import Session
from toolwire.agent.turn import Turn, TurnOutcome
from toolwire.agent.turn_undo import undo_in_session
from toolwire.llm.factory import ModelSpecError, check_model_spec
from toolwire.llm.replay import ReplayScriptError
from toolwire.lsp import protocol as P
from toolwire.lsp.boot import ToolwireServer, make_converter, server  # make_converter: re-exported
from toolwire.lsp.bridge import LspApprover, LspSink
from toolwire.lsp.config import apply_configuration
from toolwire.lsp.rpc import TurnInProgress, UnknownSession, clip
from toolwire.lsp.watching import WatchHub
from toolwire.settings import parse_settings
from toolwire.streaming.state import CancelReason
from toolwire.streaming.wireform import brief_form, update_form
from toolwire.streaming.formats.registry import UnknownFormat
from toolwire.tools import default_registry
from toolwire.lsp import actions
from toolwire.lsp.progress import LongTools

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

#: Client-fed streams a session keeps; the oldest ended ones are forgotten first.
MAX_FED_STREAMS = 256


def parse(method: str, model: type[M], params: Any) -> M:
    """Validate ``params`` into ``model``, strictly: a field of the wrong JSON type is
    refused, never converted (``"end": "yes"`` or ``1`` is not ``true``, ``"3"`` is not 3).

    Raises:
        JsonRpcInvalidParams: naming every bad field.
    """
    try:
        return model.model_validate(params if params is not None else {}, strict=True)
    except ValidationError as exc:
        raise JsonRpcInvalidParams(P.describe_validation_error(method, exc)) from None


def session_of(ls: ToolwireServer, session_id: str) -> Session:
    """The session, or UnknownSession."""
    session = ls.sessions.get(session_id)
    if session is None:
        raise UnknownSession(f"unknown session {session_id!r}")
    return session


def load(ls: ToolwireServer) -> None:
    """What the server needs once its handlers are loaded: the workspace watchers."""
    ls.watchers = WatchHub(
        lambda session, paths: LspSink(ls, session.id).emit(WorkspaceChange(tuple(paths)))
    )


def finish_initialize(ls: ToolwireServer, params: types.InitializeParams | None) -> None:
    """After an ``initialize`` answer: the settings from its ``initializationOptions``.

    Refused settings (unknown keys, bad values) and a model spec that cannot work
    are reported with one ``window/showMessage`` (type Error) naming each problem;
    refused entries are not applied, the valid ones are, and the server runs on.
    """
    options = params.initialization_options if params is not None else None
    settings, problems = parse_settings(options)
    ls.settings = settings
    ls.settings_replaced()  # a client that reconnects (--socket): each session's next turn
    try:
        check_model_spec(settings.model, cwd=_root_folder(params) if params is not None else None)
    except (ModelSpecError, ReplayScriptError) as exc:
        problems.append(f"setting model: {exc}")
    if problems:
        log.warning("initializationOptions refused: %s", clip("; ".join(problems), 500))
        ls.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Error,
            message=clip("Toolwire: invalid initializationOptions, not applied: " + "; ".join(problems)),
        ))


def _root_folder(params: types.InitializeParams) -> Path | None:
    """The first workspace folder (or ``rootUri``) as a local path, if any."""
    uri = params.workspace_folders[0].uri if params.workspace_folders else params.root_uri
    if uri and uri.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return Path(unquote(urlparse(uri).path))
    return None


@server.feature(types.INITIALIZED)
def on_initialized(ls: ToolwireServer, params: types.InitializedParams) -> None:
    """``initialized``: the client can take requests (permission requests left open by a
    client that disconnected are sent to it again, see :mod:`toolwire.lsp.persist`)."""
    ls.link.initialized()


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: ToolwireServer, params: None) -> None:
    """Stop the watchers and cancel running turns (each ends its calls ``canceled``)."""
    ls.watchers.close()
    for session in ls.sessions.values():
        if session.turn is not None:
            session.turn.cancel(CancelReason.SHUTDOWN)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: ToolwireServer, params: types.DidChangeConfigurationParams) -> None:
    """``workspace/didChangeConfiguration``: new settings for each session's next turn (see protocol.md)."""
    await apply_configuration(ls, getattr(params, "settings", None))


@server.feature(P.SESSION_NEW)
async def session_new(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/new`` → ``{sessionId, model, tools}`` (see protocol.md)."""
    req = parse(P.SESSION_NEW, P.SessionNewParams, params)
    session = await ls.open_session(req.cwd, req.model, req.settings)
    return P.SessionNewResult(session_id=session.id, model=session.model.model_id,
                              tools=session.registry.names()).dump()


@server.feature(P.SESSION_PROMPT)
async def session_prompt(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/prompt``: run one turn → ``{stopReason, usage}``; a cancel answers ``cancelled``."""
    req = parse(P.SESSION_PROMPT, P.PromptParams, params)
    session = session_of(ls, req.session_id)
    if session.turn is not None:
        raise TurnInProgress()
    long_tools = LongTools(ls, lambda call_id: ls.cancel_call(session, call_id), session.root)
    turn = Turn(session, LspSink(ls, session.id, long_tools=long_tools), LspApprover(ls, session.id))
    session.turn = turn
    try:
        outcome = await turn.run(req.text())
    except asyncio.CancelledError:
        # $/cancelRequest on this request: the turn cleaned up (shielded) and
        # recorded its outcome; answer with it instead of an error.
        outcome = turn.outcome or TurnOutcome("cancelled")  # run() records it before re-raising
    finally:
        session.turn = None
        ls.turn_ended(session)
    if outcome.message:
        outcome.message = ls.redactor.redact(outcome.message)
    result = outcome.to_wire()
    P.PromptResult.model_validate(result)  # the wire model is the contract; nulls stay null
    return result


@server.feature(P.SESSION_CANCEL)
def session_cancel(ls: ToolwireServer, params: Any) -> None:
    """``toolwire/session/cancel``: cancel the session's running turn, if any."""
    req = parse(P.SESSION_CANCEL, P.SessionRef, params)
    session = ls.sessions.get(req.session_id)
    if session is not None and session.turn is not None:
        session.turn.cancel()


@server.feature(P.SESSION_CLOSE)
async def session_close(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/close`` → ``{closed}``: cancel its turn, stop watching, free it."""
    req = parse(P.SESSION_CLOSE, P.SessionRef, params)
    session = ls.sessions.pop(req.session_id, None)
    if session is None:
        return {"closed": False}
    ls.pending_permissions.pop(req.session_id, None)
    ls.origins.pop(req.session_id, None)
    if session.turn is not None:
        session.turn.cancel()
    for scheduler in list(session.fed_schedulers):  # client-fed runs in progress
        if scheduler.scope is not None:
            scheduler.scope.cancel()
    ls.watchers.detach(session)
    close = getattr(session.model, "aclose", None)
    if close is not None:
        await close()
    return {"closed": True}


@server.feature(P.TOOL_CALL_CANCEL)
def tool_call_cancel(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/toolCall/cancel`` → ``{cancelled}``: cancel one call; the turn goes on."""
    req = parse(P.TOOL_CALL_CANCEL, P.ToolCallCancelParams, params)
    session = session_of(ls, req.session_id)
    return {"cancelled": ls.cancel_call(session, req.tool_call_id)}


@server.feature(P.TOOL_CALL_PREVIEW)
async def tool_call_preview(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/toolCall/preview`` → ``{path, before, after, newPath?}`` of a pending edit call."""
    req = parse(P.TOOL_CALL_PREVIEW, P.ToolCallPreviewParams, params)
    session = session_of(ls, req.session_id)
    try:
        preview = await preview_call(session, req.tool_call_id)
    except PreviewError as exc:
        raise JsonRpcInvalidParams(f"{P.TOOL_CALL_PREVIEW}: {exc}") from None
    return P.ToolCallPreviewResult(path=preview.path, before=preview.before, after=preview.after,
                                   new_path=preview.new_path).dump()


@server.feature(P.TOOLS_LIST)
def tools_list(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/tools/list`` → ``{tools}``: the definitions and JSON Schemas the model sees."""
    return {"tools": default_registry().definitions()}


@server.feature(P.SESSION_SNAPSHOT)
def session_snapshot(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/snapshot``: the session's full state, for a reloaded panel.

    Built synchronously on the event loop, so it is consistent with the updates
    sent before it and none sent after it (see protocol.md).
    """
    req = parse(P.SESSION_SNAPSHOT, P.SessionRef, params)
    session = session_of(ls, req.session_id)
    turn = session.turn or session.last_turn
    out: dict[str, Any] = {
        "sessionId": session.id,
        "model": session.model.model_id,
        "running": session.turn is not None,
        "turnId": turn.id if turn is not None else None,
        "toolCalls": [call.to_wire() for call in turn.calls] if turn is not None else [],
        "messages": session.conversation.messages,
        "streaming": session.turn.streaming_response() if session.turn is not None else None,
        "pendingPermissions": list(ls.pending_permissions.get(session.id, {}).values()),
        "turns": [_redacted_summary(ls, record.summary()) for record in session.turn_records],
    }
    return out


def _redacted_summary(ls: ToolwireServer, summary: dict[str, Any]) -> dict[str, Any]:
    """A turn summary whose ``message`` went through the redactor, like the ``ended``
    update's and the prompt result's (a provider's error may quote the API key)."""
    if summary.get("message"):
        summary["message"] = ls.redactor.redact(summary["message"])
    return summary


@server.feature(P.TOOL_CALLS_MERGE)
def tool_calls_merge(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/toolCalls/merge``: merge client-fed chunks → ``{toolCalls, format, ended}``."""
    req = parse(P.TOOL_CALLS_MERGE, P.ToolCallsMergeParams, params)
    session = session_of(ls, req.session_id)
    sink = LspSink(ls, session.id, req.stream_id)
    stream = session.streams.get(req.stream_id)
    opening = stream is None
    if stream is None:
        stream = FedStream(req.stream_id)
    try:
        changed = stream.merge(req.chunks, sink, fmt=req.format, end=req.end)
    except (FedStreamError, UnknownFormat) as exc:  # nothing of the request was applied
        raise JsonRpcInvalidParams(f"{P.TOOL_CALLS_MERGE}: {exc}") from None
    if opening:  # a refused first batch opens no stream
        ended = [sid for sid, s in session.streams.items() if s.ended]
        for sid in ended[: max(0, len(session.streams) + 1 - MAX_FED_STREAMS)]:
            del session.streams[sid]  # forget the oldest ended streams
        session.streams[req.stream_id] = stream
    briefs = []
    for call in changed:  # the argument fields travel once, in the notifications
        session.call_ids.settle(call, f"{req.stream_id}-{call.index}")  # unique in the session from now on
        update = update_form(call)
        sink.emit(ToolCallUpdate(update))
        briefs.append(brief_form(update))
    return {"toolCalls": briefs, "format": stream.fmt, "ended": stream.ended}


@server.feature(P.TOOL_CALLS_RUN)
async def tool_calls_run(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/toolCalls/run``: run an ended fed stream's calls → ``{results}`` in call order."""
    req = parse(P.TOOL_CALLS_RUN, P.ToolCallsRunParams, params)
    session = session_of(ls, req.session_id)
    stream = session.streams.get(req.stream_id)
    if stream is None:
        raise JsonRpcInvalidParams(f"{P.TOOL_CALLS_RUN}: invalid params: streamId: unknown stream {req.stream_id!r}")
    try:
        long_tools = LongTools(ls, lambda call_id: ls.cancel_call(session, call_id), session.root)
        sink = LspSink(ls, session.id, req.stream_id, long_tools=long_tools)
        results = await run_fed_calls(session, stream, req.tool_call_ids, sink, LspApprover(ls, session.id))
    except FedStreamError as exc:
        raise JsonRpcInvalidParams(f"{P.TOOL_CALLS_RUN}: {exc}") from None
    finally:
        ls.link.poke()  # the idle rule of --socket counts running client-fed runs
    return {"results": results}


async def _undo_or_redo(ls: ToolwireServer, method: str, params: Any, *, redo: bool) -> dict[str, Any]:
    req = parse(method, P.UndoTurnParams, params)
    if redo and req.rewind:
        raise JsonRpcInvalidParams(f"{method}: invalid params: rewind: only toolwire/session/undoTurn takes it")
    session = session_of(ls, req.session_id)
    if session.turn is not None:
        raise TurnInProgress(f"{method}: a turn is running in this session; cancel it or wait for it to end")
    record = session.find_turn(req.turn_id, redo=redo)
    if record is None:
        if req.turn_id is not None:
            raise JsonRpcInvalidParams(f"{method}: invalid params: turnId: no turn {req.turn_id!r} in this session")
        what = "undone turn to redo" if redo else "turn with changes to undo"
        return P.UndoTurnResult(turn_id=None, status="nothing_to_do", message=f"There is no {what} in this session.",
                                paths=[], git=[], unmatched_force=list(dict.fromkeys(req.force))
                                ).model_dump(by_alias=True, mode="json")
    result = await undo_in_session(session, record, redo=redo, force=req.force, partial=req.partial, rewind=req.rewind)
    return P.UndoTurnResult.model_validate(result).dump() | {"turnId": result["turnId"]}


@server.feature(P.SESSION_UNDO_TURN)
async def session_undo_turn(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/undoTurn`` → ``{turnId, status, message, paths, git}`` (see protocol.md)."""
    return await _undo_or_redo(ls, P.SESSION_UNDO_TURN, params, redo=False)


@server.feature(P.SESSION_REDO_TURN)
async def session_redo_turn(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/redoTurn`` → the same shape as undoTurn, re-applying an undone turn."""
    return await _undo_or_redo(ls, P.SESSION_REDO_TURN, params, redo=True)


# textDocument/codeAction and the toolwire.runAction command shape the capabilities of the
# initialize answer: toolwire.lsp.boot registers them (the command runs this function).
async def run_action(ls: ToolwireServer, *arguments: Any) -> dict[str, Any]:
    """``workspace/executeCommand`` ``toolwire.runAction`` → ``{sessionId, turnId}``; the turn runs on."""
    if len(arguments) != 1:
        raise JsonRpcInvalidParams(f"{actions.RUN_ACTION}: expected one argument object, got {len(arguments)}")
    args = parse(actions.RUN_ACTION, P.RunActionArgs, arguments[0])
    fs_path = to_fs_path(args.uri) if args.uri.startswith("file:") else None
    if not fs_path:
        raise JsonRpcInvalidParams(f"{actions.RUN_ACTION}: invalid params: uri: {args.uri[:200]!r} is not a file: URI")
    path = Path(fs_path).resolve()
    if args.session_id is not None:
        session = session_of(ls, args.session_id)
    else:
        session = await ls.open_session(str(actions.folder_for(ls, path)), None, None)
    if session.turn is not None:
        raise TurnInProgress()
    try:
        return actions.start_action(ls, session, args, path)
    except (OSError, ValueError) as exc:  # the file or range cannot be read
        raise JsonRpcInvalidParams(f"{actions.RUN_ACTION}: cannot read {args.uri[:200]}: {exc}") from None


@server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
def work_done_progress_cancel(ls: ToolwireServer, params: types.WorkDoneProgressCancelParams) -> None:
    """``window/workDoneProgress/cancel``: a code-action turn's progress cancels the turn,
    a long tool's progress cancels that call."""
    cancel = ls.progress_cancels.pop(str(params.token), None)
    if cancel is not None:
        cancel()
