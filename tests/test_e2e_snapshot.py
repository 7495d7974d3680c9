"""``toolwire/session/snapshot`` (last turn's calls, pending permissions, turn ids) and
``toolwire/toolCall/preview``, over stdio against the real server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from conftest import new_session, prompt, write_script
from toolwire.lsp.messages import SnapshotResult
from toolwire.lsp.protocol import ToolCallPreviewResult
from toolwire.workspace.text import unified_diff

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def snapshot(client, sid: str) -> dict[str, Any]:
    snap = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    SnapshotResult.model_validate(snap)  # the documented shape, every call whole
    return snap


def latest(client, sid: str) -> dict[str, dict[str, Any]]:
    """The newest (status, rev) per call id, from the updates received."""
    return {cid: {"status": snaps[-1]["status"], "rev": snaps[-1]["rev"]} for cid, snaps in client.tool_calls(sid).items()}


def turn_ids(client, sid: str) -> list[str]:
    return [u.get("turnId") for u in client.updates[sid] if u["sessionUpdate"] == "turn"]


async def test_snapshot_after_a_turn_has_its_calls_and_messages_once(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r1"}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "hello.txt", "old_string": "hello", "new_string": "hi"}, "id": "e1"}]},
        {"text": "Done editing."},
        {"text": "Second turn answer."},
    ])
    sid = await new_session(client, repo, script)
    empty = await snapshot(client, sid)
    assert empty["toolCalls"] == [] and empty["turnId"] is None and empty["pendingPermissions"] == []
    await prompt(client, sid, "first")
    snap = await snapshot(client, sid)
    assert snap["running"] is False and snap["turnId"] == "t1" and snap["streaming"] is None
    assert [c["toolCallId"] for c in snap["toolCalls"]] == ["r1", "e1"]  # every call, once, in order
    assert {c["toolCallId"]: {"status": c["status"], "rev": c["rev"]} for c in snap["toolCalls"]} == latest(client, sid)
    edit = snap["toolCalls"][1]
    assert edit["argumentsText"] and edit["arguments"]["new_string"] == "hi" and edit["result"]["ok"] is True
    roles = [m["role"] for m in snap["messages"]]
    assert roles.count("tool") == 2 and roles.count("user") == 1
    assert snap["messages"][-1] == {"role": "assistant", "content": "Done editing."}
    assert set(turn_ids(client, sid)) == {"t1"}
    # a second turn without calls: the snapshot shows that turn (no calls), ids go on
    await prompt(client, sid, "second")
    snap2 = await snapshot(client, sid)
    assert snap2["turnId"] == "t2" and snap2["toolCalls"] == []
    assert snap2["messages"][-1]["content"] == "Second turn answer."
    assert turn_ids(client, sid)[-1] == "t2"
    assert [u["state"] for u in client.updates[sid] if u["sessionUpdate"] == "turn" and u["turnId"] == "t2"] == [
        "started", "model_request", "ended"]


async def hold_turn_at_permission(client, repo: Path, tmp_path: Path, calls: list[dict]) -> tuple[str, asyncio.Future]:
    """Start a turn whose first permission request is held unanswered; returns (sid, prompt future)."""
    script = write_script(tmp_path / "s.jsonl", [{"text": "Proposing.", "tool_calls": calls}, {"text": "ok"}])
    sid = await new_session(client, repo, script)
    client.permission_hold = asyncio.Event()
    client.permission_asked.clear()
    turn = asyncio.ensure_future(prompt(client, sid))
    await asyncio.wait_for(client.permission_asked.wait(), 20)
    return sid, turn


async def release(client, turn: asyncio.Future) -> dict[str, Any]:
    client.permission_hold.set()
    try:
        return await asyncio.wait_for(turn, 20)
    finally:
        client.permission_hold = None


async def test_snapshot_mid_turn_has_the_open_permission_request_and_preview_matches_its_diff(client, repo, tmp_path):
    (repo / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    sid, turn = await hold_turn_at_permission(client, repo, tmp_path, [
        {"name": "edit_file", "arguments": {"path": "crlf.txt", "old_string": "two", "new_string": "TWO\nand more"},
         "id": "e1"}])
    try:
        snap = await snapshot(client, sid)
        assert snap["running"] is True and snap["turnId"] == turn_ids(client, sid)[0]
        [pending] = snap["pendingPermissions"]
        assert pending["toolCall"]["toolCallId"] == "e1" and pending["subject"]["kind"] == "edit"
        assert [o["optionId"] for o in pending["options"]] == ["allow_once", "allow_always", "reject"]
        assert [c["toolCallId"] for c in snap["toolCalls"]] == ["e1"]
        assert snap["toolCalls"][0]["status"] == "generated"
        preview = await client.call("toolwire/toolCall/preview", {"sessionId": sid, "toolCallId": "e1"})
        ToolCallPreviewResult.model_validate(preview)
        assert preview == {"path": "crlf.txt", "before": "one\r\ntwo\r\nthree\r\n",
                           "after": "one\r\nTWO\r\nand more\r\nthree\r\n"}
        # the same dry run as the approval: its diff is the one the user is asked about
        assert unified_diff(preview["before"], preview["after"], "crlf.txt") == pending["subject"]["diff"]
    finally:
        result = await release(client, turn)
    assert result["stopReason"] == "end_turn"
    after = await snapshot(client, sid)
    assert after["pendingPermissions"] == [] and after["toolCalls"][0]["status"] == "done"
    assert (repo / "crlf.txt").read_bytes() == b"one\r\nTWO\r\nand more\r\nthree\r\n"
    with pytest.raises(JsonRpcException) as info:  # no longer pending
        await client.call("toolwire/toolCall/preview", {"sessionId": sid, "toolCallId": "e1"})
    assert info.value.code == -32602 and "not pending" in str(info.value)


@pytest.mark.parametrize("call, expected", [
    ({"name": "create_file", "arguments": {"path": "new/n.txt", "content": "fresh\n"}},
     {"path": "new/n.txt", "before": "", "after": "fresh\n"}),
    ({"name": "delete_file", "arguments": {"path": "hello.txt"}},
     {"path": "hello.txt", "before": "hello\n", "after": ""}),
    ({"name": "multi_edit", "arguments": {"path": "hello.txt", "edits": [
        {"old_string": "hello", "new_string": "a"}, {"old_string": "a", "new_string": "b"}]}},
     {"path": "hello.txt", "before": "hello\n", "after": "b\n"}),
    ({"name": "rename_file", "arguments": {"path": "hello.txt", "new_path": "moved.txt"}},
     {"path": "hello.txt", "before": "hello\n", "after": "hello\n", "newPath": "moved.txt"}),
])
async def test_preview_of_each_edit_tool(client, repo, tmp_path, call, expected):
    client.answers.pop("x", None)
    sid, turn = await hold_turn_at_permission(client, repo, tmp_path, [{**call, "id": "c1"}])
    try:
        preview = await client.call("toolwire/toolCall/preview", {"sessionId": sid, "toolCallId": "c1"})
        assert preview == expected
    finally:
        client.answers[sid] = {"optionId": "reject"}
        await release(client, turn)
    assert (repo / "hello.txt").read_text() == "hello\n"  # rejected: nothing written, preview wrote nothing


async def test_preview_errors_are_invalid_params(client, repo, tmp_path):
    sid, turn = await hold_turn_at_permission(client, repo, tmp_path, [
        {"name": "git_add", "arguments": {"paths": ["hello.txt"]}, "id": "g1"}])
    try:
        for call_id, words in (("g1", "not a file edit"), ("nope", "unknown tool call")):
            with pytest.raises(JsonRpcException) as info:
                await client.call("toolwire/toolCall/preview", {"sessionId": sid, "toolCallId": call_id})
            assert info.value.code == -32602 and words in str(info.value)
        with pytest.raises(JsonRpcException) as info:
            await client.call("toolwire/toolCall/preview", {"sessionId": sid})
        assert info.value.code == -32602 and "toolCallId" in str(info.value)
        with pytest.raises(JsonRpcException) as info:
            await client.call("toolwire/toolCall/preview", {"sessionId": "missing", "toolCallId": "g1"})
        assert info.value.code == -31002
    finally:
        client.answers[sid] = {"optionId": "reject"}
        await release(client, turn)


async def test_snapshot_after_a_cancelled_turn_shows_every_call_terminal(client, repo, tmp_path):
    sid, turn = await hold_turn_at_permission(client, repo, tmp_path, [
        {"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r"},
        {"name": "create_file", "arguments": {"path": "x.txt", "content": "x"}, "id": "c"}])
    client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    result = await release(client, turn)
    assert result["stopReason"] == "cancelled"
    snap = await snapshot(client, sid)
    assert snap["pendingPermissions"] == []
    assert {c["toolCallId"]: c["status"] for c in snap["toolCalls"]} == {"r": "done", "c": "canceled"}
    assert {c["toolCallId"]: {"status": c["status"], "rev": c["rev"]} for c in snap["toolCalls"]} == latest(client, sid)


async def test_snapshot_turns_carry_each_ended_turns_usage_and_message(client, repo, tmp_path):
    """After a reload a client has only the snapshot: each ended turn's summary says
    what its ``usage`` and ``ended`` updates said (tokens summed over the turn's model
    responses, duration, the error message); a running turn has none of them yet."""
    script = write_script(tmp_path / "s.jsonl", [
        {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "u1"}],
         "usage": {"prompt_tokens": 800, "completion_tokens": 90}},
        {"text": "Read it.", "usage": {"prompt_tokens": 12, "completion_tokens": 7}},
        {"text": "This stream breaks " * 8, "chunk_size": 8, "cut_after": 3},
        {"text": "Proposing.", "tool_calls": [{"name": "create_file", "arguments": {"path": "n.txt", "content": "n"}}]},
        {"text": "ok"},
    ])
    sid = await new_session(client, repo, script)
    first = await prompt(client, sid, "first")
    second = await prompt(client, sid, "second")
    assert first["stopReason"] == "end_turn" and second["stopReason"] == "error" and second["message"]
    usages = [u["usage"] for u in client.updates[sid] if u["sessionUpdate"] == "usage"]
    ends = [u for u in client.updates[sid] if u["sessionUpdate"] == "turn" and u["state"] == "ended"]
    assert usages[0]["inputTokens"] == 812 and usages[0]["outputTokens"] == 97
    assert usages[1]["inputTokens"] is None and usages[1]["outputTokens"] is None  # the broken stream reported none
    assert all(isinstance(u["durationMs"], int) and u["durationMs"] >= 0 for u in usages)
    snap = await snapshot(client, sid)
    assert snap["turns"] == [
        {"turnId": "t1", "stopReason": "end_turn", "message": None, "usage": usages[0], "undoable": False, "undone": False},
        {"turnId": "t2", "stopReason": "error", "message": ends[1]["message"], "usage": usages[1],
         "undoable": False, "undone": False},
    ]
    assert "message" not in ends[0]  # nothing to add: the update leaves it out, the summary has null

    # a turn still running (held at its approval) has no stop reason, message or usage yet
    client.permission_hold = asyncio.Event()
    client.permission_asked.clear()
    turn = asyncio.ensure_future(prompt(client, sid, "third"))
    await asyncio.wait_for(client.permission_asked.wait(), 20)
    try:
        running = await snapshot(client, sid)
        assert running["turns"][-1] == {"turnId": "t3", "stopReason": None, "message": None, "usage": None,
                                        "undoable": False, "undone": False}
        assert running["turns"][:2] == snap["turns"]
    finally:
        client.answers[sid] = {"optionId": "reject"}
        await release(client, turn)


async def test_turn_message_and_usage_stay_out_of_the_saved_checkpoint(client, repo, tmp_path):
    """A turn that changed a file is saved in the checkpoint store; its message (which a
    provider's error may fill with an API key, redacted only on the way out) and usage
    are in the snapshot but not in the saved record."""
    from toolwire.agent.checkpoint_store import CheckpointStore

    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "made.txt", "content": "x\n"}}],
         "usage": {"prompt_tokens": 5, "completion_tokens": 3}},
        {"text": "This stream breaks " * 8, "chunk_size": 8, "cut_after": 3},
    ])
    sid = await new_session(client, repo, script)
    result = await prompt(client, sid)
    assert result["stopReason"] == "error" and result["message"]
    summary = (await snapshot(client, sid))["turns"][0]
    assert summary["message"] == result["message"] and summary["usage"]["inputTokens"] == 5
    assert summary["undoable"] is True
    saved = CheckpointStore(Path(repo).resolve()).load(sid, "t1")
    assert saved is not None and "made.txt" in saved["paths"]
    assert "message" not in saved and "usage" not in saved
    assert result["message"] not in json.dumps(saved)


async def test_snapshot_user_messages_give_the_users_own_text(client, repo, tmp_path):
    """The overview (first request) and the undo note (next turn) go to the model in the user
    message; the snapshot keeps that content as sent and gives the user's text as userText, which
    the panel shows after a reload."""
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "hello.txt", "old_string": "hello", "new_string": "hi"}, "id": "e1"}]},
        {"text": "Edited."},
        {"text": "Second answer."},
    ])
    sid = await new_session(client, repo, script)
    await prompt(client, sid, "first prompt")
    undone = await client.call("toolwire/session/undoTurn", {"sessionId": sid})
    assert undone["status"] == "undone", undone
    await prompt(client, sid, "second prompt")
    snap = await snapshot(client, sid)
    users = [m for m in snap["messages"] if m["role"] == "user"]
    assert [m["userText"] for m in users] == ["first prompt", "second prompt"]
    first, second = (m["content"] for m in users)
    assert first.startswith("[Workspace overview at the start of the session") and first.endswith("first prompt")
    assert second.startswith("second prompt") and len(second) > len("second prompt")  # the undo note, as sent
