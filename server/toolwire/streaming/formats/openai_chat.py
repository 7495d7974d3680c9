"""OpenAI Chat Completions chunks, and every server that speaks them.

Covers OpenAI, Azure, Groq, xAI, DeepSeek, Mistral, OpenRouter, Cerebras, Z.ai,
Together-style gateways, Ollama, vLLM, llama.cpp and LM Studio. Shape (OpenAI API
reference, "The chat completion chunk object")::

    {"choices": [{"index": 0, "delta": {"content": "...", "tool_calls": [
        {"index": 0, "id": "call_..", "type": "function",
         "function": {"name": "..", "arguments": ".."}}]},
      "finish_reason": null}], "usage": {...}}

Quirks handled:

* ``tool_calls`` entries without ``index`` (Mistral) are keyed by a new
  non-empty id, else by the most recent call; an ``index`` sent as a string
  of digits is read as a number; a lone object instead of a list is accepted.
* The legacy ``delta.function_call`` (functions API) is one call at key
  ``("function_call", 0)``.
* Reasoning arrives as ``reasoning_content`` (DeepSeek, llama.cpp, xAI, Z.ai)
  or ``reasoning`` (Groq, OpenRouter); ``refusal`` text is kept as text.
* Usage-only chunks with ``choices: []``; Groq's ``x_groq.usage``; usage on
  every chunk (vLLM continuous usage): the latest wins.
* ``{"error": {...}}`` payloads (Groq ``event: error``, OpenRouter mid-stream
  errors), a bare ``{"message", "type", "code"}`` object as an ``error`` event
  (llama.cpp's server before Sep 2025 wrote it as a non-standard ``error:`` SSE line),
  and ``finish_reason: "error"``.
* ``arguments`` sent as an object instead of a string (Ollama-style servers)
  is taken as the whole arguments.
* Only choice 0 is merged (``n > 1`` responses are not tool-call streams).
"""

from __future__ import annotations

from typing import Any

from toolwire.streaming.delta import (
    ArgumentsDelta,
    Finish,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)


def usage_from(raw: Any) -> Usage | None:
    """Read an OpenAI-style usage object (``prompt_tokens``/``completion_tokens`` or ``input_tokens``/``output_tokens``,
    and their details' ``reasoning_tokens`` and ``cached_tokens``)."""
    if not isinstance(raw, dict):
        return None
    inp = raw.get("prompt_tokens", raw.get("input_tokens"))
    out = raw.get("completion_tokens", raw.get("output_tokens"))
    if inp is None and out is None:
        return None
    details_in = raw.get("prompt_tokens_details") or raw.get("input_tokens_details")
    details_out = raw.get("completion_tokens_details") or raw.get("output_tokens_details")
    cached = details_in.get("cached_tokens") if isinstance(details_in, dict) else None
    reasoning = details_out.get("reasoning_tokens") if isinstance(details_out, dict) else None
    return Usage(input_tokens=inp if isinstance(inp, int) else None, output_tokens=out if isinstance(out, int) else None,
                 reasoning_tokens=reasoning if isinstance(reasoning, int) else None,
                 cached_tokens=cached if isinstance(cached, int) else None)


def error_from(raw: Any) -> StreamError:
    """Turn an ``{"error": ...}`` value into a :class:`StreamError`."""
    if isinstance(raw, dict):
        message = raw.get("message") or str(raw)
        code = raw.get("code") or raw.get("type")
        return StreamError(message=str(message), code=str(code) if code is not None else None)
    return StreamError(message=str(raw))


def not_an_object(payload: Any) -> StreamError:
    """The error event for a payload that is not a JSON object."""
    return StreamError(message=f"chunk is not a JSON object: {str(payload)[:80]!r}", code="malformed_chunk")


def _index(raw: Any) -> int | None:
    """The tool-call index: None when absent; an int (a digit string is accepted).

    Raises:
        ValueError: a present index that is not a non-negative integer; the
            payload is malformed and is skipped with an anomaly
            (:class:`~toolwire.streaming.decoding.PayloadDecoder`).
    """
    if raw is None:
        return None
    if isinstance(raw, str) and raw.isascii() and raw.isdigit():
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise ValueError(f"tool call index {raw!r} is not a non-negative integer")
    return raw


