"""Merges are transactional: a rejected delta leaves the merger exactly as it was.

Each case snapshots every piece of merger state (calls field by field, the key
and id tables, pending live-view work, text, finish reasons, usage, errors)
before and after the rejected delta; only ``anomalies`` may grow, by one line.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from toolwire.streaming.delta import Finish, TextDelta, ToolCallDelta, ToolCallEnd, Usage
from toolwire.streaming.merger import StreamMerger


def snapshot(m: StreamMerger) -> Any:
    calls = [dataclasses.asdict(c) for c in m.calls]
    tables = {name: copy.deepcopy(getattr(m, name)) for name in m.__slots__ if name not in ("anomalies", "calls", "_clock")}
    tables["_by_key"] = {k: c.index for k, c in m._by_key.items()}
    tables["_by_id"] = {k: c.index for k, c in m._by_id.items()}
    return calls, tables


def started() -> StreamMerger:
    m = StreamMerger(explicit_ends=True, refresh_bytes=1)
    m.feed(
        [
            TextDelta("hi"),
            ToolCallDelta(key=0, id="a", name="f", arguments='{"x": '),
            ToolCallDelta(key=1, id="b", name="g", arguments="{}"),
            ToolCallEnd(1),
            Usage(1, 2),
            Finish("tool_use"),
        ]
    )
    return m


REJECTED = {
    "id is not a string": ToolCallDelta(key=0, id=5),  # type: ignore[arg-type]
    "arguments are not a string": ToolCallDelta(key=0, arguments=b"1}"),  # type: ignore[arg-type]
    "name is not a string": ToolCallDelta(key=2, id="new", name=["f"]),  # type: ignore[arg-type]
    "piece for an ended call by key": ToolCallDelta(key=1, arguments="x"),
    "piece for an ended call by id": ToolCallDelta(key=7, id="b", arguments="x"),
    "unhashable key": ToolCallDelta(key=[0], arguments="x"),
}


@pytest.mark.parametrize("why", sorted(REJECTED))
def test_rejected_delta_changes_nothing(why: str) -> None:
    m = started()
    before, anomalies = snapshot(m), len(m.anomalies)
    assert m.apply(REJECTED[why]) is None
    assert snapshot(m) == before
    assert len(m.anomalies) == anomalies + 1


def test_delta_after_finish_changes_nothing() -> None:
    m = started()
    m.finish()
    before = snapshot(m)
    assert m.apply(ToolCallDelta(key=9, id="z", name="h", arguments="{}")) is None
    assert snapshot(m) == before and "already finished" in m.anomalies[-1]


def test_accepted_delta_after_rejections_still_merges() -> None:
    m = started()
    for delta in REJECTED.values():
        m.apply(delta)
    m.apply(ToolCallDelta(key=0, arguments="1}"))
    m.apply(ToolCallEnd(0))
    assert m.calls[0].arguments == {"x": 1} and m.calls[1].arguments == {}


def test_closing_twice_is_recorded_and_changes_nothing() -> None:
    m = started()
    before = snapshot(m)
    assert m.apply(ToolCallEnd(1)) is None
    assert snapshot(m) == before and "closed twice" in m.anomalies[-1]
