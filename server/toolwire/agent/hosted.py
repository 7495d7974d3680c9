"""The host's record of a session, and what the host's calls return and raise (:mod:`toolwire.agent.host`)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolwire.agent.events import AgentEvent, CallSnapshot, LoggedEvent, SessionWarning, Sink
from toolwire.agent.fed import FedStream
from toolwire.agent.host_settings import Origin
from toolwire.agent.mcp_session import McpLink
from toolwire.agent.scheduler import Scheduler
from toolwire.workspace.model_exclude import withheld
from toolwire.agent.session import Session
from toolwire.agent.session_store import EVENT_LOG, EventLog
from toolwire.agent.turn import Turn
from toolwire.streaming.changes import snapshot
from toolwire.streaming.state import ToolCallState

__all__ = ["EVENT_LOG", "Hosted", "HostError", "Recorded", "SessionState", "TURN_ALREADY_RUNNING", "TurnRunning",
           "UNDO_RUNNING", "UnknownSession"]


class HostError(Exception):
    """A request the host refuses; ``field`` names the parameter at fault (None: the request as a whole)."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UnknownSession(HostError):
    """No hosted session has this id."""


class TurnRunning(HostError):
    """A turn, an undo or a redo is running in the session: they take the one turn slot in turn."""

    def __init__(self, message: str = "a turn is running in this session; cancel it or wait for it to end") -> None:
        super().__init__(message)


class KeptFromModel(HostError):
    """The prompt embeds the text of files ``modelExclude`` keeps from the model, and the user did not
    allow them for this prompt: nothing is sent. ``kept``: ``(path, pattern)`` of each file."""

    def __init__(self, kept: list[tuple[str, str]]) -> None:
        named = "; ".join(withheld(path, pattern) for path, pattern in kept)
        super().__init__(f"{named}: its text is sent only when the user allows it for this prompt; nothing was sent",
                         "prompt")
        self.kept = kept


#: The refusal of a second turn while one runs.
TURN_ALREADY_RUNNING = "a turn is already running in this session"
#: The refusal while an undo or redo of the session puts files back.
UNDO_RUNNING = "an undo or redo is running in this session; wait for it to end"


@dataclass(eq=False)
class Hosted:
    """The host's record of one session.

    Attributes:
        session: The session the tools and turns work on.
        outlet: The front-end's sink for the session's events outside a turn
            (workspace changes).
        origin: What it was opened with (to rebuild its settings).
        turn: The running turn, if any (one at a time).
        last_turn: The latest turn started, running or ended.
        streams: Client-fed streams by stream id.
        fed: Schedulers of client-fed runs in progress.
        undoing: An undo or redo is putting files back (it holds the turn slot).
        log: The session's events and prompts, oldest first (bounded by :data:`EVENT_LOG`); what of
            them is saved goes to its journal (:class:`~toolwire.agent.session_store.EventLog`).
        mcp: The session's MCP servers' events and warnings (:mod:`toolwire.agent.mcp_session`).
    """

    session: Session
    outlet: Sink
    origin: Origin
    turn: Turn | None = None
    last_turn: Turn | None = None
    streams: dict[str, FedStream] = field(default_factory=dict)
    fed: list[Scheduler] = field(default_factory=list)
    undoing: bool = False
    log: EventLog = field(default_factory=EventLog)
    mcp: McpLink | None = None

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def running(self) -> bool:
        """A turn, a client-fed run, an undo or a redo is going on."""
        return self.turn is not None or bool(self.fed) or self.undoing

    def find_call(self, call_id: str) -> ToolCallState | None:
        """The call with this id in the running (else last) turn or the client-fed runs."""
        turn = self.turn or self.last_turn
        if turn is not None:
            found = turn.scheduler.find(call_id)
            if found is not None:
                return found
            for call in turn.calls:
                if call.id == call_id:
                    return call
        for scheduler in self.fed:
            found = scheduler.find(call_id)
            if found is not None:
                return found
        return None

    def state(self, redact: Callable[[str], str]) -> SessionState:
        """The session's state now (consistent with every event emitted before it)."""
        session, turn = self.session, self.turn or self.last_turn
        turns = []
        for record in session.turn_records:
            summary = record.summary()
            if summary.get("message"):  # a provider's error may quote the API key
                summary["message"] = redact(summary["message"])
            turns.append(summary)
        return SessionState(
            session_id=session.id, model_id=session.model.model_id, running=self.turn is not None,
            turn_id=turn.id if turn is not None else None,
            calls=[snapshot(c) for c in turn.calls] if turn is not None else [],
            messages=session.conversation.shown(),
            streaming=self.turn.streaming_response() if self.turn is not None else None, turns=turns,
            instructions=self.instructions(),
            warnings=self.warnings())

    def warnings(self) -> list[SessionWarning]:
        """The warnings the session told: its MCP servers' (oldest first), then the latest ``tools_left_out``."""
        told = list(self.mcp.warnings) if self.mcp is not None else []
        if self.session.tools_warning is not None:
            told.append(self.session.tools_warning)
        return told

    def instructions(self) -> list[dict[str, Any]]:
        """The project rules files the model is given (``[{"path", "bytes", "truncated"}]``, the root one first)."""
        return [rules.to_wire() for rules in self.session.rules.listing()]


@dataclass(slots=True, frozen=True)
class SessionState:
    """What a session looks like now (a reloaded panel's snapshot; see protocol.md).

    Attributes:
        session_id, model_id: The session and its model.
        running: A turn is running.
        turn_id: The running (else last) turn's id, or None before the first turn.
        calls: That turn's calls now, whole (argument text included), in the order they were first pushed.
        messages: The conversation the model sees, user messages with the user's own text
            as ``userText`` (:meth:`Conversation.shown`).
        streaming: The response being streamed now (``{"text", "reasoning"}``), or None.
        turns: A summary of every turn with a record, oldest first (messages redacted).
        instructions: The project rules files the model is given (:meth:`Hosted.instructions`).
        warnings: The warnings the session told (:meth:`Hosted.warnings`).
    """

    session_id: str
    model_id: str
    running: bool
    turn_id: str | None
    calls: list[CallSnapshot]
    messages: list[dict[str, Any]]
    streaming: dict[str, str] | None
    turns: list[dict[str, Any]]
    instructions: list[dict[str, Any]]
    warnings: list[SessionWarning] = field(default_factory=list)


class Recorded:
    """A sink that keeps each event in the session's log before passing it on."""

    __slots__ = ("_log", "_sink")

    def __init__(self, log_: deque[LoggedEvent], sink: Sink) -> None:
        self._log = log_
        self._sink = sink

    def emit(self, event: AgentEvent) -> None:
        self._log.append(event)
        self._sink.emit(event)
