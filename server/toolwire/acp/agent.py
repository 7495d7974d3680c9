"""The ACP agent: Toolwire's sessions and turns behind the Agent Client Protocol.

Each ACP method is a few lines over the session host the LSP front-end uses too
(:class:`toolwire.agent.host.SessionHost`: sessions, turns, cancels, watchers);
the mapping of every choice is documented in protocol.md, "Agent Client Protocol
front-end". The ACP SDK (``acp``) does the framing and the schema.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    AuthenticateResponse,
    AvailableCommandsUpdate,
    CloseSessionResponse,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo as AcpSessionInfo,
    SessionInfoUpdate,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TextContentBlock,
)

from toolwire import __version__
from toolwire.acp import mapping
from toolwire.acp.commands import Command, CommandError, Compact, Continue, advertised, answer_text, parse_command
from toolwire.acp.bridge import AcpApprover, AcpDocuments, AcpSink
from toolwire.acp.cancel_requests import RequestTracker
from toolwire.acp.prompt_content import PromptContentError, prompt_images, read_links
from toolwire.acp.replay import replay_updates
from toolwire.acp.mcp_servers import marked_read_only, raw_entries
import toolwire.agent.prompt_blocks as prompt_blocks
from toolwire.agent.events import SessionWarning
from toolwire.agent.host import (TURN_ALREADY_RUNNING, HostError, Hosted, SavedSession, SessionHost,
                                 SessionSpecError, TurnRunning, UnknownSession)
from toolwire.redaction import shared as shared_redactor
from toolwire.settings import Settings
from toolwire.workspace.names import display_text

log = logging.getLogger(__name__)

#: Session modes: which permission overrides each one applies over the settings'.
MODES: dict[str, tuple[str, str, dict[str, str]]] = {
    "ask": ("Ask", "Ask before every edit, commit and branch change (the settings' policy).", {}),
    "accept_edits": ("Accept edits", "File edits run without asking; git changes still ask.", {
        "create_file": "auto", "edit_file": "auto", "multi_edit": "auto", "delete_file": "auto",
        "rename_file": "auto"}),
    "read_only": ("Read only", "Only reads and read-only git run; every change is refused.", {
        "create_file": "deny", "edit_file": "deny", "multi_edit": "deny", "delete_file": "deny",
        "rename_file": "deny", "git_add": "deny", "git_restore": "deny", "git_commit": "deny",
        "git_branch": "deny"}),
}

#: The id of the model selector in ``configOptions``.
MODEL_OPTION = "model"
#: The id of the mode selector in ``configOptions`` (the same choice as ``session/set_mode``).
MODE_OPTION = "mode"
#: The extension method cancelling one call (``_toolwire/toolCall/cancel`` on the wire:
#: the SDK strips the leading underscore before :meth:`ToolwireAcpAgent.ext_method`).
TOOL_CALL_CANCEL = "toolwire/toolCall/cancel"
#: The extension method deleting a saved session (``_toolwire/session/delete``: the SDK routes no ``session/delete``).
SESSION_DELETE = "toolwire/session/delete"


def iso_time(seconds: float) -> str:
    """An ISO 8601 UTC time (``2026-12-02T06:51:42Z``) of seconds since the epoch."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def register_mcp_secrets(servers: list[Any] | None) -> None:
    """Register the secrets of ACP ``mcpServers`` with the redactor before anything about them
    is told (those of a server left out too: they are in the request the process holds): each
    server's URL, ``headers`` and ``env`` values (``[{name, value}]``)."""
    redactor = shared_redactor()
    for server in servers or []:
        redactor.add_url(getattr(server, "url", None))
        for header in getattr(server, "headers", None) or []:
            redactor.add_header(str(getattr(header, "name", "")), getattr(header, "value", None))
        for entry in getattr(server, "env", None) or []:
            redactor.add_env(str(getattr(entry, "name", "")), getattr(entry, "value", None))


class AcpSession:
    """One ACP session: the hosted session plus its sink task and the chosen mode."""

    def __init__(self, hosted: Hosted, sink: AcpSink, documents: AcpDocuments, task: asyncio.Task) -> None:
        self.hosted = hosted
        self.core = hosted.session
        self.sink = sink
        self.documents = documents
        self.task = task
        self.mode = "ask"
        self.base_permissions = dict(self.core.settings.permissions)


