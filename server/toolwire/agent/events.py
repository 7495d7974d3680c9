"""The closed set of events the agent pushes, and the interfaces it talks through."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, Union

from toolwire.agent.project_rules import RulesFile
from toolwire.mcp.status import ServerState
from toolwire.streaming.changes import ArgumentsPiece, CallChange, CallSnapshot, observe
from toolwire.streaming.state import ToolCallState
from toolwire.tools.plan import PlanEntry

TurnStateName = Literal["started", "model_request", "running_tools", "ended"]


@dataclass(slots=True, frozen=True)
class ToolCallChanged:
    """A tool call changed: ``call`` is its state now, ``change`` what changed since the
    call's previous event (:mod:`toolwire.streaming.changes`). Each front-end encodes
    the pair into its own protocol; none rebuilds the call from another's deltas."""

    call: CallSnapshot
    change: CallChange


def call_changed(call: ToolCallState) -> ToolCallChanged:
    """The next event of ``call``'s one stream of events (records what it reported)."""
    state, change = observe(call)
    return ToolCallChanged(state, change)


@dataclass(slots=True, frozen=True)
class MessageChunk:
    """Assistant text (``channel="text"``) or reasoning (``channel="reasoning"``)."""

    text: str
    channel: str = "text"


@dataclass(slots=True, frozen=True)
class TurnUpdate:
    """The turn moved to ``state``; ``stop_reason`` is set when it ended; ``turn_id``
    is the turn's id within its session (``"t1"``, ``"t2"``…); ``error_code`` and ``notice`` as
    :class:`~toolwire.agent.turn.TurnOutcome`'s, when it ended."""

    state: TurnStateName
    stop_reason: str | None = None
    message: str | None = None
    turn_id: str | None = None
    error_code: str | None = None
    notice: str | None = None


@dataclass(slots=True, frozen=True)
class UsageUpdate:
    """Token usage and wall time of the turn so far (tokens may be None when unknown).

    Sent after each model request with ``context_used`` (that request's prompt tokens plus its
    completion tokens, each estimated at about 4 characters a token when the endpoint reported
    none) and ``context_size`` (the session's effective context window, in tokens); the turn's
    last one, at its end, has neither (None)."""

    input_tokens: int | None
    output_tokens: int | None
    duration_ms: int | None = None
    context_used: int | None = None
    context_size: int | None = None
    #: ``{"reasoningTokens"?, "cachedTokens"?}``: the turn's totals of those the endpoint reported.
    details: dict[str, int] | None = None


@dataclass(slots=True, frozen=True)
class WorkspaceChange:
    """Files changed outside Toolwire (workspace-relative paths, sorted)."""

    paths: tuple[str, ...]


@dataclass(slots=True, frozen=True)
class SessionInfo:
    """The project rules files the model is given changed (:mod:`toolwire.agent.project_rules`):
    ``instructions`` is the whole list now, the root file first (each ``path``, ``bytes``, ``truncated``)."""

    instructions: tuple[RulesFile, ...]


@dataclass(slots=True, frozen=True)
class SessionWarning:
    """Something the user must know about the session, told once: ``code`` says what
    (``tools_left_out``: the ``maxTools`` budget leaves tools out of the requests;
    ``mcp_config``: an MCP server entry was skipped, or an allowlist name or a ``permissions``
    key names no server or tool of the session; ``mcp_server_failed``: an MCP server did not
    start or exited), ``message`` says it in words, ``names`` lists what it is about (the
    tools left out, the servers or keys)."""

    code: str
    message: str
    names: tuple[str, ...] = ()


@dataclass(slots=True, frozen=True)
class McpServerChanged:
    """An MCP server of the session changed state (emitted on the session's outlet): ``name`` as
    configured, ``state`` now (``starting``, ``ready``, ``failed``, ``stopped``), ``error`` why it
    failed (one sentence, secrets removed), else None."""

    name: str
    state: ServerState
    error: str | None = None


@dataclass(slots=True, frozen=True)
class PlanUpdate:
    """The turn's plan is now ``entries`` (an ``update_plan`` call is done, :mod:`toolwire.tools.plan`):
    the whole list, in order; the latest of a turn is the turn's plan."""

    entries: tuple[PlanEntry, ...]


AgentEvent = Union[ToolCallChanged, MessageChunk, TurnUpdate, UsageUpdate, WorkspaceChange, SessionInfo,
                   SessionWarning, McpServerChanged, PlanUpdate]


@dataclass(slots=True, frozen=True)
class UserPrompt:
    """The user's prompt of turn ``turn_id``, recorded in the session's log before the turn's first
    event (never emitted to a sink: a client shows its own prompt). ``text`` is the prompt as the
    turn got it; ``blocks`` the content blocks the front-end received (ACP ``ContentBlock`` JSON,
    camelCase, as sent), empty when it got text only (LSP, ``toolwire run``)."""

    turn_id: str
    text: str
    blocks: tuple[dict[str, Any], ...] = ()


#: What a session's log holds (:class:`toolwire.agent.hosted.Hosted`): every event emitted, and the prompts.
LoggedEvent = Union[AgentEvent, UserPrompt]


class Sink(Protocol):
    """Receives every agent event, in order. Must not block."""

    def emit(self, event: AgentEvent) -> None:
        """Deliver one event."""
        ...


#: How every front-end begins the text of a permission request whose subject carries
#: ``irreversible`` (``{"reason"}``): the change cannot be undone.
IRREVERSIBLE_PREFIX = "This change cannot be undone: "

#: How every front-end begins the text of a permission request whose subject carries
#: ``excluded`` (``[{"path", "pattern"}]``): files kept from the model (``modelExclude``).
EXCLUDED_PREFIX = "Kept from the model (modelExclude): "


