"""Tool calling for models without native tool calls (``toolCalling: "text"``).

Requests: the tool definitions go into the system message with the convention
below, assistant tool calls are written back as text blocks, and tool results
become user messages, so the history is plain chat any model accepts.

Responses: :class:`TextToolCallReader` wraps the response's normalizer and reads
the blocks back out of the streamed text, as canonical tool-call events; text
outside the blocks stays text. The convention (one block per call)::

    <tool_call>
    {"name": "read_file", "arguments": {"path": "a.py"}}
    </tool_call>

A block that is not a JSON object with a string ``name`` still becomes a call (its
raw text kept as the arguments), so it ends ``errored`` and the model sees why; a
block left open when the response ends is cut off (``truncated``).

Only calls the model made are read: a block inside ``<think>…</think>`` (reasoning
written into the text), inside a Markdown code fence (a line opening with three or
more backticks or tildes, closed by a line of at least as many of the same
character, CommonMark §4.5), or in the provider's reasoning channel is text, not a
call. An unclosed ``<think>`` or fence runs to the end of the response.
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolwire.streaming.delta import StreamEvent, TextDelta, ToolCallDelta, ToolCallEnd
from toolwire.streaming.formats.base import Normalizer
from toolwire.streaming.partial import ArgumentsError, parse_strict

OPEN = "<tool_call>"
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]+)"')
CLOSE = "</tool_call>"
THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
#: A fence opening at a line start: up to 3 spaces, then 3+ backticks or tildes.
_FENCE_OPEN = re.compile(r"\n {0,3}(`{3,}|~{3,})")
#: A line that may still grow into a fence line (held back until it is complete).
_MAYBE_FENCE = re.compile(r"\n {0,3}(`*|~*)$")

INSTRUCTIONS = """You can use tools. To call one, write a block like this, alone on its lines, and then stop and wait for the result:
<tool_call>
{"name": "TOOL_NAME", "arguments": {...}}
</tool_call>
You may write several blocks in one answer. Each result comes back in a <tool_result> block.
Available tools (name, description, JSON Schema of the arguments):
"""


def render_call(name: str, arguments_text: str) -> str:
    """One call as a text block (arguments kept verbatim when they are not JSON)."""
    try:
        arguments: Any = json.loads(arguments_text) if arguments_text.strip() else {}
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        arguments = arguments_text
    return f"{OPEN}\n{json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)}\n{CLOSE}"


def to_text_messages(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rewrite a Chat Completions history for a model without native tool calls.

    Args:
        messages: The history (system, user, assistant with ``tool_calls``, tool).
        tools: OpenAI-style tool definitions.

    Returns:
        A new list: the tools described in the (first) system message, assistant
        calls appended to their text as blocks, each tool result a user message
        ``<tool_result id=... name=...>...</tool_result>``; consecutive results are
        joined into one user message.
    """
    catalogue = "\n".join(
        json.dumps({"name": t["function"]["name"], "description": t["function"].get("description", ""),
                    "parameters": t["function"].get("parameters", {})}, ensure_ascii=False)
        for t in tools
    )
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    added_tools = False
    for message in messages:
        role = message.get("role")
        if role == "system" and not added_tools:
            out.append({"role": "system", "content": f"{message.get('content') or ''}\n\n{INSTRUCTIONS}{catalogue}"})
            added_tools = True
        elif role == "assistant":
            parts = [message["content"]] if message.get("content") else []
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
                parts.append(render_call(call["function"]["name"], call["function"]["arguments"]))
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif role == "tool":
            call_id = message.get("tool_call_id", "")
            block = (f'<tool_result id="{call_id}" name="{names.get(call_id, "")}">\n'
                     f"{message.get('content', '')}\n</tool_result>")
            if out and out[-1].get("role") == "user" and out[-1].get("_results"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_results": True})
        else:
            out.append(dict(message))
    if not added_tools:
        out.insert(0, {"role": "system", "content": INSTRUCTIONS + catalogue})
    for message in out:
        message.pop("_results", None)
    return out


class TextToolCallReader:
    """Wraps a normalizer: ``<tool_call>`` blocks in the assistant text become calls.

    Args:
        inner: The provider's normalizer.

    The scan is incremental: tags may be split across chunks anywhere; text that
    could be the start of a tag is held back until it is known not to be one.
    """

    explicit_ends = True  # every call is closed by its tag: an unclosed one was cut off

    def __init__(self, inner: Normalizer) -> None:
        self.inner = inner
        self.format = f"{inner.format}+text-tools"
        self._inside = False
        self._buffer = ""
        self._count = 0
        self._region: str | None = None  # None (plain text), "think" or "fence"
        self._fence = ""  # the opening fence's run (e.g. "````"), while in a fence
        self._line_start = True  # the buffer starts at the beginning of a line

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        out: list[StreamEvent] = []
        for item in self.inner.feed(payload, event):
            if type(item) is TextDelta and item.channel == "text":
                self._scan(item.text, out)
            else:
                out.append(item)
        return out

    def close(self) -> list[StreamEvent]:
        out = self.inner.close()
        if self._inside:
            # an open block: the call was cut off; the merger reports it truncated
            name = _NAME.search(self._buffer)
            out.append(ToolCallDelta(self._key(), name=name.group(1) if name else "(unreadable tool call)",
                                     arguments=self._buffer))
        elif self._buffer:
            out.append(TextDelta(self._buffer))
        self._buffer = ""
        return out

    def _key(self) -> tuple[str, int]:
        return ("text-call", self._count)

    def _emit(self, text: str, out: list[StreamEvent]) -> None:
        if text:
            out.append(TextDelta(text))
            self._line_start = text.endswith("\n")

    def _scan(self, text: str, out: list[StreamEvent]) -> None:
        buffer = self._buffer + text
        while buffer:
            if self._inside:
                at = buffer.find(CLOSE)
                if at < 0:
                    break  # the block is emitted whole at its close tag (or cut off at the end)
                out.extend(self._block(buffer[:at]))
                buffer = buffer[at + len(CLOSE) :]
                self._inside = False
                self._line_start = False
                continue
            if self._region == "think":
                at = buffer.find(THINK_CLOSE)
                if at < 0:
                    keep = _partial_tag_suffix(buffer, THINK_CLOSE)
                    self._emit(buffer[: len(buffer) - keep], out)
                    buffer = buffer[len(buffer) - keep :]
                    break
                self._emit(buffer[: at + len(THINK_CLOSE)], out)
                buffer = buffer[at + len(THINK_CLOSE) :]
                self._region = None
                continue
            if self._region == "fence":
                end = self._fence_end(buffer)
                if end is None:
                    cut = self._safe_fence_prefix(buffer)
                    self._emit(buffer[:cut], out)
                    buffer = buffer[cut:]
                    break
                self._emit(buffer[:end], out)
                buffer = buffer[end:]
                self._region = None
                continue
            # plain text: the first of a call, a <think>, a fence
            lead = "\n" if self._line_start else ""
            fence = _FENCE_OPEN.search(lead + buffer)
            marks = [(buffer.find(OPEN), "call"), (buffer.find(THINK_OPEN), "think")]
            if fence is not None:
                marks.append((fence.start() + 1 - len(lead), "fence"))
            found = [(at, kind) for at, kind in marks if at >= 0]
            if not found:
                keep = max(_partial_tag_suffix(buffer, OPEN), _partial_tag_suffix(buffer, THINK_OPEN),
                           self._maybe_fence(lead, buffer))
                self._emit(buffer[: len(buffer) - keep], out)
                buffer = buffer[len(buffer) - keep :]
                break
            at, kind = min(found)
            if kind == "call":
                self._emit(buffer[:at], out)
                buffer = buffer[at + len(OPEN) :]
                self._inside = True
                self._count += 1
                out.append(ToolCallDelta(self._key(), id=f"call_text_{self._count}"))
            elif kind == "think":
                self._emit(buffer[: at + len(THINK_OPEN)], out)
                buffer = buffer[at + len(THINK_OPEN) :]
                self._region = "think"
            else:
                assert fence is not None
                self._fence = fence.group(1)
                end = fence.end() - len(lead)
                self._emit(buffer[:end], out)
                buffer = buffer[end:]
                self._region = "fence"
        self._buffer = buffer

    def _maybe_fence(self, lead: str, buffer: str) -> int:
        """Characters at the end of ``buffer`` that may still become a fence opening."""
        match = _MAYBE_FENCE.search(lead + buffer)
        return len(match.group(0)) - 1 if match and match.start() >= len(lead) - 1 else 0

    def _fence_end(self, buffer: str) -> int | None:
        """End (exclusive, after its newline) of the closing fence line in ``buffer``, if complete."""
        lead = "\n" if self._line_start else ""
        closing = re.compile(r"\n {0,3}" + re.escape(self._fence[0]) + "{" + str(len(self._fence)) + r",}[ \t]*\n")
        match = closing.search(lead + buffer)
        return None if match is None else match.end() - len(lead)

    def _safe_fence_prefix(self, buffer: str) -> int:
        """How much of ``buffer`` (inside a fence) can be emitted: all but a last partial line."""
        last = buffer.rfind("\n")
        if last < 0:
            return 0 if self._line_start else len(buffer)
        return last  # the "\n" starting the last line stays: it may open the closing fence

    def _block(self, body: str) -> list[StreamEvent]:
        key = self._key()
        text = body.strip()
        try:
            value = parse_strict(text)  # refuses duplicate keys, like native arguments
        except ArgumentsError:
            value = None  # the same parse at completion reports exactly what is wrong
        if isinstance(value, dict) and isinstance(value.get("name"), str) and value["name"]:
            arguments = value.get("arguments", {})
            if isinstance(arguments, str):
                arguments_text = arguments  # kept verbatim: valid JSON or not
            else:
                arguments_text = json.dumps(arguments, ensure_ascii=False)
            return [ToolCallDelta(key, name=value["name"], arguments=arguments_text), ToolCallEnd(key)]
        # not a well-formed block: keep what the model wrote so the error shows it
        name = _NAME.search(text)
        return [ToolCallDelta(key, name=name.group(1) if name else "(unreadable tool call)", arguments=text),
                ToolCallEnd(key)]


def _partial_tag_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
