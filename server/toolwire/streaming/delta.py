"""Canonical stream events: what every provider normalizer produces.

A normalizer turns one provider payload (a parsed chunk or event) into a short
list of these events; the merger (:mod:`toolwire.streaming.merger`) consumes
them. They are plain slotted dataclasses: the hot path allocates a few per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union


@dataclass(slots=True)
class ToolCallDelta:
    """A piece of one tool call.

    Attributes:
        key: The provider's identity for the call inside this response (chat
            ``index``, content-block index, Responses item id, ...). Hashable.
        id: The call id, when this piece carries one (``""`` counts as absent).
        name: The tool name or a piece of it, when this piece carries one.
        name_whole: True when ``name`` is the whole name (repeated names are
            not appended twice); False when providers stream it in pieces.
        arguments: Argument text to append, when this piece carries some.
        arguments_whole: The arguments as an object, for providers that send
            them whole (Gemini ``args``, Anthropic start-block ``input``,
            Vercel ``tool-input-available``) or build them up (Vertex
            ``partialArgs``: the normalizer keeps filling the same object
            until it closes the call; the merger only reads it). The latest
            value replaces earlier ones; used only if no argument text arrives.
        arguments_final: Complete argument text, used if nothing was streamed
            (OpenAI Responses ``.done`` with no deltas); when text was streamed
            it is only compared with it (a difference is an anomaly).
        kind: ``"function"``, or what kind of provider-run call this is
            (``server_tool_use``, ``mcp_tool_use``, ``mcp_call``, ``provider``);
            None keeps the kind already known.
        new_call: True when the provider says this piece opens a new call
            even if ``key`` was seen before.
    """

    key: Any
    id: str | None = None
    name: str | None = None
    name_whole: bool = True
    arguments: str | None = None
    arguments_whole: Any = None
    arguments_final: str | None = None
    kind: str | None = None
    new_call: bool = False


class ArgumentsDelta:
    """The hot-path event: argument text for the call with ``key``, and nothing else.

    Normalizers emit it for the most common piece of a stream (a bare argument
    fragment); it means exactly ``ToolCallDelta(key, arguments=text)`` and is
    merged the same way, only cheaper (a plain two-slot class).
    """

    __slots__ = ("key", "text")

    def __init__(self, key: Any, text: str) -> None:
        self.key = key
        self.text = text

    def __repr__(self) -> str:
        return f"ArgumentsDelta(key={self.key!r}, text={self.text!r})"

    def __eq__(self, other: object) -> bool:
        return type(other) is ArgumentsDelta and other.key == self.key and other.text == self.text


@dataclass(slots=True, frozen=True)
class ToolCallEnd:
    """The provider closed the call with this key (block stop, item done).

    The merger completes the call at once (``generated`` or ``errored``),
    without waiting for the end of the stream.
    """

    key: Any


@dataclass(slots=True, frozen=True)
class TextDelta:
    """Assistant text (``channel="text"``) or reasoning (``channel="reasoning"``).

    ``field`` names the provider's wire field for reasoning that must be sent back
    with the assistant message in that same field (``reasoning_content`` on Chat
    Completions thinking models: DeepSeek, Kimi), else None.
    """

    text: str
    channel: str = "text"
    field: str | None = None


@dataclass(slots=True, frozen=True)
class Finish:
    """A finish / stop reason exactly as the provider spelled it."""

    reason: str


@dataclass(slots=True, frozen=True)
class Usage:
    """Token usage. Later usage events replace earlier ones."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    #: Of the output, reasoning tokens; of the input, tokens read from the provider's cache (when reported).
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None


@dataclass(slots=True, frozen=True)
class StreamError:
    """The provider reported an error inside the stream."""

    message: str
    code: str | None = None


@dataclass(slots=True, frozen=True)
class OutputItem:
    """A whole output item of a Responses API stream (``response.output_item.done``), as it came:
    kept in the history so the next request can send it back (reasoning with its encrypted
    content, provider-side tool items, messages, calls)."""

    item: dict[str, Any]


StreamEvent = Union[ToolCallDelta, ArgumentsDelta, ToolCallEnd, TextDelta, Finish, Usage, StreamError, OutputItem]
