"""Format names, normalizer construction and automatic detection.

Format names (``--format`` values and the ``format`` of client-fed chunks):

=================== ==========================================================
``openai-chat``     Chat Completions chunks, every compatible server
``openai-responses`` Responses API events
``anthropic``       Anthropic Messages events (direct, Vertex, Bedrock-decoded)
``gemini``          Gemini API / Vertex AI ``streamGenerateContent``
``bedrock-converse`` Bedrock ConverseStream events
``bedrock-invoke``  Bedrock InvokeModelWithResponseStream ``chunk`` events
``cohere``          Cohere v2 Chat events
``vercel-ui``       Vercel AI SDK UI message stream / core stream parts
=================== ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolwire.streaming.formats.anthropic import AnthropicNormalizer
from toolwire.streaming.formats.base import Normalizer
from toolwire.streaming.formats.bedrock import CONVERSE_EVENTS, BedrockConverseNormalizer, BedrockInvokeNormalizer
from toolwire.streaming.formats.cohere import CohereNormalizer
from toolwire.streaming.formats.gemini import GeminiNormalizer
from toolwire.streaming.formats.openai_chat import OpenAIChatNormalizer
from toolwire.streaming.formats.openai_responses import OpenAIResponsesNormalizer
from toolwire.streaming.formats.vercel import VercelNormalizer

def _bedrock_invoke() -> BedrockInvokeNormalizer:
    """InvokeModel chunks carry the model's own events: their format is detected
    from the first one, Anthropic Messages when it does not tell."""
    return BedrockInvokeNormalizer(lambda event: make_normalizer(detect_format(event) or "anthropic"))


#: Format name -> normalizer factory (a class, or a function for a wrapping format).
FORMATS: dict[str, Callable[[], Normalizer]] = {
    "openai-chat": OpenAIChatNormalizer,
    "openai-responses": OpenAIResponsesNormalizer,
    "anthropic": AnthropicNormalizer,
    "gemini": GeminiNormalizer,
    "bedrock-converse": BedrockConverseNormalizer,
    "bedrock-invoke": _bedrock_invoke,
    "cohere": CohereNormalizer,
    "vercel-ui": VercelNormalizer,
}

#: Other spellings accepted by :func:`make_normalizer`.
ALIASES: dict[str, str] = {
    "openai": "openai-chat",
    "chat": "openai-chat",
    "responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "vertex": "gemini",
    "google": "gemini",
    "bedrock": "bedrock-converse",
    "vercel": "vercel-ui",
    "ai-sdk": "vercel-ui",
}

_ANTHROPIC_TYPES = frozenset(
    {"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
)
_COHERE_TYPES = frozenset(
    {
        "message-start", "content-start", "content-delta", "content-end", "tool-plan-delta",
        "tool-call-start", "tool-call-delta", "tool-call-end", "citation-start", "citation-end", "message-end",
    }
)  # fmt: skip
_VERCEL_TYPES = frozenset(
    {
        "start", "start-step", "finish-step", "finish", "text-start", "text-delta", "text-end",
        "reasoning-start", "reasoning-delta", "reasoning-end", "tool-input-start", "tool-input-delta",
        "tool-input-end", "tool-input-available", "tool-input-error", "tool-call", "tool-result",
        "tool-output-available", "tool-output-error", "abort", "source-url", "message-metadata",
    }
)  # fmt: skip


class UnknownFormat(ValueError):
    """Raised for a format name that is not in :data:`FORMATS`, or a payload no format recognizes."""


def make_normalizer(fmt: str) -> Normalizer:
    """A fresh normalizer for one response.

    Args:
        fmt: A name from :data:`FORMATS` or :data:`ALIASES`.

    Raises:
        UnknownFormat: ``fmt`` is not a known format name.
    """
    try:
        return FORMATS[ALIASES.get(fmt, fmt)]()
    except KeyError:
        raise UnknownFormat(f"unknown stream format {fmt!r}; known: {', '.join(sorted(FORMATS))}") from None


def detect_format(payload: Any, event: str | None = None) -> str | None:
    """Guess the format from one payload; None when this payload does not tell.

    Args:
        payload: One decoded payload.
        event: The SSE ``event:`` name or AWS ``:event-type`` it came with.

    Returns:
        A key of :data:`FORMATS`, or None (``ping``, keep-alives, ``[]``).
    """
    if isinstance(payload, list):
        return next((f for f in (detect_format(p, event) for p in payload) if f), None)
    if not isinstance(payload, dict):
        return None
    if event in CONVERSE_EVENTS:
        return "bedrock-converse"
    if (event == "chunk" or len(payload) <= 2) and isinstance(payload.get("bytes"), str):
        return "bedrock-invoke"
    kind = payload.get("type")
    if isinstance(kind, str):
        if kind.startswith("response.") or (kind == "error" and "sequence_number" in payload):
            return "openai-responses"
        if kind in _ANTHROPIC_TYPES or (kind == "error" and isinstance(payload.get("error"), dict)):
            return "anthropic"
        if kind in _COHERE_TYPES:
            return "cohere"
        if kind in _VERCEL_TYPES or kind.startswith("data-") or (kind == "error" and "errorText" in payload):
            return "vercel-ui"
    if isinstance(event, str) and event.startswith("response."):
        return "openai-responses"
    if "choices" in payload or payload.get("object") == "chat.completion.chunk":
        return "openai-chat"
    if "candidates" in payload or "usageMetadata" in payload or "promptFeedback" in payload:
        return "gemini"
    if len(payload) == 1:
        (name,) = payload
        if name in CONVERSE_EVENTS:
            return "bedrock-converse"
        if name == "chunk":
            return "bedrock-invoke"
    if "error" in payload and "type" not in payload:
        return "openai-chat"  # a bare {"error": ...} payload: OpenAI-compatible servers send these
    return None
