"""A whole turn over the real protocol: real server over stdio, real files, real git."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from conftest import git, new_session, prompt, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")


def assert_revs_increase(client, sid):
    for cid, snaps in client.tool_calls(sid).items():
        revs = [s["rev"] for s in snaps]
        assert revs == sorted(revs) and len(set(revs)) == len(revs), (cid, revs)


async def test_read_edit_diff_commit_turn(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}}], "chunk_size": 4},
        {"text": "Editing.", "tool_calls": [{"name": "edit_file", "arguments": {
            "path": "hello.txt", "old_string": "hello", "new_string": "hello world"}}], "chunk_size": 5},
        {"tool_calls": [{"name": "git_diff", "arguments": {}}]},
        {"tool_calls": [{"name": "git_commit", "arguments": {"message": "Say hello to the world", "paths": ["hello.txt"]}}]},
        {"text": "All done."},
    ])
    sid = await new_session(client, repo, script)
    result = await prompt(client, sid)
    assert result["stopReason"] == "end_turn"
    assert (repo / "hello.txt").read_bytes() == b"hello world\n"
    assert git(repo, "log", "-1", "--format=%s").strip() == "Say hello to the world"
    statuses = client.statuses(sid)
    assert len(statuses) == 4
    for cid, seq in statuses.items():
        assert seq == ["generating", "generated", "calling", "done"], (cid, seq)
    assert_revs_increase(client, sid)
    # read-only tools ran without asking; the edit and the commit asked
    asked = [p["toolCall"]["name"] for p in client.permission_requests[sid]]
    assert asked == ["edit_file", "git_commit"]
    edit_subject = client.permission_requests[sid][0]["subject"]
    assert "hello world" in json.dumps(edit_subject)
    turn_states = [u["state"] for u in client.updates[sid] if u["sessionUpdate"] == "turn"]
    assert turn_states[0] == "started" and turn_states[-1] == "ended"
    text = "".join(u["content"]["text"] for u in client.updates[sid] if u["sessionUpdate"] == "agent_message_chunk")
    assert "Editing." in text and "All done." in text


async def test_rejected_edit_leaves_file_byte_for_byte(client, repo, tmp_path):
    original = b"\xef\xbb\xbfline one\r\n\tline two\r\nno newline at end"
    (repo / "crlf.txt").write_bytes(original)
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "crlf.txt", "old_string": "line two", "new_string": "LINE TWO"}}]},
        {"text": "Understood."},
    ])
    sid = await new_session(client, repo, script, replayLog=str(log))
    client.answers[sid] = {"optionId": "reject", "reason": "not this file"}
    result = await prompt(client, sid)
    assert result["stopReason"] == "end_turn"
    assert (repo / "crlf.txt").read_bytes() == original
    [(cid, seq)] = client.statuses(sid).items()
    assert seq == ["generating", "generated", "canceled"]
    final = client.tool_calls(sid)[cid][-1]
    assert final["cancelReason"] == "rejected"
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    tool_messages = [m for m in requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1 and tool_messages[0]["tool_call_id"] == cid
    assert "rejected" in tool_messages[0]["content"] and "not this file" in tool_messages[0]["content"]


async def test_invalid_json_arguments_errored_and_sent_back(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": '{"path": "hello.txt"', "id": "call_bad"}]},
        {"text": "Sorry."},
    ])
    sid = await new_session(client, repo, script, replayLog=str(log))
    result = await prompt(client, sid)
    assert result["stopReason"] == "end_turn"
    assert client.statuses(sid) == {"call_bad": ["generating", "errored"]}
    final = client.tool_calls(sid)["call_bad"][-1]
    assert final["error"]["code"] == "incomplete_json"  # the text stops early; the call was closed
    assert final["argumentsText"] == '{"path": "hello.txt"'
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    second = requests[1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant" and m.get("tool_calls"))
    assert assistant["tool_calls"][0]["id"] == "call_bad"
    json.loads(assistant["tool_calls"][0]["function"]["arguments"])  # valid JSON is sent, never ""
    tool = next(m for m in second if m["role"] == "tool")
    assert tool["tool_call_id"] == "call_bad" and "incomplete_json" in tool["content"]
    assert '{"path": "hello.txt"' in tool["content"]  # the model sees what it sent


async def test_empty_arguments_are_an_empty_object(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "git_status", "arguments": "", "id": "call_empty"}]},
        {"text": "Clean."},
    ])
    sid = await new_session(client, repo, script, replayLog=str(log))
    await prompt(client, sid)
    final = client.tool_calls(sid)["call_empty"][-1]
    assert final["status"] == "done" and final["arguments"] == {}
    second = [json.loads(line) for line in log.read_text().splitlines()][1]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant" and m.get("tool_calls"))
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"


async def test_unknown_tool_and_bad_arguments_are_errored_not_run(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [
            {"name": "rm_rf", "arguments": {"path": "."}, "id": "c1"},
            {"name": "edit_file", "arguments": {"path": "hello.txt"}, "id": "c2"},
            {"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "c3"},
        ]},
        {"text": "ok"},
    ])
    sid = await new_session(client, repo, script)
    await prompt(client, sid)
    calls = {cid: snaps[-1] for cid, snaps in client.tool_calls(sid).items()}
    assert calls["c1"]["status"] == "errored" and calls["c1"]["error"]["code"] == "unknown_tool"
    assert calls["c2"]["status"] == "errored" and calls["c2"]["error"]["code"] == "invalid_arguments"
    assert "old_string" in calls["c2"]["error"]["message"]
    assert calls["c3"]["status"] == "done"
    assert client.permission_requests[sid] == []
    assert (repo / "hello.txt").read_text() == "hello\n"


async def test_malformed_params_get_invalid_params_and_server_keeps_serving(client, repo, tmp_path):
    with pytest.raises(JsonRpcInvalidParams) as info:
        await client.call("toolwire/session/prompt", {"prompt": "hi"})
    assert "sessionId" in str(info.value)
    with pytest.raises(JsonRpcInvalidParams) as info:
        await client.call("toolwire/session/new", {"cwd": 42})
    assert "cwd" in str(info.value)
    script = write_script(tmp_path / "s.jsonl", [{"text": "still here"}])
    sid = await new_session(client, repo, script)
    assert (await prompt(client, sid))["stopReason"] == "end_turn"


async def test_cancel_while_arguments_stream(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "new.txt", "content": "x" * 400}, "id": "slow"}],
         "chunk_size": 4, "delay": 0.02},
    ])
    sid = await new_session(client, repo, script)
    import asyncio

    turn = asyncio.ensure_future(prompt(client, sid))
    await client.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "tool_call")
    client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    result = await asyncio.wait_for(turn, 20)
    assert result["stopReason"] == "cancelled"
    final = client.tool_calls(sid)["slow"][-1]
    assert final["status"] == "canceled" and final["cancelReason"] == "turn_cancelled"
    assert not (repo / "new.txt").exists()
    # the session is usable afterwards
    assert (await client.call("toolwire/session/snapshot", {"sessionId": sid}))["running"] is False


async def test_several_edits_to_one_file_in_one_response_all_land_in_order(client, repo, tmp_path):
    (repo / "a.txt").write_text("one\ntwo\nthree\nfour\n")
    edits = [{"name": "edit_file", "arguments": {"path": "a.txt", "old_string": w, "new_string": w.upper()}, "id": f"e{i}"}
             for i, w in enumerate(["one", "two", "three", "four"])]
    script = write_script(tmp_path / "s.jsonl", [{"tool_calls": edits}, {"text": "ok"}])
    sid = await new_session(client, repo, script)
    await prompt(client, sid)
    assert {cid: seq[-1] for cid, seq in client.statuses(sid).items()} == {f"e{i}": "done" for i in range(4)}
    assert (repo / "a.txt").read_text() == "ONE\nTWO\nTHREE\nFOUR\n"
    diffs = [p["subject"]["diff"] for p in client.permission_requests[sid]]
    assert "+ONE" in diffs[0] and "+TWO" in diffs[1] and " ONE" in diffs[1]  # each diff is against the edited file


async def test_session_permissions_merge_over_the_servers_key_by_key(tmp_path):
    import sys

    from lsprotocol import types
    from pytest_lsp import ClientServerConfig

    from conftest import make_client

    config = ClientServerConfig(server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
                                client_factory=make_client)
    client = await config.start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(), initialization_options={"permissions": {"git_commit": "deny"}}))
        root = tmp_path / "ws"
        root.mkdir()
        script = write_script(tmp_path / "s.jsonl", [
            {"tool_calls": [{"name": "create_file", "arguments": {"path": "n.txt", "content": "n"}, "id": "c"},
                            {"name": "git_commit", "arguments": {"message": "m"}, "id": "g"}]},
            {"text": "ok"}])
        sid = await new_session(client, root, script, permissions={"create_file": "auto"})
        await prompt(client, sid)
        finals = {cid: snaps[-1] for cid, snaps in client.tool_calls(sid).items()}
        assert finals["c"]["status"] == "done" and client.permission_requests[sid] == []  # session: auto
        assert finals["g"]["status"] == "canceled" and finals["g"]["cancelReason"] == "policy_denied"  # server: deny
    finally:
        await client.shutdown_session()
        await client.stop()


async def test_close_a_session_cancels_its_turn_and_forgets_it(client, repo, tmp_path):
    import asyncio

    from pygls.exceptions import JsonRpcException

    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r"}], "chunk_size": 1, "delay": 0.05}])
    sid = await new_session(client, repo, script)
    turn = asyncio.ensure_future(prompt(client, sid))
    await client.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "tool_call")
    assert await client.call("toolwire/session/close", {"sessionId": sid}) == {"closed": True}
    assert (await asyncio.wait_for(turn, 20))["stopReason"] == "cancelled"
    assert await client.call("toolwire/session/close", {"sessionId": sid}) == {"closed": False}
    with pytest.raises(JsonRpcException) as info:
        await client.call("toolwire/session/snapshot", {"sessionId": sid})
    assert info.value.code == -31002
