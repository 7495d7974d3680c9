"""The OpenAI Responses API (``openai-responses:MODEL``) through the same ``openai`` SDK.

A second wire beside Chat Completions (:mod:`toolwire.llm.openai_model`), with the
same key rules (no placeholder key; ``no_api_key``), base URL, timeouts, redaction,
error mapping and strict-endpoint rule (its optional fields:
:data:`toolwire.llm.request_params.RESPONSES_PARAMS`). The request
(``client.responses.create(stream=True)``) carries ``instructions`` and ``input``
built from the history by :mod:`toolwire.llm.responses_input`; the body is read as raw
SSE and goes through the ``openai-responses`` normalizer and the one merger. A stream
without ``response.completed``, ``response.incomplete``, ``response.failed`` or an
``error`` event was cut.
"""

from __future__ import annotations

from typing import Any

from toolwire.llm.base import ModelRequest
from toolwire.llm.openai_model import OpenAIModel
from toolwire.llm.request_params import RESPONSES_PARAMS, optional_fields
from toolwire.llm.responses_input import to_input

#: The events that end a Responses stream (an ``error`` event ends it too).
ENDS = frozenset({"response.completed", "response.incomplete", "response.failed"})

#: Events a server sends before it has judged the request (no part of an answer yet).
_OPENING = frozenset({"response.created", "response.in_progress", "response.queued"})


def responses_tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat Completions tool definitions in the Responses API's flat shape."""
    out = []
    for tool in tools:
        function = tool.get("function") or {}
        out.append({"type": "function", "name": function.get("name"),
                    "description": function.get("description", ""),
                    "parameters": function.get("parameters", {"type": "object", "properties": {}})})
    return out


def _has_finish(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("type") in ENDS


def _has_content(payload: Any) -> bool:
    return isinstance(payload, dict) and payload.get("type") not in _OPENING and payload.get("type") != "error"


class ResponsesModel(OpenAIModel):
    """Responses API streaming against ``base_url`` (arguments as :class:`OpenAIModel`'s)."""

    format = "openai-responses"
    _params = RESPONSES_PARAMS
    _cut_words = "no response.completed, response.incomplete or response.failed"
    _has_content = staticmethod(_has_content)
    _has_finish = staticmethod(_has_finish)

    def __init__(self, model: str, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.model_id = f"openai-responses:{model}"
        self.endpoint_key = f"{self.url} {model} responses"

    def _create(self, body: dict[str, Any]) -> Any:
        return self._client.responses.with_streaming_response.create(**body, **self._no_key)

    def _body(self, request: ModelRequest, left_out: set[str]) -> dict[str, Any]:
        """model, instructions, input, stream, the optional fields not left out, tools."""
        instructions, items = to_input(request.messages, store=request.store)
        body: dict[str, Any] = {"model": self.model, "instructions": instructions, "input": items, "stream": True,
                                **optional_fields(request, left_out, self._params)}
        if request.tools:
            body["tools"] = responses_tools(request.tools)
        return body
