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
        temperature: Sampling temperature; 0 by default for repeatable runs; None
            leaves the field out (the endpoint's default applies).
        stream_usage: Ask for token usage at the end of the stream
            (``stream_options: {"include_usage": true}``); False leaves it out.
        store: Responses API only: let the provider keep the response (``store``); False:
            every request carries the history it needs (reasoning with its encrypted content).
        reasoning_effort: Responses API only: ``reasoning.effort``; None: not sent.
        reasoning_summary: Responses API only: ``reasoning.summary``; None: not sent.

    Optional fields and the rule for them: :mod:`toolwire.llm.request_params`.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    temperature: float | None = 0.0
    stream_usage: bool = True
    store: bool = False
    reasoning_effort: str | None = None
    reasoning_summary: str | None = None


class ModelError(Exception):
    """The model could not be reached or failed mid-stream.

    Attributes:
        retryable: True for failures worth retrying (HTTP 429, 5xx, connection reset),
            per the OpenAI API's documented error codes.
        status: HTTP status when there was one.
        retry_after: Seconds the endpoint asked us to wait before retrying
            (``Retry-After`` / ``retry-after-ms``), when it said so.
        code: A code a front-end words for its user (the turn's ``errorCode``): ``no_api_key``
            when no key is set for the default endpoint or the endpoint answered HTTP 401; else None.
    """

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None,
                 retry_after: float | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.code = code


class ContextLengthError(ModelError):
    """The endpoint refused the request as larger than the model's context window (HTTP 400).

    Attributes:
        limit: The context window the endpoint stated, in tokens, when it said.
        requested: The request's size by the endpoint's own count, in tokens, when it said.
    """

    def __init__(self, message: str, *, limit: int | None = None, requested: int | None = None,
                 status: int | None = 400) -> None:
        super().__init__(message, retryable=False, status=status)
        self.limit = limit
        self.requested = requested


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
