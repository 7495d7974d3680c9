"""The ``toolwire/`` methods and the rest of LSP, on the server of :mod:`toolwire.lsp.boot`.

Imported right after ``initialize`` is answered (``ToolwireServer.after_initialize``
runs :func:`toolwire.lsp.main.load_handlers`; this module is its :class:`~toolwire.lsp.boot.Handlers`):
the server, its ``initialize`` handler and the features that shape the capabilities
live in :mod:`toolwire.lsp.boot`, which imports nothing heavy; ``server`` and
``ToolwireServer`` are re-exported here.

Handlers are a few lines each: validate params into a pydantic model (a bad
params object gets InvalidParams naming the field), call the agent, return plain
data. Custom params reach handlers as plain dicts: :func:`toolwire.rpc.protocol.make_converter` stops
pygls from turning them into namedtuples, which would mangle arbitrary keys.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types
from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams
from pygls.uris import to_fs_path

import toolwire.agent.prompt_blocks as prompt_blocks
from toolwire.agent.host import (FedStreamError, Hosted, HostError, KeptFromModel, PreviewError, SessionHost,
                                 SessionSpecError, TurnRunning)
from toolwire.agent.host import UnknownSession as NoSuchSession
from toolwire.llm.factory import ModelSpecError, check_model_spec
from toolwire.llm.replay import ReplayScriptError
from toolwire.lsp.messages import ToolsListParams, ToolsListResult
from toolwire.lsp import action_messages as A
from toolwire.lsp import protocol as P
from toolwire.lsp import undo_messages as U
from toolwire.lsp.boot import ToolwireServer, server
from toolwire.lsp.bridge import LspApprover, LspSink
from toolwire.lsp.config import apply_configuration, warn
from toolwire.lsp.documents import LspDocuments
from toolwire.rpc.errors import TurnInProgress, UnknownSession, clip
from toolwire.settings import Settings, parse_settings
from toolwire.streaming.state import CancelReason
from toolwire.lsp.call_wire import brief_form, snapshot_form
from toolwire.streaming.formats.registry import UnknownFormat
from toolwire.lsp.editor_link import LspEditorLink, declared_features, diagnostics_changed
from toolwire.tools.editor_intel import DiagnosticsFeed
from toolwire.tools.listing import find_files
from toolwire.workspace.errors import ToolError
from toolwire.workspace.model_exclude import withheld
from toolwire.lsp import actions
from toolwire.lsp.progress import LongTools

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)


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


def session_of(ls: ToolwireServer, session_id: str) -> Hosted:
    """The hosted session, or UnknownSession."""
    hosted = ls.host.sessions.get(session_id)
    if hosted is None:
        raise UnknownSession(f"unknown session {session_id!r}")
    return hosted


def mcp_servers(ls: ToolwireServer, hosted: Hosted) -> list[dict[str, Any]]:
    """The session's MCP servers now (``[{name, state, tools, offered, error?}]``), as
    ``toolwire/tools/list`` gives them."""
    return ls.host.tool_listing(hosted, declared_features(ls))["mcpServers"]


def load(ls: ToolwireServer) -> None:
    """What the server needs once its handlers are loaded: the session host (its
    warnings are ``window/showMessage``; the idle rule of ``--socket`` follows its activity)."""
    ls.host = SessionHost(Settings(), warn=lambda text: warn(ls, text), redactor=ls.redactor)
    ls.editor_feed = DiagnosticsFeed()
    ls.host.on_activity(ls.link.poke)


async def open_session(ls: ToolwireServer, method: str, cwd: str, model: str | None,
                       overrides: dict[str, Any] | None) -> Hosted:
    """Open a session (``toolwire/session/new``, a code action without a session).

    Raises:
        JsonRpcInvalidParams: naming ``cwd``, ``model`` or ``settings``.
    """
    documents = LspDocuments(ls)
    try:
        hosted = await ls.host.open(cwd, model, overrides, documents, lambda session: LspSink(ls, session.id),
                                    LspEditorLink(ls, documents))
    except SessionSpecError as exc:
        raise JsonRpcInvalidParams(f"{method}: invalid params: {exc.field}: {exc}") from None
    documents.session_id = hosted.id
    return hosted


def finish_initialize(ls: ToolwireServer, params: types.InitializeParams | None) -> None:
    """After an ``initialize`` answer: the settings from its ``initializationOptions``.

    Refused settings (unknown keys, bad values) and a model spec that cannot work
    are reported with one ``window/showMessage`` (type Error) naming each problem;
    refused entries are not applied, the valid ones are, and the server runs on.
    """
    options = params.initialization_options if params is not None else None
    settings, problems = parse_settings(options)
    ls.host.replace_settings(settings)  # a client that reconnects (--socket): each session's next turn
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
    ls.host.watchers.close()
    ls.host.cancel_all(CancelReason.SHUTDOWN)


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: ToolwireServer, params: types.DidChangeConfigurationParams) -> None:
    """``workspace/didChangeConfiguration``: new settings for each session's next turn (see protocol.md)."""
    await apply_configuration(ls, getattr(params, "settings", None))


