"""A prompt's image blocks and resource links, made ready for the core.

* ``image`` blocks (``promptCapabilities.image``) become the user message's image parts
  (:func:`prompt_images`): PNG, JPEG, GIF or WebP, valid base64, at most
  :data:`MAX_IMAGE_BYTES` each.
* A ``resource_link`` to a ``file://`` URI inside the workspace is read — through the
  client's ``fs/read_text_file`` when it declared ``fs.readTextFile``, else from disk — and
  given to the model as an embedded resource is (:mod:`toolwire.agent.prompt_blocks`: its text at
  most ``RESOURCE_LIMIT`` characters) (:func:`read_links`). A link it cannot read (another scheme, outside the
  workspace, kept from the model by ``modelExclude``, missing, binary, not UTF-8) is named
  with why.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from acp.schema import EmbeddedResourceContentBlock, TextContentBlock, TextResourceContents

from toolwire.tools.base import ImagePart
from toolwire.workspace.errors import ToolError
from toolwire.workspace.fs import read_bytes
from toolwire.workspace.model_exclude import ModelExclude, withheld
from toolwire.workspace.paths import file_uri_path, resolve_path
from toolwire.workspace.text import decode_text

log = logging.getLogger(__name__)

#: The image types a prompt may carry (those OpenAI-compatible vision models take).
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

#: The largest image a prompt may carry, decoded (OpenAI's limit per image).
MAX_IMAGE_BYTES = 20 * 1024 * 1024


class PromptContentError(ValueError):
    """A block of the prompt that cannot be sent (the message says which and why)."""


def prompt_images(blocks: list[Any]) -> tuple[ImagePart, ...]:
    """The prompt's ``image`` blocks as image parts, in order.

    Raises:
        PromptContentError: an image of another type, not valid base64, or too large.
    """
    images: list[ImagePart] = []
    for number, block in enumerate((b for b in blocks if getattr(b, "type", None) == "image"), 1):
        mime = str(block.mime_type).lower()
        if mime not in IMAGE_TYPES:
            raise PromptContentError(f"image {number} is {block.mime_type!r}; send PNG, JPEG, GIF or WebP")
        try:
            size = len(base64.b64decode(block.data, validate=True))
        except (binascii.Error, ValueError):
            raise PromptContentError(f"image {number}: its data is not valid base64") from None
        if size > MAX_IMAGE_BYTES:
            raise PromptContentError(f"image {number} is {size} bytes; at most {MAX_IMAGE_BYTES} are sent")
        images.append(ImagePart(mime_type=mime, data=block.data, size=size))
    return tuple(images)


async def read_links(blocks: list[Any], root: Path, exclude: ModelExclude,
                     read_client: Callable[[Path], Awaitable[str]] | None) -> list[Any]:
    """``blocks`` with each ``resource_link`` replaced: by an embedded resource holding the
    file's text when it is read, else by a text block naming the link and why it was not.

    Args:
        blocks: The prompt's content blocks.
        root: The workspace folder.
        exclude: The session's ``modelExclude`` patterns.
        read_client: Reads a file through the client (``fs/read_text_file``), or None to
            read it from disk.
    """
    out: list[Any] = []
    for block in blocks:
        if getattr(block, "type", None) != "resource_link":
            out.append(block)
            continue
        try:
            text = await _read_link(block.uri, root, exclude, read_client)
        except ToolError as exc:
            out.append(TextContentBlock(type="text", text=f"[file: {block.uri} (not read: {exc.message})]"))
            continue
        out.append(EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
            uri=block.uri, text=text, mime_type=getattr(block, "mime_type", None))))
    return out


async def _read_link(uri: str, root: Path, exclude: ModelExclude,
                     read_client: Callable[[Path], Awaitable[str]] | None) -> str:
    """The text of the file a link names.

    Raises:
        ToolError: the link names no file of the workspace Toolwire may read (the message says why).
    """
    local = file_uri_path(uri)
    if local is None:
        raise ToolError("invalid_path", "only file:// links to files of the workspace are read")
    target = resolve_path(root, local)
    real_root = Path(os.path.realpath(root))
    pattern = exclude.match_target(real_root, target)
    if pattern is not None:
        raise ToolError("excluded", withheld(target.rel, pattern))
    if read_client is not None:
        try:
            return await read_client(target.resolved)
        except Exception as exc:  # noqa: BLE001 - missing, or the client refused: the disk may still have it
            log.info("fs/read_text_file %s for a resource link: %s", target.resolved, exc)
    data = read_bytes(target.resolved, label=target.rel)
    return decode_text(data, target.rel).text
