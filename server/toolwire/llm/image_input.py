"""Images sent to a model that does not take them: how the refusal is told and remembered.

An endpoint whose model takes no images answers a request holding image parts with an
HTTP 400 (or 422) that names the image content: OpenAI's ``Invalid content type.
image_url is only supported by certain models.``, vLLM's and others' ``… is not a
multimodal model``, gateways' ``… does not support vision``. :func:`refuses_images` reads
that; the model then ends the turn with :func:`refusal_message`, and the endpoint and model
are remembered as taking no images for the rest of the process
(:func:`toolwire.llm.endpoints.remember_no_images`): later prompts with images are refused
before anything is sent, tool images go as text, and image parts already in a history are
sent as :data:`IMAGE_LEFT_OUT`.
"""

from __future__ import annotations

import re
from typing import Any

from toolwire.llm.base import ModelError

#: Words of an error that names the image content of a request.
_IMAGE_WORDS = re.compile(r"image_url|vision|multi-?modal", re.I)

#: The text an image part of the history is replaced with for a model that takes no images.
IMAGE_LEFT_OUT = "[an image was here: the model does not accept images, so it is left out]"


def has_images(messages: list[dict[str, Any]]) -> bool:
    """Whether any message holds an ``image_url`` part."""
    return any(isinstance(m.get("content"), list) and any(
        isinstance(p, dict) and p.get("type") == "image_url" for p in m["content"]) for m in messages)


def refuses_images(status: int | None, body: dict[str, Any], text: str) -> bool:
    """True when an HTTP 400/422 refusing ``body`` (which holds image parts) names the image content."""
    return status in (400, 422) and has_images(body.get("messages") or []) and _IMAGE_WORDS.search(text) is not None


class ImagesRefused(ModelError):
    """The endpoint refused the request for its images (not retried: the same request gets the same answer)."""


def refusal_message(model: str) -> str:
    """How the turn that sent images to ``model`` ends."""
    return f"the model {model} does not accept images (set imageInput to false to have them refused up front)"


def without_images(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with every image part replaced by :data:`IMAGE_LEFT_OUT` (the others as they are)."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content):
            message = {**message, "content": [{"type": "text", "text": IMAGE_LEFT_OUT}
                                              if isinstance(p, dict) and p.get("type") == "image_url" else p
                                              for p in content]}
        out.append(message)
    return out
