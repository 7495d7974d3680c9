"""The ``toolwire/`` wire protocol: method names and pydantic models of every payload.

This module is the single source of truth for the custom protocol; protocol.md and
the VS Code client's TypeScript types follow it (a test checks protocol.md names
every method here). Payload shapes follow Zed's Agent Client Protocol (session,
prompt, update, request-permission) so an ACP front-end can be added later.
Fields are camelCase on the wire. The models of some areas live beside this module:
:mod:`toolwire.lsp.messages` (results and notifications), ``editor_messages`` (the
editor's intelligence), ``undo_messages`` (undoTurn / redoTurn), ``action_messages``
(the ``toolwire.runAction`` command).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, field_validator
from pydantic.alias_generators import to_camel

from toolwire.agent.events import (AgentEvent, McpServerChanged, MessageChunk, PlanUpdate, SessionInfo, SessionWarning,
                                   ToolCallChanged, TurnUpdate, UsageUpdate, WorkspaceChange)
from toolwire.lsp.call_wire import update_form
from toolwire.rpc.invalid import describe_validation_error  # noqa: F401 - re-exported for handlers

SESSION_NEW = "toolwire/session/new"
SESSION_PROMPT = "toolwire/session/prompt"
SESSION_CONTINUE = "toolwire/session/continue"
SESSION_CANCEL = "toolwire/session/cancel"
SESSION_CLOSE = "toolwire/session/close"
SESSION_COMPACT = "toolwire/session/compact"
SESSION_SNAPSHOT = "toolwire/session/snapshot"
SESSION_LIST = "toolwire/session/list"
SESSION_LOAD = "toolwire/session/load"
SESSION_DELETE = "toolwire/session/delete"
SESSION_SET_MODEL = "toolwire/session/setModel"
MODELS_LIST = "toolwire/models/list"
WORKSPACE_FIND_FILES = "toolwire/workspace/findFiles"
SESSION_UPDATE = "toolwire/session/update"
REQUEST_PERMISSION = "toolwire/session/requestPermission"
TOOL_CALL_CANCEL = "toolwire/toolCall/cancel"
TOOLS_LIST = "toolwire/tools/list"
TOOL_CALLS_MERGE = "toolwire/toolCalls/merge"
TOOL_CALLS_RUN = "toolwire/toolCalls/run"
TOOL_CALL_PREVIEW = "toolwire/toolCall/preview"
SESSION_UNDO_TURN = "toolwire/session/undoTurn"  # models in toolwire.lsp.undo_messages
SESSION_REDO_TURN = "toolwire/session/redoTurn"
# the editor's intelligence (models in toolwire.lsp.editor_messages)
EDITOR_DIAGNOSTICS = "toolwire/editor/diagnostics"
EDITOR_SYMBOLS = "toolwire/editor/symbols"
EDITOR_DEFINITION = "toolwire/editor/definition"
EDITOR_REFERENCES = "toolwire/editor/references"
EDITOR_DIAGNOSTICS_CHANGED = "toolwire/editor/diagnosticsChanged"

#: Every custom method, with its direction and kind (documented in protocol.md).
METHODS: dict[str, tuple[str, str]] = {
    SESSION_NEW: ("client→server", "request"),
    SESSION_PROMPT: ("client→server", "request"),
    SESSION_CONTINUE: ("client→server", "request"),
    SESSION_CANCEL: ("client→server", "notification"),
    SESSION_CLOSE: ("client→server", "request"),
    SESSION_COMPACT: ("client→server", "request"),
    SESSION_SNAPSHOT: ("client→server", "request"),
    SESSION_LIST: ("client→server", "request"),
    SESSION_LOAD: ("client→server", "request"),
    SESSION_DELETE: ("client→server", "request"),
    SESSION_SET_MODEL: ("client→server", "request"),
    MODELS_LIST: ("client→server", "request"),
    WORKSPACE_FIND_FILES: ("client→server", "request"),
    TOOL_CALL_CANCEL: ("client→server", "request"),
    TOOL_CALL_PREVIEW: ("client→server", "request"),
    TOOLS_LIST: ("client→server", "request"),
    TOOL_CALLS_MERGE: ("client→server", "request"),
    TOOL_CALLS_RUN: ("client→server", "request"),
    SESSION_UNDO_TURN: ("client→server", "request"),
    SESSION_REDO_TURN: ("client→server", "request"),
    SESSION_UPDATE: ("server→client", "notification"),
    REQUEST_PERMISSION: ("server→client", "request"),
    EDITOR_DIAGNOSTICS: ("server→client", "request"),
    EDITOR_SYMBOLS: ("server→client", "request"),
    EDITOR_DEFINITION: ("server→client", "request"),
    EDITOR_REFERENCES: ("server→client", "request"),
    EDITOR_DIAGNOSTICS_CHANGED: ("client→server", "notification"),
}


class Wire(BaseModel):
    """Base of every payload model: camelCase aliases, unknown fields ignored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def dump(self) -> dict[str, Any]:
        """The JSON object sent on the wire."""
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)


