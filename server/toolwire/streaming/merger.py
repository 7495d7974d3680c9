"""The delta merger: canonical stream events in, :class:`ToolCallState` records out.

One :class:`StreamMerger` serves one model response, whatever the provider. It is
pure and synchronous: no I/O, no event loop. Rules (each has a test):

* Calls are keyed by the provider's own identity (``ToolCallDelta.key``: the chat
  ``index``, a content-block index, a Responses item id), never by list position.
  Calls keep the order in which they first appeared.
* A piece carrying a known call id goes to that call whatever its key (parallel
  calls sharing one index, interleaved). A non-empty id that differs from the
  id already known for the key opens a new call; the earlier call stays open.
  So does a different name arriving after the key's call has argument text
  (servers that reuse index 0 and send no ids).
* ``""`` for an id or a name never overwrites a known value. A name repeated
  whole is not appended twice; a name streamed in pieces is joined (a piece
  that extends the name so far replaces it, any other piece is appended).
* Argument fragments are kept as received and joined once, on demand, so merging
  is linear in the size of the arguments. The live partial view is refreshed at
  a bounded rate (by bytes and by time), never re-parsed on every delta.
* Merges are transactional: a rejected delta (wrong types, a piece for a call that
  already ended, anything after :meth:`StreamMerger.finish`) changes nothing but
  :attr:`StreamMerger.anomalies`, where it is recorded.
* A call completes when the provider closes it (:class:`ToolCallEnd`) or when
  the stream finishes; the rules are in :mod:`toolwire.streaming.completion`.
  A call is never "repaired".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from toolwire.streaming.completion import (
    TRUNCATING_FINISH,
    Cut,
    complete_call,
    stream_anomalies,
    stream_cut,
    stream_error_sentence,
)
from toolwire.streaming.delta import (
    ArgumentsDelta,
    Finish,
    OutputItem,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    Usage,
)
from toolwire.streaming.partial import complete_path, fix_surrogates, parse_partial
from toolwire.streaming.state import Status, ToolCallState

__all__ = ["StreamMerger", "TRUNCATING_FINISH"]

#: Path detection stops looking once the arguments are this long without a path key.
_PATH_SCAN_LIMIT = 16_384

_STRING_FIELDS = ("id", "name", "arguments", "arguments_final", "kind")


#: While the arguments are at most this long and no path is known yet, every fragment
#: that holds a quote is checked for a complete path value (a parse of at most 1 KB).
EAGER_PATH_LIMIT = 1024

#: On the hot path the clock is read at most once per this many new argument bytes.
CLOCK_EVERY = 256


class StreamMerger:
    """Merges one response's canonical events into tool-call states.

    Args:
        explicit_ends: True for formats that close each call (Anthropic block
            stop, Responses item done, Cohere/Vercel end events, Gemini). Then a
            call still open when the stream finishes was cut off and ends
            ``errored`` (``truncated``) even if its text happens to parse.
        clock: Monotonic clock in seconds, for the time bound of the live view.
        refresh_bytes: Minimum new argument characters before the live view is
            re-parsed.
        refresh_seconds: Re-parse when at least this long has passed since the
            last refresh (and ``refresh_bytes`` arrived); otherwise wait until
            the new text reaches an eighth of the whole, which keeps the total
            parsing work linear in the argument size.

    Attributes:
        calls: Every call of the response, in order of first appearance.
        finish_reasons: Finish reasons as the provider spelled them, in order,
            duplicates kept.
        usage: The latest usage event, or None.
        errors: Error events the provider sent inside the stream.
        anomalies: Rejected deltas and named stream oddities, as sentences.
    """

    __slots__ = (
        "calls",
        "finish_reasons",
        "usage",
        "errors",
        "anomalies",
        "_text",
        "_reasoning",
        "reasoning_field",
        "output_items",
        "_by_key",
        "_by_id",
        "_ended",
        "_final",
        "_explicit_ends",
        "_clock",
        "_refresh_bytes",
        "_refresh_seconds",
        "_pending",
        "_last_refresh",
        "_clock_at",
        "_finished",
    )

    def __init__(
        self,
        *,
        explicit_ends: bool = False,
        clock: Callable[[], float] = time.monotonic,
        refresh_bytes: int = 64,
        refresh_seconds: float = 0.05,
    ) -> None:
        self.calls: list[ToolCallState] = []
        self.finish_reasons: list[str] = []
        self.usage: Usage | None = None
        self.errors: list[StreamError] = []
        self.anomalies: list[str] = []
        self._text: list[str] = []
        self._reasoning: list[str] = []
        #: The provider field its reasoning must go back in (see TextDelta.field), or None.
        self.reasoning_field: str | None = None
        #: The whole output items of a Responses API stream, in order (:class:`OutputItem`).
        self.output_items: list[dict[str, Any]] = []
        self._by_key: dict[Any, ToolCallState] = {}
        self._by_id: dict[str, ToolCallState] = {}
        self._ended: set[int] = set()
        self._final: dict[int, str] = {}
        self._explicit_ends = explicit_ends
        self._clock = clock
        self._refresh_bytes = refresh_bytes
        self._refresh_seconds = refresh_seconds
        self._pending: dict[int, int] = {}
        self._last_refresh: dict[int, float] = {}
        self._clock_at: dict[int, int] = {}
        self._finished = False

    @property
    def explicit_ends(self) -> bool:
        """True when the format closes each call; may be set until :meth:`finish`
        (a format detected after the first payloads)."""
        return self._explicit_ends

    @explicit_ends.setter
    def explicit_ends(self, value: bool) -> None:
        self._explicit_ends = value

    # ------------------------------------------------------------------ text
    @property
    def text(self) -> str:
        """All assistant text of the response so far (surrogate halves re-paired)."""
        return _joined(self._text)

    @property
    def reasoning(self) -> str:
        """All reasoning text of the response so far (surrogate halves re-paired)."""
        return _joined(self._reasoning)

    # ----------------------------------------------------------------- apply
    def apply(self, event: StreamEvent) -> ToolCallState | None:
        """Apply one event.

        Args:
            event: A canonical event from a normalizer.

        Returns:
            The call that changed, or None (text, finish, usage, rejected deltas).
        """
        kind = type(event)
        if kind is ArgumentsDelta:
            return self._append(event.key, event.text)
        if kind is ToolCallDelta:
            return self._apply_delta(event)
        if kind is TextDelta:
            if event.text and isinstance(event.text, str):
                if event.channel == "reasoning":
                    self._reasoning.append(event.text)
                    if event.field is not None:
                        self.reasoning_field = event.field
                else:
                    self._text.append(event.text)
            return None
        if kind is ToolCallEnd:
            return self._end(event)
        if kind is Finish:
            self.finish_reasons.append(event.reason)
        elif kind is Usage:
            self.usage = event
        elif kind is StreamError:
            self.errors.append(event)
        elif kind is OutputItem:
            self.output_items.append(event.item)
        return None

    def feed(self, events: Iterable[StreamEvent]) -> list[ToolCallState]:
        """Apply events in order; return the calls that changed, each once, in call order."""
        if type(events) is list and len(events) == 1:  # the common case: one event per chunk
            event = events[0]
            if type(event) is ArgumentsDelta:
                call = self._append(event.key, event.text)
            else:
                call = self.apply(event)
            return [] if call is None else [call]
        changed: dict[int, ToolCallState] = {}
        for event in events:
            call = self.apply(event)
            if call is not None:
                changed[call.index] = call
        return [changed[i] for i in sorted(changed)]

    def _reject(self, delta: ToolCallDelta, why: str) -> None:
        self.anomalies.append(f"rejected delta for call key {delta.key!r}: {why}")

    def _target(self, delta: ToolCallDelta) -> ToolCallState | None:
        """The call a delta belongs to, or None when it opens a new one."""
        if delta.id and not delta.new_call:
            known = self._by_id.get(delta.id)
            # A known id finds its call even under another key (parallel calls that
            # share an index), unless the delta opens a new key with a name: that is
            # a second call that reuses the id, not more of the first.
            if known is not None and not (delta.name and delta.key not in self._by_key):
                return known
        if delta.new_call:
            return None
        call = self._by_key.get(delta.key)
        if call is not None and delta.id and call.id and delta.id != call.id:
            return None
        if call is not None and delta.name and call.name and call.arguments_size and delta.name != call.name:
            return None  # a new name after argument text: the key was reused for the next call
        return call

    def _append(self, key: Any, text: Any) -> ToolCallState | None:
        """Merge an :class:`ArgumentsDelta`: the hot path, a few dict lookups per fragment.

        Anything unusual (unknown key, a finished call, a non-string) takes the
        general, validating path of :meth:`_apply_delta`.
        """
        call = self._by_key.get(key) if (type(key) is int or type(key) is str) else None
        if (
            call is None
            or type(text) is not str
            or self._finished
            or call.status is not Status.GENERATING
            or call.index in self._ended
        ):
            return self._apply_delta(ToolCallDelta(key, arguments=text))
        if text:
            index = call.index
            call.fragments.append(text)
            size = call.arguments_size = call.arguments_size + len(text)
            if call.path is None and size <= EAGER_PATH_LIMIT and '"' in text:
                # a closing quote may have completed a path value: show it now
                call.path = complete_path(call.arguments_text)
            pending = self._pending[index] = self._pending[index] + len(text)
            if pending >= self._refresh_bytes:
                if pending * 8 >= size:
                    self._refresh(call, force=True)
                elif pending >= self._clock_at.get(index, 0):
                    # The time bound is checked at most once per CLOCK_EVERY new bytes.
                    self._clock_at[index] = pending + CLOCK_EVERY
                    if self._clock() - self._last_refresh[index] >= self._refresh_seconds:
                        self._refresh(call, force=True)
        call.rev += 1
        return call

    #: :meth:`apply` of ``ArgumentsDelta(key, text)``, for callers that already hold
    #: the key and text (the fed streams' fast lane).
    append_arguments = _append

    def _apply_delta(self, delta: ToolCallDelta) -> ToolCallState | None:
        if (
            delta.id is None
            and delta.name is None
            and delta.kind is None
            and delta.arguments_final is None
            and delta.arguments_whole is None
            and not delta.new_call
            and type(delta.arguments) is str
            and (type(delta.key) is int or type(delta.key) is str)
        ):
            call = self._by_key.get(delta.key)
            if call is not None and not self._finished and call.status is Status.GENERATING and call.index not in self._ended:
                return self._append(delta.key, delta.arguments)
        # Decide everything first: a rejected delta must change nothing.
        if self._finished:
            self._reject(delta, "the response already finished")
            return None
        for name in _STRING_FIELDS:
            value = getattr(delta, name)
            if value is not None and not isinstance(value, str):
                self._reject(delta, f"{name} is {type(value).__name__}, expected a string")
                return None
        try:
            call = self._target(delta)
        except TypeError:
            self._reject(delta, f"key of type {type(delta.key).__name__} is not hashable")
            return None
        if call is not None and (call.status is not Status.GENERATING or call.index in self._ended):
            state = "ended" if call.status is Status.GENERATING else call.status.value
            self._reject(delta, f"call {call.id or call.index!r} is already {state}")
            return None

        if call is None:
            call = ToolCallState(key=delta.key, index=len(self.calls))
            self.calls.append(call)
            self._pending[call.index] = 0
            self._last_refresh[call.index] = self._clock()
        self._by_key[delta.key] = call
        if delta.id:
            if not call.id:
                call.id = call.provider_id = delta.id
            self._by_id.setdefault(delta.id, call)
        if delta.kind:
            call.kind = delta.kind
        if delta.name:
            _merge_name(call, delta)
        if delta.arguments_whole is not None:
            call.whole_arguments = delta.arguments_whole
            if call.arguments_size == 0 and isinstance(delta.arguments_whole, dict):
                call.partial = delta.arguments_whole
        if delta.arguments_final is not None:
            if call.arguments_size == 0:
                if delta.arguments_final:
                    call.fragments.append(delta.arguments_final)
                    call.arguments_size = len(delta.arguments_final)
                    self._pending[call.index] += call.arguments_size
            else:
                self._final[call.index] = delta.arguments_final
        if delta.arguments:
            call.fragments.append(delta.arguments)
            call.arguments_size += len(delta.arguments)
            self._pending[call.index] += len(delta.arguments)
            if call.path is None and call.arguments_size <= EAGER_PATH_LIMIT and '"' in delta.arguments:
                call.path = complete_path(call.arguments_text)
            self._refresh(call)
        call.rev += 1
        return call

    def _end(self, event: ToolCallEnd) -> ToolCallState | None:
        try:
            call = self._by_key.get(event.key)
        except TypeError:
            return None
        if call is None:
            return None
        if call.status is not Status.GENERATING or call.index in self._ended:
            self.anomalies.append(f"call key {event.key!r} was closed twice")
            return None
        self._ended.add(call.index)
        self._complete(call, cut=None)
        return call

    # -------------------------------------------------------------- live view
    def _refresh(self, call: ToolCallState, *, force: bool = False) -> None:
        """Re-parse the live view if enough text or time has passed (or ``force``)."""
        pending = self._pending.get(call.index, 0)
        if pending == 0:
            return
        if not force:
            if pending < self._refresh_bytes:
                return
            if pending * 8 < call.arguments_size and (
                self._clock() - self._last_refresh[call.index] < self._refresh_seconds
            ):
                return
        text = call.arguments_text
        partial = parse_partial(text)
        if partial is not None:
            call.partial = partial
        if call.path is None and call.arguments_size <= _PATH_SCAN_LIMIT:
            call.path = complete_path(text)
        self._pending[call.index] = 0
        self._clock_at[call.index] = 0
        self._last_refresh[call.index] = self._clock()

    def refresh_all(self) -> list[ToolCallState]:
        """Bring every open call's live view up to date (before a coalesced push)."""
        out = []
        for index, pending in list(self._pending.items()):
            call = self.calls[index]
            if pending and call.status is Status.GENERATING:
                self._refresh(call, force=True)
                call.rev += 1
                out.append(call)
        return out

    # ---------------------------------------------------------------- finish
    def finish(self, *, stream_error: str | None = None) -> list[ToolCallState]:
        """Complete every call that is still ``generating``.

        Args:
            stream_error: Set when the stream did not end cleanly (dropped
                connection, an exception while reading), as a short clause,
                e.g. ``"the connection dropped"``. Error events the provider
                sent are taken from :attr:`errors` as well.

        Returns:
            The calls that changed status, in call order.
        """
        if self._finished:
            return []
        self._finished = True
        if stream_error is None and self.errors:
            stream_error = stream_error_sentence(self.errors[0])
        cut = stream_cut(stream_error=stream_error, finish_reasons=self.finish_reasons,
                         explicit_ends=self._explicit_ends)
        changed = []
        for call in self.calls:
            if call.status is Status.GENERATING:
                self._complete(call, cut=cut)
                changed.append(call)
        self.anomalies.extend(stream_anomalies(self.calls, self.finish_reasons, self.errors))
        return changed

    def _complete(self, call: ToolCallState, *, cut: Cut | None) -> None:
        final = self._final.pop(call.index, None)
        if final is not None and final != call.arguments_text:
            self.anomalies.append(
                f"call {call.id or call.index!r}: the final argument text differs from the streamed one; "
                "the streamed text was kept"
            )
        complete_call(call, cut=cut, explicit_ends=self._explicit_ends)
        self._pending.pop(call.index, None)
        self._last_refresh.pop(call.index, None)
        self._clock_at.pop(call.index, None)

    # ---------------------------------------------------------------- views
    def arguments_for_model(self, call: ToolCallState) -> str:
        """The argument text to send back to the model in the assistant message.

        Empty text becomes ``"{}"`` (providers reject ``""`` on the next request).
        """
        text = call.arguments_text
        return text if text.strip() else "{}"


def _joined(parts: list[str]) -> str:
    if len(parts) > 1:
        parts[:] = ["".join(parts)]
    return fix_surrogates(parts[0]) if parts else ""


def _merge_name(call: ToolCallState, delta: ToolCallDelta) -> None:
    name = delta.name
    if not call.name:
        call.name = name
    elif name == call.name or delta.name_whole:
        return
    elif name.startswith(call.name):
        call.name = name  # cumulative: the provider resends the name so far
    else:
        call.name += name
