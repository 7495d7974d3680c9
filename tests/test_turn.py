"""The turn loop without a server: invariants of statuses, results and cancellation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from toolwire.agent.events import CallSnapshot, PermissionAnswer, RecordingSink, ToolCallChanged, TurnUpdate
from toolwire.lsp.call_wire import update_form
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

    async def request_permission(self, call: CallSnapshot, subject: dict[str, Any]) -> PermissionAnswer:
        self.asked.append(call.id)
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
        if isinstance(event, ToolCallChanged):
            call = update_form(event)  # the update as the LSP front-end sends it
            out.setdefault(call["toolCallId"] or f"#{call['index']}", []).append(call)
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


class FailArgs(BaseModel):
    path: str


class FailingTool(Tool):
    name = "flaky"
    description = "always fails"
    Args = FailArgs
    read_only = True

    async def run(self, args: FailArgs, ctx: ToolContext) -> ToolResult:
        from toolwire.tools.base import ToolError

        raise ToolError("not_found", f"{args.path} does not exist")


async def test_same_tool_failing_three_times_with_similar_arguments_stops_the_loop(tmp_path):
    lines = [{"tool_calls": [{"name": "flaky", "arguments": {"path": f"src/mod{n}.py"}}]} for n in range(6)]
    session = make_session(tmp_path, lines, [FailingTool()])
    sink = RecordingSink()
    outcome = await Turn(session, sink, ScriptedApprover()).run("go")
    assert outcome.stop_reason == "repeated_tool_failure"
    assert "flaky failed 3 times" in (outcome.message or "")
    assert len(session.model.requests) == 3
    assert_invariants(session, sink)


async def test_different_failures_do_not_stop_the_loop(tmp_path):
    lines = [{"tool_calls": [{"name": "flaky", "arguments": {"path": p}}]}
             for p in ("a.py", "completely/different/location.txt", "b.py")] + [{"text": "ok"}]
    session = make_session(tmp_path, lines, [FailingTool()])
    sink = RecordingSink()
    outcome = await Turn(session, sink, ScriptedApprover()).run("go")
    assert outcome.stop_reason == "end_turn"
    assert_invariants(session, sink)


async def test_old_results_are_dropped_to_fit_the_context_window_never_the_pairs(tmp_path):
    tool = GatedTool()
    big = "z" * 3000
    tool.gate(big).set()
    lines = [{"tool_calls": [{"name": "gated", "arguments": {"name": big}}]}] * 4 + [{"text": "ok"}]
    session = make_session(tmp_path, lines, [tool], context_window=2500, result_limit=5000)
    sink = RecordingSink()
    outcome = await Turn(session, sink, ScriptedApprover()).run("go")
    assert_invariants(session, sink)
    assert outcome.stop_reason == "end_turn"
    last_request = session.model.requests[-1].messages
    results = [m for m in last_request if m["role"] == "tool"]
    assert len(results) == 4  # every call still has its result
    assert results[0]["content"].startswith("[older tool result dropped")
    assert not results[-1]["content"].startswith("[older")
    assert session.conversation.problems() == []


async def test_tool_call_log_is_opt_in_jsonl(tmp_path):
    tool = GatedTool()
    tool.gate("x").set()
    log = tmp_path / "calls.jsonl"
    session = make_session(tmp_path, [{"tool_calls": [{"name": "gated", "arguments": {"name": "x"}, "id": "c1"}]}],
                           [tool], tool_call_log=str(log))
    sink = RecordingSink()
    await Turn(session, sink, ScriptedApprover()).run("go")
    assert_invariants(session, sink)
    [entry] = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["callId"] == "c1" and entry["tool"] == "gated" and entry["outcome"] == "done"
    assert len(entry["argumentsSha256"]) == 64 and entry["durationMs"] >= 0


class CancellingSink(RecordingSink):
    """Cancels the turn when the k-th event is emitted."""

    def __init__(self, k: int) -> None:
        super().__init__()
        self.k = k
        self.turn: Turn | None = None

    def emit(self, event) -> None:
        super().emit(event)
        if len(self.events) == self.k and self.turn is not None:
            self.turn.cancel()


async def test_cancel_at_100_random_points_keeps_every_invariant(tmp_path):
    import random

    script = [
        {"text": "Working.", "tool_calls": [
            {"name": "gated", "arguments": {"name": "r1"}}, {"name": "asking", "arguments": {"name": "w1"}},
            {"name": "gated", "arguments": {"name": "r2"}}], "chunk_size": 3},
        {"tool_calls": [{"name": "asking", "arguments": {"name": "w2"}}, {"name": "nope", "arguments": {}}], "chunk_size": 5},
        {"tool_calls": [{"name": "gated", "arguments": '{"name": '}], "chunk_size": 2},
        {"text": "Finished."},
    ]
    reader, writer = GatedTool(), AskingTool()
    for name in ("r1", "r2"):
        reader.gate(name).set()
    for name in ("w1", "w2"):
        writer.gate(name).set()
    probe = make_session(tmp_path, script, [reader, writer])
    probe_sink = RecordingSink()
    await Turn(probe, probe_sink, ScriptedApprover()).run("go")
    total = len(probe_sink.events)
    assert total > 30
    rng = random.Random(20261129)
    for _ in range(100):
        k = rng.randint(1, total)
        session = make_session(tmp_path, script, [reader, writer])
        sink = CancellingSink(k)
        turn = Turn(session, sink, ScriptedApprover(rng.choice([[], ["reject"], ["allow_always"]])))
        sink.turn = turn
        outcome = await turn.run("go")
        assert outcome.stop_reason in ("cancelled", "end_turn"), (k, outcome)
        assert_invariants(session, sink)
        assert all(call.status.terminal for call in turn.calls), k
        # the next request is valid: a new turn runs on the same history
        follow = await Turn(session, RecordingSink(), ScriptedApprover()).run("again")
        assert follow.stop_reason in ("end_turn", "repeated_tool_failure", "max_turn_requests")
        assert session.conversation.problems() == []
        request = session.model.requests[-1].messages
        ids = [c["id"] for m in request if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        results = [m["tool_call_id"] for m in request if m["role"] == "tool"]
        assert ids == results, k


async def test_assistant_text_is_kept_in_the_history_next_to_its_calls(tmp_path):
    tool = GatedTool()
    tool.gate("x").set()
    lines = [{"text": "Let me check.", "tool_calls": [{"name": "gated", "arguments": {"name": "x"}, "id": "c1"}], "chunk_size": 3},
             {"text": "All good."}]
    session = make_session(tmp_path, lines, [tool])
    sink = RecordingSink()
    await Turn(session, sink, ScriptedApprover()).run("go")
    assert_invariants(session, sink)
    assistant = [m for m in session.conversation.messages if m["role"] == "assistant"]
    assert assistant[0]["content"] == "Let me check." and assistant[0]["tool_calls"][0]["id"] == "c1"
    assert assistant[1]["content"] == "All good."


async def test_a_broken_event_stream_ends_the_turn_with_an_error(tmp_path):
    body = (Path(__file__).parent / "data" / "corpus" / "bedrock__nova-micro-converse-stream-text-then-tooluse.eventstream").read_bytes()
    broken = tmp_path / "broken.eventstream"
    broken.write_bytes(body[:-7] + b"\x00" * 7)  # corrupt the last message's CRC
    session = make_session(tmp_path, [{"stream": str(broken)}], [GatedTool()])
    sink = RecordingSink()
    outcome = await Turn(session, sink, ScriptedApprover()).run("go")
    assert outcome.stop_reason == "error" and "broken" in (outcome.message or "")
    assert_invariants(session, sink)


class HoldingModel:
    """Anthropic-format model: streams call A, waits until A is running, then streams call B."""

    format = "anthropic"
    model_id = "test:holding"

    def __init__(self, tool: GatedTool) -> None:
        self.tool = tool
        self.requests: list = []

    async def stream(self, request):
        from toolwire.streaming.framing import Frame

        self.requests.append(request)
        if len(self.requests) > 1:
            for event in ({"type": "message_start", "message": {"id": "m2", "usage": {"input_tokens": 1}}},
                          {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                          {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "done"}},
                          {"type": "content_block_stop", "index": 0},
                          {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
                          {"type": "message_stop"}):
                yield Frame(event["type"], event)
            return

        def block(index: int, call_id: str, name: str) -> list[dict]:
            return [
                {"type": "content_block_start", "index": index,
                 "content_block": {"type": "tool_use", "id": call_id, "name": "gated", "input": {}}},
                {"type": "content_block_delta", "index": index,
                 "delta": {"type": "input_json_delta", "partial_json": '{"name": '}},
                {"type": "content_block_delta", "index": index,
                 "delta": {"type": "input_json_delta", "partial_json": f'"{name}"}}'}},
                {"type": "content_block_stop", "index": index},
            ]

        yield Frame("message_start", {"type": "message_start", "message": {"id": "m1", "usage": {"input_tokens": 3}}})
        for event in block(0, "toolu_a", "a"):
            yield Frame(event["type"], event)
        with anyio.fail_after(5):  # A must start while the response is still streaming
            await self.tool.started_event("a").wait()
        for event in block(1, "toolu_b", "b"):
            yield Frame(event["type"], event)
        for event in ({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
                      {"type": "message_stop"}):
            yield Frame(event["type"], event)


async def test_a_complete_call_runs_while_the_model_is_still_streaming(tmp_path):
    tool = GatedTool()
    tool.gate("a").set()
    tool.gate("b").set()
    session = Session(root=tmp_path, model=HoldingModel(tool), registry=Registry([tool]),
                      policy=PermissionPolicy({}), settings=Settings())
    sink = RecordingSink()
    turn = Turn(session, sink, ScriptedApprover())
    outcome = await turn.run("go")
    assert outcome.stop_reason == "end_turn"
    assert tool.finished == ["a", "b"]
    assert [m["tool_call_id"] for m in tool_messages(session)] == ["toolu_a", "toolu_b"]
    assert (outcome.input_tokens, outcome.output_tokens) == (3 + 1, 9 + 1)  # summed over the turn's requests
    assert_invariants(session, sink)


async def test_cancel_a_call_while_its_arguments_still_stream(tmp_path):
    tool = GatedTool()
    tool.gate("b").set()
    line = {"tool_calls": [{"name": "gated", "arguments": {"name": "a" * 200}, "id": "ca"},
                           {"name": "gated", "arguments": {"name": "b"}, "id": "cb"}], "chunk_size": 4}
    session = make_session(tmp_path, [line, {"text": "ok"}], [tool])

    class CancelOnFirstSight(RecordingSink):
        def emit(self, event) -> None:
            super().emit(event)
            if isinstance(event, ToolCallChanged) and event.call.id == "ca" and event.call.status.value == "generating":
                turn.cancel_call("ca")

    sink = CancelOnFirstSight()
    turn = Turn(session, sink, ScriptedApprover())
    outcome = await turn.run("go")
    assert outcome.stop_reason == "end_turn"
    finals = {cid: snaps[-1] for cid, snaps in call_updates(sink).items()}
    assert finals["ca"]["status"] == "canceled" and finals["ca"]["cancelReason"] == "call_cancelled"
    assert finals["cb"]["status"] == "done" and tool.finished == ["b"]
    assert [m["tool_call_id"] for m in tool_messages(session)] == ["ca", "cb"]
    assert_invariants(session, sink)


async def test_an_error_event_in_the_stream_ends_the_turn_with_error(tmp_path):
    stream = Path(__file__).parent / "data" / "corpus" / "groq__gpt-oss-tool-use-failed-error-event.sse"
    session = make_session(tmp_path, [{"stream": str(stream)}], [GatedTool()])
    sink = RecordingSink()
    outcome = await Turn(session, sink, ScriptedApprover()).run("go")
    assert outcome.stop_reason == "error"
    assert "tool_use_failed" in (outcome.message or "") or "validation failed" in (outcome.message or "")
    assert_invariants(session, sink)


async def test_two_calls_with_the_same_id_stay_two_calls_with_their_own_results(tmp_path):
    tool = GatedTool()
    for name in ("a", "b"):
        tool.gate(name).set()
    calls = [{"name": "gated", "arguments": {"name": n}, "id": "dup"} for n in ("a", "b")]
    session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "ok"}], [tool])
    sink = RecordingSink()
    await Turn(session, sink, ScriptedApprover()).run("go")
    assert sorted(tool.finished) == ["a", "b"]
    assistant = next(m for m in session.conversation.messages if m.get("tool_calls"))
    ids = [c["id"] for c in assistant["tool_calls"]]
    assert ids == ["dup", "dup_2"]
    assert [m["tool_call_id"] for m in tool_messages(session)] == ids
    assert_invariants(session, sink)


async def test_a_malformed_event_after_a_valid_call_does_not_end_the_turn(tmp_path):
    events = [
        {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "tool_use", "id": "toolu_ok", "name": "gated", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"name": "x"}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": ["content_block_start"], "index": 1, "content_block": {"type": {"bad": 1}}},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]
    stream = tmp_path / "bad.sse"
    stream.write_text("".join(f"event: x\ndata: {json.dumps(e)}\n\n" for e in events))
    tool = GatedTool()
    tool.gate("x").set()
    session = make_session(tmp_path, [{"stream": str(stream)}, {"text": "fine"}], [tool])
    sink = RecordingSink()
    outcome = await Turn(session, sink, ScriptedApprover()).run("go")
    assert outcome.stop_reason == "end_turn" and tool.finished == ["x"]
    assert call_updates(sink)["toolu_ok"][-1]["status"] == "done"
    assert_invariants(session, sink)


async def test_a_call_cancelled_while_it_waits_for_an_earlier_call_is_never_asked_about(tmp_path):
    tool = AskingTool()
    tool.gate("b").set()
    calls = [{"name": "asking", "arguments": {"name": n}, "id": f"c{n}"} for n in ("a", "b")]

    class SamePath(AskingTool):
        def paths(self, args):  # both calls touch one file, so b waits for a
            return ["same.txt"]

    same = SamePath()
    same.gates, same.started = tool.gates, tool.started
    session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "ok"}], [same])
    approver = ScriptedApprover()
    sink = RecordingSink()
    turn = Turn(session, sink, approver)
    async with anyio.create_task_group() as tg:
        tg.start_soon(turn.run, "go")
        with anyio.fail_after(5):
            await same.started_event("a").wait()  # a runs; b waits for it
        assert turn.cancel_call("cb") is True
        same.gate("a").set()
    assert approver.asked == ["ca"]  # b was never put to the user
    assert_invariants(session, sink)
    assert [m["tool_call_id"] for m in tool_messages(session)] == ["ca", "cb"]
    assert "Canceled by the user" in tool_messages(session)[1]["content"]


class WritingTool(Tool):
    """A writing tool that records that it ran."""

    name = "writing"
    description = "writes nothing, but is not read-only"
    Args = GateArgs
    read_only = False

    def __init__(self) -> None:
        self.ran: list[str] = []

    async def run(self, args: GateArgs, ctx: ToolContext) -> ToolResult:
        self.ran.append(args.name)
        return ToolResult(ok=True, content="wrote")


async def test_a_failure_around_a_tool_ends_that_call_only(tmp_path, monkeypatch):
    """A bug in a checkpoint (around the tool, not in it) ends that call errored
    ``internal_error``; its sibling and the turn go on, every invariant holds."""
    from toolwire.agent import checkpoints

    async def broken_before(self, tool, args, **kw):
        raise RuntimeError("checkpoint bug")

    monkeypatch.setattr(checkpoints.Checkpointer, "before", broken_before)
    gated, writing = GatedTool(), WritingTool()
    calls = [{"name": "writing", "arguments": {"name": "w"}, "id": "w1"},
             {"name": "gated", "arguments": {"name": "g"}, "id": "g1"}]
    session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "ok"}], [gated, writing])
    sink = RecordingSink()
    turn = Turn(session, sink, ScriptedApprover())
    gated.gate("g").set()
    with anyio.fail_after(10):
        await turn.run("go")
    final = {cid: snaps[-1] for cid, snaps in call_updates(sink).items()}
    assert final["g1"]["status"] == "done"
    assert final["w1"]["status"] == "errored" and final["w1"]["error"]["code"] == "internal_error"
    assert "checkpoint bug" in final["w1"]["error"]["message"] and writing.ran == []
    assert turn.outcome.stop_reason == "end_turn"
    assert_invariants(session, sink)


class NamingTool(Tool):
    """A read-only tool that names a path and succeeds at once."""

    name = "naming"
    description = "names a path"
    Args = GateArgs
    read_only = True

    def paths(self, args: BaseModel) -> list[str]:
        return [args.name]  # type: ignore[attr-defined]

    async def run(self, args: GateArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult(ok=True, content=f"named {args.name}")


async def test_a_failure_reading_nested_rules_after_a_tool_ran_keeps_its_result(tmp_path, monkeypatch):
    """The tool has run (it may have changed the tree): its result stands even when reading
    the folder's AGENTS.md afterwards fails; the call ends done, not errored."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "AGENTS.md").write_text("sub rules\n")
    calls = [{"name": "naming", "arguments": {"name": "sub/x.txt"}, "id": "c1"}]
    session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "ok"}], [NamingTool()])

    def broken(*_args: Any) -> None:
        raise OSError(36, "File name too long")

    monkeypatch.setattr(type(session.rules), "nested_for", broken)
    sink = RecordingSink()
    with anyio.fail_after(30):
        await Turn(session, sink, ScriptedApprover()).run("go")
    assert call_updates(sink)["c1"][-1]["status"] == "done"
    assert [m["content"] for m in tool_messages(session)] == ["named sub/x.txt"]
    assert_invariants(session, sink)


