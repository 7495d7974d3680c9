"""What a tool call is now, and what changed since its previous event: immutable values.

The agent reports every change of a call as a :class:`CallSnapshot` (the call's
state, frozen) and a :class:`CallChange` (what changed since the call's previous
report); :func:`observe` makes both and records what was reported. Front-ends
encode the pair (``toolwire.lsp.call_wire`` to protocol.md's "ToolCall
updates", ``toolwire.acp`` to ACP ``tool_call``/``tool_call_update``); none of
them rebuilds a call from another one's deltas.

A call's argument text arrives in thousands of small deltas; a snapshot never
copies it while the call is ``generating`` (the bytes would grow with the square
of the argument size). Instead the change says what was appended:

* :attr:`CallChange.piece`: the text appended since the previous report, with
  its ``offset`` (the length in code points, Python ``len``, of the text before
  it). None when nothing was appended. Reported while ``generating`` and in the
  first report whose status is no longer ``generating`` (the last piece, if any);
* :attr:`CallChange.text`: the whole text, only when it changed other than by
  appending. That happens at most once, in the first report whose status is no
  longer ``generating``, when finalizing the text changed what the pieces built
  (a piece carried U+FFFD for a lone surrogate half, and the final text joined
  the halves). Once a call left ``generating`` its text never changes, and every
  snapshot holds it whole (:attr:`CallSnapshot.text`, the same string object each
  time: joined once);
* :attr:`CallChange.arguments_changed`: ``arguments`` differs from the previous report's;
* :attr:`CallSnapshot.preview`: a bounded *preview* of the partial parse, each
  string value cut to its first :data:`PREVIEW_CHARS` code points, renewed
  (:attr:`CallChange.preview_changed`) only when it changed and the argument text
  grew by at least :data:`PREVIEW_BUDGET` times the preview's compact JSON length
  since the preview was last renewed. So the previews of a call add at most
  ``1/PREVIEW_BUDGET`` of its argument text to a wire that sends each renewal.

Pieces never carry a lone UTF-16 surrogate (it is reported as U+FFFD, one code
point for one, so offsets stay exact); :attr:`CallChange.text` then corrects the
text at completion. So a text rebuilt from the pieces is always exactly the
call's text once the call left ``generating``.

Each call keeps a :class:`ChangeMark` of what its reports said, so
:func:`observe` must be used for exactly one stream of reports per call (the
session's). :func:`snapshot` (a permission request, a session snapshot) never
touches the mark.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from toolwire.streaming.state import CallError, CancelReason, Status, ToolCallState

#: String values in previews are cut to this many code points.
PREVIEW_CHARS = 256
#: A preview is renewed only after the argument text grew by this many times its JSON length.
PREVIEW_BUDGET = 4

_SURROGATE = re.compile("[\ud800-\udfff]")
_UNSENT = object()


class ArgumentsPiece(NamedTuple):
    """Argument text appended since the call's previous report.

    Attributes:
        offset: Code points (Python ``len``) of the text before the piece.
        text: The appended text; a lone surrogate half is U+FFFD.
    """

    offset: int
    text: str


class CallSnapshot(NamedTuple):
    """One tool call's state at one moment (protocol.md, "ToolCall"; fields as in
    :class:`toolwire.streaming.state.ToolCallState`). Immutable (a named tuple: one
    is made per event, and a tuple is built several times faster than a frozen
    dataclass); the dicts it holds (``arguments``, ``partial``, ``preview``,
    ``result``) are shared with the call and replaced there, never changed in place.

    Attributes:
        id: The session's id of the call; empty until known.
        provider_id: The id the provider's stream gave, when it differs from ``id``
            (else empty).
        index: Position in the model response, 0-based.
        name: The tool name; empty until known.
        kind: ``"function"``, or the provider-executed block type.
        status: The call's status.
        rev: Incremented on every change of the call.
        path: A complete path-like argument, or None.
        error: Set when ``status`` is ``errored``.
        cancel_reason: Set when ``status`` is ``canceled``.
        result: The tool's result (its wire dict) once it ran.
        arguments: The final arguments once parsed, else None.
        preview: The bounded preview last renewed (see the module docstring), or None.
        partial: The whole best-effort parse so far (never cut), or None.
        text: The whole argument text once ``status`` left ``generating`` (and in
            a :func:`snapshot`); None while generating (see :class:`CallChange`).
        size: Code points of argument text received so far.
    """

    id: str = ""
    provider_id: str = ""
    index: int = 0
    name: str = ""
    kind: str = "function"
    status: Status = Status.GENERATING
    rev: int = 0
    path: str | None = None
    error: CallError | None = None
    cancel_reason: CancelReason | None = None
    result: Any = None
    arguments: dict[str, Any] | None = None
    preview: dict[str, Any] | None = None
    partial: dict[str, Any] | None = None
    text: str | None = None
    size: int = 0


class CallChange(NamedTuple):
    """What changed in a call since its previous report (see the module docstring).

    Attributes:
        piece: Text appended since the previous report, or None.
        text: The whole text when it changed other than by appending, else None.
        arguments_changed: ``arguments`` differs from the previous report's.
        preview_changed: The preview was renewed.
    """

    piece: ArgumentsPiece | None = None
    text: str | None = None
    arguments_changed: bool = False
    preview_changed: bool = False


#: A change that says nothing changed besides the state (status, rev, result…).
NO_ARGUMENT_CHANGE = CallChange()


class ChangeMark:
    """What one call's reports have said so far (see the module docstring).

    Attributes:
        sent_len: Code points of argument text reported.
        exact: The reported text is exactly the call's (no surrogate was replaced).
        final_sent: The first report with a non-``generating`` status was made.
        partial_seen: The ``call.partial`` object last looked at (identity).
        partial_sent: The preview last renewed (or ``_UNSENT``).
        preview_at: ``sent_len`` when the preview was last renewed.
        preview_cost: JSON length of a preview that waited for budget (not
            looked at again before the text grew enough for it).
        arguments_sent: The ``arguments`` value last reported (or ``_UNSENT``).
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
        self.arguments_sent: Any = None  # a report starts from ``arguments: None``


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


