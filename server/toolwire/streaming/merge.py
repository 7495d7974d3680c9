"""Whole-stream convenience: frames in, a finished :class:`StreamMerger` out."""

from __future__ import annotations

from collections.abc import Iterable

from toolwire.streaming.formats.registry import UnknownFormat, detect_format, make_normalizer
from toolwire.streaming.framing import Frame
from toolwire.streaming.merger import StreamMerger


def merge_frames(frames: Iterable[Frame], fmt: str | None = None) -> StreamMerger:
    """Merge a whole stream.

    Args:
        frames: Decoded frames in stream order.
        fmt: A format name, or None to detect it from the first telling payload.

    Returns:
        A finished merger: every call is ``generated`` or ``errored``.

    Raises:
        UnknownFormat: ``fmt`` is unknown, or no payload revealed the format.
    """
    normalizer = make_normalizer(fmt) if fmt else None
    merger = StreamMerger(explicit_ends=normalizer.explicit_ends if normalizer else False)
    undecided: list[Frame] = []
    saw_done = False
    for frame in frames:
        if frame.done:
            saw_done = True
            continue
        if normalizer is None:
            undecided.append(frame)
            found = detect_format(frame.payload, frame.event) if frame.error is None else None
            if found is None:
                continue
            normalizer = make_normalizer(found)
            merger = StreamMerger(explicit_ends=normalizer.explicit_ends)
            pending, undecided = undecided, []
            for early in pending:
                _feed(normalizer, merger, early)
            continue
        _feed(normalizer, merger, frame)
    if normalizer is None:
        raise UnknownFormat("no payload in the stream matched a known format")
    merger.feed(normalizer.close())
    merger.finish()
    return merger


def _feed(normalizer, merger: StreamMerger, frame: Frame) -> None:
    if frame.error is not None:
        merger.anomalies.append(f"skipped a payload: {frame.error}")
        return
    merger.feed(normalizer.feed(frame.payload, frame.event))
