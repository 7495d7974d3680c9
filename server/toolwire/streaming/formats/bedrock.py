"""AWS Bedrock response streams: ConverseStream and InvokeModelWithResponseStream.

Both arrive as AWS event stream frames (:mod:`toolwire.streaming.eventstream`);
the frame's ``:event-type`` header is the event name. Payloads may also come
wrapped in the event name, as boto3 yields them (``{"contentBlockDelta": {...}}``).

**ConverseStream** (Bedrock API reference, "ConverseStream" and
"ContentBlockDeltaEvent"): ``messageStart``; per block ``contentBlockStart``
(``start.toolUse = {toolUseId, name, type?}``), ``contentBlockDelta``
(``delta.text``, ``delta.toolUse.input`` text fragments,
``delta.reasoningContent.text``), ``contentBlockStop``; ``messageStop``
(``stopReason``); ``metadata`` (``usage.inputTokens/outputTokens``). Blocks are
keyed by ``contentBlockIndex``. A ``toolUse`` of ``type: server_tool_use`` (Nova
built-in tools) keeps that kind: Bedrock runs it. Exceptions
(``throttlingException``, ``modelStreamErrorException``, ...) are errors.
The ``p`` field on every event is padding and is ignored.

**InvokeModelWithResponseStream** (Bedrock API reference,
"InvokeModelWithResponseStream"; "PayloadPart"): each ``chunk`` event holds
``{"bytes": <base64 of the model's own JSON event>}``. The decoded events are
handed to the model's own format, detected from the first decoded event
(Anthropic Messages for Claude); the registry (:mod:`toolwire.streaming.formats.registry`)
supplies that choice, so this module does not import it.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
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
from toolwire.streaming.formats.base import Normalizer
from toolwire.streaming.formats.openai_chat import not_an_object

#: ConverseStream event names (the ``:event-type`` header).
CONVERSE_EVENTS = frozenset(
    {"messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata"}
)


def _exception(event: str | None, payload: Any) -> StreamError | None:
    if event and (event.endswith("Exception") or event == "error"):
        message = payload.get("message") or payload.get("Message") if isinstance(payload, dict) else None
        code = payload.get("code") if isinstance(payload, dict) and event == "error" else event
        return StreamError(str(message or payload), str(code) if code else None)
    return None


def unwrap_event(payload: dict, event: str | None, names: frozenset[str]) -> tuple[str | None, Any]:
    """``(event name, body)`` of a payload: the given ``event`` when it is one of ``names``,
    else the key of a one-key object naming such an event or an exception (boto3's shape
    ``{"contentBlockDelta": {...}}``), else ``(event, payload)``."""
    if event in names:
        return event, payload
    if len(payload) == 1:
        (name, inner), = payload.items()
        if name in names or name.endswith("Exception"):
            return name, inner
    return event, payload


class BedrockConverseNormalizer:
    """Normalizer for ConverseStream events (see the module docstring)."""

    format = "bedrock-converse"
    explicit_ends = True

    __slots__ = ("_tool_blocks",)

    def __init__(self) -> None:
        self._tool_blocks: set[Any] = set()

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        """Normalize one event (see :class:`~toolwire.streaming.formats.base.Normalizer`)."""
        if not isinstance(payload, dict):
            return [not_an_object(payload)]
        event, body = unwrap_event(payload, event, CONVERSE_EVENTS)
        error = _exception(event, body)
        if error is not None:
            return [error]
        if not isinstance(body, dict):
            return []
        index = body.get("contentBlockIndex")
        if event == "contentBlockStart":
            start = body.get("start")
            tool = start.get("toolUse") if isinstance(start, dict) else None
            if not isinstance(tool, dict):
                return []
            self._tool_blocks.add(index)
            tool_id, name, kind = tool.get("toolUseId"), tool.get("name"), tool.get("type")
            return [
                ToolCallDelta(
                    key=index,
                    id=tool_id if isinstance(tool_id, str) else None,
                    name=name if isinstance(name, str) else None,
                    kind=kind if isinstance(kind, str) and kind not in ("tool_use", "function") else "function",
                    new_call=True,
                )
            ]
        if event == "contentBlockDelta":
            return self._delta(index, body.get("delta"))
        if event == "contentBlockStop":
            if index in self._tool_blocks:
                self._tool_blocks.discard(index)
                return [ToolCallEnd(index)]
            return []
        if event == "messageStop":
            reason = body.get("stopReason")
            return [Finish(reason)] if isinstance(reason, str) and reason else []
        if event == "metadata":
            usage = body.get("usage")
            if isinstance(usage, dict):
                inp, out = usage.get("inputTokens"), usage.get("outputTokens")
                return [Usage(inp if isinstance(inp, int) else None, out if isinstance(out, int) else None)]
        return []

    def _delta(self, index: Any, delta: Any) -> list[StreamEvent]:
        if not isinstance(delta, dict):
            return []
        tool = delta.get("toolUse")
        if isinstance(tool, dict):
            text = tool.get("input")
            if isinstance(text, str) and text:
                return [ToolCallDelta(key=index, arguments=text)]
            if isinstance(text, dict):
                return [ToolCallDelta(key=index, arguments_whole=text)]
            return []
        if isinstance(delta.get("text"), str) and delta["text"]:
            return [TextDelta(delta["text"])]
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict) and isinstance(reasoning.get("text"), str) and reasoning["text"]:
            return [TextDelta(reasoning["text"], "reasoning")]
        return []

    def close(self) -> list[StreamEvent]:
        """Nothing is owed: unclosed blocks are the merger's to judge (they were cut off)."""
        return []


class BedrockInvokeNormalizer:
    """Normalizer for InvokeModelWithResponseStream ``chunk`` events (see the module docstring).

    Args:
        inner_for: Returns the normalizer of the model's own format, given the
            first decoded event (called once per response).
    """

    format = "bedrock-invoke"
    #: Claude, the model family that streams tool calls through InvokeModel, closes its blocks.
    explicit_ends = True

    __slots__ = ("_inner", "_inner_for")

    def __init__(self, inner_for: Callable[[Any], Normalizer]) -> None:
        self._inner_for = inner_for
        self._inner: Normalizer | None = None

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        """Decode one ``chunk`` and normalize the event inside it."""
        if not isinstance(payload, dict):
            return [not_an_object(payload)]
        event, body = unwrap_event(payload, event, frozenset({"chunk"}))
        error = _exception(event, body)
        if error is not None:
            return [error]
        encoded = body.get("bytes") if isinstance(body, dict) else None
        if not isinstance(encoded, str):
            return []
        try:
            inner = json.loads(base64.b64decode(encoded, validate=True))
        except (binascii.Error, ValueError) as exc:
            return [StreamError(f"chunk bytes are not base64 JSON ({exc}): {encoded[:40]!r}", "malformed_chunk")]
        if self._inner is None:
            self._inner = self._inner_for(inner)
        return self._inner.feed(inner, None)

    def close(self) -> list[StreamEvent]:
        """Whatever the inner format owes."""
        return self._inner.close() if self._inner is not None else []