class SessionNewParams(Wire):
    """``toolwire/session/new`` params.

    ``cwd`` is the absolute path of the workspace folder; ``model`` overrides the
    server's default model spec; ``settings`` overrides settings for this session.
    """

    cwd: str = Field(min_length=1)
    model: str | None = None
    settings: dict[str, Any] | None = None


class InstructionsFile(Wire):
    """A project rules file the model is given (``AGENTS.md`` and its cousins; protocol.md,
    "Project rules"): ``path`` workspace-relative, ``bytes`` the size of its whole text (UTF-8),
    ``truncated`` when only part of it reached the model (32 KiB in all)."""

    path: str
    bytes: int
    truncated: bool


#: An MCP server's state (:data:`toolwire.mcp.status.ServerState`).
McpServerState = Literal["starting", "ready", "failed", "stopped"]


class McpServerStatusWire(Wire):
    """One MCP server of a session (protocol.md, "MCP servers"): its state, how many tools it
    lists (after its ``tools`` allowlist; 0 unless ``ready``), how many of them the model is
    offered (under ``maxTools``), and why it failed (``error``, secrets removed). The other
    MCP models are in :mod:`toolwire.lsp.mcp_messages`."""

    name: str
    state: McpServerState
    tools: int
    offered: int
    error: str | None = None


class SessionNewResult(Wire):
    """``toolwire/session/new`` result: the session id, the model spec in use, the tool names,
    the project rules files the system prompt carries (``instructions``, the root one), the
    session's MCP servers as they are when it answers (``mcpServers``; later changes are
    ``mcp_server`` updates)."""

    session_id: str
    model: str
    tools: list[str]
    instructions: list[InstructionsFile]
    mcp_servers: list[McpServerStatusWire] = Field(default_factory=list)


class SessionListParams(Wire):
    """``toolwire/session/list`` params: the workspace folder whose saved sessions are listed
    (absolute); absent for every folder's."""

    cwd: str | None = Field(None, min_length=1)


class SavedSessionWire(Wire):
    """A saved session (protocol.md, "Saved sessions"): its id and folder, its title (from its first
    prompt; null before one set it), when it was created and last saved (seconds since the epoch;
    ``updatedAt`` is ``updated`` again, the name ACP's list uses), how many turns it ran."""

    session_id: str
    cwd: str
    title: str | None
    created: float
    updated: float
    updated_at: float
    turns: int


class SessionListResult(Wire):
    """``toolwire/session/list`` result: the saved sessions, the most recently updated first."""

    sessions: list[SavedSessionWire]


class SessionLoadParams(Wire):
    """``toolwire/session/load`` params: a saved (or open) session of the folder ``cwd`` (absent:
    the open session of that id, else the first workspace folder of the server that saved it)."""

    session_id: str = Field(min_length=1)
    cwd: str | None = Field(None, min_length=1)


class SessionDeleteParams(Wire):
    """``toolwire/session/delete`` params: a session of the folder ``cwd`` (absent: of whichever folder has it)."""

    session_id: str = Field(min_length=1)
    cwd: str | None = Field(None, min_length=1)


class SessionDeleteResult(Wire):
    """``toolwire/session/delete`` result: whether a session (open or saved) was there to delete."""

    deleted: bool


class SessionSetModelParams(Wire):
    """``toolwire/session/setModel`` params: the session and the model spec its next turns use
    (the specs of ``toolwire/session/new``'s ``model``)."""

    session_id: str = Field(min_length=1)
    model: str = Field(min_length=1)


class SessionSetModelResult(Wire):
    """``toolwire/session/setModel`` result: the model spec the session now uses."""

    model: str


class ModelsListParams(Wire):
    """``toolwire/models/list`` params: the session whose model is ``active`` (absent: the server's settings)."""

    session_id: str | None = Field(None, min_length=1)


