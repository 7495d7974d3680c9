"""Format names, normalizer construction and automatic detection."""

from __future__ import annotations

from typing import Any

from toolwire.streaming.formats.base import Normalizer
from toolwire.streaming.formats.openai_chat import OpenAIChatNormalizer

#: Format name -> normalizer class.
FORMATS: dict[str, type] = {
    "openai-chat": OpenAIChatNormalizer,
}


class UnknownFormat(ValueError):
    """Raised for a format name that is not in :data:`FORMATS`, or a payload no format recognizes."""


def make_normalizer(fmt: str) -> Normalizer:
    """A fresh normalizer for one response.

    Raises:
        UnknownFormat: ``fmt`` is not a known format name.
    """
    try:
        return FORMATS[fmt]()
    except KeyError:
        raise UnknownFormat(f"unknown stream format {fmt!r}; known: {', '.join(sorted(FORMATS))}") from None


def detect_format(payload: Any, event: str | None = None) -> str | None:
    """Guess the format from one payload; None when this payload does not tell."""
    if not isinstance(payload, dict):
        return None
    if "choices" in payload or payload.get("object") == "chat.completion.chunk":
        return "openai-chat"
    return None