def _text_change(call: ToolCallState, mark: ChangeMark) -> tuple[ArgumentsPiece | None, str | None]:
    """While ``generating``: the appended text as a piece (the whole text if it shrank)."""
    size = call.arguments_size
    if size > mark.sent_len:
        piece = _tail(call, size - mark.sent_len)
        if _SURROGATE.search(piece) is not None:
            piece = _SURROGATE.sub("\ufffd", piece)
            mark.exact = False
        out = ArgumentsPiece(mark.sent_len, piece)
        mark.sent_len = size
        return out, None
    if size < mark.sent_len:  # not an append (never expected while generating)
        text = call.arguments_text
        mark.sent_len = len(text)
        return None, text
    return None, None


def _final_change(call: ToolCallState, mark: ChangeMark) -> tuple[ArgumentsPiece | None, str | None]:
    """The first report after ``generating``: the last piece, or the whole text if it changed otherwise."""
    mark.final_sent = True
    text = call.arguments_text
    sent = mark.sent_len
    mark.sent_len = len(text)
    if mark.exact and len(text) >= sent:
        # The text only grew: what was reported is a prefix of it; the rest as a piece.
        return (ArgumentsPiece(sent, text[sent:]) if len(text) > sent else None), None
    return None, text  # finalized other than by appending (surrogate halves joined): the whole text


def _renew_preview(call: ToolCallState, mark: ChangeMark) -> bool:
    """While ``generating``: renew the preview when it changed and the text grew enough since the last one."""
    partial = call.partial
    grown = mark.sent_len - mark.preview_at
    if partial is mark.partial_seen or partial is None or PREVIEW_BUDGET * mark.preview_cost > grown:
        return False
    shown = preview(partial)
    if shown == mark.partial_sent:
        mark.partial_seen = partial
        return False
    cost = len(json.dumps(shown, ensure_ascii=False, separators=(",", ":")))
    if PREVIEW_BUDGET * cost > grown:
        mark.preview_cost = cost  # not looked at again before the text grew enough
        return False
    mark.partial_sent = shown
    mark.partial_seen = partial
    mark.preview_at = mark.sent_len
    mark.preview_cost = 0
    return True


def _snapshot(call: ToolCallState, mark: ChangeMark | None, text: str | None) -> CallSnapshot:
    provider_id = call.provider_id
    shown = mark.partial_sent if mark is not None else _UNSENT
    return CallSnapshot(
        call.id, provider_id if provider_id != call.id else "", call.index, call.name, call.kind, call.status,
        call.rev, call.path, call.error, call.cancel_reason, call.result, call.arguments,
        None if shown is _UNSENT else shown, call.partial, text, call.arguments_size)


def observe(call: ToolCallState) -> tuple[CallSnapshot, CallChange]:
    """The call's next report: its snapshot and what changed since its previous one; records it as made."""
    mark = call.reported
    if mark is None:
        mark = call.reported = ChangeMark()
    renewed = False
    generating = call.status is Status.GENERATING
    if generating:
        piece, whole = _text_change(call, mark)
        renewed = _renew_preview(call, mark)
    elif not mark.final_sent:
        piece, whole = _final_change(call, mark)
    else:
        piece = whole = None
    arguments = call.arguments
    arguments_changed = arguments is not mark.arguments_sent and arguments != mark.arguments_sent
    mark.arguments_sent = arguments
    if piece is None and whole is None and not arguments_changed and not renewed:
        change = NO_ARGUMENT_CHANGE
    else:
        change = CallChange(piece, whole, arguments_changed, renewed)
    return _snapshot(call, mark, None if generating else call.arguments_text), change


def snapshot(call: ToolCallState) -> CallSnapshot:
    """The call's whole state now, argument text included (joined if need be); the
    report stream's mark is read (the preview last renewed), never changed."""
    return _snapshot(call, call.reported, call.arguments_text)


__all__ = ["ArgumentsPiece", "CallChange", "CallSnapshot", "ChangeMark", "PREVIEW_BUDGET", "PREVIEW_CHARS",
           "observe", "preview", "snapshot"]