def fragment_shape(payload: Any) -> tuple[int, str] | None:
    """``(N, "...")`` for exactly ``{"choices": [{"index": 0, "delta": {"tool_calls":
    [{"index": N, "function": {"arguments": "..."}}]}, "finish_reason": null}], ...}``
    (N a non-negative integer, no usage or error), else None. Pure; never raises."""
    try:
        choices = payload["choices"]
        if len(choices) != 1 or len(payload["choices"][0]["delta"]) != 1:
            return None
        choice = choices[0]
        calls = choice["delta"]["tool_calls"]
        if len(calls) != 1:
            return None
        raw = calls[0]
        if len(raw) != 2:
            return None
        index = raw["index"]
        fn = raw["function"]
        if len(fn) != 1:
            return None
        arguments = fn["arguments"]
    except (KeyError, TypeError, IndexError):
        return None
    if (
        type(index) is not int
        or index < 0
        or type(arguments) is not str
        or type(payload) is not dict
        or type(choice) is not dict
        or choice.get("finish_reason")
        or choice.get("index", 0) != 0
        or payload.get("usage")
        or payload.get("error")
        or "x_groq" in payload
    ):
        return None
    return index, arguments


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
        """Normalize one chunk (see :class:`~toolwire.streaming.formats.base.Normalizer`)."""
        fragment = self.fragment(payload)
        if fragment is not None:
            return [ArgumentsDelta(fragment[0], fragment[1])]
        if not isinstance(payload, dict):
            return [not_an_object(payload)]
        out: list[StreamEvent] = []
        choices = payload.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict) and (choice.get("index", 0) in (0, None) or _index(choice.get("index")) in (0, None)):
                    self._choice(choice, out)
        raw_usage = payload.get("usage")
        usage = None if raw_usage is None else usage_from(raw_usage)
        if usage is None and isinstance(payload.get("x_groq"), dict):
            usage = usage_from(payload["x_groq"].get("usage"))
        if usage is not None:
            out.append(usage)
        if payload.get("error"):
            out.append(error_from(payload["error"]))
        elif event == "error" and not choices and isinstance(payload.get("message"), str):
            out.append(error_from(payload))  # a bare error object: llama.cpp's ``error: {...}`` line
        return out

    def fragment(self, payload: Any) -> tuple[int, str] | None:
        """The most common chunk, a bare argument fragment, without the general walk.

        Returns ``(N, "...")`` when :func:`fragment_shape` matches: :meth:`feed` would
        return exactly ``[ArgumentsDelta(N, "...")]``. Returns None for anything else
        (:meth:`feed` decides). Never raises. A decoder may call it before :meth:`feed`
        (see :meth:`toolwire.streaming.decoding.PayloadDecoder.fast_path`).
        """
        found = fragment_shape(payload)
        if found is not None:
            self._last_key = found[0]
        return found

    def _choice(self, choice: dict, out: list[StreamEvent]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            for field in ("reasoning_content", "reasoning"):
                reasoning = delta.get(field)
                if isinstance(reasoning, str) and reasoning:
                    out.append(TextDelta(reasoning, "reasoning", field if field == "reasoning_content" else None))
                    break
            for field in ("content", "refusal"):
                content = delta.get(field)
                if isinstance(content, str) and content:
                    out.append(TextDelta(content))
            calls = delta.get("tool_calls")
            if isinstance(calls, dict):
                calls = [calls]
            if isinstance(calls, list):
                for raw in calls:
                    if isinstance(raw, dict):
                        out.append(self._call(raw))
            legacy = delta.get("function_call")
            if isinstance(legacy, dict):
                out.append(self._legacy(legacy))
        finish = choice.get("finish_reason")
        if isinstance(finish, str) and finish:
            out.append(Finish(finish))

    def _call(self, raw: dict) -> ToolCallDelta:
        fn = raw.get("function")
        fn = fn if isinstance(fn, dict) else {}
        call_id = raw.get("id")
        if not (call_id and isinstance(call_id, str)):
            call_id = None
        index = raw.get("index")
        if type(index) is not int:
            index = _index(index)
        if index is not None:
            key: Any = index
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
        name = fn.get("name")
        # positional (key, id, name, name_whole, arguments, arguments_whole): cheaper than keywords
        return ToolCallDelta(
            key,
            call_id,
            name if name and isinstance(name, str) else None,
            False,
            arguments if isinstance(arguments, str) else None,
            arguments if isinstance(arguments, dict) else None,
        )

    @staticmethod
    def _legacy(raw: dict) -> ToolCallDelta:
        arguments = raw.get("arguments")
        name = raw.get("name")
        return ToolCallDelta(
            key=("function_call", 0),
            name=name if isinstance(name, str) and name else None,
            name_whole=False,
            arguments=arguments if isinstance(arguments, str) else None,
        )

    def close(self) -> list[StreamEvent]:
        """Nothing is owed: chat streams close calls only by finishing."""
        return []
