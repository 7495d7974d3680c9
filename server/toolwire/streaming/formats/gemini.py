"""Google Gemini ``streamGenerateContent`` responses (Gemini API and Vertex AI).

Source: Gemini API reference, "GenerateContentResponse" and "FunctionCall";
Vertex AI docs, "Stream function call arguments" (``streamFunctionCallArguments``).

Two ways a call arrives in ``candidates[0].content.parts[]``:

* **Whole** ``functionCall: {name, args, id?}`` parts; several may share one
  event (parallel calls). Each is one complete call. Gemini API ids are
  optional, so calls without one get a stable id derived from the response
  and the call's position: ``<responseId>-<n>``, the same on every replay.
  Without a response id the call gets none here: the consumer names it (a
  turn: ``call_<turn>_<index>``; a client-fed stream: ``<streamId>-<index>``),
  since a fixed ``gemini-<n>`` would repeat in every response.
* **Streamed** (Vertex): ``functionCall: {name, willContinue: true}`` opens a
  call; parts ``{partialArgs: [{jsonPath, stringValue | numberValue |
  boolValue | nullValue, willContinue?}], willContinue?}`` set values in the
  arguments object, successive ``stringValue`` for one path being appended;
  ``{willContinue: true}`` alone is a keep-alive; a part without
  ``willContinue`` (often ``functionCall: {}``) closes the call. The object is
  built here and passed on as ``arguments_whole`` (the merger writes it out as
  compact JSON at the end, so ``arguments_text`` is exact JSON). A stream that
  never sends the closing part is closed by a ``STOP`` finish; after any other
  finish (``MAX_TOKENS``, ``SAFETY``, ...) or none at all the call stays open
  and the merger reports it cut off.

Gemini never says "tool calls": ``finishReason`` is ``STOP`` after calls too.
``MALFORMED_FUNCTION_CALL`` and ``UNEXPECTED_TOOL_CALL`` finishes are also
reported as errors. Parts with ``thought: true`` are reasoning.
"""

from __future__ import annotations

import re
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

_SEGMENT = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\[(?:'([^']*)'|\"([^\"]*)\")\]")
_ERROR_FINISH = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"})
#: The only finish that closes a streamed call left open: any other (MAX_TOKENS,
#: SAFETY, RECITATION, ...) may have cut its arguments short.
_CLOSING_FINISH = frozenset({"STOP"})
_VALUE_FIELDS = ("stringValue", "numberValue", "boolValue", "nullValue")


class JsonPathError(ValueError):
    """A ``partialArgs`` JSONPath this normalizer cannot apply."""


def parse_json_path(path: str) -> list[str | int]:
    """Split a simple JSONPath (``$.a.b[2]['c d']``) into keys and indexes.

    Raises:
        JsonPathError: the path does not start with ``$`` or has other syntax.
    """
    if not isinstance(path, str) or not path.startswith("$"):
        raise JsonPathError(f"JSONPath must start with '$': {path!r}")
    out: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _SEGMENT.match(path, pos)
        if match is None:
            raise JsonPathError(f"cannot read JSONPath {path!r} at character {pos}")
        name, index, single, double = match.groups()
        out.append(int(index) if index is not None else next(v for v in (name, single, double) if v is not None))
        pos = match.end()
    return out


def set_path(root: dict, path: list[str | int], value: Any, *, append: bool) -> None:
    """Set ``value`` at ``path`` inside ``root``, creating objects and arrays on the way.

    Args:
        root: The arguments object, changed in place.
        path: From :func:`parse_json_path`; must not be empty.
        value: The JSON value to store.
        append: Append ``value`` (a string) to a string already there.

    Raises:
        JsonPathError: the path is empty or crosses a value of the wrong type.
    """
    if not path:
        raise JsonPathError("JSONPath '$' names the whole object, not a value in it")
    node: Any = root
    for step, nxt in zip(path, path[1:]):
        fresh: Any = [] if isinstance(nxt, int) else {}
        node = _child(node, step, fresh)
    last = path[-1]
    existing = _get(node, last)
    if append and isinstance(existing, str) and isinstance(value, str):
        value = existing + value
    _put(node, last, value)


def _get(node: Any, step: str | int) -> Any:
    if isinstance(step, int):
        return node[step] if isinstance(node, list) and step < len(node) else None
    return node.get(step) if isinstance(node, dict) else None


def _put(node: Any, step: str | int, value: Any) -> None:
    if isinstance(step, int):
        if not isinstance(node, list):
            raise JsonPathError(f"index [{step}] applied to a {type(node).__name__}")
        if step > len(node) + 10_000:
            raise JsonPathError(f"index [{step}] is far past the end of the array")
        node.extend([None] * (step + 1 - len(node)))
        node[step] = value
    else:
        if not isinstance(node, dict):
            raise JsonPathError(f"key {step!r} applied to a {type(node).__name__}")
        node[step] = value


