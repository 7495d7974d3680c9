"""Anthropic Messages streaming events (direct API, Vertex AI, Bedrock InvokeModel).

Source: Anthropic API docs, "Streaming Messages": a stream is ``message_start``,
then per content block ``content_block_start`` / ``content_block_delta``* /
``content_block_stop`` (keyed by the block ``index``), then ``message_delta``
(``stop_reason``, cumulative ``usage``) and ``message_stop``; ``ping`` events
may appear anywhere and ``error`` events end the stream.

Tool input ("Input JSON delta" section): a ``tool_use`` block starts with
``input: {}`` and its input arrives as ``input_json_delta.partial_json``
fragments whose concatenation is the JSON text. The start block's ``input`` is
passed on as ``arguments_whole``, used only if no fragment text arrives.

Server-side tool blocks (``server_tool_use``, ``mcp_tool_use``) are merged
like client calls but carry their block type in ``kind``: the provider runs
them, Toolwire never does. ``thinking`` text is reasoning; ``text`` is text.
"""

from __future__ import annotations

from typing import Any

from toolwire.streaming.delta import (
    Finish,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    Usage,
)
from toolwire.streaming.formats.openai_chat import error_from, not_an_object

#: Content block types that are tool calls. ``tool_use`` is ours to run.
TOOL_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})


class AnthropicNormalizer:
    """Normalizer for Anthropic Messages stream events (see the module docstring)."""

    format = "anthropic"
    explicit_ends = True

    __slots__ = ("_tool_blocks", "_input_tokens")

    def __init__(self) -> None:
        self._tool_blocks: set[Any] = set()
        self._input_tokens: int | None = None

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        """Normalize one event (see :class:`~toolwire.streaming.formats.base.Normalizer`)."""
        if not isinstance(payload, dict):
            return [not_an_object(payload)]
        kind = payload.get("type") or event
        index = payload.get("index")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
            raise ValueError(f"content block index {index!r} is not a non-negative integer")  # skipped, with an anomaly
        if kind == "content_block_start":
            return self._start(index, payload.get("content_block"))
        if kind == "content_block_delta":
            return self._delta(index, payload.get("delta"))
        if kind == "content_block_stop":
            if index in self._tool_blocks:
                self._tool_blocks.discard(index)
                return [ToolCallEnd(index)]
            return []
        if kind == "message_start":
            message = payload.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            return self._usage(usage)
        if kind == "message_delta":
            out: list[StreamEvent] = []
            delta = payload.get("delta")
            reason = delta.get("stop_reason") if isinstance(delta, dict) else None
            if isinstance(reason, str) and reason:
                out.append(Finish(reason))
            out.extend(self._usage(payload.get("usage")))
            return out
        if kind == "error" or (kind is None and "error" in payload):
            return [error_from(payload.get("error"))]
        return []  # ping, message_stop, unknown future events

    def _start(self, index: Any, block: Any) -> list[StreamEvent]:
        if not isinstance(block, dict):
            return []
        btype = block.get("type")
        if btype in TOOL_BLOCKS:
            self._tool_blocks.add(index)
            block_id, name = block.get("id"), block.get("name")
            return [
                ToolCallDelta(
                    key=index,
                    id=block_id if isinstance(block_id, str) else None,
                    name=name if isinstance(name, str) else None,
                    arguments_whole=block.get("input"),
                    kind="function" if btype == "tool_use" else btype,
                    new_call=True,
                )
            ]
        if btype == "text" and isinstance(block.get("text"), str) and block["text"]:
            return [TextDelta(block["text"])]
        if btype == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
            return [TextDelta(block["thinking"], "reasoning")]
        return []

    def _delta(self, index: Any, delta: Any) -> list[StreamEvent]:
        if not isinstance(delta, dict):
            return []
        dtype = delta.get("type")
        if dtype == "input_json_delta":
            text = delta.get("partial_json")
            if isinstance(text, str) and text:
                return [ToolCallDelta(key=index, arguments=text)]
            return []
        if dtype == "text_delta" and isinstance(delta.get("text"), str):
            return [TextDelta(delta["text"])]
        if dtype == "thinking_delta" and isinstance(delta.get("thinking"), str):
            return [TextDelta(delta["thinking"], "reasoning")]
        return []  # signature_delta, citations_delta

    def _usage(self, usage: Any) -> list[StreamEvent]:
        if not isinstance(usage, dict):
            return []
        inp = usage.get("input_tokens")
        if isinstance(inp, int):
            self._input_tokens = inp
        out = usage.get("output_tokens")
        return [Usage(self._input_tokens, out if isinstance(out, int) else None)]

    def close(self) -> list[StreamEvent]:
        """Nothing is owed: unclosed blocks are the merger's to judge (they were cut off)."""
        return []
