"""Wire models of the results and notifications :mod:`toolwire.lsp.protocol` leaves
as plain dicts: ``close``, ``toolCall/cancel``, ``tools/list``, ``toolCalls/merge``
and ``/run`` results, the ``toolwire/session/update`` params with every update kind,
the ``toolwire/session/requestPermission`` params (and their subject), and the
``toolwire/session/snapshot`` result. The MCP models they include are in
:mod:`toolwire.lsp.mcp_messages`.

Together with the models of :mod:`toolwire.lsp.protocol` they are the source of
``protocol.schema.json`` (:mod:`toolwire.lsp.schema`) and so of the client's
generated TypeScript types. Shapes as protocol.md documents them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

# How every question about an Irreversible change, or one naming files kept from the model, opens, and the words of
# an MCP tool's hints (the agent's rules), for clients of the wire (toolwire run).
from toolwire.agent.events import IRREVERSIBLE_PREFIX, excluded_notice, git_summary, mcp_hints_notice  # noqa: F401
from toolwire.lsp.protocol import (
    CallErrorWire,
    InstructionsFile,
    McpServerStatusWire,
    PermissionOptionModel,
    ToolCallUpdateWire,
    CallResult,
    ToolCallWire,
    Wire,
)
from toolwire.lsp.mcp_messages import McpServerUpdate, McpSubject, McpToolSource

Status = Literal["generating", "generated", "calling", "done", "errored", "canceled"]


class SessionCloseResult(Wire):
    """``toolwire/session/close`` result: false when no such session existed."""

    closed: bool


class SessionCompactResult(Wire):
    """``toolwire/session/compact`` result: ``compacted`` tool results replaced by the note, about
    ``tokensFreed`` tokens freed; ``message`` says both (``compacted 2 results, about 310 tokens freed``)."""

    compacted: int
    tokens_freed: int
    message: str


class ToolCallCancelResult(Wire):
    """``toolwire/toolCall/cancel`` result: false when the call is unknown or already finished."""

    cancelled: bool


class ToolsListParams(Wire):
    """``toolwire/tools/list`` params: ``{}`` (or omitted) for the server's settings;
    ``sessionId`` for the tools a session offers (its own ``maxTools``)."""

    session_id: str | None = None


class FunctionDefinition(Wire):
    """A tool as the model sees it: name, description, JSON Schema of its arguments."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    name: str
    description: str
    parameters: dict[str, Any]


class ToolDefinition(Wire):
    """One entry of ``toolwire/tools/list``: ``{"type": "function", "function": {…}, "source",
    "annotations"?}``; ``source`` says where the tool comes from (``"builtin"``, or the MCP server
    and the tool's own name there), ``annotations`` are an MCP tool's ``ToolAnnotations`` as its
    server gave them (camelCase; absent when none)."""

    type: Literal["function"]
    function: FunctionDefinition
    source: Literal["builtin"] | McpToolSource
    annotations: dict[str, Any] | None = None


class ToolsListResult(Wire):
    """``toolwire/tools/list`` result: the tools a model request offers (the first ``maxTools``,
    built-in tools first, then the MCP servers'), how many (``count``), the budget (``maxTools``),
    the names of the tools past it (``leftOut``, in order; a call to one is refused as an unknown
    tool) and, with a ``sessionId``, the session's MCP servers (``mcpServers``, ``[]`` without)."""

    tools: list[ToolDefinition]
    count: int
    max_tools: int
    left_out: list[str]
    mcp_servers: list[McpServerStatusWire]


