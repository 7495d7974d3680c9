"""The turn loop without a server: invariants of statuses, results and cancellation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from toolwire.agent.events import PermissionAnswer, RecordingSink, ToolCallUpdate, TurnUpdate
from toolwire.agent.permissions import PermissionPolicy
from toolwire.agent.session import Session
from toolwire.agent.turn import Turn
from toolwire.llm.replay import ReplayModel
from toolwire.settings import Settings
from toolwire.streaming.state import TRANSITIONS, Status
from toolwire.tools.base import Registry, Tool, ToolContext, ToolResult


class GateArgs(BaseModel):
    name: str


class GatedTool(Tool):
    """A read-only tool that finishes only when its gate is opened."""

    name = "gated"
    description = "waits for the test"
    Args = GateArgs
    read_only = True

    def __init__(self) -> None:
        self.gates: dict[str, anyio.Event] = {}
        self.started: dict[str, anyio.Event] = {}
        self.finished: list[str] = []
        self.finished_events: dict[str, anyio.Event] = {}

    def gate(self, key: str) -> anyio.Event:
        return self.gates.setdefault(key, anyio.Event())

    def finished_event(self, key: str) -> anyio.Event:
        return self.finished_events.setdefault(key, anyio.Event())

    def started_event(self, key: str) -> anyio.Event:
        return self.started.setdefault(key, anyio.Event())

    async def run(self, args: GateArgs, ctx: ToolContext) -> ToolResult:
        self.started_event(args.name).set()
        await self.gate(args.name).wait()
        self.finished.append(args.name)
        self.finished_event(args.name).set()
        return ToolResult(ok=True, content=f"finished {args.name}")


class AskingTool(GatedTool):
    name = "asking"
    read_only = False


class ScriptedApprover:
    def __init__(self, answers: list[str] | None = None, block: bool = False) -> None:
        self.answers = list(answers or [])
        self.asked: list[str] = []
        self.block = block
        self.waiting = anyio.Event()

    async def request_permission(self, call: dict[str, Any], subject: dict[str, Any]) -> PermissionAnswer:
        self.asked.append(call["toolCallId"])
        if self.block:
            self.waiting.set()
            await anyio.sleep_forever()
        option = self.answers.pop(0) if self.answers else "allow_once"
        return PermissionAnswer(option, "no thanks" if option == "reject" else None)  # type: ignore[arg-type]


def make_session(tmp_path: Path, lines: list[dict], tools: list[Tool], **settings: Any) -> Session:
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return Session(
        root=tmp_path,
        model=ReplayModel(script),
        registry=Registry(tools),
        policy=PermissionPolicy({}),
        settings=Settings(**settings),
    )


def call_updates(sink: RecordingSink) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for event in sink.events:
        if isinstance(event, ToolCallUpdate):
            out.setdefault(event.call["toolCallId"] or f"#{event.call['index']}", []).append(event.call)
    return out


def assert_invariants(session: Session, sink: RecordingSink) -> None:
    """Every call terminal, transitions legal and in rev order, one result per call in order."""
    for cid, snaps in call_updates(sink).items():
        revs = [s["rev"] for s in snaps]
        assert revs == sorted(revs), (cid, revs)
        statuses = [s["status"] for s in snaps]
        for a, b in zip(statuses, statuses[1:]):
            assert a == b or Status(b) in TRANSITIONS[Status(a)], (cid, statuses)
        assert Status(statuses[-1]).terminal, (cid, statuses)
    assert session.conversation.problems() == []
    assert isinstance(sink.events[-1], TurnUpdate) and sink.events[-1].state == "ended"


def tool_messages(session: Session) -> list[dict]:
    return [m for m in session.conversation.messages if m["role"] == "tool"]


async def test_results_go_back_in_call_order_when_tools_finish_out_of_order(tmp_path):
    tool = GatedTool()
    calls = [{"name": "gated", "arguments": {"name": n}, "id": f"c{n}"} for n in ("a", "b", "c")]
    session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "ok"}], [tool])
    sink = RecordingSink()
    turn = Turn(session, sink, ScriptedApprover())
    async with anyio.create_task_group() as tg:
        tg.start_soon(turn.run, "go")
        for name in ("a", "b", "c"):  # all three run in parallel
            with anyio.fail_after(5):
                await tool.started_event(name).wait()
        for name in ("c", "a", "b"):
            tool.gate(name).set()
    assert tool.finished == ["c", "a", "b"]
    assert [m["tool_call_id"] for m in tool_messages(session)] == ["ca", "cb", "cc"]
    assert turn.outcome.stop_reason == "end_turn"
    assert_invariants(session, sink)


async def test_rejection_cancels_only_that_call_and_reason_reaches_the_model(tmp_path):
    tool = AskingTool()
    for name in ("a", "b"):
        tool.gate(name).set()
    calls = [{"name": "asking", "arguments": {"name": n}, "id": f"c{n}"} for n in ("a", "b")]
    session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "ok"}], [tool])
    sink = RecordingSink()
    approver = ScriptedApprover(["reject", "allow_once"])
    outcome = await Turn(session, sink, approver).run("go")
    assert outcome.stop_reason == "end_turn"
    assert approver.asked == ["ca", "cb"]
    finals = {cid: snaps[-1] for cid, snaps in call_updates(sink).items()}
    assert finals["ca"]["status"] == "canceled" and finals["ca"]["cancelReason"] == "rejected"
    assert finals["cb"]["status"] == "done"
    results = tool_messages(session)
    assert [m["tool_call_id"] for m in results] == ["ca", "cb"]
    assert "rejected" in results[0]["content"] and "no thanks" in results[0]["content"]
    assert_invariants(session, sink)


async def test_cancel_while_a_permission_request_is_open(tmp_path):
    tool = AskingTool()
    session = make_session(tmp_path, [{"tool_calls": [{"name": "asking", "arguments": {"name": "a"}, "id": "c1"}]}], [tool])
    sink = RecordingSink()
    approver = ScriptedApprover(block=True)
    turn = Turn(session, sink, approver)
    async with anyio.create_task_group() as tg:
        tg.start_soon(turn.run, "go")
        with anyio.fail_after(5):
            await approver.waiting.wait()
        turn.cancel()
    assert turn.outcome.stop_reason == "cancelled"
    final = call_updates(sink)["c1"][-1]
    assert final["status"] == "canceled" and final["cancelReason"] == "turn_cancelled"
    assert tool.finished == []
    assert_invariants(session, sink)


async def test_cancel_while_tools_run_then_the_next_turn_is_valid(tmp_path):
    tool = GatedTool()
    calls = [{"name": "gated", "arguments": {"name": n}, "id": f"c{n}"} for n in ("a", "b")]
    session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "next turn"}], [tool])
    sink = RecordingSink()
    turn = Turn(session, sink, ScriptedApprover())
    async with anyio.create_task_group() as tg:
        tg.start_soon(turn.run, "go")
        with anyio.fail_after(5):
            await tool.started_event("a").wait()
            await tool.started_event("b").wait()
        tool.gate("a").set()
        with anyio.fail_after(5):
            await tool.finished_event("a").wait()
        turn.cancel()
    assert turn.outcome.stop_reason == "cancelled"
    finals = {cid: snaps[-1] for cid, snaps in call_updates(sink).items()}
    assert finals["ca"]["status"] == "done"
    assert finals["cb"]["status"] == "canceled" and finals["cb"]["cancelReason"] == "turn_cancelled"
    assert [m["tool_call_id"] for m in tool_messages(session)] == ["ca", "cb"]
    assert_invariants(session, sink)
    sink2 = RecordingSink()
    outcome = await Turn(session, sink2, ScriptedApprover()).run("again")
    assert outcome.stop_reason == "end_turn"
    assert session.conversation.problems() == []


async def test_cancel_one_call_and_the_turn_goes_on(tmp_path):
    tool = GatedTool()
    tool.gate("b").set()
    calls = [{"name": "gated", "arguments": {"name": n}, "id": f"c{n}"} for n in ("a", "b")]
    session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "ok"}], [tool])
    sink = RecordingSink()
    turn = Turn(session, sink, ScriptedApprover())
    async with anyio.create_task_group() as tg:
        tg.start_soon(turn.run, "go")
        with anyio.fail_after(5):
            await tool.started_event("a").wait()
        assert turn.cancel_call("ca") is True
    assert turn.outcome.stop_reason == "end_turn"
    finals = {cid: snaps[-1] for cid, snaps in call_updates(sink).items()}
    assert finals["ca"]["status"] == "canceled" and finals["ca"]["cancelReason"] == "call_cancelled"
    assert finals["cb"]["status"] == "done"
    assert "Canceled by the user" in tool_messages(session)[0]["content"]
    assert_invariants(session, sink)


async def test_iteration_cap_ends_the_turn(tmp_path):
    tool = GatedTool()
    tool.gate("x").set()
    lines = [{"tool_calls": [{"name": "gated", "arguments": {"name": "x"}}]}] * 5
    session = make_session(tmp_path, lines, [tool], max_model_requests=3)
    sink = RecordingSink()
    outcome = await Turn(session, sink, ScriptedApprover()).run("loop")
    assert outcome.stop_reason == "max_turn_requests"
    assert len(session.model.requests) == 3
    assert_invariants(session, sink)


async def test_dropped_stream_errors_open_calls_and_ends_with_error(tmp_path):
    tool = GatedTool()
    line = {"tool_calls": [{"name": "gated", "arguments": {"name": "x" * 50}, "id": "c1"}], "chunk_size": 4, "cut_after": 6}
    session = make_session(tmp_path, [line, line, line, line, line], [tool])
    sink = RecordingSink()
    outcome = await Turn(session, sink, ScriptedApprover()).run("go")
    assert outcome.stop_reason == "error" and "dropped" in (outcome.message or "")
    snaps = call_updates(sink)
    assert all(s[-1]["status"] == "errored" for s in snaps.values())
    assert tool.finished == []
    assert_invariants(session, sink)
