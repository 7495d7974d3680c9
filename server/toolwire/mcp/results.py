"""What the model and the card get of an MCP ``tools/call`` result.

The model gets one text, the blocks in the server's order, one line each for what is not
text; cut to the session's ``resultLimit`` with the marker of built-in results
(:func:`toolwire.tools.fitting.truncate_for_model`):

* a text block: its text;
* an image: ``[image image/png, 34 KB: shown to you in the message after the tool results]``
  when it goes to the model as an image part (:attr:`ToolResult.images`), else
  ``[image image/png, 34 KB: not shown to the model]`` (the ``imageInput`` setting is false,
  or the reason in brackets: a type the providers do not take, larger than
  :data:`MAX_IMAGE_BYTES`, bytes that are not the image they say);
* audio: ``[audio audio/wav, 120 KB: not given to the model]``;
* a resource link: ``[resource link "name" uri, mime type, size: description]``;
* an embedded resource: a ``[resource uri, mime type]`` line, then its text; a binary one is
  one line with its size;
* ``structuredContent``, as JSON, when no text block carries it already (servers should
  send its JSON as a text block too, MCP 2025-06-18 "Structured Content"; the SDK's
  ``MCPServer`` wraps a value that is not an object as ``{"result": value}``, and a text block
  holding that value carries it).

The text is redacted (the process's redactor, :meth:`toolwire.redaction.Redactor.redact_content`,
which knows the servers' secrets) before it is cut: a server may echo the secrets of its own
``env`` or headers (server-everything's ``get-env`` does), and they never reach the model.
``isError: true`` makes a failed result (``mcp_tool_error``) whose message is that text: an
errored call, the server's message as data.

The card gets ``data``: ``{"content": [block, ...], "structuredContent"?: value, "isError": bool}``
where each block keeps MCP's shape (camelCase), bounded: a text of at most
:data:`CARD_TEXT_LIMIT` characters (cut with the marker), an image with its base64 ``data`` when
it is valid and within :data:`MAX_IMAGE_BYTES` and :data:`MAX_CARD_IMAGE_BYTES` for the result
(else a ``note`` saying why it is not there), audio and binary resources with their ``size``
and a ``note`` instead of their bytes. ``structuredContent`` is left out when its JSON is
longer than :data:`CARD_TEXT_LIMIT` (the text shows it).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

import mcp_types

from toolwire.redaction import shared
from toolwire.tools.base import ImagePart, ToolResult
from toolwire.tools.fitting import truncate_for_model

__all__ = ["MAX_IMAGE_BYTES", "MAX_CARD_IMAGE_BYTES", "CARD_TEXT_LIMIT", "MODEL_IMAGE_TYPES", "to_result",
           "size_text"]

#: Largest image (decoded bytes) shown to the model or the card: Anthropic's API takes at
#: most 5 MB an image, OpenAI's 20 MB (their vision guides).
MAX_IMAGE_BYTES = 4 * 1024 * 1024
#: Decoded bytes of images one result's card carries in all; later images get a note.
MAX_CARD_IMAGE_BYTES = 8 * 1024 * 1024
#: Characters of one text (a block, an embedded resource, a description) the card carries.
CARD_TEXT_LIMIT = 20_000
#: The image types the Chat Completions providers take (OpenAI's vision guide: PNG, JPEG,
#: WEBP, non-animated GIF), each with the bytes its files start with.
MODEL_IMAGE_TYPES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),  # then 4 bytes of size and "WEBP"
}

_SHOWN = "shown to you in the message after the tool results"
_NOT_SHOWN = "not shown to the model"


def size_text(size: int) -> str:
    """A size as the model and the card read it: ``512 bytes``, ``34 KB``, ``6.2 MB`` (1024 a KB)."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def to_result(answer: mcp_types.CallToolResult, *, limit: int | None, show_images: bool) -> ToolResult:
    """Map a ``tools/call`` answer to the call's result (see the module doc).

    Args:
        answer: What the server answered.
        limit: Characters of text the model gets (``resultLimit``); None: not cut.
        show_images: Whether images go to the model as image parts (``imageInput`` is not false).

    Returns:
        A result whose ``content`` is the model's text, ``data`` the card's, ``images`` the
        model's image parts; failed (``mcp_tool_error``) when the server said ``isError``.
    """
    mapped = _Mapped(show_images)
    for block in answer.content:
        mapped.add(block)
    structured = answer.structured_content
    if structured is not None:
        text = json.dumps(structured, ensure_ascii=False)
        if not any(_carries(t, structured) for t in mapped.texts):
            mapped.parts.append(text)
        if len(text) <= CARD_TEXT_LIMIT:
            mapped.data["structuredContent"] = structured
    mapped.data["isError"] = answer.is_error
    text = shared().redact_content("\n".join(mapped.parts))
    if answer.is_error:
        return ToolResult.failure("mcp_tool_error", text or "the tool reported an error and gave no message",
                                  mapped.data)
    text = text or "The tool returned no content."
    content = truncate_for_model(text, limit) if limit is not None else text
    return ToolResult(ok=True, content=content, data=mapped.data, images=tuple(mapped.images))


