"""The model request and the model protocol every provider implements."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolwire.streaming.framing import Frame


@dataclass(slots=True)
class ModelRequest:
    """One request to the model.

    Attributes:
        messages: The conversation in OpenAI Chat Completions message shape
            (``{"role", "content", "tool_calls"?, "tool_call_id"?}``).
        tools: OpenAI-style tool definitions (``{"type": "function", "function": {...}}``).
        temperature: Sampling temperature; 0 by default for repeatable runs.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    temperature: float = 0.0


class ModelError(Exception):
    """The model could not be reached or failed mid-stream.

    Attributes:
        retryable: True for failures worth retrying (HTTP 429, 5xx, connection reset),
            per the OpenAI API's documented error codes.
        status: HTTP status when there was one.
        retry_after: Seconds the endpoint asked us to wait before retrying
            (``Retry-After`` / ``retry-after-ms``), when it said so.
    """

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


class Model(Protocol):
    """A model that streams one response per request.

    Attributes:
        model_id: What the client is told (``replay:script.jsonl``, ``openai:gpt-4o``).
        format: The wire format of the frames it yields (a name from
            :data:`toolwire.streaming.formats.registry.FORMATS`), or None to detect it.
    """

    model_id: str
    format: str | None

    def stream(self, request: ModelRequest) -> AsyncIterator[Frame]:
        """Yield the response's frames in order.

        The returned async generator owns the underlying connection: closing it
        (``aclose()``, or cancellation) closes the HTTP response, not just our
        reading of it.

        Raises:
            ModelError: the request failed or the stream broke.
        """
        ...
