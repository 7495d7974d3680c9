"""The update form of a tool call: argument text as appended pieces, big fields only when changed.

A full snapshot (:meth:`ToolCallState.to_wire`) carries the whole argument text,
the partial parse and the final arguments. Sent on every change of a call whose
arguments arrive in thousands of small deltas, that makes the bytes on the wire
grow with the square of the argument size. :func:`update_form` is what a
``tool_call`` update carries instead (protocol.md, "ToolCall updates"):

* always ``toolCallId, index, name, kind, status, rev, path`` (and
  ``providerCallId`` when the session renamed the provider's id, ``error``,
  ``cancelReason``, ``result`` when set);
* ``argumentsDelta: {"offset", "text"}``: the text appended since the previous
  update; ``offset`` is the length in code points (Python ``len``) of the text
  before the piece. Absent when nothing was appended. Sent while ``generating``
  and in the first update whose status is no longer ``generating`` (the last
  piece, if any);
* ``argumentsText``: the whole text, only when it changed other than by
  appending. That happens at most once, in the first update whose status is no
  longer ``generating``, when finalizing the text changed what the pieces
  built (a piece carried U+FFFD for a lone surrogate half, and the final text
  joined the halves). Once a call left ``generating`` its text never changes;
* ``arguments`` when it changed since the call's previous update;
* ``partialArguments`` a bounded *preview*: each string value cut to its first
  :data:`PREVIEW_CHARS` code points, sent only when that preview changed and the
  argument text grew by at least :data:`PREVIEW_BUDGET` times the preview's
  compact JSON length since the preview was last sent. So the previews of a
  call add at most ``1/PREVIEW_BUDGET`` of its argument text to the wire.

Pieces never carry a lone UTF-16 surrogate (it is sent as U+FFFD, one code
point for one, so offsets stay exact); ``argumentsText`` then corrects the
text at completion. So a client's text, rebuilt from the pieces, is always
exactly the call's ``argumentsText`` once the call left ``generating``.

Each call keeps a :class:`WireMark` of what its update stream sent, so this
form must be used for exactly one stream of updates per call (the session's).
Full snapshots never touch the mark.
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolwire.streaming.state import Status, ToolCallState

#: String values in ``partialArguments`` previews are cut to this many code points.
PREVIEW_CHARS = 256
#: A preview is sent only after the argument text grew by this many times its JSON length.
PREVIEW_BUDGET = 4

#: The fields an update may leave out or send as a piece; the rest is always present.
ARGUMENT_FIELDS = ("argumentsDelta", "argumentsText", "partialArguments", "arguments")

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSENT = object()


class WireMark:
    """What one call's update stream has sent so far (see the module docstring).

    Attributes:
        sent_len: Code points of argument text the client has.
        exact: The client's text is exactly the call's (no surrogate was replaced).
        final_sent: The first update with a non-``generating`` status went out.
        partial_seen: The ``call.partial`` object last looked at (identity).
        partial_sent: The preview last sent (or ``_UNSENT``).
        preview_at: ``sent_len`` when the preview was last sent.
        preview_cost: JSON length of a preview that waited for budget (not
            looked at again before the text grew enough for it).
        arguments_sent: The ``arguments`` value last sent (or ``_UNSENT``).
    """

    __slots__ = ("sent_len", "exact", "final_sent", "partial_seen", "partial_sent", "preview_at", "preview_cost",
                 "arguments_sent")

    def __init__(self) -> None:
        self.sent_len = 0
        self.exact = True
        self.final_sent = False
        self.partial_seen: Any = None
        self.partial_sent: Any = _UNSENT
        self.preview_at = 0
        self.preview_cost = 0  # JSON length of the last preview that waited for budget
        self.arguments_sent: Any = None  # a client starts from ``arguments: null``


def preview(value: Any, limit: int = PREVIEW_CHARS) -> Any:
    """``value`` with every string (keys excepted) cut to its first ``limit`` code points."""
    if type(value) is str:
        return value if len(value) <= limit else value[:limit]
    if type(value) is dict:
        return {k: preview(v, limit) for k, v in value.items()}
    if type(value) is list:
        return [preview(v, limit) for v in value]
    return value


def _tail(call: ToolCallState, count: int) -> str:
    """The last ``count`` code points of the argument text, without joining all fragments."""
    pieces: list[str] = []
    need = count
    for frag in reversed(call.fragments):
        if need <= 0:
            break
        if len(frag) <= need:
            pieces.append(frag)
            need -= len(frag)
        else:
            pieces.append(frag[len(frag) - need:])
            need = 0
    if need > 0:  # the fragments do not add up: fall back to the joined text
        return call.arguments_text[-count:] if count else ""
    pieces.reverse()
    return "".join(pieces)


def _send_text(call: ToolCallState, mark: WireMark, out: dict[str, Any]) -> None:
    """While ``generating``: the appended text as a piece (the whole text if it shrank)."""
    size = call.arguments_size
    if size > mark.sent_len:
        piece = _tail(call, size - mark.sent_len)
        if _SURROGATE.search(piece) is not None:
            piece = _SURROGATE.sub("\ufffd", piece)
            mark.exact = False
        out["argumentsDelta"] = {"offset": mark.sent_len, "text": piece}
        mark.sent_len = size
    elif size < mark.sent_len:  # not an append (never expected while generating)
        text = out["argumentsText"] = call.arguments_text
        mark.sent_len = len(text)


def _send_preview(call: ToolCallState, mark: WireMark, out: dict[str, Any]) -> None:
    """While ``generating``: the preview, when it changed and the text grew enough since the last one."""
    partial = call.partial
    grown = mark.sent_len - mark.preview_at
    if partial is mark.partial_seen or partial is None or PREVIEW_BUDGET * mark.preview_cost > grown:
        return
    shown = preview(partial)
    if shown == mark.partial_sent:
        mark.partial_seen = partial
        return
    cost = len(json.dumps(shown, ensure_ascii=False, separators=(",", ":")))
    if PREVIEW_BUDGET * cost > grown:
        mark.preview_cost = cost  # not looked at again before the text grew enough
        return
    out["partialArguments"] = mark.partial_sent = shown
    mark.partial_seen = partial
    mark.preview_at = mark.sent_len
    mark.preview_cost = 0


def update_form(call: ToolCallState) -> dict[str, Any]:
    """The ``toolCall`` object of the next ``tool_call`` update of ``call``; records it as sent.

    Returns:
        A dict shaped as the module docstring says (camelCase, see protocol.md).
    """
    mark = call.wire
    if mark is None:
        mark = call.wire = WireMark()
    out: dict[str, Any] = {
        "toolCallId": call.id,
        "index": call.index,
        "name": call.name,
        "kind": call.kind,
        "status": call.status.value,
        "rev": call.rev,
        "path": call.path,
    }
    provider_id = call.provider_id
    if provider_id and provider_id != call.id:
        out["providerCallId"] = provider_id
    if call.status is Status.GENERATING:
        _send_text(call, mark, out)
        _send_preview(call, mark, out)
    elif not mark.final_sent:
        mark.final_sent = True
        text = call.arguments_text
        if mark.exact and len(text) >= mark.sent_len:
            # The text only grew: what the client has is a prefix of it; the rest as a piece.
            if len(text) > mark.sent_len:
                out["argumentsDelta"] = {"offset": mark.sent_len, "text": text[mark.sent_len:]}
        else:  # finalized other than by appending (surrogate halves joined): the whole text
            out["argumentsText"] = text
        mark.sent_len = len(text)
    arguments = call.arguments
    if arguments is not mark.arguments_sent and arguments != mark.arguments_sent:
        out["arguments"] = arguments
    mark.arguments_sent = arguments
    if call.error is not None:
        out["error"] = call.error.to_wire()
    if call.cancel_reason is not None:
        out["cancelReason"] = call.cancel_reason.value
    if call.result is not None:
        out["result"] = call.result
    return out


def brief_form(update: dict[str, Any]) -> dict[str, Any]:
    """An update's ``toolCall`` without its argument fields (``toolwire/toolCalls/merge`` results)."""
    return {k: v for k, v in update.items() if k not in ARGUMENT_FIELDS}


__all__ = ["ARGUMENT_FIELDS", "PREVIEW_BUDGET", "PREVIEW_CHARS", "WireMark", "brief_form", "preview", "update_form"]
