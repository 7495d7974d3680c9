"""update_plan (protocol.md, "update_plan"): read-only, exact arguments, bounded with clear errors,
a short result for the model; a done call's plan is the turn's latest (a PlanUpdate event after
the call is done), a refused one changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import write_script
from toolwire.agent.events import PlanEntry, PlanUpdate, RecordingSink, ToolCallChanged
from toolwire.agent.opening import open_session
from toolwire.agent.session_store import decode_event, encode_event
from toolwire.agent.turn import Turn
from toolwire.settings import Settings
from toolwire.tools import default_registry
from toolwire.tools.base import ArgumentsInvalid, ToolContext, validate_arguments
from toolwire.tools.plan import MAX_CONTENT, MAX_ENTRIES, UpdatePlan
from toolwire.workspace.documents import NoOpenDocuments

TOOL = UpdatePlan()
STEPS = [{"content": "Read the parser", "status": "completed", "priority": "high"},
         {"content": "Fix the off-by-one", "status": "in_progress", "priority": "high"},
         {"content": "Add a test", "status": "pending", "priority": "medium"}]


def refused(arguments: dict) -> str:
    with pytest.raises(ArgumentsInvalid) as caught:
        validate_arguments(TOOL, arguments)
    return str(caught.value)


def test_the_arguments_are_exactly_entries_of_content_status_and_priority():
    schema = UpdatePlan.definition()["function"]["parameters"]
    assert list(schema["properties"]) == ["entries"] and schema["required"] == ["entries"]
    entry = schema["$defs"]["EntryArgs"]
    assert list(entry["properties"]) == ["content", "status", "priority"]
    assert entry["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]
    assert entry["properties"]["priority"]["enum"] == ["high", "medium", "low"]
    assert schema["properties"]["entries"]["maxItems"] == MAX_ENTRIES
    assert entry["properties"]["content"]["maxLength"] == MAX_CONTENT
    assert TOOL.read_only and default_registry().names()[-1] == "update_plan"  # the last built-in


def test_bad_plans_are_refused_naming_the_field():
    assert "entries: List should have at most 30 items" in refused({"entries": [STEPS[0]] * (MAX_ENTRIES + 1)})
    assert "entries: List should have at least 1 item" in refused({"entries": []})
    assert "entries.0.content: String should have at most 300 characters" in refused(
        {"entries": [{**STEPS[0], "content": "x" * (MAX_CONTENT + 1)}]})
    assert "entries.0.status: Input should be 'pending', 'in_progress' or 'completed'" in refused(
        {"entries": [{**STEPS[0], "status": "done"}]})
    assert "entries.0.note: Extra inputs are not permitted" in refused({"entries": [{**STEPS[0], "note": "n"}]})
    assert "entries.0.priority: Field required" in refused({"entries": [{"content": "a", "status": "pending"}]})


@pytest.mark.asyncio
async def test_the_result_is_short_for_the_model_and_whole_for_the_client(tmp_path):
    result = await TOOL.run(validate_arguments(TOOL, {"entries": STEPS}), ToolContext(root=tmp_path))
    assert result.ok and result.content == "Plan updated: 3 steps (1 completed, 1 in progress, 1 pending)."
    assert result.data == {"entries": STEPS}
    two = [{**STEPS[1], "content": "Other"}, STEPS[1]]
    result = await TOOL.run(validate_arguments(TOOL, {"entries": two}), ToolContext(root=tmp_path))
    assert result.content == "Plan updated: 2 steps (2 in progress). Keep one step in_progress."


@pytest.mark.asyncio
async def test_the_turn_keeps_its_latest_plan_announced_after_each_done_call(tmp_path: Path):
    later = [{**STEPS[1], "status": "completed"}, {**STEPS[2], "status": "in_progress"}]
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "update_plan", "arguments": {"entries": STEPS}, "id": "p1"}]},
        {"tool_calls": [{"name": "update_plan", "arguments": {"entries": []}, "id": "p2"}]},  # refused: no event
        {"tool_calls": [{"name": "update_plan", "arguments": {"entries": later}, "id": "p3"}]},
        {"text": "done"}])
    root = tmp_path / "w"
    root.mkdir()
    session = open_session(root, f"replay:{script}", Settings(), NoOpenDocuments())
    sink = RecordingSink()
    turn = Turn(session, sink, None)
    outcome = await turn.run("fix it")
    assert outcome.stop_reason == "end_turn"
    plans = [e for e in sink.events if isinstance(e, PlanUpdate)]
    assert plans == [PlanUpdate(tuple(PlanEntry(**e) for e in STEPS)),
                     PlanUpdate(tuple(PlanEntry(**e) for e in later))]
    assert turn.plan == plans[-1]
    first = sink.events.index(plans[0])
    before = [e for e in sink.events[:first] if isinstance(e, ToolCallChanged)]
    assert before[-1].call.status.value == "done" and before[-1].call.name == "update_plan"
    assert [c.status.value for c in turn.calls] == ["done", "errored", "done"]  # read-only: never asked
    assert decode_event(json.loads(json.dumps(encode_event(plans[0])))) == plans[0]  # saved with the session
