"""Tool-call state and the status machine.

A :class:`ToolCallState` is the single record of one tool call inside one model
response: what the model sent (raw argument text, exactly), what we made of it
(a live partial parse while streaming, validated arguments at the end), and where
the call is in its life (``status``, ``rev``, ``error``, ``cancel_reason``).

The statuses and the transition table are Continue's six words, as written in
docs/architecture.md ("Tool-call statuses"). The table is enforced: an illegal transition
raises :class:`IllegalTransition` and is never applied silently.
"""

from __future__ import annotations

import enum
import logging
import os
from dataclasses import dataclass, field
from typing import Any


class Status(str, enum.Enum):
    """Where a tool call is in its life. Values are the wire strings."""

    GENERATING = "generating"
    GENERATED = "generated"
    CALLING = "calling"
    DONE = "done"
    ERRORED = "errored"
    CANCELED = "canceled"

    @property
    def terminal(self) -> bool:
        """True for ``done``, ``errored`` and ``canceled``."""
        return self in _TERMINAL


_TERMINAL = frozenset({Status.DONE, Status.ERRORED, Status.CANCELED})

#: Allowed transitions (docs/architecture.md, "Tool-call statuses").
TRANSITIONS: dict[Status, frozenset[Status]] = {
    Status.GENERATING: frozenset({Status.GENERATED, Status.ERRORED, Status.CANCELED}),
    Status.GENERATED: frozenset({Status.CALLING, Status.ERRORED, Status.CANCELED}),
    Status.CALLING: frozenset({Status.DONE, Status.ERRORED, Status.CANCELED}),
    Status.DONE: frozenset(),
    Status.ERRORED: frozenset(),
    Status.CANCELED: frozenset(),
}


class CancelReason(str, enum.Enum):
    """Why a call ended ``canceled``. Values are the wire strings."""

    REJECTED = "rejected"
    TURN_CANCELLED = "turn_cancelled"
    CALL_CANCELLED = "call_cancelled"
    POLICY_DENIED = "policy_denied"
    TIMEOUT = "timeout"
    SHUTDOWN = "shutdown"


#: When set, every illegal transition is also appended to this file (the test suite
#: sets it, for this process and the servers it starts, and fails if the file grows).
ILLEGAL_TRANSITIONS_LOG_ENV = "TOOLWIRE_ILLEGAL_TRANSITIONS_LOG"

_log = logging.getLogger(__name__)


def report_illegal_transition(message: str) -> None:
    """Log an illegal transition (a bug) and, under test, record it for the suite."""
    _log.error("illegal status transition: %s", message)
    target = os.environ.get(ILLEGAL_TRANSITIONS_LOG_ENV)
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(message + "\n")


class IllegalTransition(RuntimeError):
    """Raised when code asks for a status change the table does not allow.

    This is always a bug in Toolwire, never a user or model error.
    """


@dataclass(slots=True, frozen=True)
class CallError:
    """Why a call ended ``errored``.

    Attributes:
        code: A stable machine-readable code, e.g. ``invalid_json``,
            ``truncated``, ``unknown_tool``, ``invalid_arguments``,
            ``tool_failed``, ``timeout``, ``stream_error``.
        message: A sentence for a person and for the model.
        retryable: True when the same request may succeed if tried again.
    """

    code: str
    message: str
    retryable: bool = False

    def to_wire(self) -> dict[str, Any]:
        """Return ``{"code", "message", "retryable"}``."""
        return {"code": self.code, "message": self.message, "retryable": self.retryable}


