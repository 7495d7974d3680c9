"""Issue 11 §1: a stream that breaks stops the calls that have not started — even one
whose permission request is open: the request is withdrawn and the call ends
``errored`` (``stream_error``); the file is untouched whatever the user answers later."""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import TERMINAL, new_session, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")

ANTHROPIC_EDIT = [
    ("message_start", {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                            "model": "claude", "content": [], "stop_reason": None,
                                                            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
        "type": "tool_use", "id": "toolu_edit", "name": "edit_file", "input": {}}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
        "type": "input_json_delta", "partial_json": '{"path": "a.txt", "old_string": "one", '}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
        "type": "input_json_delta", "partial_json": '"new_string": "two"}'}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),  # the edit is complete here
    ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Now I"}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " will"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
    ("message_stop", {"type": "message_stop"}),
]


def sse(events) -> str:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)


async def test_a_break_while_the_permission_request_is_open_withdraws_it_and_runs_nothing(client, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (tmp_path / "edit.sse").write_text(sse(ANTHROPIC_EDIT))
    # The connection drops after the text block's first delta: the edit's block was
    # closed (so its permission request is open), the response never completes.
    script = write_script(tmp_path / "s.jsonl", [{"stream": "edit.sse", "cut_after": 7, "delay": 0.05}])
    sid = await new_session(client, root, script)
    hold = asyncio.Event()
    client.permission_hold = hold  # the user answers "allow once" only after the turn ended
    client.permission_asked.clear()
    try:
        turn = asyncio.ensure_future(client.call(
            "toolwire/session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "edit"}]}))
        await asyncio.wait_for(client.permission_asked.wait(), 30)
        result = await asyncio.wait_for(turn, 60)
    finally:
        hold.set()
        client.permission_hold = None
    assert result["stopReason"] == "error", result
    snaps = client.tool_calls(sid)["toolu_edit"]
    final = snaps[-1]
    assert final["status"] == "errored" and final["error"]["code"] == "stream_error", final
    assert "not run: the response broke" in final["error"]["message"]
    assert [s["status"] for s in snaps if s["status"] == "calling"] == []  # it never started
    # the request was withdrawn: the snapshot lists no open permission request
    snapshot = await asyncio.wait_for(client.call("toolwire/session/snapshot", {"sessionId": sid}), 20)
    assert snapshot.get("pendingPermissions", []) == []
    await asyncio.sleep(0)  # let the late "allow once" arrive; the server must ignore it
    follow = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    assert all(c["status"] in TERMINAL for c in follow["toolCalls"])
    assert (root / "a.txt").read_text() == "one\n"
    # the model is told the call did not run (exactly one result for the id)
    tool_messages = [m for m in follow["messages"] if m.get("role") == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["toolu_edit"]
    assert "not run" in tool_messages[0]["content"]
