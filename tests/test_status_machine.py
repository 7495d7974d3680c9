"""The transition table of docs/architecture.md is enforced, and a violation is reported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolwire.streaming.state import TRANSITIONS, CancelReason, IllegalTransition, Status, ToolCallState


@pytest.mark.parametrize("start", list(Status))
@pytest.mark.parametrize("target", list(Status))
def test_every_pair_follows_the_table(start, target, monkeypatch, tmp_path):
    log = tmp_path / "illegal.log"
    monkeypatch.setenv("TOOLWIRE_ILLEGAL_TRANSITIONS_LOG", str(log))  # a private log, not the suite's
    call = ToolCallState(key=0, index=0, id="c", name="t", status=start)
    if target in TRANSITIONS[start]:
        call.transition(target)
        assert call.status is target and call.rev == 1
        assert not log.exists()
    else:
        with pytest.raises(IllegalTransition, match=f"{start.value} -> {target.value}"):
            call.transition(target)
        assert call.status is start and call.rev == 0  # nothing applied
        assert f"{start.value} -> {target.value}" in log.read_text()


def test_terminal_statuses_have_no_way_out():
    assert {s for s in Status if s.terminal} == {Status.DONE, Status.ERRORED, Status.CANCELED}
    assert all(not TRANSITIONS[s] for s in Status if s.terminal)


def test_errored_and_canceled_always_say_why():
    errored = ToolCallState(key=0, index=0)
    errored.transition(Status.ERRORED)
    assert errored.error is not None and errored.to_wire()["error"]["code"]
    canceled = ToolCallState(key=1, index=1)
    canceled.transition(Status.CANCELED, cancel_reason=CancelReason.REJECTED)
    assert canceled.to_wire()["cancelReason"] == "rejected"