def _carries(text: str, structured: Any) -> bool:
    """Whether a text block holds ``structured`` already: its JSON, or the value ``MCPServer``
    wrapped as ``{"result": value}`` (a string as it is, anything else as JSON)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if parsed is not None and parsed == structured:
        return True
    if isinstance(structured, dict) and list(structured) == ["result"]:
        value = structured["result"]
        return text == value if isinstance(value, str) else parsed == value
    return False


@dataclass(slots=True)
class _Mapped:
    """The model's text parts, its images and the card's data, block by block."""

    show_images: bool
    parts: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    images: list[ImagePart] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=lambda: {"content": []})
    card_bytes: int = 0

    def add(self, block: mcp_types.ContentBlock) -> None:
        """Map one content block."""
        card: dict[str, Any]
        if isinstance(block, mcp_types.TextContent):
            self.parts.append(block.text)
            self.texts.append(block.text)
            card = {"type": "text", "text": truncate_for_model(block.text, CARD_TEXT_LIMIT)}
        elif isinstance(block, mcp_types.ImageContent):
            card = self._image(block)
        elif isinstance(block, mcp_types.AudioContent):
            size = _decoded_size(block.data)
            self.parts.append(f"[audio {block.mime_type}, {size_text(size)}: not given to the model]")
            card = {"type": "audio", "mimeType": block.mime_type, "size": size, "note": "audio is not played here"}
        elif isinstance(block, mcp_types.ResourceLink):
            card = self._link(block)
        elif isinstance(block, mcp_types.EmbeddedResource):
            card = self._embedded(block.resource)
        else:  # a block type newer than this mapping
            kind = getattr(block, "type", type(block).__name__)
            self.parts.append(f"[{kind} content: not shown to the model]")
            card = {"type": str(kind), "note": "not shown here"}
        self.data["content"].append(card)

    def _image(self, block: mcp_types.ImageContent) -> dict[str, Any]:
        data = "".join(block.data.split())
        size = _decoded_size(data)
        card: dict[str, Any] = {"type": "image", "mimeType": block.mime_type, "size": size}
        label = f"image {block.mime_type}, {size_text(size)}"
        if size > MAX_IMAGE_BYTES:
            why = f"larger than {size_text(MAX_IMAGE_BYTES)}"
            self.parts.append(f"[{label}: {_NOT_SHOWN} ({why})]")
            return card | {"note": f"not shown: {why}"}
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            self.parts.append(f"[image {block.mime_type}: {_NOT_SHOWN} (its data is not valid base64)]")
            return card | {"note": "not shown: its data is not valid base64"}
        sniffed = _image_type(raw)
        if self.card_bytes + size <= MAX_CARD_IMAGE_BYTES:
            self.card_bytes += size
            card |= {"mimeType": sniffed or block.mime_type, "data": data}
        else:
            card["note"] = f"not shown: the result's images are more than {size_text(MAX_CARD_IMAGE_BYTES)}"
        if sniffed is None:
            self.parts.append(f"[{label}: {_NOT_SHOWN} (it is not a PNG, JPEG, GIF or WebP image)]")
        elif not self.show_images:
            self.parts.append(f"[{label}: {_NOT_SHOWN}]")
        else:
            self.images.append(ImagePart(mime_type=sniffed, data=data, size=size))
            self.parts.append(f"[image {sniffed}, {size_text(size)}: {_SHOWN}]")
        return card

    def _link(self, block: mcp_types.ResourceLink) -> dict[str, Any]:
        facts = [block.uri] + [fact for fact in (block.mime_type, block.size is not None and size_text(block.size))
                               if fact]
        line = f'[resource link "{block.title or block.name}" {", ".join(facts)}'
        self.parts.append(f"{line}: {block.description}]" if block.description else f"{line}]")
        card: dict[str, Any] = {"type": "resource_link", "uri": block.uri, "name": block.name}
        for key, value in (("title", block.title), ("mimeType", block.mime_type), ("size", block.size)):
            if value is not None:
                card[key] = value
        if block.description:
            card["description"] = truncate_for_model(block.description, CARD_TEXT_LIMIT)
        return card

    def _embedded(self, resource: mcp_types.TextResourceContents | mcp_types.BlobResourceContents) -> dict[str, Any]:
        head = ", ".join([resource.uri] + ([resource.mime_type] if resource.mime_type else []))
        card: dict[str, Any] = {"type": "resource", "uri": resource.uri}
        if resource.mime_type:
            card["mimeType"] = resource.mime_type
        if isinstance(resource, mcp_types.TextResourceContents):
            self.parts.append(f"[resource {head}]\n{resource.text}")
            self.texts.append(resource.text)
            return card | {"text": truncate_for_model(resource.text, CARD_TEXT_LIMIT)}
        size = _decoded_size(resource.blob)
        self.parts.append(f"[resource {head}, {size_text(size)} of binary data: {_NOT_SHOWN}]")
        return card | {"size": size, "note": "binary data, not shown here"}


def _decoded_size(data: str) -> int:
    """Bytes that base64 ``data`` decodes to (counted, not decoded; white space ignored)."""
    clean = "".join(data.split())
    return max(0, len(clean) * 3 // 4 - clean[-2:].count("="))


def _image_type(raw: bytes) -> str | None:
    """The type of image ``raw`` is, of :data:`MODEL_IMAGE_TYPES`, by its first bytes; None when none."""
    for mime, starts in MODEL_IMAGE_TYPES.items():
        if raw.startswith(starts) and (mime != "image/webp" or raw[8:12] == b"WEBP"):
            return mime
    return None