def _child(node: Any, step: str | int, fresh: Any) -> Any:
    existing = _get(node, step)
    if isinstance(existing, (dict, list)):
        return existing
    if existing is not None:
        raise JsonPathError(f"{step!r} holds a {type(existing).__name__}, not an object or array")
    _put(node, step, fresh)
    return fresh


class GeminiNormalizer:
    """Normalizer for Gemini / Vertex Gemini stream responses (see the module docstring)."""

    format = "gemini"
    explicit_ends = True

    __slots__ = ("_count", "_response_id", "_open", "_args")

    def __init__(self) -> None:
        self._count = 0
        self._response_id: str | None = None
        self._open: Any = None  # key of the streamed call being built
        self._args: dict[str, Any] = {}

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        """Normalize one response chunk (a list of chunks is also accepted)."""
        if isinstance(payload, list):
            return [e for item in payload for e in self.feed(item, event)]
        if not isinstance(payload, dict):
            return [not_an_object(payload)]
        out: list[StreamEvent] = []
        if self._response_id is None and isinstance(payload.get("responseId"), str):
            self._response_id = payload["responseId"]
        error = payload.get("error")
        if isinstance(error, dict):
            out.append(StreamError(str(error.get("message") or error), _code(error.get("status") or error.get("code"))))
        candidates = payload.get("candidates")
        if isinstance(candidates, list):
            for candidate in candidates:
                if isinstance(candidate, dict) and candidate.get("index", 0) in (0, None):
                    self._candidate(candidate, out)
                    break
        feedback = payload.get("promptFeedback")
        if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
            out.append(Finish(feedback["blockReason"]))
        usage = payload.get("usageMetadata")
        if isinstance(usage, dict) and ("promptTokenCount" in usage or "candidatesTokenCount" in usage):
            inp, outp = usage.get("promptTokenCount"), usage.get("candidatesTokenCount")
            out.append(Usage(inp if isinstance(inp, int) else None, outp if isinstance(outp, int) else None))
        return out

    def _candidate(self, candidate: dict, out: list[StreamEvent]) -> None:
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict):
                continue
            call = part.get("functionCall")
            if isinstance(call, dict):
                self._function_call(call, out)
            elif isinstance(part.get("text"), str) and part["text"]:
                out.append(TextDelta(part["text"], "reasoning" if part.get("thought") else "text"))
        reason = candidate.get("finishReason")
        if isinstance(reason, str) and reason:
            if self._open is not None and reason in _CLOSING_FINISH:
                out.append(self._close())
            out.append(Finish(reason))
            if reason in _ERROR_FINISH:
                message = candidate.get("finishMessage") or f"the model's function call was rejected ({reason})"
                out.append(StreamError(str(message), reason))

    def _new_key(self, call: dict) -> tuple[Any, str | None]:
        n = self._count
        self._count += 1
        call_id = call.get("id")
        if not (isinstance(call_id, str) and call_id):
            call_id = f"{self._response_id}-{n}" if self._response_id else None
        return ("gemini", n), call_id

    def _function_call(self, call: dict, out: list[StreamEvent]) -> None:
        name = call.get("name")
        more = bool(call.get("willContinue"))
        if isinstance(name, str) and name:
            if self._open is not None:
                out.append(self._close())
            key, call_id = self._new_key(call)
            if not more and "partialArgs" not in call:
                args = call.get("args")
                out.append(ToolCallDelta(key=key, id=call_id, name=name, arguments_whole=args if args is not None else {}))
                out.append(ToolCallEnd(key))
                return
            self._open, self._args = key, {}
            out.append(ToolCallDelta(key=key, id=call_id, name=name, arguments_whole=self._args))
        if self._open is None:
            return  # a keep-alive or stray closing part with no call open
        partial = call.get("partialArgs")
        if isinstance(partial, list) and partial:
            try:
                for item in partial:
                    self._apply(item)
            except JsonPathError as exc:
                out.append(StreamError(f"cannot apply partialArgs: {exc}", "malformed_chunk"))
            out.append(ToolCallDelta(key=self._open, arguments_whole=self._args))
        if not more:
            out.append(self._close())

    def _apply(self, item: Any) -> None:
        if not isinstance(item, dict):
            raise JsonPathError(f"partialArgs entry is not an object: {item!r}")
        path = parse_json_path(item.get("jsonPath"))
        for field in _VALUE_FIELDS:
            if field in item:
                value = None if field == "nullValue" else item[field]
                set_path(self._args, path, value, append=field == "stringValue")
                return
        raise JsonPathError(f"partialArgs entry for {item.get('jsonPath')!r} has no value")

    def _close(self) -> ToolCallEnd:
        key, self._open = self._open, None
        self._args = {}
        return ToolCallEnd(key)

    def close(self) -> list[StreamEvent]:
        """Nothing is owed: a streamed call never closed is the merger's to judge (cut off)."""
        return []


def _code(value: Any) -> str | None:
    return str(value) if value is not None else None