class ToolwireAcpAgent:
    """Implements the ACP ``Agent`` interface of the SDK over Toolwire's core.

    Args:
        settings: Server settings (``--settings``); the model spec is ``--model`` or
            ``settings.model``.
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.host = SessionHost(settings)
        self.host.on_title(self._titled)
        self.sessions: dict[str, AcpSession] = {}
        self._conn: Any = None
        self._client_fs = (False, False)  # the client's fs.readTextFile, fs.writeTextFile
        self._advertising: set[asyncio.Task] = set()
        self.requests = RequestTracker(self.cancel_prompt)
        self._prompting: set[str] = set()  # sessions whose session/prompt is being handled
        self._cancelled_early: set[str] = set()  # sessions whose prompt was cancelled before it was handled

    def on_connect(self, conn: Any) -> None:
        """Keep the connection (the client side's methods)."""
        self._conn = conn

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kwargs: Any) -> InitializeResponse:
        """Negotiate: ACP version ``min(client's, SDK's)``; files read through the client when it
        declares ``fs.readTextFile``, written through it when it declares ``fs.writeTextFile``
        (each on its own: :class:`AcpDocuments`); MCP servers over stdio and HTTP (not SSE); saved
        sessions loaded, listed, resumed and closed; no authentication."""
        fs = getattr(client_capabilities, "fs", None)
        self._client_fs = (bool(fs and fs.read_text_file), bool(fs and fs.write_text_file))
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                session_capabilities=SessionCapabilities(list=SessionListCapabilities(),
                                                         close=SessionCloseCapabilities(),
                                                         resume=SessionResumeCapabilities()),
                prompt_capabilities=PromptCapabilities(image=True, audio=False, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True, sse=False),
            ),
            auth_methods=[],
            agent_info=Implementation(name="toolwire", title="Toolwire", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse:
        """No authentication is needed (the API key comes from the environment)."""
        return AuthenticateResponse()

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        """Open a session on ``cwd`` (absolute, an existing folder) with the editor's MCP servers.

        The stdio and HTTP servers of ``mcp_servers`` start in the background after the
        settings' (:mod:`toolwire.acp.mcp_servers`); one of another transport is left out with
        an agent message (a ``mcp_config`` warning), sent after the answer like every other
        message about the servers. The project rules files the system prompt carries are in
        ``_meta.toolwire.instructions`` (later changes: ``session_info_update`` with the same
        ``_meta``); the session's MCP servers, when it has any, in ``_meta.toolwire.mcpServers``
        (:meth:`_meta`).

        Raises:
            RequestError: invalid params naming ``cwd`` or the model.
        """
        register_mcp_secrets(mcp_servers)
        entries, refused = raw_entries(mcp_servers)
        session = await self._open(cwd, entries)
        for name, warning in refused:
            self.host.tell(session.hosted, SessionWarning("mcp_config", warning, (name,)))
        self._advertise(session.core.id)
        return NewSessionResponse(session_id=session.core.id, modes=self._modes(session),
                                  config_options=self._config(session), field_meta=self._meta(session))

    async def load_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None, **kwargs: Any) -> LoadSessionResponse:
        """Load a session (:meth:`_reopen`) and tell its history again before the answer
        (:func:`toolwire.acp.replay.replay_updates`: the updates the live session sent, the user's
        prompts as ``user_message_chunk``), then its title in a ``session_info_update``.

        Raises:
            RequestError: resource not found for a session neither open nor saved in ``cwd``;
                invalid params naming ``cwd`` or the model.
        """
        session = await self._reopen(cwd, session_id, mcp_servers)
        for update in replay_updates(self.host.history(session.hosted), session.core.root, session.sink.read_only):
            await self._conn.session_update(session_id=session_id, update=update)
        if (title := session.hosted.log.journal.title) is not None:
            await self._conn.session_update(session_id=session_id, update=SessionInfoUpdate(
                session_update="session_info_update", title=title))
        self._advertise(session_id)
        return LoadSessionResponse(modes=self._modes(session), config_options=self._config(session),
                                   field_meta=self._meta(session))

    async def resume_session(self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None,
                             additional_directories: list[str] | None = None, **kwargs: Any) -> ResumeSessionResponse:
        """``session/resume``: load a session (:meth:`_reopen`) without telling its history again.

        Raises:
            RequestError: as :meth:`load_session`.
        """
        session = await self._reopen(cwd, session_id, mcp_servers)
        self._advertise(session_id)
        return ResumeSessionResponse(modes=self._modes(session), config_options=self._config(session),
                                     field_meta=self._meta(session))

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None,
                            **kwargs: Any) -> ListSessionsResponse:
        """``session/list``: the saved sessions of ``cwd`` (of every folder without it), the most
        recently updated first, each with its title and ``updatedAt`` (``_meta.toolwire``:
        ``createdAt``, ``turns``); one page (at most 200 a folder are kept).

        Raises:
            RequestError: invalid params for a ``cwd`` that is not absolute, or a ``cursor``.
        """
        if cwd is not None and not Path(cwd).is_absolute():
            raise RequestError.invalid_params({"cwd": "an absolute path is required"})
        if cursor is not None:
            raise RequestError.invalid_params({"cursor": "no page follows: session/list answers in one page"})
        return ListSessionsResponse(sessions=[session_info(saved) for saved in self.host.list_sessions(cwd)])

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse:
        """``session/close``: cancel its turn, stop it and free it; its saved file stays (``session/load`` opens it again).

        Raises:
            RequestError: invalid params for a session that is not open.
        """
        session = self._session(session_id)
        await self.host.close(session_id)
        del self.sessions[session_id]
        session.task.cancel()
        return CloseSessionResponse()

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        """Switch the permission mode (``ask``, ``accept_edits``, ``read_only``) from the next call on;
        told as ``current_mode_update`` and ``config_option_update`` (the ``mode`` option)."""
        session = self._session(session_id)
        if mode_id not in MODES:
            raise RequestError.invalid_params({"modeId": f"unknown mode {mode_id!r}; one of {', '.join(MODES)}"})
        await self._switch_mode(session, mode_id)
        return SetSessionModeResponse()

    async def set_config_option(self, config_id: str, session_id: str, value: str | bool,
                                **kwargs: Any) -> SetSessionConfigOptionResponse:
        """``model`` selects the model for the next turn; ``mode`` is the same as ``session/set_mode``
        (``current_mode_update``, then ``config_option_update``)."""
        session = self._session(session_id)
        if config_id == MODE_OPTION and value in MODES:
            await self._switch_mode(session, str(value))
            return SetSessionConfigOptionResponse(config_options=self._config(session))
        if config_id == MODEL_OPTION and isinstance(value, str) and value in self._model_choices(session):
            try:
                await self.host.set_model(session.hosted, value)
            except (TurnRunning, SessionSpecError) as exc:
                raise RequestError.invalid_params({"value": str(exc)}) from None
        else:
            raise RequestError.invalid_params({"configId": config_id, "value": value})
        options = self._config(session)
        await self._conn.session_update(session_id=session_id, update=ConfigOptionUpdate(
            session_update="config_option_update", config_options=options))
        return SetSessionConfigOptionResponse(config_options=options)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        """Run one turn on the core; every tool call is terminal (and told) before the answer.
        A prompt ``/undo …``, ``/redo …`` or ``/compact`` is a command, not a turn (:meth:`_command`,
        :meth:`_compact`); ``/continue``
        is the next turn on the same history after one that stopped at the request cap.

        Raises:
            RequestError: unknown session, a turn already running, an empty prompt, an image
                that cannot be sent or a prompt with images when the model is not sent any
                (:meth:`SessionHost.image_refusal`), or (internal error,
                ``data.stopReason == "error"``) a model stream that failed, with its message.
        """
        session = self._session(session_id)
        hosted = session.hosted
        if session_id in self._cancelled_early:
            self._cancelled_early.discard(session_id)
            return PromptResponse(stop_reason="cancelled")
        self._prompting.add(session_id)
        try:
            return await self._prompt(session, prompt)
        finally:
            self._prompting.discard(session_id)

    async def _prompt(self, session: AcpSession, prompt: list[Any]) -> PromptResponse:
        hosted = session.hosted
        text = prompt_text(prompt, hosted.session.root)
        try:
            command = parse_command(text)
        except CommandError as exc:
            raise RequestError.invalid_params({"prompt": str(exc)}) from None
        if isinstance(command, Command):
            return await self._command(session, command)
        if isinstance(command, Compact):
            return await self._compact(session)
        try:
            self.host.ensure_free(hosted, TURN_ALREADY_RUNNING)
        except TurnRunning as exc:
            raise RequestError.invalid_request({"sessionId": str(exc)}) from None
        try:
            images = prompt_images(prompt)
        except PromptContentError as exc:
            raise RequestError.invalid_params({"prompt": str(exc)}) from None
        if images and (refusal := self.host.image_refusal(hosted)) is not None:
            raise RequestError.invalid_params({"prompt": refusal})
        text = prompt_text(await read_links(prompt, hosted.session.root, hosted.session.model_exclude(),
                                            self._client_reader(session)), hosted.session.root)
        if not text.strip():
            raise RequestError.invalid_params({"prompt": "the prompt has no text"})
        blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in prompt]
        approver = AcpApprover(self._conn, hosted.session, session.sink,
                               lambda call_id: self.host.preview(hosted, call_id), self.requests.withdrawable)
        try:
            if isinstance(command, Continue):  # the next turn on the same history, with the core's prompt
                outcome = await self.host.continue_turn(hosted, session.sink, approver, blocks, allow_excluded=True)
            else:
                # an ACP client embeds a resource only by the user's explicit choice, and ACP has no way to
                # carry the allowance: its resources are allowed (protocol.md, "Files kept from the model")
                outcome = await self.host.run_turn(hosted, text, session.sink, approver, blocks, images,
                                                   allow_excluded=True)
        except TurnRunning as exc:
            raise RequestError.invalid_request({"sessionId": str(exc)}) from None
        except HostError as exc:  # /continue after a turn that did not stop at the cap
            raise RequestError.invalid_params({"prompt": f"/continue: {exc}"}) from None
        finally:
            await session.sink.flush()
        if outcome.stop_reason == "error":
            # shown to the user: an endpoint's or a model's text with controls and bidi characters escaped
            message = display_text(outcome.message or "the model failed", keep="\n\t")
            data: dict[str, Any] = {"stopReason": "error", "message": message}
            if outcome.error_code == "no_api_key":  # the agent declares no authMethods: the message says what to do
                data["errorCode"] = outcome.error_code
                message += (" - set TOOLWIRE_API_KEY or OPENAI_API_KEY in the agent's environment, or the apiKey "
                            "setting (toolwire acp --settings)")
                data["message"] = message
            # the error's own message too: a client that shows only error.message (not data) shows why
            raise RequestError(-32603, f"Internal error: {message}", data)
        return PromptResponse(stop_reason=mapping.stop_reason(outcome.stop_reason), field_meta=turn_usage(outcome))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """``session/cancel``: the running turn ends; its prompt answers ``cancelled``."""
        self.host.cancel_turn(session_id)

    def cancel_prompt(self, session_id: str) -> None:
        """``$/cancel_request`` for an open ``session/prompt``: its turn ends as with
        ``session/cancel``; a prompt the SDK has not started yet answers ``cancelled`` when it does."""
        if session_id in self._prompting:
            self.host.cancel_turn(session_id)
        elif session_id in self.sessions:
            self._cancelled_early.add(session_id)

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Toolwire's extension requests (``_``-prefixed on the wire; the SDK strips it):
        ``toolwire/toolCall/cancel`` ``{sessionId, toolCallId}`` → ``{cancelled}``, as
        the LSP front-end's method of that name: one call is cancelled, the turn goes on;
        false for an unknown or finished call.

        Raises:
            RequestError: method not found for another name; invalid params naming
                ``sessionId`` (missing, not a string, unknown) or ``toolCallId``.
        """
        if method == SESSION_DELETE:
            return await self._delete(params)
        if method != TOOL_CALL_CANCEL:
            raise RequestError.method_not_found(f"_{method}")
        for name in ("sessionId", "toolCallId"):
            if not isinstance(params.get(name), str) or not params[name]:
                raise RequestError.invalid_params({name: "a non-empty string is required"})
        session = self._session(params["sessionId"])
        return {"cancelled": self.host.cancel_call(session.hosted, params["toolCallId"])}

    async def close(self) -> None:
        """Close every session (its turn is cancelled, its model closed) and stop the sink tasks
        (the connection closed)."""
        await self.host.close_all()
        for session in self.sessions.values():
            session.task.cancel()

    # -- helpers -----------------------------------------------------------------

    async def _delete(self, params: dict[str, Any]) -> dict[str, Any]:
        """``_toolwire/session/delete`` ``{sessionId, cwd?}`` → ``{deleted}``: close the session if it is
        open and remove its saved file; false when there was neither."""
        session_id, cwd = params.get("sessionId"), params.get("cwd")
        if not isinstance(session_id, str) or not session_id:
            raise RequestError.invalid_params({"sessionId": "a non-empty string is required"})
        if cwd is not None and not (isinstance(cwd, str) and Path(cwd).is_absolute()):
            raise RequestError.invalid_params({"cwd": "an absolute path is required"})
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.task.cancel()
        return {"deleted": await self.host.delete(session_id, cwd)}

    async def _reopen(self, cwd: str, session_id: str, mcp_servers: list[Any] | None) -> AcpSession:
        """The session ``session_id``: open in this process (it keeps the MCP servers it was opened
        with: ``mcp_servers`` is not started again), else the saved one of ``cwd`` opened again with
        ``mcp_servers`` (:meth:`SessionHost.load`: its conversation, turns, checkpoints and log)."""
        register_mcp_secrets(mcp_servers)
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        entries, refused = raw_entries(mcp_servers)
        session = await self._open(cwd, entries, session_id)
        for name, warning in refused:
            self.host.tell(session.hosted, SessionWarning("mcp_config", warning, (name,)))
        return session

    def _titled(self, hosted: Hosted) -> None:
        """The host gave a session its title: a ``session_info_update`` carries it."""
        if hosted.id in self.sessions and hosted.log.journal.title is not None:
            self._send_soon(hosted.id, SessionInfoUpdate(session_update="session_info_update",
                                                         title=hosted.log.journal.title), "session_info_update")

    async def _command(self, session: AcpSession, command: Command) -> PromptResponse:
        """``/undo`` or ``/redo``: :meth:`SessionHost.undo` with the command's options, answered
        by one agent message (the result's message and each path's outcome; the whole
        result in ``_meta.toolwire.undoResult``) and ``end_turn``. No model request, no turn.

        Raises:
            RequestError: invalid request while a turn runs (the host's refusal), invalid
                params for a turn id the session does not have.
        """
        try:
            result = await self.host.undo(session.hosted, command.turn_id, redo=command.redo, force=command.force,
                                          partial=command.partial, rewind=command.rewind)
        except TurnRunning as exc:
            raise RequestError.invalid_request({"sessionId": str(exc)}) from None
        except HostError as exc:
            raise RequestError.invalid_params({"prompt": f"{'/redo' if command.redo else '/undo'}: {exc}"}) from None
        await session.sink.flush()  # after whatever the session told before
        chunk = AgentMessageChunk(session_update="agent_message_chunk",
                                  content=TextContentBlock(type="text", text=answer_text(result)),
                                  field_meta={"toolwire": {"undoResult": result}})
        await self._conn.session_update(session_id=session.core.id, update=chunk)
        return PromptResponse(stop_reason="end_turn")

    async def _compact(self, session: AcpSession) -> PromptResponse:
        """``/compact``: :meth:`SessionHost.compact`, answered by one agent message (``compacted N results,
        about T tokens freed``; ``_meta.toolwire.compaction`` ``{compacted, tokensFreed, message}``) and
        ``end_turn``. No model request, no turn.

        Raises:
            RequestError: invalid request while a turn, an undo or a redo runs.
        """
        try:
            compaction = self.host.compact(session.hosted)
        except TurnRunning as exc:
            raise RequestError.invalid_request({"sessionId": str(exc)}) from None
        await session.sink.flush()  # after whatever the session told before
        chunk = AgentMessageChunk(session_update="agent_message_chunk",
                                  content=TextContentBlock(type="text", text=compaction.message),
                                  field_meta={"toolwire": {"compaction": compaction.to_wire()}})
        await self._conn.session_update(session_id=session.core.id, update=chunk)
        return PromptResponse(stop_reason="end_turn")

    def _advertise(self, session_id: str) -> None:
        """Send ``available_commands_update`` (``/undo``, ``/redo``, ``/compact``, ``/continue``) once the
        answer in progress is out: the task runs after the handler returns, and the SDK queues the answer
        before it."""
        self._send_soon(session_id, AvailableCommandsUpdate(session_update="available_commands_update",
                                                            available_commands=advertised()), "available_commands_update")
        self._refresh_models(session_id)

    def _send_soon(self, session_id: str, update: Any, what: str) -> None:
        """Send ``update`` from a task of its own (after the answer in progress, or the caller's step)."""
        async def send() -> None:
            try:
                await self._conn.session_update(session_id=session_id, update=update)
            except Exception as exc:  # noqa: BLE001 - the client went away
                log.warning("%s failed: %s", what, exc)

        task = asyncio.get_running_loop().create_task(send(), name=f"acp-{what}-{session_id}")
        self._advertising.add(task)
        task.add_done_callback(self._advertising.discard)

    def _meta(self, session: AcpSession) -> dict[str, Any]:
        """The answer's ``_meta``: ``{"toolwire": {"instructions", "mcpServers"?}}``, the servers
        (``[{"name", "state", "tools", "offered", "error"?}]``, as ``toolwire/tools/list`` has them)
        only when the session has any."""
        meta: dict[str, Any] = {"instructions": session.hosted.instructions()}
        servers = self.host.tool_listing(session.hosted)["mcpServers"]
        if servers:
            meta["mcpServers"] = servers
        return {"toolwire": meta}

    async def _open(self, cwd: str, mcp_servers: dict[str, dict[str, Any]], session_id: str | None = None) -> AcpSession:
        """A new session on ``cwd``, or (``session_id``) the saved one loaded (:meth:`SessionHost.load`)."""
        documents = AcpDocuments(self._conn, "", *self._client_fs, withdrawable=self.requests.withdrawable)

        def outlet(core: Any) -> AcpSink:  # the session's one sink, for its turns too
            documents.bind(core.id)
            return AcpSink(self._conn, core.id, core.root, read_only=lambda name: marked_read_only(core, name))

        try:
            if session_id is None:
                hosted = await self.host.open(cwd, None, None, documents, outlet, mcp_servers=mcp_servers)
            else:
                hosted = await self.host.load(session_id, cwd, documents, outlet, mcp_servers=mcp_servers)
        except UnknownSession:
            raise RequestError.resource_not_found(f"session:{session_id}") from None
        except SessionSpecError as exc:
            raise RequestError.invalid_params({exc.field: str(exc)}) from None
        sink = hosted.outlet
        assert isinstance(sink, AcpSink)
        task = asyncio.get_running_loop().create_task(sink.run(), name=f"acp-sink-{hosted.id}")
        session = AcpSession(hosted, sink, documents, task)
        self.sessions[hosted.id] = session
        return session

    def _client_reader(self, session: AcpSession) -> Callable[[Path], Awaitable[str]] | None:
        """Reads a file through the client (``fs/read_text_file``) when it declared ``fs.readTextFile``."""
        if not self._client_fs[0]:
            return None

        async def read(path: Path) -> str:
            with self.requests.withdrawable():
                return (await self._conn.read_text_file(session_id=session.core.id, path=str(path))).content

        return read

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": f"unknown session {session_id!r}"})
        return session

    async def _switch_mode(self, session: AcpSession, mode_id: str) -> None:
        """Apply ``mode_id`` and tell the client: ``current_mode_update``, then ``config_option_update``."""
        session.mode = mode_id
        session.core.policy.set_overrides({**session.base_permissions, **MODES[mode_id][2]})
        await self._conn.session_update(session_id=session.core.id, update=CurrentModeUpdate(
            session_update="current_mode_update", current_mode_id=mode_id))
        await self._conn.session_update(session_id=session.core.id, update=ConfigOptionUpdate(
            session_update="config_option_update", config_options=self._config(session)))

    def _modes(self, session: AcpSession) -> SessionModeState:
        return SessionModeState(current_mode_id=session.mode, available_modes=[
            SessionMode(id=mode_id, name=name, description=description)
            for mode_id, (name, description, _) in MODES.items()])

    def _model_choices(self, session: AcpSession) -> list[str]:
        return list(self._model_names(session))

    def _model_names(self, session: AcpSession) -> dict[str, str]:
        """spec → name of the models to switch to (:meth:`SessionHost.known_models`: the endpoint's
        ``GET /models`` once fetched, else the configured ones; the offline demo last)."""
        listed = self.host.known_models(session.hosted)["models"]
        names = {session.core.model.model_id: session.core.model.model_id}
        names.update((m["spec"], m["name"]) for m in listed)
        return names

    def _refresh_models(self, session_id: str) -> None:
        """Ask the endpoint for its models (:meth:`SessionHost.list_models`, bounded by ``connectTimeout``) in a
        task of its own; a list that differs from the one the answer gave is sent as ``config_option_update``."""
        session = self.sessions.get(session_id)
        if session is None:
            return
        before = self._model_choices(session)

        async def refresh() -> None:
            try:
                await self.host.list_models(session.hosted)
                if session_id in self.sessions and self._model_choices(session) != before:
                    await self._conn.session_update(session_id=session_id, update=ConfigOptionUpdate(
                        session_update="config_option_update", config_options=self._config(session)))
            except Exception as exc:  # noqa: BLE001 - the client went away
                log.warning("config_option_update (models) failed: %s", exc)

        task = asyncio.get_running_loop().create_task(refresh(), name=f"acp-models-{session_id}")
        self._advertising.add(task)
        task.add_done_callback(self._advertising.discard)

    def _config(self, session: AcpSession) -> list[SessionConfigOptionSelect]:
        """The config options: the mode selector (``category: "mode"``, the modes of :data:`MODES`), then
        the model selector."""
        current = session.core.model.model_id
        return [
            SessionConfigOptionSelect(
                type="select", id=MODE_OPTION, name="Mode", category="mode", current_value=session.mode,
                options=[SessionConfigSelectOption(value=mode_id, name=name, description=description)
                         for mode_id, (name, description, _) in MODES.items()]),
            SessionConfigOptionSelect(
                type="select", id=MODEL_OPTION, name="Model", category="model", current_value=current,
                options=[SessionConfigSelectOption(value=value, name=name)
                         for value, name in self._model_names(session).items()]),
        ]


def session_info(saved: SavedSession) -> AcpSessionInfo:
    """A saved session as ``session/list`` lists it."""
    return AcpSessionInfo(session_id=saved.session_id, cwd=saved.cwd, title=saved.title,
                          updated_at=iso_time(saved.updated),
                          field_meta={"toolwire": {"createdAt": iso_time(saved.created), "turns": saved.turns}})


def turn_usage(outcome: Any) -> dict[str, Any] | None:
    """The prompt answer's ``_meta``: ``{"toolwire": {"usage": {"inputTokens", "outputTokens",
    "totalTokens"}}}``, the turn's token totals (ACP's ``usage`` field is unstable), when the
    endpoint reported both; else None."""
    if outcome.input_tokens is None or outcome.output_tokens is None:
        return None
    return {"toolwire": {"usage": {"inputTokens": outcome.input_tokens, "outputTokens": outcome.output_tokens,
                                   "totalTokens": outcome.input_tokens + outcome.output_tokens}}}


def prompt_text(blocks: list[Any], root: Path) -> str:
    """The prompt as the model reads it: the core's one prompt-block model
    (:func:`toolwire.agent.prompt_blocks.model_text`: text as it is, embedded resources, and the
    resource links :func:`toolwire.acp.prompt_content.read_links` read, as the file's path, lines and
    fenced text; other links named); images are left out (they are the message's image parts:
    :func:`toolwire.acp.prompt_content.prompt_images`); audio is not accepted (the agent does not
    declare it)."""
    try:
        parsed = prompt_blocks.parse_blocks(prompt_json(blocks))
    except prompt_blocks.PromptBlockError as exc:
        raise RequestError.invalid_params({"prompt": str(exc)}) from None
    return prompt_blocks.model_text(parsed, root)


def prompt_json(blocks: list[Any]) -> list[dict[str, Any]]:
    """ACP content blocks as JSON (camelCase), a binary resource as a text block naming it."""
    out = []
    for block in blocks:
        data = block.model_dump(mode="json", by_alias=True, exclude_none=True)
        resource = data.get("resource") if data.get("type") == "resource" else None
        if isinstance(resource, dict) and not isinstance(resource.get("text"), str):
            data = {"type": "text", "text": f"[attached binary resource {resource.get('uri')}: not readable as text]"}
        out.append(data)
    return out


__all__ = ["ToolwireAcpAgent", "iso_time", "prompt_text", "session_info"]
