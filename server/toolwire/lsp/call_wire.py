"""Tool-call events in the LSP front-end's wire form (protocol.md, "ToolCall" and "ToolCall updates").

The agent reports a call as an immutable snapshot plus what changed
(:class:`toolwire.agent.events.ToolCallChanged`, rules in
:mod:`toolwire.streaming.changes`); this module writes it down:

* :func:`update_form` — the ``toolCall`` of a ``tool_call`` update: always
  ``toolCallId, index, name, kind, status, rev, path`` (and ``providerCallId``
  when the session renamed the provider's id, ``error``, ``cancelReason``,
  ``result`` when set); ``argumentsDelta: {"offset", "text"}`` for an appended
  piece; ``argumentsText`` when the text changed other than by appending;
  ``partialArguments`` (the bounded preview) when it was renewed; ``arguments``
  when it changed.
* :func:`brief_form` — that object without its argument fields
  (:data:`ARGUMENT_FIELDS`): what ``toolwire/toolCalls/merge`` answers.
* :func:`snapshot_form` — a full snapshot, every field whole (permission requests).

So the bytes sent for a call grow linearly with its arguments, and a client
rebuilds the exact text from the pieces (:class:`toolwire.headless.mirror.CallMirror`).
"""

from __future__ import annotations

from typing import Any

from toolwire.agent.events import CallSnapshot, ToolCallChanged

#: The fields an update may leave out or send as a piece; the rest is always present.
ARGUMENT_FIELDS = ("argumentsDelta", "argumentsText", "partialArguments", "arguments")


def _identity(call: CallSnapshot) -> dict[str, Any]:
    out: dict[str, Any] = {
        "toolCallId": call.id,
        "index": call.index,
        "name": call.name,
        "kind": call.kind,
        "status": call.status.value,
        "rev": call.rev,
        "path": call.path,
    }
    if call.provider_id:
        out["providerCallId"] = call.provider_id
    return out


def _outcome(call: CallSnapshot, out: dict[str, Any]) -> dict[str, Any]:
    if call.error is not None:
        out["error"] = call.error.to_wire()
    if call.cancel_reason is not None:
        out["cancelReason"] = call.cancel_reason.value
    if call.result is not None:
        out["result"] = call.result
    return out


def update_form(event: ToolCallChanged) -> dict[str, Any]:
    """The ``toolCall`` object of the ``tool_call`` update of ``event`` (camelCase, see protocol.md)."""
    call, change = event.call, event.change
    out = _identity(call)
    piece = change.piece
    if piece is not None:
        out["argumentsDelta"] = {"offset": piece.offset, "text": piece.text}
    if change.text is not None:
        out["argumentsText"] = change.text
    if change.preview_changed:
        out["partialArguments"] = call.preview
    if change.arguments_changed:
        out["arguments"] = call.arguments
    return _outcome(call, out)


def brief_form(update: ToolCallChanged | dict[str, Any]) -> dict[str, Any]:
    """An update's ``toolCall`` without its argument fields (``toolwire/toolCalls/merge`` results).

    Args:
        update: The event, or its :func:`update_form` (a client's copy).
    """
    if isinstance(update, ToolCallChanged):
        return _outcome(update.call, _identity(update.call))
    return {k: v for k, v in update.items() if k not in ARGUMENT_FIELDS}


def snapshot_form(call: CallSnapshot) -> dict[str, Any]:
    """The full snapshot of ``call`` (protocol.md, "ToolCall"): every field whole, as
    :meth:`toolwire.streaming.state.ToolCallState.to_wire` writes it.

    ``call`` must hold its text (:func:`toolwire.streaming.changes.snapshot`)."""
    out: dict[str, Any] = {
        "toolCallId": call.id,
        "index": call.index,
        "name": call.name,
        "kind": call.kind,
        "status": call.status.value,
        "rev": call.rev,
        "argumentsText": call.text or "",
        "partialArguments": call.partial,
        "arguments": call.arguments,
        "path": call.path,
    }
    if call.provider_id:
        out["providerCallId"] = call.provider_id
    return _outcome(call, out)


__all__ = ["ARGUMENT_FIELDS", "brief_form", "snapshot_form", "update_form"]