class ModelChoiceWire(Wire):
    """A model to switch to: its spec (what ``toolwire.selectModel`` and ``session/new`` take), a name
    to show, and where it came from: ``endpoint`` (its ``GET /models``), ``configured`` (the settings),
    ``builtin`` (``replay``, the offline demo)."""

    spec: str
    name: str
    source: Literal["endpoint", "configured", "builtin"]


class ModelsListResult(Wire):
    """``toolwire/models/list`` result: the active model's spec and the models to switch to."""

    active: str
    models: list[ModelChoiceWire]


class TextBlock(Wire):
    """An ACP text content block."""

    type: Literal["text"]
    text: str


class PositionWire(Wire):
    """An LSP ``Position`` (0-based line, character)."""

    line: int = Field(ge=0)
    character: int = Field(ge=0)


class RangeWire(Wire):
    """An LSP ``Range``."""

    start: PositionWire
    end: PositionWire


class TextResourceWire(Wire):
    """The text of a file attached to a prompt: ``uri`` (``file://``, or the editor's URI of an unsaved
    buffer), ``text`` (the buffer's, saved or not: the whole file, or the prompt block's ``range``),
    ``mimeType`` (:data:`toolwire.agent.prompt_blocks.PROBLEMS_MIME`: the editor's problems of the file)."""

    uri: str = Field(min_length=1)
    text: str
    mime_type: str | None = None


class ToolwireBlockMeta(Wire):
    """``_meta.toolwire`` of a resource block: ``allowExcluded``, the user allowed the text of a file
    kept from the model (``modelExclude``) to be sent with this prompt."""

    allow_excluded: bool = False


class ResourceBlockMeta(Wire):
    """``_meta`` of a resource block."""

    toolwire: ToolwireBlockMeta | None = None


class ResourceBlock(Wire):
    """An embedded resource prompt block: a file's text (of ``range``, 0-based, when given); a file kept
    from the model is accepted only with ``_meta.toolwire.allowExcluded``."""

    type: Literal["resource"]
    resource: TextResourceWire
    range: RangeWire | None = None
    meta: ResourceBlockMeta | None = Field(None, alias="_meta")


class ResourceLinkBlock(Wire):
    """A resource link prompt block: a file named by reference (the model may read it)."""

    type: Literal["resource_link"]
    uri: str = Field(min_length=1)
    name: str


class PromptParams(Wire):
    """``toolwire/session/prompt`` params: the prompt as ACP content blocks (text, embedded resources,
    resource links) or a plain string."""

    session_id: str = Field(min_length=1)
    prompt: list[Annotated[TextBlock | ResourceBlock | ResourceLinkBlock, Field(discriminator="type")]] | str

    @field_validator("prompt")
    @classmethod
    def _not_empty(cls, value: list[Any] | str) -> list[Any] | str:
        if not value or (isinstance(value, str) and not value.strip()):
            raise ValueError("the prompt is empty")
        return value

    def blocks(self) -> list[dict[str, Any]]:
        """The prompt as content blocks (JSON, camelCase): a plain string is one text block."""
        if isinstance(self.prompt, str):
            return [{"type": "text", "text": self.prompt}]
        return [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in self.prompt]


class FindFilesParams(Wire):
    """``toolwire/workspace/findFiles`` params: the files of the session's workspace matching ``query``
    (fuzzy; empty: open files first, then the listing's order), at most ``limit``."""

    session_id: str = Field(min_length=1)
    query: str = Field("", max_length=1000)
    limit: int = Field(50, ge=1, le=500)


class FoundFile(Wire):
    """A file found: workspace-relative ``path`` (display form), ``open`` in the editor, ``excluded``: the
    ``modelExclude`` pattern keeping it from the model (only for such a file)."""

    path: str
    open: bool
    excluded: str | None = None


class FindFilesResult(Wire):
    """``toolwire/workspace/findFiles`` result, best match first."""

    files: list[FoundFile]


class Usage(Wire):
    """Token counts of a turn (null when the model reported none; both always sent)."""

    input_tokens: int | None
    output_tokens: int | None


class PromptResult(Wire):
    """``toolwire/session/prompt`` result."""

    stop_reason: str
    usage: Usage
    message: str | None = None
    error_code: str | None = None
    notice: str | None = None


class CallErrorWire(Wire):
    """Why a call ended ``errored``."""

    code: str
    message: str
    retryable: bool


