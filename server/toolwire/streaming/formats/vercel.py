"""Vercel AI SDK stream parts: the UI message stream and the core/provider stream parts.

Sources: AI SDK docs, "Stream Protocols" (UI message stream, SSE of JSON
parts, ``x-vercel-ai-ui-message-stream: v1``) and the ``UIMessageChunk`` type
in ``ai/src/ui-message-stream/ui-message-chunks.ts``; the ``fullStream`` /
``LanguageModelV2StreamPart`` parts of AI SDK Core ("streamText" reference).

UI message stream parts::

    {"type": "tool-input-start", "toolCallId", "toolName", "providerExecuted"?}
    {"type": "tool-input-delta", "toolCallId", "inputTextDelta"}
    {"type": "tool-input-available", "toolCallId", "toolName", "input": {...}}
    {"type": "tool-input-error", "toolCallId", "toolName", "input", "errorText"}
    {"type": "text-delta", "id", "delta"}   {"type": "reasoning-delta", "id", "delta"}
    {"type": "finish", "finishReason"?}     {"type": "error", "errorText"}   {"type": "abort"}

Core / provider parts use ``id`` and ``delta`` for the same ``tool-input-*``
parts, add ``tool-input-end``, and deliver the whole call as
``{"type": "tool-call", "toolCallId", "toolName", "input"}`` (``input`` a JSON
string from providers, an object from ``fullStream``; ``args`` in SDK 4).

Calls are keyed by tool call id. A call closes at ``tool-input-available``,
``tool-input-error`` or ``tool-call``; a ``tool-input-end`` with no such part
after it closes the call at the end of the stream. The input given whole is
used only when no delta text arrived. Provider-executed calls get
``kind="provider"``.
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

_WHOLE = frozenset({"tool-input-available", "tool-input-error", "tool-call"})
_TEXT = {"text-delta": "text", "reasoning-delta": "reasoning", "reasoning": "reasoning"}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class VercelNormalizer:
    """Normalizer for AI SDK stream parts (see the module docstring)."""

    format = "vercel-ui"
    explicit_ends = True

    __slots__ = ("_closed", "_input_ended")

    def __init__(self) -> None:
        self._closed: set[str] = set()
        self._input_ended: list[str] = []

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        """Normalize one part (see :class:`~toolwire.streaming.formats.base.Normalizer`)."""
        if not isinstance(payload, dict):
            return [not_an_object(payload)]
        kind = payload.get("type") or event
        call_id = _str(payload.get("toolCallId")) or _str(payload.get("id"))
        if kind in _TEXT:
            text = payload.get("delta", payload.get("text", payload.get("textDelta")))
            return [TextDelta(text, _TEXT[kind])] if _str(text) else []
        if kind == "tool-input-start" and call_id:
            return [
                ToolCallDelta(
                    key=call_id,
                    id=call_id,
                    name=_str(payload.get("toolName")),
                    kind="provider" if payload.get("providerExecuted") else "function",
                )
            ]
        if kind == "tool-input-delta" and call_id:
            text = _str(payload.get("inputTextDelta")) or _str(payload.get("delta"))
            return [ToolCallDelta(key=call_id, arguments=text)] if text and call_id not in self._closed else []
        if kind == "tool-input-end" and call_id:
            self._input_ended.append(call_id)
            return []
        if kind in _WHOLE and call_id:
            return self._whole(call_id, payload)
        if kind == "finish":
            return self._finish(payload)
        if kind == "error":
            text = payload.get("errorText", payload.get("error"))
            return [StreamError(str(text.get("message", text) if isinstance(text, dict) else text), "error")]
        if kind == "abort":
            return [StreamError(str(payload.get("reason") or "the stream was aborted"), "abort")]
        return []

    def _whole(self, call_id: str, payload: dict) -> list[StreamEvent]:
        if call_id in self._closed:
            return []
        self._closed.add(call_id)
        value = payload.get("input", payload.get("args"))
        delta = ToolCallDelta(
            key=call_id,
            id=call_id,
            name=_str(payload.get("toolName")),
            arguments_final=value if isinstance(value, str) else None,
            arguments_whole=None if isinstance(value, str) else value,
            kind="provider" if payload.get("providerExecuted") else None,
        )
        return [delta, ToolCallEnd(call_id)]

    @staticmethod
    def _finish(payload: dict) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        reason = payload.get("finishReason")
        if isinstance(reason, dict):  # SDK 6 provider parts: {"unified": .., "raw": ..}
            reason = reason.get("unified") or reason.get("raw")
        if _str(reason):
            out.append(Finish(reason))
        usage = payload.get("usage") or payload.get("totalUsage")
        if isinstance(usage, dict):
            inp = usage.get("inputTokens", usage.get("promptTokens"))
            outp = usage.get("outputTokens", usage.get("completionTokens"))
            if isinstance(inp, dict):
                inp = inp.get("total")
            if isinstance(outp, dict):
                outp = outp.get("total")
            out.append(Usage(inp if isinstance(inp, int) else None, outp if isinstance(outp, int) else None))
        return out

    def close(self) -> list[StreamEvent]:
        """Close calls whose ``tool-input-end`` came without a whole-input part after it."""
        out: list[StreamEvent] = []
        for call_id in self._input_ended:
            if call_id not in self._closed:
                self._closed.add(call_id)
                out.append(ToolCallEnd(call_id))
        return out