@dataclass(slots=True)
class ToolCallState:
    """One tool call of one model response.

    Attributes:
        key: The provider's identity for the call inside the response (the chat
            ``index``, a content-block index, a Responses item id, ...). Only
            meaningful to the merger.
        index: Position of the call in the response, 0-based, in order of first
            appearance. Results go back to the model in this order.
        id: The call id the model gave (or a stable generated one when the
            provider gives none). Empty until known. The session may rename it
            to ``<id>_<n>`` when another call of the session already has it
            (:class:`toolwire.agent.call_ids.CallIds`).
        provider_id: The id as the provider's stream gave it, before any
            renaming; empty when the stream gave none (the call's id was then
            generated). Sent as ``providerCallId`` whenever it differs from ``id``.
        name: The tool name. Empty until known.
        kind: ``"function"`` for calls Toolwire runs; provider-executed calls
            (Anthropic ``server_tool_use``/``mcp_tool_use``, Bedrock server
            tools) carry their block type and are never run here.
        status: See :class:`Status`.
        rev: Incremented on every change; clients drop updates with a lower rev.
        fragments: Raw argument fragments as received; joined once on demand.
        partial: Best-effort parse of the arguments so far (a dict), or None.
        path: The value of a path-like argument once it is complete, or None.
        arguments: Final arguments (a dict) once parsed and, later, validated.
        error: Set when ``status`` is ``errored``.
        cancel_reason: Set when ``status`` is ``canceled``.
        result: The tool's result once ``done``/``errored`` after running.
        reported: What the call's reports (agent events) said so far (see
            :mod:`toolwire.streaming.changes`); None before the first report.
    """

    key: Any
    index: int
    id: str = ""
    provider_id: str = ""
    name: str = ""
    kind: str = "function"
    status: Status = Status.GENERATING
    rev: int = 0
    fragments: list[str] = field(default_factory=list)
    arguments_size: int = 0
    partial: dict[str, Any] | None = None
    path: str | None = None
    arguments: dict[str, Any] | None = None
    error: CallError | None = None
    cancel_reason: CancelReason | None = None
    result: Any = None
    whole_arguments: Any = None  # arguments given whole as an object (Gemini, Anthropic start block)
    reported: Any = None  # what the call's reports said (toolwire.streaming.changes.ChangeMark)

    @property
    def arguments_text(self) -> str:
        """The raw argument text exactly as the model sent it (joined once, then cached)."""
        frags = self.fragments
        if len(frags) > 1:
            joined = "".join(frags)
            frags.clear()
            frags.append(joined)
            return joined
        return frags[0] if frags else ""

    def transition(
        self,
        status: Status,
        *,
        error: CallError | None = None,
        cancel_reason: CancelReason | None = None,
    ) -> None:
        """Move to ``status`` if the table allows it, and bump ``rev``.

        Args:
            status: The new status.
            error: Required context when moving to ``errored``.
            cancel_reason: Required context when moving to ``canceled``.

        Raises:
            IllegalTransition: the table does not allow ``self.status -> status``.
        """
        if status not in TRANSITIONS[self.status]:
            message = (
                f"tool call {self.id or self.index!r} ({self.name or '?'}): "
                f"{self.status.value} -> {status.value} is not allowed"
            )
            report_illegal_transition(message)
            raise IllegalTransition(message)
        self.status = status
        if status is Status.ERRORED:
            self.error = error or CallError("errored", "the call failed")
        if status is Status.CANCELED:
            self.cancel_reason = cancel_reason or CancelReason.CALL_CANCELLED
        self.rev += 1

    def to_wire(self) -> dict[str, Any]:
        """Return the call's full snapshot (camelCase; protocol.md, "ToolCall").

        Every field whole (the tests' reference). Front-ends get the same form from
        a typed snapshot (:func:`toolwire.streaming.changes.snapshot`, written by
        ``toolwire.lsp.call_wire.snapshot_form`` for ``toolwire/session/snapshot``
        and permission requests); updates are events
        (:func:`toolwire.streaming.changes.observe`).
        """
        out: dict[str, Any] = {
            "toolCallId": self.id,
            "index": self.index,
            "name": self.name,
            "kind": self.kind,
            "status": self.status.value,
            "rev": self.rev,
            "argumentsText": self.arguments_text,
            "partialArguments": self.partial,
            "arguments": self.arguments,
            "path": self.path,
        }
        if self.provider_id and self.provider_id != self.id:
            out["providerCallId"] = self.provider_id
        if self.error is not None:
            out["error"] = self.error.to_wire()
        if self.cancel_reason is not None:
            out["cancelReason"] = self.cancel_reason.value
        if self.result is not None:
            out["result"] = self.result
        return out
