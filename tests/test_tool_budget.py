"""Issue 21, "A budget for tools": the ``maxTools`` setting bounds the tools one model
request offers (built-in tools first, in their fixed order), ``toolwire/tools/list``
counts them, every request logs how many it offers, the tools left out are named in one
warning per session, and a call to one is refused as data (an unknown tool).

Real server over stdio against a local OpenAI-compatible endpoint (the openai SDK);
``toolwire run`` as a subprocess.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types

from conftest import make_client, new_session, server_fixture, write_script
from endpoint import FakeEndpoint, Reply, chat_body
from toolwire.settings import Settings, parse_settings
from toolwire.tools import default_registry
from toolwire.tools.selection import select_tools

ASYNC = pytest.mark.asyncio(loop_scope="module")

#: The built-in tools in their fixed order (default_registry's: reads, then edits, then git).
BUILTIN = default_registry().names()
FIRST_FIVE = BUILTIN[:5]
EDIT_FILE = default_registry().get("edit_file")
LEFT_OUT_MESSAGE_HEAD = "tools are not offered to the model (the maxTools setting is 5): "


def offered(body: dict) -> list[str]:
    return [tool["function"]["name"] for tool in body.get("tools", [])]


def test_max_tools_defaults_to_20_and_is_validated():
    assert Settings().max_tools == 20
    assert parse_settings({"maxTools": 5})[0].max_tools == 5
    for bad, problem in [(0, "setting maxTools: Input should be greater than or equal to 1 (got 0)"),
                         (129, "setting maxTools: Input should be less than or equal to 128 (got 129)"),
                         ("5", "setting maxTools: Input should be a valid integer (got '5')")]:
        settings, problems = parse_settings({"maxTools": bad})
        assert problems == [problem]
        assert settings.max_tools == 20


def test_default_max_model_requests_is_25():
    assert Settings().max_model_requests == 25
    assert parse_settings({})[0].max_model_requests == 25


def test_the_builtin_tools_come_first_and_later_tools_fill_what_is_left():
    builtins = default_registry().tools()
    # reads first, then the file edits, then git (read-only before mutating): today's fourteen in their order
    assert BUILTIN[0] == "read_file"
    today = ["read_file", "create_file", "edit_file", "multi_edit", "delete_file", "rename_file", "git_status",
             "git_diff", "git_log", "git_show", "git_add", "git_restore", "git_commit", "git_branch"]
    assert [name for name in BUILTIN if name in today] == today
    assert len(FIRST_FIVE) == 5 and "git_status" not in FIRST_FIVE

    class Extra(type(builtins[0])):  # a tool from elsewhere (an MCP server, later): appended after the built-ins
        name = "mcp_extra"

    everything = select_tools([*builtins, Extra()], 20)
    names = [tool.name for tool in builtins]
    assert everything.registry.names() == [*names, "mcp_extra"][:20]
    assert everything.count == min(20, len(names) + 1)
    five = everything.with_budget(5)
    assert five.registry.names() == FIRST_FIVE
    assert five.left_out == (*names[5:], "mcp_extra")
    assert five.left_out_message() == (f"{len(names) + 1 - 5} of {len(names) + 1} {LEFT_OUT_MESSAGE_HEAD}"
                                       f"{', '.join(five.left_out)}. Raise maxTools to offer them.")
    assert select_tools(builtins, len(names)).left_out_message() is None
    assert select_tools([*builtins, builtins[0]], 50).registry.names() == names  # a second name: the first wins


def test_a_description_names_only_tools_the_request_offers():
    """With any maxTools, a sentence naming a tool left out is left out; the rest is kept as written."""
    builtins = default_registry().tools()
    for budget in range(1, len(builtins) + 1):
        selection = select_tools(builtins, budget)
        for definition in selection.registry.definitions():
            text = json.dumps(definition)
            named = [name for name in selection.left_out if re.search(rf"\b{name}\b", text)]
            assert named == [], (budget, definition["function"]["name"], named)
    # every tool offered: every description whole
    assert [d["function"]["description"] for d in select_tools(builtins, 50).registry.definitions()] == [
        tool.description for tool in builtins]
    two = {d["function"]["name"]: d["function"]["description"] for d in select_tools(builtins, 2).registry.definitions()}
    listing = default_registry().get("list_files")
    assert listing is not None and set(two) == {"read_file", "list_files"}
    assert two["list_files"] == listing.description.replace(" To find text in files use search_files instead.", "")
    assert two["list_files"].startswith("List files to find your way;") and "search_files" in listing.description


@ASYNC
async def test_max_tools_5_offers_exactly_the_first_five_and_refuses_a_left_out_tool(client, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    calls = {"tool_calls": [{"id": "c_status", "name": "git_status", "arguments": {}},
                            {"id": "c_read", "name": "read_file", "arguments": {"path": "a.txt"}}]}
    replies = [Reply(200, chat_body(calls, 1)), Reply(200, chat_body({"text": "done"}, 2)),
               Reply(200, chat_body({"text": "again"}, 3))]
    with FakeEndpoint(replies) as endpoint:
        new = await client.call("toolwire/session/new", {
            "cwd": str(root), "model": "openai:m",
            "settings": {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0, "maxTools": 5}})
        sid = new["sessionId"]
        listed = await client.call("toolwire/tools/list", {"sessionId": sid})
        first = await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "look"})
        second = await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "and again"})
        bodies = list(endpoint.requests)
    assert new["tools"] == FIRST_FIVE
    left_out = default_registry().names()[5:]
    assert listed["count"] == 5 and listed["maxTools"] == 5 and listed["leftOut"] == left_out
    assert [t["function"]["name"] for t in listed["tools"]] == FIRST_FIVE
    assert first["stopReason"] == "end_turn" and second["stopReason"] == "end_turn"
    assert len(bodies) == 3
    assert [offered(body) for body in bodies] == [FIRST_FIVE] * 3
    # no description names a tool the request does not offer (edit_file's pointer to multi_edit is left out)
    for tools in (bodies[0]["tools"], listed["tools"]):
        text = json.dumps(tools)
        assert [name for name in left_out if re.search(rf"\b{name}\b", text)] == []
        edit = next(t["function"]["description"] for t in tools if t["function"]["name"] == "edit_file")
        assert edit == EDIT_FILE.description.replace(" For several changes to one file, use multi_edit.", "")
    finals = {cid: snaps[-1] for cid, snaps in client.tool_calls(sid).items()}
    status = finals[next(cid for cid in finals if finals[cid]["name"] == "git_status")]
    assert status["status"] == "errored" and status["error"]["code"] == "unknown_tool"
    assert status["error"]["message"] == ("there is no tool named 'git_status'; available tools: "
                                          + ", ".join(FIRST_FIVE))
    read = finals[next(cid for cid in finals if finals[cid]["name"] == "read_file")]
    assert read["status"] == "done"
    # the refusal went back to the model as the call's result, as data
    results = {m["tool_call_id"]: m["content"] for m in bodies[1]["messages"] if m["role"] == "tool"}
    assert any("there is no tool named 'git_status'" in content for content in results.values()), results
    warnings = [u for u in client.updates[sid] if u["sessionUpdate"] == "warning"]
    assert warnings == [{"sessionUpdate": "warning", "code": "tools_left_out", "names": left_out,
                         "message": (f"{len(left_out)} of {len(left_out) + 5} {LEFT_OUT_MESSAGE_HEAD}"
                                     f"{', '.join(left_out)}. Raise maxTools to offer them.")}]
    snapshot = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snapshot["warnings"] == [{key: value for key, value in warnings[0].items() if key != "sessionUpdate"}]
    # told in the first turn, before its first model request
    kinds = [(u["sessionUpdate"], u.get("state")) for u in client.updates[sid]]
    assert kinds.index(("warning", None)) < kinds.index(("turn", "model_request"))


@ASYNC
async def test_tools_list_counts_the_tools_under_the_servers_budget(client):
    listed = await client.call("toolwire/tools/list", {})
    names = default_registry().names()
    assert listed["maxTools"] == 20
    assert listed["count"] == len(listed["tools"]) == min(20, len(names))
    assert [t["function"]["name"] for t in listed["tools"]] == names[:20]
    assert listed["leftOut"] == names[20:]


@ASYNC
async def test_no_warning_when_every_tool_fits(client, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    script = write_script(tmp_path / "s.jsonl", [{"text": "hi"}])
    sid = (await client.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}",
                                                      "settings": {"maxTools": 128}}))["sessionId"]
    assert (await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "hi"}))["stopReason"] == "end_turn"
    assert not [u for u in client.updates[sid] if u["sessionUpdate"] == "warning"]


def test_toolwire_run_prints_the_warning_once_and_the_server_logs_each_requests_tools(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"tool_calls": [{"id": "g1", "name": "git_log", "arguments": {}}]},
        {"text": "done"}])
    log = tmp_path / "server.log"
    replay_log = tmp_path / "requests.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "run", "--workspace", str(root), "--model", f"replay:{script}",
         "--approve", "no", "--log-level", "INFO", "--server-log", str(log),
         "--settings", json.dumps({"maxTools": 5, "replayLog": str(replay_log)}), "look"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    left_out = default_registry().names()[5:]
    warning = (f"toolwire run: warning: {len(left_out)} of {len(left_out) + 5} {LEFT_OUT_MESSAGE_HEAD}"
               f"{', '.join(left_out)}. Raise maxTools to offer them.")
    assert [line for line in done.stderr.splitlines() if "warning" in line] == [warning]
    assert "[errored] git_log g1 — there is no tool named 'git_log'; available tools: " in done.stdout
    requests = [json.loads(line) for line in replay_log.read_text().splitlines()]
    assert [r["tools"] for r in requests] == [FIRST_FIVE] * 3
    logged = [line for line in log.read_text().splitlines() if "offers 5 tools" in line]
    assert len(logged) == 3, log.read_text()
    for number, line in enumerate(logged, 1):
        assert f"turn t1: model request {number} of at most 25 offers 5 tools (maxTools 5, {len(left_out)} left out)" \
            in line


budget_client = server_fixture("budget_client", make_client)


@ASYNC
async def test_a_changed_budget_applies_to_the_next_turn_and_its_warning_names_the_new_set(budget_client, tmp_path):
    """``workspace/didChangeConfiguration`` ``maxTools``: the session's next turn offers the new
    number of tools (the system prompt names only those), warns once about the tools now left
    out, and warns again only when another change leaves out others."""
    client = budget_client
    root = tmp_path / "ws"
    root.mkdir()
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}])
    sid = await new_session(client, root, script, replayLog=str(log))

    async def turn(text: str) -> None:
        result = await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": text})
        assert result["stopReason"] == "end_turn"

    def warnings() -> list[list[str]]:
        return [u["names"] for u in client.updates[sid] if u["sessionUpdate"] == "warning"]

    await turn("first")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"toolwire": {"maxTools": 5}}))
    await turn("second")
    await turn("third")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"toolwire": {"maxTools": 3}}))
    await turn("fourth")
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["tools"] for r in requests] == [BUILTIN[:20], FIRST_FIVE, FIRST_FIVE, BUILTIN[:3]]
    assert warnings() == [BUILTIN[5:], BUILTIN[3:]]
    assert "git_status" in requests[0]["messages"][0]["content"]
    system = requests[1]["messages"][0]["content"]
    assert "git_status" not in system and "read_file" in system  # the prompt names only the tools offered
    listed = await client.call("toolwire/tools/list", {})
    assert (listed["count"], listed["maxTools"], listed["leftOut"]) == (3, 3, BUILTIN[3:])
