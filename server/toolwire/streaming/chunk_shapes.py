"""The JSON types of the payload fields each format's normalizer reads.

A normalizer reads a provider's payload leniently: a field of the wrong type (an
``id`` that is a number, ``arguments`` that is a list) is left out, as if absent,
so that one odd chunk of a server-run stream never ends the turn
(:mod:`toolwire.streaming.decoding`). A client that feeds chunks itself
(``toolwire/toolCalls/merge``) is told instead: :func:`wrong_field` names the first
field whose type the normalizer would not read, and the request is refused.

A spec lists, per format (and per event type for the formats whose payloads are
tagged), the fields the normalizer reads; each is checked when present and not
``null`` (every provider sends ``null`` for "absent"). Unlisted fields are never
checked. The types follow the providers' API references named in each
normalizer's module docstring; ``tests/test_chunk_shapes.py`` checks that every
payload of the recorded corpus passes.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Union

from toolwire.streaming.formats.bedrock import CONVERSE_EVENTS, unwrap_event
from toolwire.streaming.formats.openai_chat import fragment_shape
from toolwire.streaming.formats.registry import detect_format

__all__ = ["wrong_field", "json_type"]


@dataclass(frozen=True, slots=True)
class Scalar:
    """A leaf: ``name`` is what the field must be ("a string"), ``ok`` says whether it is."""

    name: str
    ok: Callable[[Any], bool]


@dataclass(frozen=True, slots=True)
class Obj:
    """An object whose listed fields have these specs (others are not checked)."""

    fields: Mapping[str, Spec]
    name: str = "an object"


@dataclass(frozen=True, slots=True)
class Arr:
    """An array whose every item has the spec ``item``."""

    item: Spec


@dataclass(frozen=True, slots=True)
class Either:
    """Any one of ``options`` (the first whose outer type matches is checked)."""

    options: tuple[Spec, ...]


@dataclass(frozen=True, slots=True)
class Tagged:
    """An object checked with ``common`` and with the spec of its type: the string in
    ``tag`` (else the SSE event name), looked up in ``by_type``."""

    common: Obj
    by_type: Mapping[str, Obj]
    tag: str = "type"


Spec = Union[Scalar, Obj, Arr, Either]


def json_type(value: Any) -> str:
    """The JSON type of a parsed value, as a message says it ("a number", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__


STR = Scalar("a string", lambda v: isinstance(v, str))
BOOL = Scalar("a boolean", lambda v: isinstance(v, bool))
INT = Scalar("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
NUM = Scalar("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))
INDEX = Scalar("a non-negative integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0)
#: OpenAI-compatible servers send a tool-call index as a string of digits now and then.
DIGITS_INDEX = Scalar("a non-negative integer", lambda v: INDEX.ok(v) or (isinstance(v, str) and v.isascii()
                                                                        and v.isdigit()))
ANY_OBJ = Obj({})


# -- per format -------------------------------------------------------------------
_OPENAI_USAGE = Obj({"prompt_tokens": INT, "completion_tokens": INT, "input_tokens": INT, "output_tokens": INT})
_CHAT_CALL = Obj({"index": DIGITS_INDEX, "id": STR, "type": STR,
                  "function": Obj({"name": STR, "arguments": Either((STR, ANY_OBJ))})})
OPENAI_CHAT = Obj({
    "choices": Arr(Obj({
        "index": DIGITS_INDEX,
        "delta": Obj({"content": STR, "refusal": STR, "reasoning_content": STR, "reasoning": STR,
                      "tool_calls": Either((Arr(_CHAT_CALL), _CHAT_CALL)),
                      "function_call": Obj({"name": STR, "arguments": STR})}),
        "finish_reason": STR,
    })),
    "usage": _OPENAI_USAGE,
    "x_groq": Obj({"usage": _OPENAI_USAGE}),
})

_RESPONSES_ITEM = Obj({"type": STR, "id": STR, "call_id": STR, "name": STR, "arguments": STR})
_RESPONSES_DELTA = Obj({"delta": STR, "item_id": STR, "output_index": INDEX})
_RESPONSES_DONE = Obj({"arguments": STR, "item_id": STR, "output_index": INDEX})
_RESPONSES_ITEM_EVENT = Obj({"item": _RESPONSES_ITEM, "output_index": INDEX})
_RESPONSES_END = Obj({"response": Obj({"incomplete_details": Obj({"reason": STR}), "usage": _OPENAI_USAGE})})
OPENAI_RESPONSES = Tagged(Obj({"type": STR}), {
    **{kind: Obj({"delta": STR}) for kind in ("response.output_text.delta", "response.refusal.delta",
                                              "response.reasoning_text.delta",
                                              "response.reasoning_summary_text.delta")},
    "response.function_call_arguments.delta": _RESPONSES_DELTA,
    "response.mcp_call_arguments.delta": _RESPONSES_DELTA,
    "response.function_call_arguments.done": _RESPONSES_DONE,
    "response.mcp_call_arguments.done": _RESPONSES_DONE,
    "response.output_item.added": _RESPONSES_ITEM_EVENT,
    "response.output_item.done": _RESPONSES_ITEM_EVENT,
    "response.completed": _RESPONSES_END,
    "response.incomplete": _RESPONSES_END,
    "response.failed": _RESPONSES_END,
})

_ANTHROPIC_USAGE = Obj({"input_tokens": INT, "output_tokens": INT})
ANTHROPIC = Tagged(Obj({"type": STR, "index": INDEX}), {
    "content_block_start": Obj({"content_block": Obj({"type": STR, "id": STR, "name": STR, "input": ANY_OBJ,
                                                      "text": STR, "thinking": STR})}),
    "content_block_delta": Obj({"delta": Obj({"type": STR, "partial_json": STR, "text": STR, "thinking": STR})}),
    "message_start": Obj({"message": Obj({"usage": _ANTHROPIC_USAGE})}),
    "message_delta": Obj({"delta": Obj({"stop_reason": STR}), "usage": _ANTHROPIC_USAGE}),
})

_GEMINI_CALL = Obj({"name": STR, "id": STR, "args": ANY_OBJ, "willContinue": BOOL,
                    "partialArgs": Arr(Obj({"jsonPath": STR}))})
GEMINI = Obj({
    "responseId": STR,
    "candidates": Arr(Obj({
        "index": INDEX,
        "content": Obj({"parts": Arr(Obj({"text": STR, "thought": BOOL, "functionCall": _GEMINI_CALL}))}),
        "finishReason": STR,
        "finishMessage": STR,
    })),
    "promptFeedback": Obj({"blockReason": STR}),
    "usageMetadata": Obj({"promptTokenCount": INT, "candidatesTokenCount": INT}),
})

_CONVERSE = {
    "contentBlockStart": Obj({"contentBlockIndex": INDEX, "start": Obj({"toolUse": Obj({
        "toolUseId": STR, "name": STR, "type": STR})})}),
    "contentBlockDelta": Obj({"contentBlockIndex": INDEX, "delta": Obj({
        "toolUse": Obj({"input": Either((STR, ANY_OBJ))}), "text": STR, "reasoningContent": Obj({"text": STR})})}),
    "contentBlockStop": Obj({"contentBlockIndex": INDEX}),
    "messageStop": Obj({"stopReason": STR}),
    "metadata": Obj({"usage": Obj({"inputTokens": INT, "outputTokens": INT})}),
}

_COHERE_CALL = Obj({"id": STR, "function": Obj({"name": STR, "arguments": STR})})
_COHERE_CALL_EVENT = Obj({"delta": Obj({"message": Obj({"tool_calls": Either((Arr(_COHERE_CALL), _COHERE_CALL))})})})
_COHERE_TOKENS = Obj({"input_tokens": NUM, "output_tokens": NUM})
COHERE = Tagged(Obj({"type": STR, "index": INDEX}), {
    "tool-call-start": _COHERE_CALL_EVENT,
    "tool-call-delta": _COHERE_CALL_EVENT,
    "tool-plan-delta": Obj({"delta": Obj({"message": Obj({"tool_plan": STR})})}),
    "content-start": Obj({"delta": Obj({"message": Obj({"content": Obj({"text": STR})})})}),
    "content-delta": Obj({"delta": Obj({"message": Obj({"content": Obj({"text": STR})})})}),
    "message-end": Obj({"delta": Obj({"finish_reason": STR, "usage": Obj({"tokens": _COHERE_TOKENS,
                                                                           "billed_units": _COHERE_TOKENS})})}),
})

_VERCEL_TEXT = Obj({"delta": STR, "text": STR, "textDelta": STR})
_VERCEL_WHOLE = Obj({"toolName": STR, "providerExecuted": BOOL})
_VERCEL_TOKENS = Either((INT, Obj({"total": INT})))
_VERCEL_USAGE = Obj({"inputTokens": _VERCEL_TOKENS, "outputTokens": _VERCEL_TOKENS,
                     "promptTokens": _VERCEL_TOKENS, "completionTokens": _VERCEL_TOKENS})
VERCEL = Tagged(Obj({"type": STR, "toolCallId": STR, "id": STR}), {
    "text-delta": _VERCEL_TEXT,
    "reasoning-delta": _VERCEL_TEXT,
    "reasoning": _VERCEL_TEXT,
    "tool-input-start": Obj({"toolName": STR, "providerExecuted": BOOL}),
    "tool-input-delta": Obj({"inputTextDelta": STR, "delta": STR}),
    "tool-input-available": _VERCEL_WHOLE,
    "tool-input-error": _VERCEL_WHOLE,
    "tool-call": _VERCEL_WHOLE,
    "finish": Obj({"finishReason": Either((STR, Obj({"unified": STR, "raw": STR}))),
                   "usage": _VERCEL_USAGE, "totalUsage": _VERCEL_USAGE}),
})

SPECS: dict[str, Spec | Tagged] = {
    "openai-chat": OPENAI_CHAT,
    "openai-responses": OPENAI_RESPONSES,
    "anthropic": ANTHROPIC,
    "gemini": GEMINI,
    "cohere": COHERE,
    "vercel-ui": VERCEL,
}


# -- checking ---------------------------------------------------------------------
#: A compiled check: None when the value is right, else the problem followed by the
#: path's steps from the inside out (built only for a refusal).
Check = Callable[[Any], "list[str] | None"]


def _name(spec: Spec) -> str:
    if isinstance(spec, (Scalar, Obj)):
        return spec.name
    if isinstance(spec, Arr):
        return "an array"
    return " or ".join(_name(option) for option in spec.options)


def _outer(spec: Spec) -> Callable[[Any], bool]:
    """Whether a value has the outer type ``spec`` wants."""
    if isinstance(spec, Scalar):
        return spec.ok
    if isinstance(spec, Obj):
        return lambda v: isinstance(v, dict)
    if isinstance(spec, Arr):
        return lambda v: isinstance(v, list)
    tests = [_outer(option) for option in spec.options]
    return lambda v: any(test(v) for test in tests)


def _compile(spec: Spec) -> Check:
    """A fast check of ``spec`` (every fed chunk is checked: see fed_chunks.py)."""
    name = _name(spec)

    def wrong(value: Any) -> list[str]:
        return [f"is {json_type(value)}, not {name}"]

    if isinstance(spec, Scalar):
        ok = spec.ok
        return lambda value: None if ok(value) else wrong(value)
    if isinstance(spec, Obj):
        fields = {key: _compile(inner) for key, inner in spec.fields.items()}

        def check_object(value: Any) -> list[str] | None:
            if not isinstance(value, dict):
                return wrong(value)
            for key, child in value.items():
                check = fields.get(key)
                if check is not None and child is not None:
                    found = check(child)
                    if found is not None:
                        found.append(key)
                        return found
            return None

        return check_object
    if isinstance(spec, Arr):
        item = _compile(spec.item)

        def check_array(value: Any) -> list[str] | None:
            if not isinstance(value, list):
                return wrong(value)
            for n, child in enumerate(value):
                found = item(child) if child is not None else None
                if found is not None:
                    found.append(f"[{n}]")
                    return found
            return None

        return check_array
    options = [(_outer(option), _compile(option)) for option in spec.options]

    def check_either(value: Any) -> list[str] | None:
        for matches, check in options:
            if matches(value):
                return check(value)
        return wrong(value)

    return check_either


def _tagged(spec: Tagged) -> Callable[[Any, str | None], "list[str] | None"]:
    common = _compile(spec.common)
    by_type = {kind: _compile(inner) for kind, inner in spec.by_type.items()}

    def check(payload: Any, event: str | None) -> list[str] | None:
        found = common(payload)
        if found is not None:
            return found
        kind = payload.get(spec.tag) or event
        inner = by_type.get(kind) if isinstance(kind, str) else None
        return inner(payload) if inner is not None else None

    return check


def _sentence(found: list[str], prefix: str = "") -> str:
    """``["is a number, not a string", "id", "[0]", "tool_calls"]`` → ``tool_calls[0].id is …``."""
    problem, steps = found[0], found[:0:-1]
    path = prefix
    for step in steps:
        path += step if step.startswith("[") or not path else f".{step}"
    return f"{path} {problem}" if path else f"the payload {problem}"


_CHECKS: dict[str, Callable[[Any, str | None], "list[str] | None"]] = {}
for _fmt, _spec in SPECS.items():
    if isinstance(_spec, Tagged):
        _CHECKS[_fmt] = _tagged(_spec)
    else:
        _CHECKS[_fmt] = (lambda compiled: lambda payload, event: compiled(payload))(_compile(_spec))
_CONVERSE_CHECKS = {name: _compile(spec) for name, spec in _CONVERSE.items()}
_chat = _CHECKS["openai-chat"]
# a bare argument fragment, the bulk of a chat stream, is well typed when its shape matches
_CHECKS["openai-chat"] = lambda payload, event: None if fragment_shape(payload) is not None else _chat(payload, event)


def wrong_field(fmt: str, payload: dict, event: str | None = None) -> str | None:
    """The first field of ``payload`` the ``fmt`` normalizer would leave out for its type.

    Args:
        fmt: A canonical format name (``openai-chat``, ``bedrock-invoke``...).
        payload: One provider payload (an object).
        event: Its SSE event name or AWS ``:event-type``, if any.

    Returns:
        None when every field it reads has the right type; else e.g.
        ``"choices[0].delta.tool_calls[0].id is a number, not a string"``.
    """
    check = _CHECKS.get(fmt)
    if check is not None:
        found = check(payload, event)
        return _sentence(found) if found is not None else None
    if fmt == "bedrock-converse":
        name, body = unwrap_event(payload, event, CONVERSE_EVENTS)
        converse = _CONVERSE_CHECKS.get(name) if isinstance(name, str) else None
        found = converse(body) if converse is not None and isinstance(body, dict) else None
        return _sentence(found, name if body is not payload else "") if found is not None else None
    if fmt == "bedrock-invoke":
        return _invoke(payload, event)
    return None


def _invoke(payload: dict, event: str | None) -> str | None:
    """A Bedrock InvokeModel ``chunk``: ``bytes`` is base64 of the model's own event."""
    name, body = unwrap_event(payload, event, frozenset({"chunk"}))
    prefix = f"{name}." if body is not payload else ""
    if not isinstance(body, dict) or body.get("bytes") is None:
        return None
    encoded = body["bytes"]
    if not isinstance(encoded, str):
        return f"{prefix}bytes is {json_type(encoded)}, not a string"
    try:
        inner = json.loads(base64.b64decode(encoded, validate=True))
    except (binascii.Error, ValueError):
        return None  # the normalizer reports it as a stream error
    if not isinstance(inner, dict):
        return f"{prefix}bytes decodes to {json_type(inner)}, not an object"
    found = wrong_field(detect_format(inner) or "anthropic", inner)
    return f"{prefix}bytes (decoded): {found}" if found else None
