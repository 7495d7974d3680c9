"""``/compact`` as an ACP slash command (protocol.md, "Slash commands"): not a turn (no model
request, no turn id, nothing added to the conversation), it replaces every tool result older
than the last turn by the context-fitting note, whatever the fill, answered by one agent message
``compacted N results, about T tokens freed``. Real ``toolwire acp`` over stdio, the SDK's client
side, every message validated."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from acp import RequestError

from test_acp import RecordingClient, script, start, text
from test_acp_undo import open_session, requests

DROPPED = "[older tool result dropped to fit the context window; it was "


def read(call_id: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "read_file", "arguments": {"path": "hello.txt"}}]}


async def test_compact_replaces_the_results_before_the_last_turn(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    model = script(tmp_path, [read("r1"), read("r2"), {"text": "Read twice."}, read("r3"), {"text": "Again."},
                              {"text": "Third turn."}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}", settings={"replayLog": str(log)}) as (conn, _):
        sid = await open_session(conn, repo, client)
        await conn.prompt(session_id=sid, prompt=text("read hello twice"))
        await conn.prompt(session_id=sid, prompt=text("read it again"))
        sent = len(requests(log))
        before = len(client.updates)
        response = await conn.prompt(session_id=sid, prompt=text(" /compact "))
        assert response.stop_reason == "end_turn"
        (chunk,) = client.updates[before:]  # one agent message, nothing else
        again = len(client.updates)
        await conn.prompt(session_id=sid, prompt=text("/compact"))  # nothing older is left
        (second,) = client.updates[again:]
        with pytest.raises(RequestError) as info:
            await conn.prompt(session_id=sid, prompt=text("/compact all"))
        assert info.value.code == -32602
        assert info.value.data == {"prompt": "/compact: it takes no argument. Usage: /compact"}
        assert len(requests(log)) == sent  # no model request
        await conn.prompt(session_id=sid, prompt=text("go on"))
    history = requests(log)
    kept = {m["tool_call_id"]: m["content"] for m in history[sent - 1]["messages"] if m["role"] == "tool"}
    after = {m["tool_call_id"]: m["content"] for m in history[-1]["messages"] if m["role"] == "tool"}
    assert set(after) == {"r1", "r2", "r3"}
    for call_id in ("r1", "r2"):  # the first turn's results: the note with their size
        assert after[call_id] == f"{DROPPED}{len(kept[call_id])} characters]"
    assert after["r3"] == kept["r3"]  # the last turn's result as it was
    freed = sum(len(json.dumps(kept[c], ensure_ascii=False)) - len(json.dumps(after[c])) for c in ("r1", "r2"))
    message = f"compacted 2 results, about {math.ceil(freed / 4)} tokens freed"
    assert chunk.session_update == "agent_message_chunk" and chunk.content.text == message
    assert chunk.field_meta == {"toolwire": {"compaction": {"compacted": 2, "tokensFreed": math.ceil(freed / 4),
                                                            "message": message}}}
    assert second.content.text == "compacted 0 results, about 0 tokens freed"
    users = [m["content"] for m in history[-1]["messages"] if m["role"] == "user"]
    assert not any("/compact" in str(content) for content in users)
    turns = [u for u in client.updates if u.session_update == "tool_call"]
    assert [u.tool_call_id for u in turns] == ["r1", "r2", "r3"]
    assert not client.invalid, client.invalid
