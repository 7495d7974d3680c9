"""OpenAI Chat Completions chunks, and every server that speaks them.

Covers OpenAI, Azure, Groq, xAI, DeepSeek, Mistral, OpenRouter, Together-style
gateways, Ollama, vLLM, llama.cpp and LM Studio. Shape (OpenAI API reference,
"The chat completion chunk object")::

    {"choices": [{"index": 0, "delta": {"content": "...", "tool_calls": [
        {"index": 0, "id": "call_..", "type": "function",
         "function": {"name": "..", "arguments": ".."}}]},
      "finish_reason": null}], "usage": {...}}

Quirks handled: ``tool_calls`` entries without ``index`` (Mistral) are keyed by
a new non-empty id, else by the most recent call; reasoning arrives as
``reasoning_content`` (DeepSeek, llama.cpp) or ``reasoning`` (Groq, OpenRouter);
usage-only chunks with ``choices: []``; ``{"error": {...}}`` payloads.
"""

from __future__ import annotations

from typing import Any

from toolwire.streaming.delta import (
    Finish,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)


def usage_from(raw: Any) -> Usage | None:
    """Read an OpenAI-style usage object (``prompt_tokens``/``completion_tokens`` or ``input_tokens``/``output_tokens``)."""
    if not isinstance(raw, dict):
        return None
    inp = raw.get("prompt_tokens", raw.get("input_tokens"))
    out = raw.get("completion_tokens", raw.get("output_tokens"))
    if inp is None and out is None:
        return None
    return Usage(input_tokens=inp if isinstance(inp, int) else None, output_tokens=out if isinstance(out, int) else None)


def error_from(raw: Any) -> StreamError:
    """Turn an ``{"error": ...}`` value into a :class:`StreamError`."""
    if isinstance(raw, dict):
        message = raw.get("message") or str(raw)
        code = raw.get("code") or raw.get("type")
        return StreamError(message=str(message), code=str(code) if code is not None else None)
    return StreamError(message=str(raw))


class OpenAIChatNormalizer:
    """Normalizer for Chat Completions chunks (see the module docstring)."""

    format = "openai-chat"
    explicit_ends = False

    __slots__ = ("_last_key", "_ids", "_next_free")

    def __init__(self) -> None:
        self._last_key: Any = None
        self._ids: dict[str, Any] = {}
        self._next_free = 0

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        if not isinstance(payload, dict):
            return [StreamError(message=f"chunk is not a JSON object: {str(payload)[:80]!r}", code="malformed_chunk")]
        out: list[StreamEvent] = []
        if "error" in payload and payload["error"]:
            out.append(error_from(payload["error"]))
        choices = payload.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict) and choice.get("index", 0) in (0, None):
                    self._choice(choice, out)
        usage = usage_from(payload.get("usage"))
        if usage is not None:
            out.append(usage)
        return out

    def _choice(self, choice: dict, out: list[StreamEvent]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                out.append(TextDelta(reasoning, "reasoning"))
            content = delta.get("content")
            if isinstance(content, str) and content:
                out.append(TextDelta(content))
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                for raw in calls:
                    if isinstance(raw, dict):
                        out.append(self._call(raw))
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            out.append(Finish(finish))

    def _call(self, raw: dict) -> ToolCallDelta:
        fn = raw.get("function")
        fn = fn if isinstance(fn, dict) else {}
        call_id = raw.get("id") or None
        index = raw.get("index")
        if isinstance(index, int):
            key = index
            self._next_free = max(self._next_free, index + 1)
        elif call_id and call_id not in self._ids:
            key = ("noindex", self._next_free)
            self._next_free += 1
        elif call_id:
            key = self._ids[call_id]
        else:
            key = self._last_key if self._last_key is not None else ("noindex", 0)
        if call_id:
            self._ids.setdefault(call_id, key)
        self._last_key = key
        arguments = fn.get("arguments")
        return ToolCallDelta(
            key=key,
            id=call_id if isinstance(call_id, str) else None,
            name=fn.get("name") or None,
            name_whole=False,
            arguments=arguments if isinstance(arguments, str) else None,
        )

    def close(self) -> list[StreamEvent]:
        return []
