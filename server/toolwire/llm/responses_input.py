"""The Responses API request's ``instructions`` and ``input``, built from the history.

The history (:mod:`toolwire.agent.conversation`) is kept in Chat Completions shape; an
assistant message that came over the Responses API also keeps the output items as
they came (``output_items``). Each history message becomes (protocol.md, "The Responses
API wire"):

* the first ``system`` message → ``instructions``; a later one → a ``developer`` message;
* ``user`` → a user message: ``input_text`` and ``input_image`` parts;
* ``assistant`` with ``output_items`` → its items in their order: ``reasoning`` items with
  their ``encrypted_content`` (``store: false``; one the endpoint sent without it is left out,
  and the calls after it go without their item ids, which would require it) or as an
  ``item_reference`` by id (``store: true``); a ``message`` item → the message's text; each ``function_call`` item → the message's
  next call (Toolwire's call id, the arguments as sent to the model), with the item's ``id``;
  provider-side items (``web_search_call``, ``mcp_call``, …) as they came (by id with
  ``store: true``). Calls not among the items follow, then the text if no message item held it;
* ``assistant`` without items (Chat Completions, text mode) → a message, then its calls;
* ``tool`` → ``function_call_output`` by ``call_id`` (the history's rule gives exactly one
  per call, in call order, cancelled and rejected calls included).
"""

from __future__ import annotations

from typing import Any

#: The history's key on an assistant message for the Responses output items (never sent to Chat Completions).
ITEMS_KEY = "output_items"

def to_input(messages: list[dict[str, Any]], *, store: bool) -> tuple[str, list[dict[str, Any]]]:
    """``(instructions, input)`` for ``messages`` (see the module docstring)."""
    instructions: str | None = None
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            if instructions is None:
                instructions = _text(message.get("content"))
            else:
                items.append({"role": "developer", "content": _text(message.get("content"))})
        elif role == "user":
            items.append({"role": "user", "content": _user_parts(message.get("content"))})
        elif role == "assistant":
            _assistant(message, items, store)
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": message.get("tool_call_id"),
                          "output": _text(message.get("content"))})
    return instructions or "", items


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _user_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    parts: list[dict[str, Any]] = []
    for part in content or []:
        if part.get("type") == "text":
            parts.append({"type": "input_text", "text": part.get("text", "")})
        elif part.get("type") == "image_url":
            parts.append({"type": "input_image", "image_url": part["image_url"]["url"]})
    return parts


def _message(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}


def _call(call: dict[str, Any], item_id: Any = None) -> dict[str, Any]:
    out = {"type": "function_call", "call_id": call["id"], "name": call["function"]["name"],
           "arguments": call["function"]["arguments"]}
    if isinstance(item_id, str) and item_id:
        out["id"] = item_id
    return out


def _assistant(message: dict[str, Any], items: list[dict[str, Any]], store: bool) -> None:
    text = message.get("content") or ""
    calls = list(message.get("tool_calls") or [])
    said = not text
    next_call = 0
    unlinked = False  # a reasoning item could not go back: its calls go without their item ids
    for item in message.get(ITEMS_KEY) or ():
        kind = item.get("type")
        if kind == "function_call":
            if next_call < len(calls):  # text mode and unnamed calls: the history has no call for it
                items.append(_call(calls[next_call], None if unlinked else item.get("id")))
                next_call += 1
        elif kind == "reasoning" and not store and not item.get("encrypted_content"):
            unlinked = True  # the endpoint sent none (it ignored include): the item cannot be sent back
        elif kind == "message":
            if not said:
                items.append(_message(text))
                said = True
        elif store and isinstance(item.get("id"), str):
            items.append({"type": "item_reference", "id": item["id"]})
        elif kind == "reasoning":
            items.append({k: item[k] for k in ("type", "id", "summary", "encrypted_content") if k in item})
        else:
            items.append(item)
    if not said:
        items.append(_message(text))
    for call in calls[next_call:]:
        items.append(_call(call))