class FakeClock:
    """A `time` stand-in for the turn and the scheduler: monotonic() moves only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


async def test_the_turns_duration_leaves_out_the_time_an_approval_waited(tmp_path, monkeypatch):
    import toolwire.agent.scheduler as scheduler_module
    import toolwire.agent.turn as turn_module
    from toolwire.agent.events import UsageUpdate

    clock = FakeClock()
    monkeypatch.setattr(turn_module, "time", clock)
    monkeypatch.setattr(scheduler_module, "time", clock)

    class SlowTool(AskingTool):
        async def run(self, args: GateArgs, ctx: ToolContext) -> ToolResult:
            clock.now += 2.0  # the tool's own work counts
            return ToolResult(ok=True, content="ran")

    class SlowApprover(ScriptedApprover):
        async def request_permission(self, call: CallSnapshot, subject: dict[str, Any]) -> PermissionAnswer:
            clock.now += 100.0  # the user thinks for 100 s
            return await super().request_permission(call, subject)

    calls = [{"name": "asking", "arguments": {"name": "a"}, "id": "c1"}]
    session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "ok"}], [SlowTool()])
    sink = RecordingSink()
    outcome = await Turn(session, sink, SlowApprover()).run("go")
    assert outcome.stop_reason == "end_turn"
    usage = [e for e in sink.events if isinstance(e, UsageUpdate)]
    assert usage[-1].duration_ms == 2000, usage[-1]


def test_the_wait_clock_counts_requests_open_together_once(monkeypatch):
    import toolwire.agent.scheduler as scheduler_module

    clock = FakeClock()
    monkeypatch.setattr(scheduler_module, "time", clock)
    waiting = scheduler_module.WaitClock()
    with waiting:
        clock.now += 5
        with waiting:
            clock.now += 5
        clock.now += 5
    clock.now += 50  # nothing open
    with waiting:
        clock.now += 1
        assert waiting.seconds() == 16
    assert waiting.seconds() == 16