class ToolCallBrief(Wire):
    """A call in a ``toolwire/toolCalls/merge`` result: a ``tool_call`` update's
    ``toolCall`` without the argument fields (they travel in the notifications)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    tool_call_id: str
    provider_call_id: str | None = None  # the provider's id when tool_call_id renamed it
    index: int
    name: str
    kind: str
    status: Status
    rev: int
    path: str | None
    error: CallErrorWire | None = None
    cancel_reason: Literal["rejected", "turn_cancelled", "call_cancelled", "policy_denied", "timeout",
                           "shutdown"] | None = None
    result: CallResult | None = None


class ToolCallsMergeResult(Wire):
    """``toolwire/toolCalls/merge`` result: the calls that changed, the canonical format, whether it ended."""

    tool_calls: list[ToolCallBrief]
    format: str | None
    ended: bool


class ToolCallRunResult(Wire):
    """One call's result in ``toolwire/toolCalls/run``: the text to send back to the model
    (under ``provider_call_id`` when present: the session renamed the provider's id)."""

    tool_call_id: str
    provider_call_id: str | None = None
    name: str
    status: Status
    content: str
    is_error: bool


class ToolCallsRunResult(Wire):
    """``toolwire/toolCalls/run`` result: one result per call, in call order."""

    results: list[ToolCallRunResult]


class TextContent(Wire):
    """``{"type": "text", "text"}``."""

    type: Literal["text"]
    text: str


class ToolCallUpdateKind(Wire):
    """``sessionUpdate: "tool_call"``: a call changed (an upsert keyed by ``toolCallId``)."""

    session_update: Literal["tool_call"]
    tool_call: ToolCallUpdateWire


class MessageChunkUpdate(Wire):
    """``agent_message_chunk`` (assistant text) or ``agent_thought_chunk`` (reasoning)."""

    session_update: Literal["agent_message_chunk", "agent_thought_chunk"]
    content: TextContent


class TurnUpdateKind(Wire):
    """``sessionUpdate: "turn"``: the turn's state; ``stopReason`` and ``message`` when it ended."""

    session_update: Literal["turn"]
    state: Literal["started", "model_request", "running_tools", "ended"]
    turn_id: str | None = None
    stop_reason: str | None = None
    message: str | None = None
    error_code: str | None = None
    notice: str | None = None


class UsageCounts(Wire):
    """Token counts and duration of a turn (null counts when the model reported none)."""

    input_tokens: int | None
    output_tokens: int | None
    duration_ms: int | float | None = None
    #: Of the output tokens, reasoning; of the input tokens, read from the provider's cache (when reported).
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None


class UsageUpdateKind(Wire):
    """``sessionUpdate: "usage"`` (sent when the turn ends)."""

    session_update: Literal["usage"]
    usage: UsageCounts


class WorkspaceChangeUpdate(Wire):
    """``sessionUpdate: "workspace_change"``: files changed outside Toolwire."""

    session_update: Literal["workspace_change"]
    paths: list[str]


class SessionInfoUpdate(Wire):
    """``sessionUpdate: "session_info"``: the project rules files the model is given changed
    (a root file changed, a nested ``AGENTS.md`` was read); ``instructions`` is the whole list now."""

    session_update: Literal["session_info"]
    instructions: list[InstructionsFile]



class SessionWarningWire(Wire):
    """A warning of the session: ``code`` ``tools_left_out``: the ``maxTools`` budget leaves the
    tools in ``names`` out of the model requests; ``message`` says so in words."""

    code: str
    message: str
    names: list[str]


class WarningUpdate(SessionWarningWire):
    """``sessionUpdate: "warning"``: something the user must know about the session, told once
    (``tools_left_out``: with the session's first request that leaves those tools out)."""

    session_update: Literal["warning"]


class PlanEntryWire(Wire):
    """One step of a plan (``update_plan``'s entry, as the model gave it)."""

    content: str
    status: Literal["pending", "in_progress", "completed"]
    priority: Literal["high", "medium", "low"]


class PlanUpdateKind(Wire):
    """``sessionUpdate: "plan"``: the turn's plan is now ``entries`` (an ``update_plan`` call is
    done); the whole list each time, the latest of the turn is its plan."""

    session_update: Literal["plan"]
    entries: list[PlanEntryWire]


SessionUpdate = Union[ToolCallUpdateKind, MessageChunkUpdate, TurnUpdateKind, UsageUpdateKind, WorkspaceChangeUpdate,
                      SessionInfoUpdate, WarningUpdate, McpServerUpdate, PlanUpdateKind]


class SessionUpdateParams(Wire):
    """``toolwire/session/update`` params; ``streamId`` for updates of a client-fed stream."""

    session_id: str
    stream_id: str | None = None
    update: SessionUpdate = Field(discriminator="session_update")


class Irreversible(Wire):
    """The mark of a change whose prior state the turn cannot record: undo cannot take it back.
    ``reason`` says why (a file over the checkpoint size limit, the checkpoint store not
    writable, a file that cannot be read); every question opens with "This change cannot be
    undone: <reason>", and a client that answers by itself must reject it."""

    reason: str


class ExcludedFile(Wire):
    """A file the call would show the model that the ``modelExclude`` setting keeps from it:
    allowed, the call shows it for this call only; every question opens with
    "Kept from the model (modelExclude): <path> (pattern '<pattern>')…"."""

    path: str
    pattern: str


class LineStat(Wire):
    """Lines a change adds and removes (an edit's diff)."""

    added: int
    removed: int


class SubjectHunk(Wire):
    """One hunk of an edit subject's diff: ``index`` from 0 in diff order, ``header`` its
    ``@@ … @@`` line, ``diff`` its lines (each ending with LF)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    index: int
    header: str
    diff: str


class EditSubject(Wire):
    """A file tool's planned change: ``diff`` is a dry run of the tool's own plan on the
    current text, ``diffstat`` its lines added and removed; ``new_path`` (snake_case on
    the wire, as the tool's argument) names a rename's destination; ``hunks`` (``edit_file``,
    ``multi_edit``) the diff's hunks, which the answer may accept one by one."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    kind: Literal["edit"]
    tool: str
    path: str
    diff: str
    diffstat: LineStat | None = None  # always sent by this server (optional for older clients' fixtures)
    new_path: str | None = Field(None, alias="new_path")
    hunks: list[SubjectHunk] | None = None
    irreversible: Irreversible | None = None
    excluded: list[ExcludedFile] | None = None


class GitFile(Wire):
    """A file a git action changes: its workspace-relative path (display form) and lines;
    ``binary`` for a binary file (no lines), ``counted: false`` for an untracked file whose
    lines were not counted (not a regular file, or past the 16 MiB read budget)."""

    path: str
    added: int
    removed: int
    binary: bool | None = None
    counted: bool | None = None


class GitStat(Wire):
    """A git action's files and lines in all (every file, also past the 200 ``files`` lists)."""

    files: int
    added: int
    removed: int


class GitSubject(Wire):
    """A git tool's full argv (each argument as git would quote a misleading one), the command
    as a person types it (``git commit -m "Fix x" -- a.py``, shell-quoted), its folder, and
    for a change the files it changes (at most 200) with their ``diffstat``."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    kind: Literal["git"]
    tool: str
    argv: list[str]
    command: str | None = None  # always sent by this server
    cwd: str
    files: list[GitFile] | None = None
    diffstat: GitStat | None = None
    irreversible: Irreversible | None = None
    excluded: list[ExcludedFile] | None = None


class ToolSubject(Wire):
    """Any other tool's arguments (and a file tool's whose plan failed on a file kept from
    the model: the question is then only about showing that file, see ``excluded``)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    kind: Literal["tool"]
    tool: str
    arguments: dict[str, Any] | None
    irreversible: Irreversible | None = None
    excluded: list[ExcludedFile] | None = None


#: What a permission request is about (built by :func:`toolwire.agent.permissions.build_subject`).
PermissionSubject = Annotated[Union[EditSubject, GitSubject, ToolSubject, McpSubject], Field(discriminator="kind")]


class RequestPermissionParams(Wire):
    """``toolwire/session/requestPermission`` params (server → client)."""

    session_id: str
    tool_call: ToolCallWire
    subject: PermissionSubject
    options: list[PermissionOptionModel]


class StreamingResponse(Wire):
    """The model response being streamed now, not yet in ``messages``."""

    text: str
    reasoning: str


class TurnSummary(Wire):
    """One entry of the snapshot's ``turns``: how the turn ended and whether it can be undone.

    ``stop_reason``, ``message`` (why it stopped, when there is more to say) and
    ``usage`` are what the turn's ``ended`` and ``usage`` updates said; all three
    are null while the turn runs. ``error_code`` and ``notice`` are the ``ended`` update's
    (e.g. ``no_api_key``, ``demo_finished``), absent when it had none.
    """

    turn_id: str
    stop_reason: str | None
    message: str | None
    usage: UsageCounts | None
    undoable: bool
    undone: bool
    error_code: str | None = None
    notice: str | None = None


class SnapshotResult(Wire):
    """``toolwire/session/snapshot`` result (see protocol.md).

    ``toolCalls`` are the running turn's calls or, when none runs, the last
    turn's (full snapshots, every field whole); ``turnId`` names that turn.
    ``pendingPermissions`` are the params of the ``requestPermission`` requests
    still waiting for an answer. ``streaming`` is the response being streamed.
    ``turns`` lists every turn of the session, oldest first, with whether it
    can be undone (``toolwire/session/undoTurn``) or was undone. ``instructions``
    are the project rules files the model is given; ``warnings`` the warnings the session
    told (the latest ``tools_left_out``), so a reloaded panel shows them again;
    ``mcpServers`` the session's MCP servers now (as ``toolwire/tools/list`` gives them).
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    session_id: str
    model: str
    running: bool
    turn_id: str | None
    tool_calls: list[ToolCallWire]
    messages: list[dict[str, Any]]
    streaming: StreamingResponse | None
    pending_permissions: list[RequestPermissionParams]
    turns: list[TurnSummary]
    instructions: list[InstructionsFile]
    warnings: list[SessionWarningWire] = Field(default_factory=list)
    mcp_servers: list[McpServerStatusWire] = Field(default_factory=list)
