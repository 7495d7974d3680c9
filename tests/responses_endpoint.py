"""A local OpenAI Responses API endpoint on 127.0.0.1 for tests: recorded streams, the API's rules.

Streams: :func:`corpus_body` is a recorded Responses stream of ``tests/data/corpus`` byte for
byte (sources and licences: ``tests/data/corpus/SOURCES.md``). :meth:`ResponsesRules.step`
builds a turn's step from the recorded gpt-5.5 stream ``openai-responses__gpt55-commentary-
text-then-call.sse`` (reasoning → commentary message → function call → ``response.completed``,
every event with ``sequence_number`` and ``obfuscation``): each event is the recorded one of its
type with only the ids, texts, names and arguments replaced, so the event shapes and their
order are the recorded ones.

Rules (:class:`ResponsesRules`, the ``check`` of :class:`~endpoint.FakeEndpoint`), each an HTTP
400 shaped as OpenAI's: no body field outside the API's, ``instructions`` present, no unknown
field on an input item; every ``function_call`` in ``input`` has exactly one
``function_call_output`` with its ``call_id`` after it, and every output a call; with ``store:
false`` a reasoning item without its ``encrypted_content``, an ``item_reference``, or a
``function_call`` (sent with its item id) whose reasoning item is not before it; with
``store: true`` an ``item_reference`` to an item the endpoint never produced.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from endpoint import FakeEndpoint, Reply, Stall, Truncated, error_body

CORPUS = Path(__file__).parent / "data" / "corpus"
TEMPLATE = "openai-responses__gpt55-commentary-text-then-call.sse"

#: The body fields of ``POST /responses`` (OpenAI API reference, "Create a model response").
BODY_FIELDS = frozenset({
    "model", "input", "instructions", "stream", "tools", "tool_choice", "temperature", "top_p", "store", "include",
    "reasoning", "max_output_tokens", "parallel_tool_calls", "previous_response_id", "metadata", "text",
    "truncation", "user", "service_tier", "stream_options", "prompt_cache_key", "background"})

#: The fields each input item may have, by its type (a message: by ``role``).
ITEM_FIELDS = {
    "message": {"type", "role", "content", "id", "status", "phase"},
    "function_call": {"type", "id", "call_id", "name", "arguments", "status"},
    "function_call_output": {"type", "id", "call_id", "output", "status"},
    "reasoning": {"type", "id", "summary", "encrypted_content", "content", "status"},
    "item_reference": {"type", "id"},
    "web_search_call": {"type", "id", "status", "action"},
}


def corpus_body(name: str) -> bytes:
    """A recorded stream of ``tests/data/corpus``, byte for byte."""
    return (CORPUS / name).read_bytes()


def _events(name: str) -> list[dict[str, Any]]:
    lines = (CORPUS / name).read_text().splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ")]


def _first(events: list[dict[str, Any]], kind: str, item_type: str | None = None) -> dict[str, Any]:
    for event in events:
        if event["type"] == kind and (item_type is None or event.get("item", {}).get("type") == item_type):
            return json.loads(json.dumps(event))
    raise KeyError(kind)


def sse(payloads: list[dict[str, Any]]) -> list[bytes]:
    """Each payload as the recorded streams send it: ``event: TYPE`` then ``data: …``."""
    return [f"event: {p['type']}\ndata: {json.dumps(p, ensure_ascii=False)}\n\n".encode() for p in payloads]


def _pieces(text: str, size: int = 7) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


class ResponsesRules:
    """The API's rules as a ``check`` (see the module docstring), and the streams it knows the items of.

    Attributes:
        refuses: Optional body fields answered with a 400 naming them (a strict endpoint).
        produced: Every item id a stream built here carries.
        reasoning_of: Per function-call item id, the id of the reasoning item it came after.
    """

    def __init__(self, refuses: tuple[str, ...] = ()) -> None:
        self.refuses = set(refuses)
        self.produced: set[str] = set()
        self.reasoning_of: dict[str, str] = {}
        self._template = _events(TEMPLATE)
        self._steps = 0

    # ---------------------------------------------------------------- streams
    def template_usage(self) -> dict[str, Any]:
        """The ``usage`` of the recorded stream's ``response.completed`` (each step's, unless given)."""
        return _first(self._template, "response.completed")["response"]["usage"]

    def step(self, calls: list[tuple[str, dict[str, Any]]] = (), text: str = "", *, reasoning: bool = True,
             summary: str = "", end: str = "completed", usage: dict[str, Any] | None = None,
             web_search: str = "", deltas: bool = True) -> list[bytes]:
        """The SSE events of one response: reasoning (with ``summary`` streamed as summary text), then
        ``text`` as a message, then each ``(tool name, arguments)`` call; ``end`` is ``completed``,
        ``incomplete`` (max_output_tokens), ``failed`` or ``cut`` (no terminal event). ``web_search``:
        a provider-run ``web_search_call`` item with that query before the message (its events are
        not in the recorded stream: shaped as the API reference, "Streaming events", gives them).
        ``deltas=False``: the arguments only in ``.done`` and ``output_item.done`` (LM Studio, gateways)."""
        self._steps += 1
        n = self._steps
        t = self._template
        seq = iter(range(10_000))
        out: list[dict[str, Any]] = []
        output: list[dict[str, Any]] = []

        def emit(event: dict[str, Any]) -> None:
            event["sequence_number"] = next(seq)
            out.append(event)

        response = _first(t, "response.created")["response"]
        response.update(id=f"resp_{n}", output=[])
        for kind in ("response.created", "response.in_progress"):
            emit({**_first(t, kind), "response": {**response, "status": "in_progress"}})
        index = 0
        reasoning_id = None
        if reasoning:
            reasoning_id = f"rs_{n}"
            self.produced.add(reasoning_id)
            added = _first(t, "response.output_item.added", "reasoning")
            added["item"].update(id=reasoning_id, summary=[], encrypted_content=f"enc-{n}-added")
            added["output_index"] = index
            emit(added)
            if summary:
                for piece in _pieces(summary):
                    emit({"type": "response.reasoning_summary_text.delta", "item_id": reasoning_id,
                          "output_index": index, "summary_index": 0, "delta": piece})
            done = _first(t, "response.output_item.done", "reasoning")
            done["item"].update(id=reasoning_id, encrypted_content=f"enc-{n}",
                                summary=[{"type": "summary_text", "text": summary}] if summary else [])
            done["output_index"] = index
            emit(done)
            output.append(done["item"])
            index += 1
        if web_search:
            search_id = f"ws_{n}"
            self.produced.add(search_id)
            emit({"type": "response.output_item.added", "output_index": index,
                  "item": {"id": search_id, "type": "web_search_call", "status": "in_progress"}})
            for phase in ("in_progress", "searching", "completed"):
                emit({"type": f"response.web_search_call.{phase}", "output_index": index, "item_id": search_id})
            item = {"id": search_id, "type": "web_search_call", "status": "completed",
                    "action": {"type": "search", "query": web_search}}
            emit({"type": "response.output_item.done", "output_index": index, "item": item})
            output.append(item)
            index += 1
        if text:
            message_id = f"msg_{n}"
            self.produced.add(message_id)
            added = _first(t, "response.output_item.added", "message")
            added["item"].update(id=message_id)
            added["output_index"] = index
            emit(added)
            for kind in ("response.content_part.added",):
                emit({**_first(t, kind), "item_id": message_id, "output_index": index})
            delta = _first(t, "response.output_text.delta")
            for piece in _pieces(text):
                emit({**delta, "item_id": message_id, "output_index": index, "delta": piece})
            emit({**_first(t, "response.output_text.done"), "item_id": message_id, "output_index": index, "text": text})
            part = _first(t, "response.content_part.done")
            part["part"]["text"] = text
            emit({**part, "item_id": message_id, "output_index": index})
            done = _first(t, "response.output_item.done", "message")
            done["item"].update(id=message_id)
            done["item"]["content"][0]["text"] = text
            done["output_index"] = index
            emit(done)
            output.append(done["item"])
            index += 1
        for c, (name, arguments) in enumerate(calls):
            item_id, call_id = f"fc_{n}_{c}", f"call_{n}_{c}"
            self.produced.add(item_id)
            if reasoning_id:
                self.reasoning_of[item_id] = reasoning_id
            args = json.dumps(arguments)
            added = _first(t, "response.output_item.added", "function_call")
            added["item"].update(id=item_id, call_id=call_id, name=name, arguments="")
            added["output_index"] = index
            emit(added)
            delta = _first(t, "response.function_call_arguments.delta")
            for piece in _pieces(args) if deltas else ():
                emit({**delta, "item_id": item_id, "output_index": index, "delta": piece})
            emit({**_first(t, "response.function_call_arguments.done"), "item_id": item_id, "output_index": index,
                  "arguments": args})
            done = _first(t, "response.output_item.done", "function_call")
            done["item"].update(id=item_id, call_id=call_id, name=name, arguments=args)
            done["output_index"] = index
            emit(done)
            output.append(done["item"])
            index += 1
        final = _first(t, "response.completed")
        final["response"].update(id=f"resp_{n}", output=output)
        if usage is not None:
            final["response"]["usage"] = usage
        if end == "incomplete":
            final["type"] = "response.incomplete"
            final["response"].update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
        elif end == "failed":
            final["type"] = "response.failed"
            final["response"].update(status="failed", error={"code": "server_error", "message": "The model failed."})
        if end != "cut":
            emit(final)
        return sse(out)

    def reply(self, *args: Any, **kwargs: Any) -> Reply:
        """:meth:`step` as one whole HTTP response."""
        return Reply(200, b"".join(self.step(*args, **kwargs)))

    def cut(self, *args: Any, **kwargs: Any) -> Truncated:
        """:meth:`step` without its terminal event, the connection closed after it."""
        return Truncated(self.step(*args, end="cut", **kwargs))

    def stall(self, *args: Any, events: int, **kwargs: Any) -> Stall:
        """:meth:`step`'s first ``events`` events, then the stream stalls until the client hangs up."""
        everything = self.step(*args, **kwargs)
        return Stall(everything[:events], everything[events:])

    # ---------------------------------------------------------------- rules
    def __call__(self, body: dict[str, Any]) -> Reply | str | None:
        problem = self.problem(body)
        if problem is None:
            return None
        message, param = problem
        return Reply(400, error_body(message, param=param, code="invalid_request_error"))

    def problem(self, body: dict[str, Any]) -> tuple[str, str | None] | None:
        """The first rule ``body`` breaks: ``(message, param)``, else None."""
        for name in body:
            if name not in BODY_FIELDS:
                return f"Unknown parameter: '{name}'.", name
            if name in self.refuses:
                return f"Unsupported parameter: '{name}' is not supported with this model.", name
        if not isinstance(body.get("instructions"), str) or not body["instructions"]:
            return "Missing required parameter: 'instructions'.", "instructions"
        store = body.get("store", True)
        if not store and body.get("include") != ["reasoning.encrypted_content"]:
            pass  # allowed by the API, but then reasoning cannot be sent back: the items below say so
        pending: list[str] = []
        seen_reasoning: set[str] = set()
        for position, item in enumerate(body.get("input") or []):
            kind = item.get("type") or ("message" if "role" in item else None)
            allowed = ITEM_FIELDS.get(kind)
            if allowed is None:
                return f"Invalid value: '{kind}' at input[{position}].", f"input[{position}].type"
            for name in item:
                if name not in allowed:
                    return f"Unknown parameter: 'input[{position}].{name}'.", f"input[{position}].{name}"
            if kind == "reasoning":
                if not store and not item.get("encrypted_content"):
                    return (f"Item with id '{item.get('id')}' not found. Items are not persisted when `store` is "
                            "set to false. Try again with `store` set to true, or remove this item from your "
                            "input.", f"input[{position}]")
                seen_reasoning.add(item.get("id"))
            elif kind == "item_reference":
                if not store or item.get("id") not in self.produced:
                    return f"Item with id '{item.get('id')}' not found.", f"input[{position}]"
                seen_reasoning.add(item.get("id"))
            elif kind == "function_call":
                needed = self.reasoning_of.get(item.get("id"))
                if needed and needed not in seen_reasoning:
                    return (f"Item '{item['id']}' of type 'function_call' was provided without its required "
                            f"'reasoning' item: '{needed}'.", f"input[{position}]")
                if item.get("call_id") in pending:
                    return f"Duplicate call_id '{item['call_id']}' at input[{position}].", f"input[{position}]"
                pending.append(item.get("call_id"))
            elif kind == "function_call_output":
                if item.get("call_id") not in pending:
                    return (f"No tool call found for function call output with call_id {item.get('call_id')}.",
                            f"input[{position}]")
                pending.remove(item["call_id"])
            elif pending and kind == "message":
                return f"No tool output found for function call {pending[0]}.", "input"
        if pending:
            return f"No tool output found for function call {pending[0]}.", "input"
        return None


class ResponsesEndpoint(FakeEndpoint):
    """:class:`~endpoint.FakeEndpoint` enforcing :class:`ResponsesRules` (``rules``) on every POST."""

    def __init__(self, rules: ResponsesRules, replies: list[Any]) -> None:
        super().__init__(replies, check=rules)
        self.rules = rules