class ToolResultWire(Wire):
    """What a tool returned (a call's ``result`` once it ran): ``content`` is the text
    the model receives, ``data`` the tool's structured output, ``errorCode`` set
    when ``ok`` is false; ``instructions``, when present, the nested ``AGENTS.md`` blocks
    the model receives after ``content`` (the session's first call in their folders).
    Built by :meth:`toolwire.tools.base.ToolResult.to_wire`."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    ok: bool
    content: str
    data: Any
    error_code: str | None
    instructions: str | None = None


class RejectionWire(Wire):
    """The ``result`` of a call the user rejected with a reason."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    reason: str


#: A call's ``result``: what the tool returned, or why the user rejected it.
CallResult = ToolResultWire | RejectionWire


class ToolCallWire(Wire):
    """A full tool-call snapshot (see protocol.md, "ToolCall"): every field whole.

    Carried by ``toolwire/session/snapshot`` and ``toolwire/session/requestPermission``;
    built by :meth:`toolwire.streaming.state.ToolCallState.to_wire` and
    :func:`toolwire.lsp.call_wire.snapshot_form`. Updates carry
    :class:`ToolCallUpdateWire` instead. A test validates both against these models.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    tool_call_id: str
    provider_call_id: str | None = None  # the provider's id when tool_call_id renamed it
    index: int
    name: str
    kind: str
    status: Literal["generating", "generated", "calling", "done", "errored", "canceled"]
    rev: int
    arguments_text: str
    partial_arguments: dict[str, Any] | None
    arguments: dict[str, Any] | None
    path: str | None
    error: CallErrorWire | None = None
    cancel_reason: Literal["rejected", "turn_cancelled", "call_cancelled", "policy_denied", "timeout",
                           "shutdown"] | None = None
    result: CallResult | None = None


class ArgumentsDeltaWire(Wire):
    """A piece of argument text appended to a call's text (``argumentsDelta``).

    ``offset`` is the length of the text before the piece in Unicode code points
    (Python ``len``; in JavaScript count code points, not UTF-16 units).
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    offset: int = Field(ge=0)
    text: str


class ToolCallUpdateWire(Wire):
    """The ``toolCall`` of a ``tool_call`` update (protocol.md, "ToolCall updates").

    Built by :func:`toolwire.lsp.call_wire.update_form`. The identity and
    status fields are always present; the argument fields only as the rules say:
    ``arguments_delta`` while ``generating`` when text was appended,
    ``arguments_text`` whole once when the status leaves ``generating`` (or when
    the text changed other than by appending), ``partial_arguments`` a bounded
    preview when it changed, ``arguments`` when it changed. An absent field is
    unchanged since the call's previous update.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    tool_call_id: str
    provider_call_id: str | None = None  # the provider's id when tool_call_id renamed it
    index: int
    name: str
    kind: str
    status: Literal["generating", "generated", "calling", "done", "errored", "canceled"]
    rev: int
    path: str | None
    arguments_delta: ArgumentsDeltaWire | None = None
    arguments_text: str | None = None
    partial_arguments: dict[str, Any] | None = None
    arguments: dict[str, Any] | None = None
    error: CallErrorWire | None = None
    cancel_reason: Literal["rejected", "turn_cancelled", "call_cancelled", "policy_denied", "timeout",
                           "shutdown"] | None = None
    result: CallResult | None = None


class SessionRef(Wire):
    """Params that name only a session (``cancel``, ``snapshot``)."""

    session_id: str = Field(min_length=1)


class ToolCallCancelParams(Wire):
    """``toolwire/toolCall/cancel`` params."""

    session_id: str = Field(min_length=1)
    tool_call_id: str = Field(min_length=1)


class ToolCallPreviewParams(Wire):
    """``toolwire/toolCall/preview`` params: a pending edit call of the session."""

    session_id: str = Field(min_length=1)
    tool_call_id: str = Field(min_length=1)


class ToolCallPreviewResult(Wire):
    """``toolwire/toolCall/preview`` result: the file's text before and after the proposed edit.

    ``path`` is workspace-relative; ``newPath`` is set for ``rename_file``. Texts
    keep the file's line endings; a file that does not exist yet (create) has
    ``before == ""``, a deleted one ``after == ""``.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    path: str
    before: str
    after: str
    new_path: str | None = None


