"""MCP tools in a replayed turn through the real server over stdio (the LSP front-end), with
real MCP servers (tests/mcp_servers.py): approval and its hints, rejection, "allow always",
invalid arguments, ``isError``, an image result, ``tools/list_changed``, streamable HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import git, new_session, prompt, write_script
from mcp_servers import everything_http  # noqa: F401 (a fixture)
from mcp_servers import everything_stdio, git_server, probe_server, time_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

UNDO = "Toolwire cannot undo what this tool does"


def call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments, "id": call_id}]}


def requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def tool_message(log: Path, call_id: str) -> str:
    """The text the model got for ``call_id`` (the tool message of the last request)."""
    messages = requests(log)[-1]["messages"]
    return next(m["content"] for m in messages if m["role"] == "tool" and m["tool_call_id"] == call_id)


def offered(log: Path, index: int = 0) -> list[str]:
    return requests(log)[index].get("tools") or []


async def test_approved_call_shows_hints_and_reaches_the_model(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [call("mcp__everything__echo", {"message": "hi"}, "e1"),
                                                 {"text": "Echoed."}])
    sid = await new_session(client, repo, script, replayLog=str(log), mcpServers={"everything": everything_stdio(["echo"])})
    assert (await prompt(client, sid))["stopReason"] == "end_turn"
    assert client.statuses(sid) == {"e1": ["generating", "generated", "calling", "done"]}
    [asked] = client.permission_requests[sid]
    subject = asked["subject"]
    assert (subject["kind"], subject["server"], subject["serverTool"]) == ("mcp", "everything", "echo")
    assert subject["arguments"] == {"message": "hi"} and subject["hints"]["readOnlyHint"] is True
    assert "undo" not in subject or subject["undo"] is None  # echo is marked read-only
    assert "mcp__everything__echo" in offered(log)
    assert tool_message(log, "e1") == "Echo: hi"
    servers = [u for u in client.updates[sid] if u["sessionUpdate"] == "mcp_server"]
    assert servers and servers[-1]["state"] == "ready"


async def test_rejected_call_never_reaches_the_server(client, repo, tmp_path):
    (repo / "hello.txt").write_text("changed\n")
    git(repo, "add", "hello.txt")
    script = write_script(tmp_path / "s.jsonl", [
        call("mcp__git__git_commit", {"repo_path": str(repo), "message": "Not this"}, "g1"), {"text": "Fine."}])
    sid = await new_session(client, repo, script, mcpServers={"git": git_server(repo, ["git_commit"])})
    client.answers[sid] = {"optionId": "reject", "reason": "no commits"}
    await prompt(client, sid)
    final = client.tool_calls(sid)["g1"][-1]
    assert (final["status"], final["cancelReason"]) == ("canceled", "rejected")
    assert client.permission_requests[sid][0]["subject"]["undo"] == UNDO
    assert git(repo, "log", "--format=%s").splitlines() == ["initial"]


async def test_allow_always_covers_that_tool_and_not_the_server(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        call("mcp__time__get_current_time", {"timezone": "UTC"}, "t1"),
        call("mcp__time__get_current_time", {"timezone": "Europe/Paris"}, "t2"),
        call("mcp__time__convert_time", {"source_timezone": "UTC", "time": "12:00",
                                         "target_timezone": "Asia/Tokyo"}, "t3"),
        {"text": "Times."},
    ])
    sid = await new_session(client, repo, script, mcpServers={"time": time_server()})
    client.answers[sid] = [{"optionId": "allow_always"}, {"optionId": "allow_once"}]
    await prompt(client, sid)
    assert [p["toolCall"]["toolCallId"] for p in client.permission_requests[sid]] == ["t1", "t3"]
    assert {cid: seq[-1] for cid, seq in client.statuses(sid).items()} == {"t1": "done", "t2": "done", "t3": "done"}
    assert "21:00" in json.dumps(client.tool_calls(sid)["t3"][-1]["result"])


async def test_invalid_arguments_are_errored_and_never_sent(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "mcp__probe__crash", "arguments": {"code": "not a number"}, "id": "p1"},
                        {"name": "mcp__probe__echo", "arguments": {"text": "still here"}, "id": "p2"}]},
        {"text": "Oops."}])
    sid = await new_session(client, repo, script, replayLog=str(log),
                            mcpServers={"probe": probe_server(tools=["crash", "echo"])})
    await prompt(client, sid)
    crash, echo = (client.tool_calls(sid)[cid][-1] for cid in ("p1", "p2"))
    assert crash["status"] == "errored" and "invalid arguments for mcp__probe__crash: code:" in crash["error"]["message"]
    assert "invalid arguments" in tool_message(log, "p1")
    # never asked about, never sent: the server did not crash, the next call reached it
    assert [p["toolCall"]["toolCallId"] for p in client.permission_requests[sid]] == ["p2"]
    assert echo["status"] == "done" and tool_message(log, "p2") == "echo: still here"


async def test_is_error_is_an_errored_call_with_the_servers_message(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        call("mcp__time__get_current_time", {"timezone": "Nowhere/Atlantis"}, "t1"), {"text": "Unknown zone."}])
    sid = await new_session(client, repo, script, replayLog=str(log), mcpServers={"time": time_server()},
                            permissions={"mcp__time": "auto"})
    assert (await prompt(client, sid))["stopReason"] == "end_turn"
    final = client.tool_calls(sid)["t1"][-1]
    assert final["status"] == "errored" and final["error"]["code"] == "mcp_tool_error"
    assert "Nowhere/Atlantis" in final["error"]["message"]
    assert "Nowhere/Atlantis" in tool_message(log, "t1")


@pytest.mark.parametrize("image_input", [True, False])
async def test_image_result_reaches_the_card_and_the_model_as_set(client, repo, tmp_path, image_input):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [call("mcp__everything__get-tiny-image", {}, "i1"), {"text": "A logo."}])
    sid = await new_session(client, repo, script, replayLog=str(log), mcpServers={"everything": everything_stdio(["get-tiny-image"])},
                            permissions={"mcp__everything": "auto"}, imageInput=image_input)
    await prompt(client, sid)
    final = client.tool_calls(sid)["i1"][-1]
    assert final["status"] == "done"
    [image] = [block for block in final["result"]["data"]["content"] if block["type"] == "image"]
    assert image["mimeType"] == "image/png" and image["data"].startswith("iVBORw0KGgo")  # the card always has it
    text = tool_message(log, "i1")
    last = requests(log)[-1]["messages"]
    image_parts = [part for m in last if m["role"] == "user" and isinstance(m["content"], list)
                   for part in m["content"] if part.get("type") == "image"]  # the replay log's form of an image_url part
    if image_input:
        assert "shown to you in the message after the tool results" in text
        assert [p["mimeType"] for p in image_parts] == ["image/png"] and image_parts[0]["bytes"] > 0
    else:
        assert "not shown to the model" in text and image_parts == []


async def test_list_changed_updates_the_tools_between_model_requests(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        call("mcp__probe__add_tool", {"name": "late"}, "a1"),
        call("mcp__probe__late", {}, "a3"),
        {"text": "All ran."},
    ])
    sid = await new_session(client, repo, script, replayLog=str(log), mcpServers={"probe": probe_server()},
                            permissions={"mcp__probe__add_tool": "auto", "mcp__probe__late": "auto"}, maxTools=64)
    await prompt(client, sid)
    # the request right after the call that changed the list offers the new tool
    assert "mcp__probe__late" not in offered(log, 0) and "mcp__probe__late" in offered(log, 1)
    assert client.tool_calls(sid)["a3"][-1]["status"] == "done"
    assert tool_message(log, "a3") == "late ran"


async def test_streamable_http_server(client, repo, tmp_path, everything_http):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [call("mcp__web__get-sum", {"a": 2, "b": 3}, "s1"), {"text": "5."}])
    sid = await new_session(client, repo, script, replayLog=str(log), mcpServers={"web": {**everything_http, "tools": ["get-sum"]}},
                            permissions={"mcp__web__get-sum": "auto"})
    await prompt(client, sid)
    assert client.tool_calls(sid)["s1"][-1]["status"] == "done"
    assert tool_message(log, "s1") == "The sum of 2 and 3 is 5."
    listing = await client.call("toolwire/tools/list", {"sessionId": sid})
    [web] = [s for s in listing["mcpServers"] if s["name"] == "web"]
    assert web["state"] == "ready" and web["tools"] >= 1
    sources = {t["function"]["name"]: t["source"] for t in listing["tools"]}
    assert sources["mcp__web__get-sum"] == {"mcpServer": "web", "tool": "get-sum"}
    assert sources["read_file"] == "builtin"