@server.feature(P.EDITOR_DIAGNOSTICS_CHANGED)
def editor_diagnostics_changed(ls: ToolwireServer, params: Any) -> None:
    """``toolwire/editor/diagnosticsChanged``: the files whose problems changed (see protocol.md)."""
    diagnostics_changed(ls, params)


@server.feature(P.SESSION_NEW)
async def session_new(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/new`` → ``{sessionId, model, tools, instructions}`` (see protocol.md)."""
    req = parse(P.SESSION_NEW, P.SessionNewParams, params)
    hosted = await open_session(ls, P.SESSION_NEW, req.cwd, req.model, req.settings)
    session = hosted.session
    return P.SessionNewResult(session_id=session.id, model=session.model.model_id, tools=session.registry.names(),
                              instructions=hosted.instructions(), mcp_servers=mcp_servers(ls, hosted)).dump()


@server.feature(P.SESSION_LIST)
def session_list(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/list`` → ``{sessions}``: the saved sessions of ``cwd`` (every folder's without it)."""
    req = parse(P.SESSION_LIST, P.SessionListParams, params)
    if req.cwd is not None and not Path(req.cwd).is_absolute():
        raise JsonRpcInvalidParams(f"{P.SESSION_LIST}: invalid params: cwd: an absolute path is required")
    saved = ls.host.list_sessions(req.cwd)
    return P.SessionListResult(sessions=[P.SavedSessionWire(
        session_id=s.session_id, cwd=s.cwd, title=s.title, created=s.created, updated=s.updated,
        updated_at=s.updated, turns=s.turns)
        for s in saved]).dump()


@server.feature(P.SESSION_LOAD)
async def session_load(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/load`` → as ``toolwire/session/new``: the open session, else the saved one opened again."""
    req = parse(P.SESSION_LOAD, P.SessionLoadParams, params)
    documents = LspDocuments(ls)
    try:
        hosted = await ls.host.load(req.session_id, req.cwd, documents, lambda session: LspSink(ls, session.id),
                                    LspEditorLink(ls, documents), folders=workspace_folders(ls))
    except NoSuchSession as exc:
        raise UnknownSession(str(exc)) from None
    except SessionSpecError as exc:
        raise JsonRpcInvalidParams(f"{P.SESSION_LOAD}: invalid params: {exc.field}: {exc}") from None
    documents.session_id = hosted.id
    session = hosted.session
    return P.SessionNewResult(session_id=session.id, model=session.model.model_id, tools=session.registry.names(),
                              instructions=hosted.instructions(), mcp_servers=mcp_servers(ls, hosted)).dump()


def workspace_folders(ls: ToolwireServer) -> list[str]:
    """The client's workspace folders (then the root it gave), as paths."""
    folders = [to_fs_path(f.uri) for f in ls.workspace.folders.values()] + [ls.workspace.root_path]
    return list(dict.fromkeys(f for f in folders if f))


@server.feature(P.SESSION_DELETE)
async def session_delete(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/delete`` → ``{deleted}``: close the session if open and remove its saved file;
    a session running a turn is refused (-31001)."""
    req = parse(P.SESSION_DELETE, P.SessionDeleteParams, params)
    if req.cwd is not None and not Path(req.cwd).is_absolute():
        raise JsonRpcInvalidParams(f"{P.SESSION_DELETE}: invalid params: cwd: an absolute path is required")
    try:
        deleted = await ls.host.delete(req.session_id, req.cwd, refuse_running=True)
    except TurnRunning as exc:
        raise TurnInProgress(str(exc)) from None
    ls.pending_permissions.pop(req.session_id, None)
    return P.SessionDeleteResult(deleted=deleted).dump()


@server.feature(P.SESSION_SET_MODEL)
async def session_set_model(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/setModel`` → ``{model}``: the session's next turns use the model spec
    (:meth:`SessionHost.set_model`, as ACP's ``model`` option); refused while a turn runs (-31001)."""
    req = parse(P.SESSION_SET_MODEL, P.SessionSetModelParams, params)
    hosted = session_of(ls, req.session_id)
    try:
        await ls.host.set_model(hosted, req.model)
    except TurnRunning as exc:
        raise TurnInProgress(str(exc)) from None
    except SessionSpecError as exc:
        raise JsonRpcInvalidParams(f"{P.SESSION_SET_MODEL}: invalid params: {exc.field}: {exc}") from None
    return P.SessionSetModelResult(model=hosted.session.model.model_id).dump()


@server.feature(P.MODELS_LIST)
async def models_list(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/models/list`` → ``{active, models}``: the models to switch to (see protocol.md)."""
    req = parse(P.MODELS_LIST, P.ModelsListParams, params)
    hosted = session_of(ls, req.session_id) if req.session_id is not None else None
    return P.ModelsListResult.model_validate(await ls.host.list_models(hosted)).dump()


@server.feature(P.SESSION_PROMPT)
async def session_prompt(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/prompt``: run one turn → ``{stopReason, usage}``; a cancel answers ``cancelled``."""
    req = parse(P.SESSION_PROMPT, P.PromptParams, params)
    hosted = session_of(ls, req.session_id)
    root = hosted.session.root
    sent = req.blocks()
    try:
        blocks = prompt_blocks.parse_blocks(sent)
    except prompt_blocks.PromptBlockError as exc:
        raise JsonRpcInvalidParams(f"{P.SESSION_PROMPT}: invalid params: {exc}") from None
    text = prompt_blocks.model_text(blocks, root)
    if not text.strip():
        raise JsonRpcInvalidParams(f"{P.SESSION_PROMPT}: invalid params: prompt: the prompt has no text")
    attached = any(not isinstance(b, prompt_blocks.TextBlock) for b in blocks)
    long_tools = LongTools(ls, lambda call_id: ls.host.cancel_call(hosted, call_id), root)
    try:
        # a $/cancelRequest on this request cancels the turn: it answers ``cancelled``
        outcome = await ls.host.run_turn(hosted, text, LspSink(ls, hosted.id, long_tools=long_tools),
                                         LspApprover(ls, hosted.id), blocks=sent if attached else (),
                                         shown=prompt_blocks.shown_text(blocks, root) if attached else None)
    except TurnRunning as exc:  # the host's words: a turn, or an undo, holds the slot
        raise TurnInProgress(str(exc)) from None
    except KeptFromModel as exc:  # the user's word for this prompt, or nothing of the file is sent (protocol.md)
        named = "; ".join(withheld(rel, pattern) for rel, pattern in exc.kept)
        raise JsonRpcInvalidParams(f"{P.SESSION_PROMPT}: invalid params: prompt: {named}: its text is sent only "
                                   'when the user allows it for this prompt (_meta.toolwire.allowExcluded on its '
                                   "block); nothing was sent") from None
    result = outcome.to_wire()
    P.PromptResult.model_validate(result)  # the wire model is the contract; nulls stay null
    return result


@server.feature(P.WORKSPACE_FIND_FILES)
async def workspace_find_files(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/workspace/findFiles`` → ``{files: [{path, open}]}``: the session's workspace files
    matching ``query``, fuzzy, best first (see protocol.md)."""
    req = parse(P.WORKSPACE_FIND_FILES, P.FindFilesParams, params)
    hosted = session_of(ls, req.session_id)
    try:
        files = await find_files(hosted.session.tool_context(), req.query, req.limit)
    except ToolError as exc:  # the listing engine failed
        raise JsonRpcInternalError(f"{P.WORKSPACE_FIND_FILES}: {exc.message}") from None
    return P.FindFilesResult(files=files).dump()


@server.feature(P.SESSION_CONTINUE)
async def session_continue(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/continue``: after a turn that stopped at the request cap, run the next turn
    with the continue prompt on the same history → ``{stopReason, usage}`` (see protocol.md)."""
    req = parse(P.SESSION_CONTINUE, P.SessionRef, params)
    hosted = session_of(ls, req.session_id)
    long_tools = LongTools(ls, lambda call_id: ls.host.cancel_call(hosted, call_id), hosted.session.root)
    try:
        outcome = await ls.host.continue_turn(hosted, LspSink(ls, hosted.id, long_tools=long_tools),
                                              LspApprover(ls, hosted.id))
    except TurnRunning as exc:
        raise TurnInProgress(str(exc)) from None
    except HostError as exc:
        raise JsonRpcInvalidParams(f"{P.SESSION_CONTINUE}: invalid params: {exc.field}: {exc}") from None
    result = outcome.to_wire()
    P.PromptResult.model_validate(result)
    return result


@server.feature(P.SESSION_CANCEL)
def session_cancel(ls: ToolwireServer, params: Any) -> None:
    """``toolwire/session/cancel``: cancel the session's running turn, if any."""
    req = parse(P.SESSION_CANCEL, P.SessionRef, params)
    ls.host.cancel_turn(req.session_id)


@server.feature(P.SESSION_CLOSE)
async def session_close(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/close`` → ``{closed}``: cancel its turn, stop watching, free it."""
    req = parse(P.SESSION_CLOSE, P.SessionRef, params)
    ls.pending_permissions.pop(req.session_id, None)
    return {"closed": await ls.host.close(req.session_id)}


@server.feature(P.SESSION_COMPACT)
def session_compact(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/compact`` → ``{compacted, tokensFreed, message}``: the tool results older
    than the last turn replaced by the context-fitting note; not a turn (refused while one runs)."""
    req = parse(P.SESSION_COMPACT, P.SessionRef, params)
    try:
        return ls.host.compact(session_of(ls, req.session_id)).to_wire()
    except TurnRunning as exc:
        raise TurnInProgress(str(exc)) from None


@server.feature(P.TOOL_CALL_CANCEL)
def tool_call_cancel(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/toolCall/cancel`` → ``{cancelled}``: cancel one call; the turn goes on."""
    req = parse(P.TOOL_CALL_CANCEL, P.ToolCallCancelParams, params)
    return {"cancelled": ls.host.cancel_call(session_of(ls, req.session_id), req.tool_call_id)}


@server.feature(P.TOOL_CALL_PREVIEW)
async def tool_call_preview(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/toolCall/preview`` → ``{path, before, after, newPath?}`` of a pending edit call."""
    req = parse(P.TOOL_CALL_PREVIEW, P.ToolCallPreviewParams, params)
    hosted = session_of(ls, req.session_id)
    try:
        preview = await ls.host.preview(hosted, req.tool_call_id)
    except PreviewError as exc:
        raise JsonRpcInvalidParams(f"{P.TOOL_CALL_PREVIEW}: {exc}") from None
    return P.ToolCallPreviewResult(path=preview.path, before=preview.before, after=preview.after,
                                   new_path=preview.new_path).dump()


@server.feature(P.TOOLS_LIST)
def tools_list(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/tools/list`` → ``{tools, count, maxTools, leftOut, mcpServers}``: the definitions,
    JSON Schemas and sources one model request offers, under the server's ``maxTools`` (with
    ``sessionId``: the session's, its MCP tools and servers included)."""
    req = parse(P.TOOLS_LIST, ToolsListParams, params or {})
    hosted = session_of(ls, req.session_id) if req.session_id is not None else None
    listing = ls.host.tool_listing(hosted, declared_features(ls))
    return ToolsListResult.model_validate(listing).dump()


@server.feature(P.SESSION_SNAPSHOT)
def session_snapshot(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/snapshot``: the session's full state, for a reloaded panel.

    Built synchronously on the event loop, so it is consistent with the updates
    sent before it and none sent after it (see protocol.md).
    """
    req = parse(P.SESSION_SNAPSHOT, P.SessionRef, params)
    hosted = session_of(ls, req.session_id)
    state = ls.host.snapshot(hosted)
    return {
        "sessionId": state.session_id,
        "model": state.model_id,
        "running": state.running,
        "turnId": state.turn_id,
        "toolCalls": [snapshot_form(call) for call in state.calls],
        "messages": state.messages,
        "streaming": state.streaming,
        "pendingPermissions": list(ls.pending_permissions.get(state.session_id, {}).values()),
        "turns": state.turns,
        "instructions": state.instructions,
        "warnings": [P.warning_form(warning) for warning in state.warnings],
        "mcpServers": mcp_servers(ls, hosted),
    }


@server.feature(P.TOOL_CALLS_MERGE)
def tool_calls_merge(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/toolCalls/merge``: merge client-fed chunks → ``{toolCalls, format, ended}``."""
    req = parse(P.TOOL_CALLS_MERGE, P.ToolCallsMergeParams, params)
    hosted = session_of(ls, req.session_id)
    try:
        stream, updates = ls.host.merge(hosted, req.stream_id, req.chunks, LspSink(ls, hosted.id, req.stream_id),
                                        fmt=req.format, end=req.end)
    except (FedStreamError, UnknownFormat) as exc:  # nothing of the request was applied
        raise JsonRpcInvalidParams(f"{P.TOOL_CALLS_MERGE}: {exc}") from None
    # the argument fields travel once, in the notifications
    return {"toolCalls": [brief_form(update) for update in updates], "format": stream.fmt,
            "ended": stream.ended}


@server.feature(P.TOOL_CALLS_RUN)
async def tool_calls_run(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/toolCalls/run``: run an ended fed stream's calls → ``{results}`` in call order."""
    req = parse(P.TOOL_CALLS_RUN, P.ToolCallsRunParams, params)
    hosted = session_of(ls, req.session_id)
    long_tools = LongTools(ls, lambda call_id: ls.host.cancel_call(hosted, call_id), hosted.session.root)
    sink = LspSink(ls, hosted.id, req.stream_id, long_tools=long_tools)
    try:
        results = await ls.host.run_fed(hosted, req.stream_id, req.tool_call_ids, sink, LspApprover(ls, hosted.id))
    except HostError as exc:
        raise JsonRpcInvalidParams(f"{P.TOOL_CALLS_RUN}: invalid params: {exc.field}: {exc}") from None
    except FedStreamError as exc:
        raise JsonRpcInvalidParams(f"{P.TOOL_CALLS_RUN}: {exc}") from None
    return {"results": results}


async def _undo_or_redo(ls: ToolwireServer, method: str, params: Any, *, redo: bool) -> dict[str, Any]:
    req = parse(method, U.UndoTurnParams, params)
    if redo and req.rewind:
        raise JsonRpcInvalidParams(f"{method}: invalid params: rewind: only toolwire/session/undoTurn takes it")
    hosted = session_of(ls, req.session_id)
    try:
        result = await ls.host.undo(hosted, req.turn_id, redo=redo, force=req.force, partial=req.partial,
                                    rewind=req.rewind)
    except TurnRunning as exc:
        raise TurnInProgress(f"{method}: {exc}") from None
    except HostError as exc:
        raise JsonRpcInvalidParams(f"{method}: invalid params: {exc.field}: {exc}") from None
    return U.UndoTurnResult.model_validate(result).dump() | {"turnId": result["turnId"]}


@server.feature(P.SESSION_UNDO_TURN)
async def session_undo_turn(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/undoTurn`` → ``{turnId, status, message, paths, git}`` (see protocol.md)."""
    return await _undo_or_redo(ls, P.SESSION_UNDO_TURN, params, redo=False)


@server.feature(P.SESSION_REDO_TURN)
async def session_redo_turn(ls: ToolwireServer, params: Any) -> dict[str, Any]:
    """``toolwire/session/redoTurn`` → the same shape as undoTurn, re-applying an undone turn."""
    return await _undo_or_redo(ls, P.SESSION_REDO_TURN, params, redo=True)


# textDocument/codeAction and the toolwire.runAction command shape the capabilities of the
# initialize answer: toolwire.lsp.boot registers them, and they run these two functions.
code_actions = actions.code_actions

async def run_action(ls: ToolwireServer, *arguments: Any) -> dict[str, Any]:
    """``workspace/executeCommand`` ``toolwire.runAction`` → ``{sessionId, turnId}``; the turn runs on."""
    if len(arguments) != 1:
        raise JsonRpcInvalidParams(f"{actions.RUN_ACTION}: expected one argument object, got {len(arguments)}")
    args = parse(actions.RUN_ACTION, A.RunActionArgs, arguments[0])
    fs_path = to_fs_path(args.uri) if args.uri.startswith("file:") else None
    if not fs_path:
        raise JsonRpcInvalidParams(f"{actions.RUN_ACTION}: invalid params: uri: {args.uri[:200]!r} is not a file: URI")
    path = Path(fs_path).resolve()
    if args.session_id is not None:
        hosted = session_of(ls, args.session_id)
    else:
        hosted = await open_session(ls, P.SESSION_NEW, str(actions.folder_for(ls, path)), None, None)
    try:
        ls.host.ensure_free(hosted, TurnInProgress.MESSAGE)  # before the file is read: a busy session is the answer
    except TurnRunning as exc:
        raise TurnInProgress(str(exc)) from None
    try:
        return actions.start_action(ls, hosted, args, path)
    except KeptFromModel as exc:  # the host's refusal, with how to send it (protocol.md, "Code actions")
        named = "; ".join(withheld(rel, pattern) for rel, pattern in exc.kept)
        raise JsonRpcInvalidParams(f"{actions.RUN_ACTION}: invalid params: {named}: a code action does not send "
                                   "its text; attach it in the Toolwire panel (which asks first), or run the action "
                                   'with "allowExcluded": true; nothing was sent') from None
    except (OSError, ValueError) as exc:  # the file or range cannot be read
        raise JsonRpcInvalidParams(f"{actions.RUN_ACTION}: cannot read {args.uri[:200]}: {exc}") from None


@server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
def work_done_progress_cancel(ls: ToolwireServer, params: types.WorkDoneProgressCancelParams) -> None:
    """``window/workDoneProgress/cancel``: a code-action turn's progress cancels the turn,
    a long tool's progress cancels that call."""
    cancel = ls.progress_cancels.pop(str(params.token), None)
    if cancel is not None:
        cancel()