class ToolCallsMergeParams(Wire):
    """``toolwire/toolCalls/merge`` params: a batch of raw provider chunks of one stream."""

    session_id: str = Field(min_length=1)
    stream_id: str = Field(min_length=1)
    format: str | None = None
    chunks: list[Any] = Field(default_factory=list)
    end: bool = False


class ToolCallsRunParams(Wire):
    """``toolwire/toolCalls/run`` params: run an ended stream's calls (all, or these ids)."""

    session_id: str = Field(min_length=1)
    stream_id: str = Field(min_length=1)
    tool_call_ids: list[str] | None = None


class PermissionOptionModel(Wire):
    """One option of a permission request (ACP ``PermissionOption``)."""

    option_id: str
    name: str
    kind: Literal["allow_once", "allow_always", "reject_once"]


PERMISSION_OPTIONS = [
    PermissionOptionModel(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOptionModel(option_id="allow_always", name="Allow always", kind="allow_always"),
    PermissionOptionModel(option_id="reject", name="Reject", kind="reject_once"),
]


class HunkAnswerModel(Wire):
    """The user's answer about one hunk of an edit: ``{"index", "accepted", "reason"?}``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    index: StrictInt
    accepted: StrictBool
    reason: StrictStr | None = None


class PermissionOutcome(Wire):
    """The outcome inside a permission answer: ``selected`` with an option id (and a reason, and
    for an edit subject with ``hunks`` the answer per hunk), or ``cancelled``."""

    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None
    reason: str | None = None
    hunks: list[HunkAnswerModel] | None = None


class RequestPermissionResult(Wire):
    """The client's answer to ``toolwire/session/requestPermission``."""

    outcome: PermissionOutcome


def warning_form(warning: SessionWarning) -> dict[str, Any]:
    """A warning on the wire: ``{code, message, names}`` (a ``warning`` update, a snapshot's ``warnings``)."""
    return {"code": warning.code, "message": warning.message, "names": list(warning.names)}


def update_payload(event: AgentEvent) -> dict[str, Any]:
    """The ``update`` object of a ``toolwire/session/update`` notification for ``event``.

    Shapes (``sessionUpdate`` is the discriminator):
    ``tool_call`` {toolCall} (the update form, :class:`ToolCallUpdateWire`); ``agent_message_chunk`` /
    ``agent_thought_chunk`` {content: {type: "text", text}}; ``turn`` {state, turnId, stopReason?, message?};
    ``usage`` {usage: {inputTokens, outputTokens, durationMs}};
    ``workspace_change`` {paths}; ``session_info`` {instructions}; ``warning`` {code, message, names};
    ``mcp_server`` {name, state, error?}; ``plan`` {entries: [{content, status, priority}]}.
    """
    if type(event) is ToolCallChanged:
        return {"sessionUpdate": "tool_call", "toolCall": update_form(event)}
    if type(event) is MessageChunk:
        kind = "agent_thought_chunk" if event.channel == "reasoning" else "agent_message_chunk"
        return {"sessionUpdate": kind, "content": {"type": "text", "text": event.text}}
    if type(event) is TurnUpdate:
        out: dict[str, Any] = {"sessionUpdate": "turn", "state": event.state}
        if event.turn_id is not None:
            out["turnId"] = event.turn_id
        if event.stop_reason is not None:
            out["stopReason"] = event.stop_reason
        if event.message:
            out["message"] = event.message
        if event.error_code:
            out["errorCode"] = event.error_code
        if event.notice:
            out["notice"] = event.notice
        return out
    if type(event) is UsageUpdate:
        return {
            "sessionUpdate": "usage",
            "usage": {"inputTokens": event.input_tokens, "outputTokens": event.output_tokens,
                      "durationMs": event.duration_ms, **(event.details or {})},
        }
    if type(event) is WorkspaceChange:
        return {"sessionUpdate": "workspace_change", "paths": list(event.paths)}
    if type(event) is SessionInfo:
        return {"sessionUpdate": "session_info", "instructions": [rules.to_wire() for rules in event.instructions]}
    if type(event) is SessionWarning:
        return {"sessionUpdate": "warning", **warning_form(event)}
    if type(event) is McpServerChanged:
        out = {"sessionUpdate": "mcp_server", "name": event.name, "state": event.state}
        if event.error is not None:
            out["error"] = event.error
        return out
    if type(event) is PlanUpdate:
        return {"sessionUpdate": "plan", "entries": [entry.to_wire() for entry in event.entries]}
    raise TypeError(f"not an agent event: {event!r}")
