"""Any OpenAI-compatible endpoint through the ``openai`` SDK (the only module importing it).

Streams Chat Completions with tools (``stream=True``,
``stream_options={"include_usage": true}``) and yields each chunk as a plain dict
frame in ``openai-chat`` format, so the same normalizer and merger serve every
provider. Closing the generator closes the HTTP response.
"""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
import openai

from toolwire.llm.base import ModelError, ModelRequest
from toolwire.streaming.framing import Frame

#: Environment variables read for the API key, in order.
API_KEY_ENV = ("TOOLWIRE_API_KEY", "OPENAI_API_KEY")


def api_key_from_env() -> str | None:
    """The first of :data:`API_KEY_ENV` that is set and non-empty, else None."""
    for name in API_KEY_ENV:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _retry_after(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` or a numeric ``retry-after`` header, else None."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name) if headers is not None else None
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue  # an HTTP date: the turn's own backoff applies
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _translate(exc: Exception) -> ModelError:
    """Map SDK errors to :class:`ModelError` (429 and 5xx and connection failures retryable)."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return ModelError(f"the model endpoint answered HTTP {status}: {exc.message}",
                          retryable=status == 429 or status >= 500, status=status,
                          retry_after=_retry_after(getattr(exc.response, "headers", None)))
    if isinstance(exc, openai.APIConnectionError):
        return ModelError(f"cannot reach the model endpoint: {exc}", retryable=True)
    return ModelError(f"the model stream failed: {type(exc).__name__}: {exc}", retryable=True)


class OpenAIModel:
    """Chat Completions streaming against ``base_url``.

    Args:
        model: The model id sent to the endpoint (e.g. ``gpt-4o-mini``).
        base_url: Endpoint base URL (``https://host/v1``); None for the SDK default
            (``OPENAI_BASE_URL`` or OpenAI's).
        api_key: The key; None reads :data:`API_KEY_ENV`, and a placeholder is
            sent when none is set (local servers do not check it).
        timeout: Seconds for connect and for each read.
        max_retries: SDK-level retries. 0 by default: the turn
            (:mod:`toolwire.agent.turn`) is the one retry layer, with backoff and
            jitter and the endpoint's ``Retry-After``; retrying in both layers
            would multiply the attempts (3 x 4 = 12 requests for one failure).
    """

    format = "openai-chat"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, max_retries: int = 0) -> None:
        self.model = model
        self.model_id = f"openai:{model}"
        self._client = openai.AsyncOpenAI(
            api_key=api_key or api_key_from_env() or "not-set",
            base_url=base_url,
            timeout=timeout,
            max_retries=max_retries,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[Frame]:
        """Yield the response's chunks as ``openai-chat`` frames.

        Raises:
            ModelError: HTTP or connection failure, before or during the stream,
                and a body that ended before any chunk gave a ``finish_reason``
                (the connection closed early: the SDK does not require ``[DONE]``).
        """
        params: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = request.tools
        try:
            response = await self._client.chat.completions.create(**params)
        except openai.OpenAIError as exc:
            raise _translate(exc) from exc
        finished = False
        try:
            async for chunk in response:
                payload = chunk.to_dict()
                finished = finished or any(c.get("finish_reason") for c in payload.get("choices") or ())
                yield Frame(None, payload)
        except Exception as exc:  # the SDK, httpx and the socket can all fail mid-stream
            raise _translate(exc) from exc
        finally:
            with anyio.CancelScope(shield=True):
                await response.close()
        if not finished:
            raise ModelError("the stream ended before the response was complete (no finish_reason)", retryable=True)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
