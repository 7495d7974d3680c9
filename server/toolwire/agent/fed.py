"""Client-fed mode: the editor runs the model and feeds the raw stream chunks to us.

This is Continue's arrangement. ``toolwire/toolCalls/merge`` feeds chunks of one
response (a *stream*, named by the client) into a :class:`FedStream`; the same
normalizers and merger as a server-run turn build the tool calls, and the same
updates are pushed. ``toolwire/toolCalls/run`` then runs the completed calls
through the same validation, approval and scheduling (:func:`run_fed_calls`) and
answers exactly one result per call, in call order. Like a turn's model requests, each run
takes the tools the session's MCP servers list then (:meth:`Session.refresh_tools`), before
it plans its calls and again before it answers (so a ``toolwire/tools/list`` after a call
that changed a server's tools lists the new ones).
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any

import anyio

from toolwire.agent.call_ids import fed_call_id
from toolwire.agent.events import Approver, MessageChunk, Sink, call_changed
from toolwire.agent.scheduler import Scheduler
from toolwire.agent.tool_runs import model_result_text
from toolwire.agent.session import Session
from toolwire.streaming.delta import TextDelta
from toolwire.streaming.decoding import PayloadDecoder
from toolwire.streaming.fed_chunks import ChunkError, check_fields, decode_chunks
from toolwire.streaming.formats.registry import detect_format, make_normalizer
from toolwire.streaming.merger import StreamMerger
from toolwire.streaming.state import CancelReason, Status, ToolCallState


class FedStreamError(ValueError):
    """A chunk or a request that cannot be applied (bad chunk text, stream already ended)."""


@dataclass(slots=True)
class FedStream:
    """One client-fed response.

    Every request is all or nothing: the whole batch is decoded and checked
    before any of it is merged, so a refused request changes nothing and can
    be sent again, corrected.

    Attributes:
        stream_id: The client's name for the response.
        decoder: Picks the format (given or detected), holds payloads until it
            is known, and skips payloads the normalizer cannot read.
        merger: The merger of the response.
        ended: True after ``end``; further chunks are refused.
        run_lock: Serializes ``toolCalls/run`` requests of this stream, so a
            call is never asked about or run twice (created on first use).
    """

    stream_id: str
    initial_format: InitVar[str | None] = None
    decoder: PayloadDecoder = field(default_factory=PayloadDecoder)
    merger: StreamMerger = field(default_factory=StreamMerger)
    ended: bool = False
    run_lock: anyio.Lock | None = None

    def __post_init__(self, initial_format: str | None) -> None:
        if initial_format:
            self.decoder.adopt(initial_format)

    @property
    def fmt(self) -> str | None:
        """Canonical format name, or None until given or detected."""
        return self.decoder.format

    def merge(self, chunks: list[Any], sink: Sink | None = None, *, fmt: str | None = None,
              end: bool = False) -> list[ToolCallState]:
        """Apply one ``toolwire/toolCalls/merge`` request: chunks, then optionally the end.

        Args:
            chunks: Parsed payloads (objects), or JSON text of one payload each
                (a leading ``data:`` is stripped; ``[DONE]`` is skipped). A payload
                may be wrapped as ``{"event": NAME, "data": PAYLOAD}`` to carry an
                SSE event name (or an AWS ``:event-type``); ``PAYLOAD`` may be JSON text.
            sink: Receives text chunks as they are merged.
            fmt: The stream's format. Applied when the format is not known yet
                (chunks held so far are replayed); must agree with it otherwise.
            end: Complete the stream after the chunks (see :meth:`end`).

        Returns:
            The calls that changed, each once, in call order.

        Raises:
            FedStreamError: chunks after the end, a chunk that is not JSON or not an
                object, a field of the wrong type (of an envelope, or of a payload the
                format's normalizer reads: :mod:`toolwire.streaming.fed_chunks`), a
                format contradicting the stream's, or ``end`` while no chunk told
                the format. Nothing of the request is applied then.
            UnknownFormat: ``fmt`` is not a known format name (nothing applied).
        """
        if self.ended:
            if chunks:
                raise FedStreamError(f"stream {self.stream_id!r} already ended; no more chunks")
            return []
        try:
            decoded = decode_chunks(chunks)
        except ChunkError as exc:
            raise FedStreamError(str(exc)) from None
        payloads = [(payload, event) for _, payload, event in decoded]
        wanted = make_normalizer(fmt).format if fmt is not None else None  # UnknownFormat ("" too) before anything is applied
        if wanted is not None and self.fmt is not None and wanted != self.fmt:
            raise FedStreamError(
                f"stream {self.stream_id!r} is {self.fmt!r} (given or detected earlier), not {fmt!r}")
        known = self.fmt or wanted
        if known is None:  # the first chunk that tells the format decides it for the held ones too
            known = next((found for found in (detect_format(p, e) for p, e in [*self.decoder.held, *payloads])
                          if found), None)
            if end and known is None and (self.decoder.held or payloads):
                raise FedStreamError(
                    f"stream {self.stream_id!r}: no chunk matched a known format; pass format to end it")
        if known is not None:
            try:
                check_fields(known, decoded)
            except ChunkError as exc:
                raise FedStreamError(str(exc)) from None
        changed: dict[int, ToolCallState] = {}
        if wanted is not None and self.fmt is None:
            self._apply(self.decoder.adopt(wanted), sink, changed)
        fragment = self.decoder.fast_path()
        append = self.merger.append_arguments
        for payload, event in payloads:
            if fragment is not None and event is None:
                found = fragment(payload)  # a bare argument fragment goes straight to the merger
                if found is not None:
                    call = append(found[0], found[1])
                    if call is not None:
                        changed[call.index] = call
                    continue
            self._apply(self.decoder.feed(payload, event), sink, changed)
            fragment = self.decoder.fast_path()  # the format may have been detected just now
        self.merger.explicit_ends = self.decoder.explicit_ends
        if end:
            for call in self.end():
                changed[call.index] = call
        return [changed[i] for i in sorted(changed)]

    def feed(self, chunks: list[Any], sink: Sink | None = None) -> list[ToolCallState]:
        """Merge a batch of chunks, in order (:meth:`merge` without a format or the end)."""
        return self.merge(chunks, sink)

    def _apply(self, events: list[Any], sink: Sink | None, changed: dict[int, ToolCallState]) -> None:
        for ev in events:
            if type(ev) is TextDelta:
                if sink is not None and ev.text:
                    sink.emit(MessageChunk(ev.text, ev.channel))
                self.merger.apply(ev)
                continue
            call = self.merger.apply(ev)
            if call is not None:
                changed[call.index] = call

    def end(self) -> list[ToolCallState]:
        """Complete the stream under the merger's completion rules.

        Calls still without an id get a stable one (``<streamId>-<index>``), so
        every call can be named in ``toolwire/toolCalls/run``.

        Returns:
            The calls that changed, in call order.

        Raises:
            FedStreamError: chunks were held but none told the format.
        """
        if self.ended:
            return []
        if self.fmt is None and self.decoder.held:
            raise FedStreamError(
                f"stream {self.stream_id!r}: no chunk matched a known format; pass format to end it")
        self.ended = True
        changed = {call.index: call for call in self.merger.feed(self.decoder.close())}
        self.merger.anomalies.extend(self.decoder.anomalies)
        self.merger.explicit_ends = self.decoder.explicit_ends
        changed.update({call.index: call for call in self.merger.finish()})
        for call in self.merger.calls:
            if not call.id:
                call.id = fed_call_id(self.stream_id, call.index)
                call.rev += 1
                changed[call.index] = call
        return [changed[i] for i in sorted(changed)]


def _settle(calls: list[ToolCallState], push: Any) -> None:
    for call in calls:
        if not call.status.terminal:
            call.transition(Status.CANCELED, cancel_reason=CancelReason.TURN_CANCELLED)
            push(call)


async def run_fed_calls(session: Session, stream: FedStream, call_ids: list[str] | None,
                        sink: Sink, approver: Approver, running: list[Scheduler]) -> list[dict[str, Any]]:
    """Run a fed stream's completed calls; one result per call, in call order.

    "Call order" is the order of the calls in the stream, whatever the order of
    ``call_ids`` (the order the model needs its tool messages in); an id named
    twice gets one result. A call that already reached a terminal status (it
    ran in an earlier request, or the stream ended it ``errored``) is not run
    again: its recorded result is answered. Requests on one stream are
    serialized, so concurrent requests never ask about or run a call twice.

    Args:
        session: The session (tools, policy, settings).
        stream: An ended stream.
        call_ids: Only these calls (all client calls when None).
        sink: Receives the status updates.
        approver: Asks the user when the policy says ``ask``.
        running: The session's client-fed runs in progress (the host's record): the
            run's scheduler is listed there while it runs (per-call cancel, ``busy``).

    The session's tools are refreshed (:meth:`Session.refresh_tools`: the MCP servers' tools
    now, a ``tools/list_changed`` waited for at most 2 s) before the calls are planned, and
    again after they ran.

    Returns:
        ``[{"toolCallId", "name", "status", "content", "isError", "providerCallId"?}]``;
        ``content`` is the text to send back to the model as the tool message,
        under ``providerCallId`` when present (the provider's own id, which the
        session renamed to ``toolCallId`` because another call had it), else
        under ``toolCallId``.

    Raises:
        FedStreamError: the stream has not ended, or an id names no client call of it.
    """
    if not stream.ended:
        raise FedStreamError(f"stream {stream.stream_id!r} has not ended: send end: true first")
    calls = [c for c in stream.merger.calls if c.kind == "function"]
    if call_ids is not None:
        known = {c.id for c in calls}
        missing = [cid for cid in dict.fromkeys(call_ids) if cid not in known]
        if missing:
            raise FedStreamError(f"stream {stream.stream_id!r} has no client calls {missing}")
        wanted = set(call_ids)
        calls = [c for c in calls if c.id in wanted]

    def push(call: ToolCallState, *, force: bool = False) -> None:
        sink.emit(call_changed(call))

    if stream.run_lock is None:
        stream.run_lock = anyio.Lock()
    async with stream.run_lock:
        scheduler = Scheduler(session, push, approver)
        scheduler.announce = sink.emit
        running.append(scheduler)  # reachable by a per-call cancel
        try:
            with anyio.CancelScope() as scheduler.scope:  # closing the session cancels it
                await session.refresh_tools()  # the tools the MCP servers list now
                await scheduler.run_calls(calls)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                _settle(calls, push)
            raise
        finally:
            running.remove(scheduler)
        _settle(calls, push)  # after a session/close: every call still ends terminal
        await session.refresh_tools()  # a call changed a server's tools: the client's next listing has them
    limit = session.settings.result_limit
    return [_run_result(call, limit) for call in calls]


def _run_result(call: ToolCallState, limit: int) -> dict[str, Any]:
    """One ``toolCalls/run`` result; ``providerCallId`` when the session renamed the call."""
    out: dict[str, Any] = {
        "toolCallId": call.id,
        "name": call.name,
        "status": call.status.value,
        "content": model_result_text(call, limit),
        "isError": call.status is not Status.DONE,
    }
    if call.provider_id and call.provider_id != call.id:
        out["providerCallId"] = call.provider_id
    return out