def excluded_notice(subject: dict[str, Any]) -> str | None:
    """The sentence every question about a call naming files kept from the model opens with
    (``Kept from the model (modelExclude): config/.env (pattern '.env'). Allowing shows it to
    the model for this call only.``), or None when the subject names none."""
    entries = subject.get("excluded")
    if not isinstance(entries, list) or not entries:
        return None
    named = ", ".join(f"{e.get('path')} (pattern '{e.get('pattern')}')" for e in entries if isinstance(e, dict))
    return f"{EXCLUDED_PREFIX}{named}. Allowing shows it to the model for this call only."


#: An MCP tool's hints (MCP ``ToolAnnotations``) with their words when true and when false, as
#: every front-end shows them in the question about a call (the panel too: src/permission.ts).
MCP_HINT_WORDS = (("readOnlyHint", "read-only", "not read-only"),
                  ("destructiveHint", "destructive", "not destructive"),
                  ("openWorldHint", "open world (reaches outside this computer)", "closed world"))


def mcp_hints_notice(subject: dict[str, Any]) -> str | None:
    """The server's hints of an ``mcp`` subject in words (``Hints from the server, not checked:
    read-only, closed world.``), or None when it gave none: shown with the question, never used
    to allow a call."""
    hints = subject.get("hints")
    if not isinstance(hints, dict):
        return None
    words = [yes if hints[key] else no for key, yes, no in MCP_HINT_WORDS if isinstance(hints.get(key), bool)]
    return f"Hints from the server, not checked: {', '.join(words)}." if words else None


def always_name(subject: dict[str, Any], name: str) -> str:
    """The name of the ``allow_always`` option of a question about ``subject``: ``name`` (the
    front-end's, e.g. ``Allow always``), quoting a git subject's command exactly (``Allow always:
    git add -- a.py``); a commit's rule covers any message for the same paths, which it says
    (``Allow always: git commit -m "Fix x" -- a.py (any message)``)."""
    command = subject.get("command") if subject.get("kind") == "git" else None
    if not isinstance(command, str) or not command:
        return name
    return f"{name}: {command}" + (" (any message)" if subject.get("tool") == "git_commit" else "")


def git_summary(subject: dict[str, Any]) -> str | None:
    """The lines under a git subject's command in a question: the files it changes with their
    lines and the total (``a.py +2 -1`` …, ``2 files, +4 -1``), or None when it names none."""
    files = subject.get("files")
    stat = subject.get("diffstat")
    if not isinstance(files, list) or not files or not isinstance(stat, dict):
        return None
    lines = [f"{f.get('path')} " + ("(binary)" if f.get("binary") else f"+{f.get('added')} -{f.get('removed')}")
             for f in files if isinstance(f, dict)]
    if stat.get("files", 0) > len(lines):
        lines.append(f"… and {stat['files'] - len(lines)} more")
    count = stat.get("files", 0)
    lines.append(f"{count} file{'s' if count != 1 else ''}, +{stat.get('added')} -{stat.get('removed')}")
    return "\n".join(lines)


def offered(subject: dict[str, Any]) -> tuple[str, ...]:
    """The answers a question about ``subject`` offers, by option id: ``allow_once``,
    ``allow_always`` and ``reject``; no ``allow_always`` when it names files kept from the
    model (they are allowed per call only)."""
    if excluded_notice(subject) is not None:
        return ("allow_once", "reject")
    return ("allow_once", "allow_always", "reject")


PermissionOption = Literal["allow_once", "allow_always", "reject", "cancelled", "unavailable"]


@dataclass(slots=True, frozen=True)
class PermissionAnswer:
    """The user's answer to a permission request.

    Attributes:
        option: ``allow_once``, ``allow_always``, ``reject``, ``cancelled`` (the
            request was withdrawn or the client could not answer), or ``unavailable``
            (no client answers permission requests at all: the question could not be
            put; treated as ``cancelled``, except that an irreversible call then ends
            ``errored`` with ``not_undoable``).
        reason: Optional text from the user, sent to the model on rejection.
        hunks: For an edit subject with ``hunks``, the answer per hunk (every hunk once, in
            any order), or None for a whole-call answer (ACP, ``toolwire run``, a panel
            that does not review hunks).
    """

    option: PermissionOption
    reason: str | None = None
    hunks: tuple[HunkAnswer, ...] | None = None


@dataclass(slots=True, frozen=True)
class HunkAnswer:
    """The user's answer about one hunk of an edit subject (``subject.hunks[index]``)."""

    index: int
    accepted: bool
    reason: str | None = None


class Approver(Protocol):
    """Asks the user whether a call may run."""

    async def request_permission(self, call: CallSnapshot, subject: dict[str, Any]) -> PermissionAnswer:
        """Ask about ``call`` (its whole state, argument text included); ``subject`` says
        exactly what it will do.

        Cancellation of the caller withdraws the request.
        """
        ...


class RecordingSink:
    """A sink that keeps every event (tests, the headless client's checks)."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def emit(self, event: AgentEvent) -> None:
        self.events.append(event)


__all__ = ["AgentEvent", "Approver", "ArgumentsPiece", "CallChange", "CallSnapshot", "EXCLUDED_PREFIX",
           "IRREVERSIBLE_PREFIX", "MCP_HINT_WORDS", "McpServerChanged", "MessageChunk", "HunkAnswer", "PermissionAnswer", "PermissionOption", "PlanEntry", "PlanUpdate",
           "RecordingSink", "RulesFile",
           "SessionInfo", "SessionWarning", "Sink", "ToolCallChanged", "TurnStateName", "TurnUpdate", "UsageUpdate",
           "UserPrompt", "LoggedEvent", "WorkspaceChange", "call_changed", "excluded_notice", "mcp_hints_notice", "offered"]
