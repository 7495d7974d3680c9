"""Replay scripts are checked when they are loaded: a bad line is an error naming the
line and the key, at ``toolwire/session/new`` (a real server over stdio), not a turn
that dies later or plays something else than what was written."""

from __future__ import annotations

import json
import pytest
from pygls.exceptions import JsonRpcException

from conftest import new_session, prompt, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")

@pytest.mark.parametrize("line, words", [
    ({"text": "hi", "delay": -1}, ["delay", "0 to 3600", "-1"]),
    ({"text": "hi", "delay": "1"}, ["delay", '"1"']),
    ({"text": "hi", "delay": True}, ["delay"]),
    ({"text": "hi", "delay": 1e9}, ["delay"]),
    ({"txet": "hi"}, ["unknown key 'txet'", "did you mean 'text'"]),
    ({"text": "hi", "cut_after": -2}, ["cut_after", "non-negative integer"]),
    ({"text": "hi", "cut_after": 1.5}, ["cut_after"]),
    ({"text": 5}, ["text must be a string"]),
    ({"text": "x", "tool_calls": [{"name": "read_file", "argument": {}}]},
     ["tool_calls[0]", "unknown key 'argument'", "did you mean 'arguments'"]),
    ({"text": "x", "tool_calls": [{"name": "read_file", "id": 3}]}, ["tool_calls[0]", "id must be a string"]),
    ({"stream": "/etc/passwd"}, ["stream", "no format matched", "/etc/passwd"]),
    ({"stream": "empty.sse"}, ["stream", "no format matched"]),
    ({"stream": "ok.sse", "text": "also"}, ["unknown key 'text'", "a stream line takes"]),
    ({"stream": 5}, ["stream must be the path"]),
])
async def test_a_bad_line_is_refused_at_session_new_naming_line_and_key(client, repo, tmp_path, line, words):
    (tmp_path / "empty.sse").write_bytes(b"")
    (tmp_path / "ok.sse").write_bytes(b'data: {"choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n')
    script = write_script(tmp_path / "s.jsonl", [{"text": "first line is fine"}, line])
    with pytest.raises(JsonRpcException) as info:
        await new_session(client, repo, script)
    message = str(info.value)
    assert f"{script}:2" in message, message
    for word in words:
        assert word in message, (word, message)
    assert len(message) <= 1100


async def test_every_documented_key_loads_and_plays(client, repo, tmp_path):
    """The checks refuse nothing the docs allow: a script using every key plays to the end."""
    stream = tmp_path / "rec.sse"
    stream.write_bytes(b'data: {"choices": [{"index": 0, "delta": {"content": "recorded"}, "finish_reason": null}]}\n\n'
                       b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\ndata: [DONE]\n\n')
    script = tmp_path / "s.jsonl"
    script.write_text("\n".join(json.dumps(line) for line in [
        {"text": "reading", "chunk_size": 4, "delay": 0, "usage": {"prompt_tokens": 3, "completion_tokens": 2},
         "tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "c1"},
                        {"name": "read_file", "arguments": '{"path": "hello.txt"}'}]},
        {"stream": "rec.sse", "delay": 0.001},
    ]) + "\n")
    sid = await new_session(client, repo, script)
    result = await prompt(client, sid)
    assert result["stopReason"] == "end_turn"
    snapshot = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    assert any("recorded" in json.dumps(m) for m in snapshot["messages"])
