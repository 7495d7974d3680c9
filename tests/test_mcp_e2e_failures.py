"""MCP calls that do not end well, in a replayed turn through the real server over stdio:
cancelling a long-running call (the server receives ``notifications/cancelled``; one that
ignores it cannot hold the turn), a server killed in the middle of a call, a server that
never starts."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from conftest import new_session, prompt, write_script
from mcp_servers import probe_record  # noqa: F401 (a fixture)
from mcp_servers import everything_stdio, probe_server

pytestmark = pytest.mark.asyncio(loop_scope="module")


def one_call(tmp_path: Path, name: str, arguments: dict[str, Any], call_id: str = "c1") -> Path:
    return write_script(tmp_path / "s.jsonl", [{"tool_calls": [{"name": name, "arguments": arguments, "id": call_id}]},
                                               {"text": "After the call."}])


def tool_message(log: Path, call_id: str) -> str:
    messages = json.loads(log.read_text().splitlines()[-1])["messages"]
    return next(m["content"] for m in messages if m["role"] == "tool" and m["tool_call_id"] == call_id)


async def start_turn(client, sid: str) -> asyncio.Task:
    return asyncio.ensure_future(prompt(client, sid))


async def until_calling(client, sid: str, call_id: str = "c1") -> None:
    await client.wait_for(lambda p: p["sessionId"] == sid and p["update"].get("sessionUpdate") == "tool_call"
                          and p["update"]["toolCall"]["toolCallId"] == call_id
                          and p["update"]["toolCall"]["status"] == "calling")


async def server_update(client, sid: str, name: str, state: str) -> dict[str, Any]:
    """The first ``mcp_server`` update of the session saying ``name`` is ``state`` (waited for)."""
    def match(update: dict[str, Any]) -> bool:
        return update.get("sessionUpdate") == "mcp_server" and (update["name"], update["state"]) == (name, state)

    if not any(match(u) for u in client.updates[sid]):
        await client.wait_for(lambda p: p["sessionId"] == sid and match(p["update"]))
    return next(u for u in client.updates[sid] if match(u))


async def cancel_call(client, sid: str, call_id: str = "c1") -> None:
    answer = await client.call("toolwire/toolCall/cancel", {"sessionId": sid, "toolCallId": call_id})
    assert answer["cancelled"] is True


async def test_cancelling_the_long_running_operation_ends_it_at_once(client, repo, tmp_path):
    script = one_call(tmp_path, "mcp__everything__trigger-long-running-operation", {"duration": 600, "steps": 600})
    sid = await new_session(client, repo, script, mcpServers={"everything": everything_stdio(["trigger-long-running-operation"])},
                            permissions={"mcp__everything": "auto"})
    turn = await start_turn(client, sid)
    await until_calling(client, sid)
    await cancel_call(client, sid)
    assert (await turn)["stopReason"] == "end_turn"  # the turn went on to the next model request
    final = client.tool_calls(sid)["c1"][-1]
    assert (final["status"], final["cancelReason"]) == ("canceled", "call_cancelled")


@pytest.mark.parametrize("ignore_cancel", [False, True])
async def test_the_server_receives_the_cancel_and_cannot_hold_the_call(client, repo, tmp_path, probe_record,
                                                                       ignore_cancel):
    script = one_call(tmp_path, "mcp__probe__block", {"ignore_cancel": ignore_cancel})
    sid = await new_session(client, repo, script, mcpServers={"probe": probe_server(probe_record, ["block"])},
                            permissions={"mcp__probe": "auto"})
    turn = await start_turn(client, sid)
    started = await probe_record.await_for("started")
    await cancel_call(client, sid)
    cancelled = await probe_record.await_for("cancelled")
    assert cancelled["requestId"] == started["requestId"]
    await turn
    assert client.tool_calls(sid)["c1"][-1]["status"] == "canceled"
    if ignore_cancel:
        os.kill(started["pid"], signal.SIGKILL)  # it would hold its own stop for the SDK's grace


async def test_cancelling_the_turn_cancels_the_mcp_call(client, repo, tmp_path, probe_record):
    script = one_call(tmp_path, "mcp__probe__block", {})
    sid = await new_session(client, repo, script, mcpServers={"probe": probe_server(probe_record, ["block"])},
                            permissions={"mcp__probe": "auto"})
    turn = await start_turn(client, sid)
    started = await probe_record.await_for("started")
    client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    assert (await turn)["stopReason"] == "cancelled"
    assert (await probe_record.await_for("cancelled"))["requestId"] == started["requestId"]
    final = client.tool_calls(sid)["c1"][-1]
    assert (final["status"], final["cancelReason"]) == ("canceled", "turn_cancelled")


async def test_a_server_killed_mid_call_errors_the_call_and_is_reported(client, repo, tmp_path, probe_record):
    log = tmp_path / "requests.jsonl"
    script = one_call(tmp_path, "mcp__probe__block", {})
    sid = await new_session(client, repo, script, replayLog=str(log), mcpServers={"probe": probe_server(probe_record, ["block"])},
                            permissions={"mcp__probe": "auto"})
    turn = await start_turn(client, sid)
    started = await probe_record.await_for("started")
    os.kill(started["pid"], signal.SIGKILL)
    assert (await turn)["stopReason"] == "end_turn"
    final = client.tool_calls(sid)["c1"][-1]
    assert final["status"] == "errored" and final["error"]["code"] == "mcp_server_exited"
    assert "mcp_server_exited" in tool_message(log, "c1")
    assert (await server_update(client, sid, "probe", "failed"))["error"] == "exited (signal 9)"


async def test_a_crash_mid_call_keeps_stderr_out_of_the_models_text(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = one_call(tmp_path, "mcp__probe__crash", {"code": 7})
    sid = await new_session(client, repo, script, replayLog=str(log), mcpServers={"probe": probe_server(tools=["crash"])},
                            permissions={"mcp__probe": "auto"})
    await prompt(client, sid)
    final = client.tool_calls(sid)["c1"][-1]
    assert final["status"] == "errored" and final["error"]["code"] == "mcp_server_exited"
    assert "crashing with code" not in tool_message(log, "c1")
    assert (await server_update(client, sid, "probe", "failed"))["error"] == "exited (code 7)"


async def test_a_server_that_never_starts_is_reported_once_and_its_tools_are_absent(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [{"text": "No tools from it."}, {"text": "Still none."}])
    sid = await new_session(client, repo, script, replayLog=str(log),
                            mcpServers={"gone": {"command": str(tmp_path / "no-such-server")},
                                        "echo": probe_server(tools=["echo"])})
    await prompt(client, sid)
    await prompt(client, sid)
    names = [json.loads(line)["tools"] for line in log.read_text().splitlines()]
    assert all(not any(n.startswith("mcp__gone__") for n in turn) for turn in names)
    assert all("mcp__echo__echo" in turn for turn in names)
    assert (await server_update(client, sid, "gone", "failed"))["error"].startswith("command not found: ")
    warnings = [u for u in client.updates[sid] if u["sessionUpdate"] == "warning" and "gone" in json.dumps(u)]
    assert len(warnings) == 1, warnings
