"""The delta merger: canonical stream events in, :class:`ToolCallState` records out.

One :class:`StreamMerger` serves one model response, whatever the provider. It is
pure and synchronous: no I/O, no event loop. Rules (each has a test):

* Calls are keyed by the provider's own identity (``ToolCallDelta.key``: the chat
  ``index``, a content-block index, a Responses item id), never by list position.
  Calls keep the order in which they first appeared.
* A non-empty id that differs from the id already known for that key opens a new
  call (parallel calls that share one index but carry distinct ids).
* ``""`` for an id or a name never overwrites a known value. A name repeated
  whole is not appended twice; a name streamed in pieces is joined.
* Argument fragments are kept as received and joined once, on demand, so merging
  is linear in the size of the arguments. The live partial view is refreshed at
  a bounded rate (by bytes and by time), never re-parsed on every delta.
* Merges are transactional: a rejected delta (wrong types, a piece for a call that
  already ended) changes nothing and is recorded in :attr:`StreamMerger.anomalies`.
* :meth:`StreamMerger.finish` completes every open call: a strict parse; empty
  text is ``{}``; invalid JSON, or a call cut off by the end of the stream, ends
  ``errored`` with a precise message. A call is never "repaired".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from toolwire.streaming.delta import (
    Finish,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    Usage,
)
from toolwire.streaming.partial import (
    ArgumentsError,
    complete_path,
    fix_surrogates,
    parse_partial,
    parse_strict,
    snippet,
)
from toolwire.streaming.state import CallError, Status, ToolCallState

#: Finish reasons that mean the model ran out of room (OpenAI, Anthropic, Gemini, Bedrock, Cohere).
TRUNCATING_FINISH = frozenset({"length", "max_tokens", "MAX_TOKENS", "max_output_tokens", "MAX_TOKENS_REACHED"})

#: Path detection stops looking once the arguments are this long without a path key.
_PATH_SCAN_LIMIT = 16_384


class StreamMerger:
    """Merges one response's canonical events into tool-call states.

    Args:
        explicit_ends: True for formats that close each call (Anthropic block
            stop, Responses item done, Cohere/Vercel end events). Then a call
            still open when the stream finishes was cut off and ends
            ``errored`` (``truncated``) even if its text happens to parse.
        clock: Monotonic clock in seconds, for the time bound of the live view.
        refresh_bytes: Minimum new argument bytes before the live view is
            re-parsed.
        refresh_seconds: Re-parse when at least this long has passed since the
            last refresh (and ``refresh_bytes`` arrived); otherwise wait until
            the new bytes reach an eighth of the whole, which keeps the total
            parsing work linear.

    Attributes:
        calls: Every call of the response, in order of first appearance.
        finish_reasons: Finish reasons as the provider spelled them, in order.
        usage: The latest usage event, or None.
        errors: Error events the provider sent inside the stream.
        anomalies: Deltas that were rejected, as human-readable sentences.
    """

    __slots__ = (
        "calls",
        "finish_reasons",
        "usage",
        "errors",
        "anomalies",
        "_text",
        "_reasoning",
        "_open",
        "_ended",
        "_explicit_ends",
        "_clock",
        "_refresh_bytes",
        "_refresh_seconds",
        "_pending",
        "_last_refresh",
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
        self._open: dict[Any, ToolCallState] = {}
        self._ended: set[int] = set()
        self._explicit_ends = explicit_ends
        self._clock = clock
        self._refresh_bytes = refresh_bytes
        self._refresh_seconds = refresh_seconds
        self._pending: dict[int, int] = {}
        self._last_refresh: dict[int, float] = {}
        self._finished = False

    # ------------------------------------------------------------------ text
    @property
    def text(self) -> str:
        """All assistant text of the response so far."""
        if len(self._text) > 1:
            self._text[:] = ["".join(self._text)]
        return fix_surrogates(self._text[0]) if self._text else ""

    @property
    def reasoning(self) -> str:
        """All reasoning text of the response so far."""
        if len(self._reasoning) > 1:
            self._reasoning[:] = ["".join(self._reasoning)]
        return self._reasoning[0] if self._reasoning else ""

    # ----------------------------------------------------------------- apply
    def apply(self, event: StreamEvent) -> ToolCallState | None:
        """Apply one event.

        Args:
            event: A canonical event from a normalizer.

        Returns:
            The call that changed, or None (text, finish, usage, rejected deltas).
        """
        if type(event) is ToolCallDelta:
            return self._apply_delta(event)
        if type(event) is TextDelta:
            (self._reasoning if event.channel == "reasoning" else self._text).append(event.text)
            return None
        if type(event) is ToolCallEnd:
            call = self._open.get(event.key)
            if call is not None:
                self._ended.add(id(call))
                del self._open[event.key]
                self._refresh(call, force=True)
                return call
            return None
        if type(event) is Finish:
            self.finish_reasons.append(event.reason)
        elif type(event) is Usage:
            self.usage = event
        elif type(event) is StreamError:
            self.errors.append(event)
        return None

    def feed(self, events: Iterable[StreamEvent]) -> list[ToolCallState]:
        """Apply events in order; return the calls that changed, each once, in call order."""
        changed: dict[int, ToolCallState] = {}
        for event in events:
            call = self.apply(event)
            if call is not None:
                changed[call.index] = call
        return [changed[i] for i in sorted(changed)]

    def _reject(self, delta: ToolCallDelta, why: str) -> None:
        self.anomalies.append(f"rejected delta for call key {delta.key!r}: {why}")

    def _apply_delta(self, delta: ToolCallDelta) -> ToolCallState | None:
        # Validate everything first: a rejected delta must change nothing.
        if self._finished:
            self._reject(delta, "the response already finished")
            return None
        for name in ("id", "name", "arguments", "arguments_final", "kind"):
            value = getattr(delta, name)
            if value is not None and not isinstance(value, str):
                self._reject(delta, f"{name} is {type(value).__name__}, expected a string")
                return None
        call = self._open.get(delta.key)
        if call is not None and (
            delta.new_call or (delta.id and call.id and delta.id != call.id)
        ):
            # A new call under a key already in use: close the old one.
            self._ended.add(id(call))
            self._refresh(call, force=True)
            call = None
        if call is None:
            call = ToolCallState(key=delta.key, index=len(self.calls))
            self.calls.append(call)
            self._open[delta.key] = call
            self._pending[call.index] = 0
            self._last_refresh[call.index] = self._clock()
        if call.status is not Status.GENERATING:
            self._reject(delta, f"call is already {call.status.value}")
            return None
        if delta.id and not call.id:
            call.id = delta.id
        if delta.kind:
            call.kind = delta.kind
        if delta.name:
            if not call.name:
                call.name = delta.name
            elif not delta.name_whole and delta.name != call.name:
                call.name += delta.name
        if delta.arguments_whole is not None and call.whole_arguments is None:
            call.whole_arguments = delta.arguments_whole
        if delta.arguments_final is not None and call.arguments_size == 0:
            call.fragments.append(delta.arguments_final)
            call.arguments_size = len(delta.arguments_final)
            self._pending[call.index] += len(delta.arguments_final)
        if delta.arguments:
            call.fragments.append(delta.arguments)
            call.arguments_size += len(delta.arguments)
            self._pending[call.index] += len(delta.arguments)
            self._refresh(call)
        call.rev += 1
        return call

    def _refresh(self, call: ToolCallState, *, force: bool = False) -> None:
        """Re-parse the live view if enough bytes or time have passed (or ``force``)."""
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
        call.partial = parse_partial(text)
        if call.path is None and call.arguments_size <= _PATH_SCAN_LIMIT:
            call.path = complete_path(text)
        self._pending[call.index] = 0
        self._last_refresh[call.index] = self._clock()

    def refresh_all(self) -> list[ToolCallState]:
        """Bring every open call's live view up to date (before a coalesced push)."""
        out = []
        for call in self._open.values():
            if self._pending.get(call.index):
                self._refresh(call, force=True)
                call.rev += 1
                out.append(call)
        return out

    # ---------------------------------------------------------------- finish
    def finish(self, *, stream_error: str | None = None) -> list[ToolCallState]:
        """Complete every call that is still ``generating``.

        Args:
            stream_error: Set when the stream did not end cleanly (dropped
                connection, an exception while reading). Error events the
                provider sent are taken from :attr:`errors` as well.

        Returns:
            The calls that changed status, in call order.
        """
        self._finished = True
        if stream_error is None and self.errors:
            first = self.errors[0]
            stream_error = f"the provider reported an error: {first.message}" + (
                f" ({first.code})" if first.code else ""
            )
        truncated_by = next((r for r in self.finish_reasons if r in TRUNCATING_FINISH), None)
        changed = []
        for call in self.calls:
            if call.status is not Status.GENERATING:
                continue
            self._complete(call, stream_error=stream_error, truncated_by=truncated_by)
            changed.append(call)
        self._open.clear()
        return changed

    def _complete(self, call: ToolCallState, *, stream_error: str | None, truncated_by: str | None) -> None:
        call.arguments_text  # join the fragments once
        if call.fragments:
            call.fragments[0] = fix_surrogates(call.fragments[0])
        text = call.arguments_text
        label = f"tool call {call.name or '(no name)'!r} ({call.id or f'#{call.index}'})"
        ended = id(call) in self._ended
        if not call.name:
            call.transition(
                Status.ERRORED,
                error=CallError("missing_name", f"{label}: the stream never gave the tool's name"),
            )
            return
        if not text.strip() and call.whole_arguments is not None:
            whole = call.whole_arguments
            if not isinstance(whole, dict):
                call.transition(
                    Status.ERRORED,
                    error=CallError("not_object", f"{label}: arguments must be an object, got {type(whole).__name__}"),
                )
                return
            call.arguments = whole
            call.fragments[:] = [json.dumps(whole, ensure_ascii=False)] if whole else []
        else:
            cut_off = (stream_error is not None or self._explicit_ends or truncated_by is not None) and not ended
            try:
                call.arguments = parse_strict(text)
            except ArgumentsError as exc:
                if cut_off or truncated_by:
                    why = stream_error or (
                        f"the response stopped ({truncated_by})" if truncated_by else "the stream ended"
                    )
                    message = (
                        f"{label}: {why} before the arguments were complete "
                        f"({len(text)} characters received, ending {snippet(text, len(text))!r})"
                    )
                    call.transition(Status.ERRORED, error=CallError("truncated", message, retryable=True))
                else:
                    call.transition(Status.ERRORED, error=CallError(exc.code, f"{label}: {exc}"))
                return
            if cut_off and self._explicit_ends:
                why = stream_error or (
                    f"the response stopped ({truncated_by})" if truncated_by else "the stream ended"
                )
                call.transition(
                    Status.ERRORED,
                    error=CallError("truncated", f"{label}: {why} before the call was closed", retryable=True),
                )
                return
            if stream_error is not None:
                call.transition(
                    Status.ERRORED,
                    error=CallError("stream_error", f"{label}: {stream_error}", retryable=True),
                )
                return
        call.partial = call.arguments
        if call.path is None:
            for key in ("path", "file_path", "filepath", "file"):
                value = call.arguments.get(key) if call.arguments else None
                if isinstance(value, str) and value:
                    call.path = value
                    break
        call.transition(Status.GENERATED)

    # ---------------------------------------------------------------- views
    def arguments_for_model(self, call: ToolCallState) -> str:
        """The argument text to send back to the model in the assistant message.

        Empty text becomes ``"{}"`` (providers reject ``""`` on the next request).
        """
        text = call.arguments_text
        return text if text.strip() else "{}"
