"""Cohere v2 Chat streaming events.

Source: Cohere API reference, "Chat (v2) — streaming" / "Streaming responses".
Events carry a ``type``; tool calls are keyed by the event's top-level ``index``::

    {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls":
        {"id": "..", "type": "function", "function": {"name": "..", "arguments": ""}}}}}
    {"type": "tool-call-delta", "index": 0, "delta": {"message": {"tool_calls":
        {"function": {"arguments": "{\\""}}}}}
    {"type": "tool-call-end", "index": 0}
    {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": {...}}}

``delta.message.tool_calls`` is an object, not a list (a one-element list is
accepted too). ``tool-plan-delta`` text (the model's plan) is reasoning;
``content-delta`` text is text. ``message-end`` may carry an ``error``.
"""

from __future__ import annotations

from typing import Any

from toolwire.streaming.delta import (
    Finish,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    Usage,
)
from toolwire.streaming.formats.openai_chat import not_an_object


def _message(payload: dict) -> dict:
    delta = payload.get("delta")
    message = delta.get("message") if isinstance(delta, dict) else None
    return message if isinstance(message, dict) else {}


class CohereNormalizer:
    """Normalizer for Cohere v2 stream events (see the module docstring)."""

    format = "cohere"
    explicit_ends = True

    __slots__ = ()

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        """Normalize one event (see :class:`~toolwire.streaming.formats.base.Normalizer`)."""
        if not isinstance(payload, dict):
            return [not_an_object(payload)]
        kind = payload.get("type") or event
        key = ("tool", payload.get("index"))
        if kind in ("tool-call-start", "tool-call-delta"):
            calls = _message(payload).get("tool_calls")
            if isinstance(calls, list):
                calls = calls[0] if calls else None
            if not isinstance(calls, dict):
                return []
            fn = calls.get("function") if isinstance(calls.get("function"), dict) else {}
            call_id, name, arguments = calls.get("id"), fn.get("name"), fn.get("arguments")
            return [
                ToolCallDelta(
                    key=key,
                    id=call_id if isinstance(call_id, str) and call_id else None,
                    name=name if isinstance(name, str) and name else None,
                    arguments=arguments if isinstance(arguments, str) and arguments else None,
                    new_call=kind == "tool-call-start",
                )
            ]
        if kind == "tool-call-end":
            return [ToolCallEnd(key)]
        if kind == "tool-plan-delta":
            plan = _message(payload).get("tool_plan")
            return [TextDelta(plan, "reasoning")] if isinstance(plan, str) and plan else []
        if kind in ("content-delta", "content-start"):
            content = _message(payload).get("content")
            text = content.get("text") if isinstance(content, dict) else None
            return [TextDelta(text)] if isinstance(text, str) and text else []
        if kind == "message-end":
            return self._end(payload.get("delta"))
        return []

    @staticmethod
    def _end(delta: Any) -> list[StreamEvent]:
        if not isinstance(delta, dict):
            return []
        out: list[StreamEvent] = []
        reason = delta.get("finish_reason")
        if isinstance(reason, str) and reason:
            out.append(Finish(reason))
        usage = delta.get("usage")
        if isinstance(usage, dict):
            tokens = usage.get("tokens") if isinstance(usage.get("tokens"), dict) else usage.get("billed_units")
            if isinstance(tokens, dict):
                inp, outp = tokens.get("input_tokens"), tokens.get("output_tokens")
                out.append(Usage(inp if isinstance(inp, int) else None, outp if isinstance(outp, int) else None))
        error = delta.get("error")
        if error:
            out.append(StreamError(str(error), "cohere_error"))
        return out

    def close(self) -> list[StreamEvent]:
        """Nothing is owed: calls with no ``tool-call-end`` are the merger's to judge."""
        return []
