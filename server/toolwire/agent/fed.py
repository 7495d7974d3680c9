"""Client-fed mode: the editor runs the model and feeds the raw stream chunks to us.

This is Continue's arrangement. ``toolwire/toolCalls/merge`` feeds chunks of one
response (a *stream*, named by the client) into a :class:`FedStream`; the same
normalizers and merger as a server-run turn build the tool calls, and the same
updates are pushed. ``toolwire/toolCalls/run`` then runs the completed calls
through the same validation, approval and scheduling (:func:`run_fed_calls`) and
answers exactly one result per call, in call order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anyio

from toolwire.agent.events import Approver, MessageChunk, Sink, ToolCallUpdate
from toolwire.agent.scheduler import Scheduler, model_result_text
from toolwire.agent.session import Session
from toolwire.streaming.delta import TextDelta
from toolwire.streaming.formats.base import Normalizer
from toolwire.streaming.formats.registry import detect_format, make_normalizer
from toolwire.streaming.merger import StreamMerger
from toolwire.streaming.state import CancelReason, Status, ToolCallState


class FedStreamError(ValueError):
    """A chunk or a request that cannot be applied (bad chunk text, stream already ended)."""


@dataclass(slots=True)
class FedStream:
    """One client-fed response.

    Attributes:
        stream_id: The client's name for the response.
        fmt: Format name, or None until detected from the chunks.
        merger: The merger (replaced once, when the format is detected).
        ended: True after ``end``; further chunks are refused.
    """

    stream_id: str
    fmt: str | None = None
    normalizer: Normalizer | None = None
    merger: StreamMerger = field(default_factory=StreamMerger)
    held: list[tuple[Any, str | None]] = field(default_factory=list)
    ended: bool = False

    def __post_init__(self) -> None:
        if self.fmt:
            self.normalizer = make_normalizer(self.fmt)
            self.merger = StreamMerger(explicit_ends=self.normalizer.explicit_ends)

    def feed(self, chunks: list[Any], sink: Sink | None = None) -> list[ToolCallState]:
        """Merge a batch of chunks, in order.

        Args:
            chunks: Parsed payloads (objects), or JSON text of one payload each.
                A payload may be wrapped as ``{"event": NAME, "data": PAYLOAD}`` to
                carry an SSE event name (or an AWS ``:event-type``).
            sink: Receives text chunks as they are merged.

        Returns:
            The calls that changed, in call order.

        Raises:
            FedStreamError: the stream already ended, or a string chunk is not JSON
                (nothing of the batch after the bad chunk is applied).
        """
        if self.ended:
            raise FedStreamError(f"stream {self.stream_id!r} already ended")
        changed: dict[int, ToolCallState] = {}
        for position, chunk in enumerate(chunks):
            payload, event = _unwrap(chunk, position)
            if self.normalizer is None:
                self.held.append((payload, event))
                found = detect_format(payload, event)
                if found is None:
                    continue
                self.fmt = found
                self.normalizer = make_normalizer(found)
                self.merger = StreamMerger(explicit_ends=self.normalizer.explicit_ends)
                pending, self.held = self.held, []
            else:
                pending = [(payload, event)]
            for item, item_event in pending:
                for ev in self.normalizer.feed(item, item_event):
                    if type(ev) is TextDelta:
                        if sink is not None and ev.text:
                            sink.emit(MessageChunk(ev.text, ev.channel))
                        self.merger.apply(ev)
                        continue
                    call = self.merger.apply(ev)
                    if call is not None:
                        changed[call.index] = call
        return [changed[i] for i in sorted(changed)]

    def end(self) -> list[ToolCallState]:
        """Complete the stream under the merger's completion rules; returns the calls that changed."""
        if self.ended:
            return []
        self.ended = True
        if self.normalizer is not None:
            self.merger.feed(self.normalizer.close())
        elif self.held:
            raise FedStreamError(f"stream {self.stream_id!r}: no chunk matched a known format; pass format")
        return self.merger.finish()


def _unwrap(chunk: Any, position: int) -> tuple[Any, str | None]:
    if isinstance(chunk, str):
        text = chunk.strip()
        if text.startswith("data:"):
            text = text[5:].strip()
        try:
            chunk = json.loads(text)
        except ValueError as exc:
            raise FedStreamError(f"chunk {position} is not JSON: {exc}") from None
    if isinstance(chunk, dict) and set(chunk) == {"event", "data"} and isinstance(chunk["event"], str):
        return chunk["data"], chunk["event"]
    return chunk, None


async def run_fed_calls(session: Session, stream: FedStream, call_ids: list[str] | None,
                        sink: Sink, approver: Approver) -> list[dict[str, Any]]:
    """Run a fed stream's completed calls; one result per call, in call order.

    Args:
        session: The session (tools, policy, settings).
        stream: An ended stream.
        call_ids: Only these calls (all client calls when None).
        sink: Receives the status updates.
        approver: Asks the user when the policy says ``ask``.

    Returns:
        ``[{"toolCallId", "name", "status", "content", "isError"}]``; ``content`` is
        the text to send back to the model as the tool message.

    Raises:
        FedStreamError: the stream has not ended, or an id names no call of it.
    """
    if not stream.ended:
        raise FedStreamError(f"stream {stream.stream_id!r} has not ended: send end: true first")
    calls = [c for c in stream.merger.calls if c.kind == "function"]
    if call_ids is not None:
        by_id = {c.id: c for c in calls}
        missing = [cid for cid in call_ids if cid not in by_id]
        if missing:
            raise FedStreamError(f"stream {stream.stream_id!r} has no calls {missing}")
        calls = [by_id[cid] for cid in call_ids]

    def push(call: ToolCallState, *, force: bool = False) -> None:
        sink.emit(ToolCallUpdate(call.to_wire()))

    scheduler = Scheduler(session, push, approver)
    try:
        await scheduler.run_calls(calls)
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True):
            for call in calls:
                if not call.status.terminal:
                    call.transition(Status.CANCELED, cancel_reason=CancelReason.TURN_CANCELLED)
                    push(call)
        raise
    limit = session.settings.result_limit
    return [
        {
            "toolCallId": call.id,
            "name": call.name,
            "status": call.status.value,
            "content": model_result_text(call, limit),
            "isError": call.status is not Status.DONE,
        }
        for call in calls
    ]
