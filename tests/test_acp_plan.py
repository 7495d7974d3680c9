"""Plans over ACP (protocol.md, "update_plan"): a replayed turn's update_plan calls are ``think``
tool calls, each done one followed by a ``plan`` update carrying the whole list; a refused one
sends none; ``session/load`` tells them again as they were sent. Real ``toolwire acp`` over
stdio, the SDK's client side, every message validated."""

from __future__ import annotations

from pathlib import Path

from test_acp import RecordingClient, open_session, script, start, text

STEPS = [{"content": "Read a.txt", "status": "completed", "priority": "high"},
         {"content": "Say what it greets", "status": "in_progress", "priority": "medium"}]
DONE = [{**STEPS[0]}, {**STEPS[1], "status": "completed"}]


async def test_a_turns_plan_is_sent_as_plan_updates(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [
        {"tool_calls": [{"id": "p1", "name": "update_plan", "arguments": {"entries": STEPS}}]},
        {"tool_calls": [{"id": "p2", "name": "update_plan", "arguments": {"entries": [{"content": "x"}]}}]},
        {"tool_calls": [{"id": "p3", "name": "update_plan", "arguments": {"entries": DONE}}]},
        {"text": "It greets the world."},
    ])
    client = RecordingClient()
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo)
        response = await conn.prompt(session_id=sid, prompt=text("what does a.txt greet?"))
        live = len(client.updates)
        await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
    assert response.stop_reason == "end_turn"
    replayed = [u.model_dump() for u in client.updates[live:] if u.session_update == "plan"]
    updates = client.updates[:live]  # what the turn sent
    assert client.permissions == []  # read-only: never asked
    plans = [u for u in updates if u.session_update == "plan"]
    assert [[e.model_dump(exclude_none=True) for e in u.entries] for u in plans] == [STEPS, DONE]
    for call_id, plan in (("p1", plans[0]), ("p3", plans[1])):  # right after the call is completed
        at = updates.index(plan)
        previous = [u for u in updates[:at] if u.session_update in ("tool_call", "tool_call_update")][-1]
        assert (previous.tool_call_id, previous.status) == (call_id, "completed")
    assert client.final("p1")["kind"] == "think" and client.final("p1")["title"] == "update_plan"
    assert client.final("p2")["status"] == "failed"
    assert client.final("p3")["raw_output"]["data"] == {"entries": DONE}
    assert replayed == [u.model_dump() for u in plans]  # session/load tells them again as sent
    assert not client.invalid, client.invalid
