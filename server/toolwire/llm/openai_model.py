"""Any OpenAI-compatible endpoint through the ``openai`` SDK (the only module importing it).

Streams Chat Completions with tools (``stream=True``,
``stream_options={"include_usage": true}``) and yields each chunk as a plain dict
frame in ``openai-chat`` format, so the same normalizer and merger serve every
provider. Closing the generator closes the HTTP response.
"""

from __future__ import annotations

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


def _translate(exc: Exception) -> ModelError:
    """Map SDK errors to :class:`ModelError` (429 and 5xx and connection failures retryable)."""
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        return ModelError(f"the model endpoint answered HTTP {status}: {exc.message}",
                          retryable=status == 429 or status >= 500, status=status)
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
        max_retries: SDK-level retries before the first byte (the SDK backs off
            with jitter on 429/5xx/connection errors).
    """

    format = "openai-chat"

    def __init__(self, model: str, *, base_url: str | None = None, api_key: str | None = None,
                 timeout: float = 120.0, max_retries: int = 2) -> None:
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
            ModelError: HTTP or connection failure, before or during the stream.
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
        try:
            async for chunk in response:
                yield Frame(None, chunk.to_dict())
        except Exception as exc:  # the SDK, httpx and the socket can all fail mid-stream
            raise _translate(exc) from exc
        finally:
            with anyio.CancelScope(shield=True):
                await response.close()

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
