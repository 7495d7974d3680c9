"""OpenAI Responses API streaming events (OpenAI, Azure, DeepSeek, Bedrock Mantle, LM Studio).

Source: OpenAI API reference, "Responses — Streaming events". A function call is
an output item::

    response.output_item.added     {output_index, item: {type: "function_call", id, call_id, name, arguments: ""}}
    response.function_call_arguments.delta  {item_id, output_index, delta}
    response.function_call_arguments.done   {item_id, output_index, arguments}
    response.output_item.done      {output_index, item: {..., arguments}}

Calls are keyed by item id, falling back to ``output_index`` (older and clone
servers omit one or the other); the model-facing id is ``call_id``. The call
closes at ``.done`` or ``output_item.done``, whichever comes first. When no
delta came at all (LM Studio sends only ``.done``) the final text is used;
when both came they must agree (the merger records it if not).

Every ``response.output_item.done`` item is also passed on whole (:class:`OutputItem`),
for the history: the next request sends the items back.

Remote MCP calls (``mcp_call`` items, ``response.mcp_call_arguments.*``) are
kept with ``kind="mcp_call"``: the provider runs them; so are the provider's own tools
(``web_search_call``, ``file_search_call``, ``code_interpreter_call``,
``image_generation_call`` items: ``kind`` = the item type, name = it without ``_call``,
arguments = what the item says it did).

Text: ``response.output_text.delta`` and ``response.refusal.delta``; reasoning:
``response.reasoning_text.delta`` and ``response.reasoning_summary_text.delta``.
Ends: ``response.completed`` -> ``completed``; ``response.incomplete`` -> its
``incomplete_details.reason`` (e.g. ``max_output_tokens``); ``response.failed``
-> ``failed`` plus an error; ``error`` events -> errors. Usage comes with the
final response object.
"""

from __future__ import annotations

import json
from typing import Any

from toolwire.streaming.delta import (
    Finish,
    OutputItem,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
)
from toolwire.streaming.formats.openai_chat import error_from, not_an_object, usage_from

_CALL_ITEMS = {"function_call": "function", "mcp_call": "mcp_call"}
#: Tools the provider runs itself, shown as calls of their own ``kind`` (never run here); their
#: arguments are what the item says it did (a search's ``action``, the code it ran, its queries).
_PROVIDER_ITEMS = ("web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call")
_PROVIDER_ARGS = ("action", "queries", "code", "container_id")
_TEXT = {
    "response.output_text.delta": "text",
    "response.refusal.delta": "text",
    "response.reasoning_text.delta": "reasoning",
    "response.reasoning_summary_text.delta": "reasoning",
}


class OpenAIResponsesNormalizer:
    """Normalizer for Responses API events (see the module docstring)."""

    format = "openai-responses"
    explicit_ends = True

    __slots__ = ("_by_index", "_closed")

    def __init__(self) -> None:
        self._by_index: dict[Any, Any] = {}
        self._closed: set[Any] = set()

    def _key(self, payload: dict, item: dict | None = None) -> Any:
        item_id = (item or {}).get("id") or payload.get("item_id")
        index = payload.get("output_index")
        if isinstance(item_id, str) and item_id:
            if index is not None:
                self._by_index.setdefault(index, item_id)
            return item_id
        return self._by_index.get(index, ("output_index", index))

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        """Normalize one event (see :class:`~toolwire.streaming.formats.base.Normalizer`)."""
        if not isinstance(payload, dict):
            return [not_an_object(payload)]
        kind = payload.get("type") or event or ""
        if kind in _TEXT:
            delta = payload.get("delta")
            return [TextDelta(delta, _TEXT[kind])] if isinstance(delta, str) and delta else []
        if kind in ("response.function_call_arguments.delta", "response.mcp_call_arguments.delta"):
            delta = payload.get("delta")
            key = self._key(payload)
            if key in self._closed or not isinstance(delta, str) or not delta:
                return []
            return [ToolCallDelta(key=key, arguments=delta)]
        if kind in ("response.function_call_arguments.done", "response.mcp_call_arguments.done"):
            return self._close(self._key(payload), payload.get("arguments"), {})
        if kind in ("response.output_item.added", "response.output_item.done"):
            item = payload.get("item")
            if not isinstance(item, dict):
                return []
            if item.get("type") in _PROVIDER_ITEMS:
                return self._provider_item(kind, payload, item)
            if item.get("type") not in _CALL_ITEMS:
                return [OutputItem(item)] if kind.endswith(".done") else []
            key = self._key(payload, item)
            if kind.endswith(".done"):
                return [*self._close(key, item.get("arguments"), item), OutputItem(item)]
            return [self._header(key, item, arguments=item.get("arguments"))]
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._end(kind, payload.get("response"))
        if kind == "error" or (not kind and "error" in payload):
            return [error_from(payload.get("error", payload))]
        return []

    def _provider_item(self, kind: str, payload: dict, item: dict) -> list[StreamEvent]:
        """A provider-run tool's item: a call of ``kind`` = the item type, named after it."""
        key = self._key(payload, item)
        name = item["type"].removesuffix("_call")
        item_id = item.get("id") if isinstance(item.get("id"), str) and item.get("id") else None
        if not kind.endswith(".done"):
            return [ToolCallDelta(key=key, id=item_id, name=name, kind=item["type"])]
        if key in self._closed:
            return [OutputItem(item)]
        self._closed.add(key)
        arguments = json.dumps({k: item[k] for k in _PROVIDER_ARGS if k in item}, ensure_ascii=False)
        return [ToolCallDelta(key=key, id=item_id, name=name, arguments_final=arguments, kind=item["type"]),
                ToolCallEnd(key), OutputItem(item)]

    @staticmethod
    def _header(key: Any, item: dict, *, arguments: Any = None, final: Any = None) -> ToolCallDelta:
        call_id = item.get("call_id") if item.get("type") == "function_call" else item.get("id")
        name = item.get("name")
        return ToolCallDelta(
            key=key,
            id=call_id if isinstance(call_id, str) and call_id else None,
            name=name if isinstance(name, str) and name else None,
            arguments=arguments if isinstance(arguments, str) and arguments else None,
            arguments_final=final if isinstance(final, str) else None,
            kind=_CALL_ITEMS[item["type"]],
        )

    def _close(self, key: Any, final: Any, item: dict) -> list[StreamEvent]:
        if key in self._closed:
            return []
        self._closed.add(key)
        if item:
            return [self._header(key, item, final=final), ToolCallEnd(key)]
        return [ToolCallDelta(key=key, arguments_final=final if isinstance(final, str) else None), ToolCallEnd(key)]

    @staticmethod
    def _end(kind: str, response: Any) -> list[StreamEvent]:
        response = response if isinstance(response, dict) else {}
        out: list[StreamEvent] = []
        if kind == "response.completed":
            out.append(Finish("completed"))
        elif kind == "response.incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if isinstance(details, dict) else None
            out.append(Finish(reason if isinstance(reason, str) and reason else "incomplete"))
        else:
            out.append(Finish("failed"))
            error = response.get("error")
            out.append(error_from(error if error else {"message": "the response failed", "code": "failed"}))
        usage = usage_from(response.get("usage"))
        if usage is not None:
            out.append(usage)
        return out

    def close(self) -> list[StreamEvent]:
        """Nothing is owed: unclosed items are the merger's to judge (they were cut off)."""
        return []
