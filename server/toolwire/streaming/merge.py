"""Whole-stream convenience: frames, payloads or raw bytes in, a finished :class:`StreamMerger` out."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolwire.streaming.decoding import BrokenStream, PayloadDecoder
from toolwire.streaming.formats.registry import UnknownFormat
from toolwire.streaming.framing import Frame, frames_from_bytes
from toolwire.streaming.merger import StreamMerger

__all__ = ["merge_frames", "merge_payloads", "merge_bytes", "UnknownFormat"]


def merge_frames(frames: Iterable[Frame], fmt: str | None = None) -> StreamMerger:
    """Merge a whole stream.

    Frames seen before the format is known are kept and replayed once it is.
    Undecodable payloads are skipped and recorded in ``anomalies``; a ``fatal``
    frame (broken binary framing) ends the stream as an error, so open calls
    end ``errored``.

    Args:
        frames: Decoded frames in stream order.
        fmt: A format name, or None to detect it from the first telling payload.

    Returns:
        A finished merger: every call is ``generated`` or ``errored``. Its
        ``format`` is not recorded; use :func:`detect_format` for that.

    Raises:
        UnknownFormat: ``fmt`` is unknown, or no payload revealed the format.
    """
    decoder = PayloadDecoder(fmt)
    merger = StreamMerger()
    broken: str | None = None
    for frame in frames:
        try:
            merger.feed(decoder.feed_frame(frame))
        except BrokenStream as exc:
            broken = str(exc)
            break
    if decoder.format is None:
        if broken is not None:
            raise UnknownFormat(f"the stream could not be read: {broken}")
        raise UnknownFormat("no payload in the stream matched a known format")
    merger.feed(decoder.close())
    merger.anomalies.extend(decoder.anomalies)
    merger.explicit_ends = decoder.explicit_ends
    merger.finish(stream_error=f"the stream broke ({broken})" if broken else None)
    return merger


def merge_payloads(payloads: Iterable[Any], fmt: str | None = None) -> StreamMerger:
    """Merge already-parsed payloads (dicts), e.g. chunks a client fed us.

    Args:
        payloads: Parsed payloads in stream order; ``(event, payload)`` pairs
            are accepted too, for formats whose event name matters (Bedrock).
        fmt: A format name, or None to detect it.

    Raises:
        UnknownFormat: see :func:`merge_frames`.
    """

    def frames() -> Iterable[Frame]:
        for item in payloads:
            if isinstance(item, tuple) and len(item) == 2:
                yield Frame(item[0], item[1])
            else:
                yield Frame(None, item)

    return merge_frames(frames(), fmt)


def merge_bytes(body: bytes, fmt: str | None = None) -> StreamMerger:
    """Merge a whole recorded body (SSE, JSONL, JSON array or AWS event stream, detected).

    Raises:
        UnknownFormat: see :func:`merge_frames`.
    """
    return merge_frames(frames_from_bytes(body), fmt)
