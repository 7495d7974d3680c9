"""MCP servers over the real protocol (issue 23, "Front-ends"): the real ``toolwire serve`` over
stdio, real MCP servers from the registries (``mcp-server-time``, ``mcp-server-git``; see
tests/mcp_servers.py), a replayed turn. What a client sees: ``session/new``'s and the
snapshot's ``mcpServers``, ``mcp_server`` updates, ``toolwire/tools/list``'s sources,
annotations and servers, the ``mcp`` permission subject, a server that never starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import new_session, prompt, write_script
from mcp_servers import git_server, time_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

TIME_CALL = {"tool_calls": [{"name": "mcp__time__get_current_time", "arguments": {"timezone": "UTC"}, "id": "t1"}]}


async def server_state(client: Any, sid: str, name: str, state: str) -> dict[str, Any]:
    """The session's first ``mcp_server`` update for ``name`` in ``state`` (waited for when it has not come yet)."""
    def match(update: dict[str, Any]) -> bool:
        return update.get("sessionUpdate") == "mcp_server" and update["name"] == name and update["state"] == state

    if not any(match(u) for u in client.updates[sid]):
        await client.wait_for(lambda params: params["sessionId"] == sid and match(params["update"]), timeout=60)
    return next(u for u in client.updates[sid] if match(u))


async def test_an_mcp_tool_is_listed_asked_about_and_run_like_a_built_in_one(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [TIME_CALL, {"text": "It is late."}])
    opened = await client.call("toolwire/session/new", {
        "cwd": str(repo), "model": f"replay:{script}", "settings": {"mcpServers": {"time": time_server()}}})
    sid = opened["sessionId"]
    [told] = opened["mcpServers"]  # started in the background: the answer does not wait for it
    assert told["name"] == "time" and told["state"] in ("starting", "ready"), told
    await server_state(client, sid, "time", "ready")

    listed = await client.call("toolwire/tools/list", {"sessionId": sid})
    assert listed["mcpServers"] == [{"name": "time", "state": "ready", "tools": 2, "offered": 2}]
    sources = {t["function"]["name"]: t["source"] for t in listed["tools"]}
    assert sources["read_file"] == "builtin"
    assert sources["mcp__time__get_current_time"] == {"mcpServer": "time", "tool": "get_current_time"}
    entry = next(t for t in listed["tools"] if t["function"]["name"] == "mcp__time__get_current_time")
    assert entry["annotations"]["readOnlyHint"] is True and "annotations" not in listed["tools"][0]
    assert entry["function"]["parameters"]["required"] == ["timezone"]  # the server's schema, as given

    result = await prompt(client, sid)
    assert result["stopReason"] == "end_turn"
    [asked] = client.permission_requests[sid]  # asked by default, whatever its readOnlyHint
    assert asked["subject"] == {"kind": "mcp", "tool": "mcp__time__get_current_time", "server": "time",
                                "serverTool": "get_current_time", "arguments": {"timezone": "UTC"},
                                "hints": asked["subject"]["hints"]}  # read-only: no undo line
    assert asked["subject"]["hints"]["readOnlyHint"] is True
    assert client.statuses(sid)["t1"] == ["generating", "generated", "calling", "done"]
    final = client.tool_calls(sid)["t1"][-1]
    assert '"timezone": "UTC"' in final["result"]["content"], final["result"]

    snapshot = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snapshot["mcpServers"] == listed["mcpServers"]
    await client.call("toolwire/session/close", {"sessionId": sid})


async def test_a_tool_not_marked_read_only_says_toolwire_cannot_undo_it(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "mcp__git__git_add", "id": "a1",
                         "arguments": {"repo_path": str(repo), "files": ["hello.txt"]}}]},
        {"text": "Not added."}])
    sid = await new_session(client, repo, script, mcpServers={"git": {**git_server(repo), "tools": ["git_add"]}})
    await server_state(client, sid, "git", "ready")
    (repo / "hello.txt").write_text("changed\n")
    client.answers[sid] = {"optionId": "reject", "reason": "not now"}
    await prompt(client, sid)
    [asked] = client.permission_requests[sid]
    subject = asked["subject"]
    assert (subject["kind"], subject["server"], subject["serverTool"]) == ("mcp", "git", "git_add")
    assert subject["undo"] == "Toolwire cannot undo what this tool does"
    assert subject["hints"].get("readOnlyHint") is not True
    final = client.tool_calls(sid)["a1"][-1]
    assert (final["status"], final["cancelReason"]) == ("canceled", "rejected")
    await client.call("toolwire/session/close", {"sessionId": sid})


async def test_a_server_that_never_starts_is_failed_and_told_once(client, repo, tmp_path: Path):
    script = write_script(tmp_path / "s.jsonl", [{"text": "No tools today."}])
    missing = str(tmp_path / "no-such-mcp-server")
    sid = await new_session(client, repo, script, mcpServers={"broken": {"command": missing}})
    failed = await server_state(client, sid, "broken", "failed")
    assert failed["error"], failed
    await prompt(client, sid)
    warnings = [u for u in client.updates[sid] if u["sessionUpdate"] == "warning" and u["code"] == "mcp_server_failed"]
    assert [w["names"] for w in warnings] == [["broken"]], warnings
    listed = await client.call("toolwire/tools/list", {"sessionId": sid})
    [server] = listed["mcpServers"]
    assert (server["name"], server["state"], server["tools"], server["offered"]) == ("broken", "failed", 0, 0)
    assert server["error"] == failed["error"]
    assert not [t for t in listed["tools"] if t["source"] != "builtin"]
    without = await client.call("toolwire/tools/list", {})  # no session: the built-in tools only, no servers
    assert without["mcpServers"] == [] and {t["source"] for t in without["tools"]} == {"builtin"}
    await client.call("toolwire/session/close", {"sessionId": sid})
