"""Issue 11 §1: one stable, unique id per call within a session, from its first
snapshot to the history sent to the model, whatever ids the provider sends."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from conftest import new_session, prompt, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")


def gemini_call(name: str, args: dict, finish: bool = True) -> dict:
    candidate: dict = {"content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]}}
    if finish:
        candidate["finishReason"] = "STOP"
    return {"candidates": [candidate]}  # no call id, no responseId


def assert_ids_unique_and_revs_increase(updates: list[dict]) -> dict[str, list[dict]]:
    by_id: dict[str, list[dict]] = defaultdict(list)
    for update in updates:
        if update["sessionUpdate"] == "tool_call":
            call = update["toolCall"]
            assert call["toolCallId"], call  # an id from the first snapshot on
            by_id[call["toolCallId"]].append(call)
    for cid, snaps in by_id.items():
        revs = [s["rev"] for s in snaps]
        assert revs == sorted(set(revs)), (cid, revs)  # strictly increasing per id: none dropped
        assert len({s["index"] for s in snaps}) == 1 and len({s["name"] for s in snaps}) == 1, cid  # one call
    return by_id


async def test_fed_gemini_calls_without_ids_get_stream_scoped_ids(client, tmp_path):
    sid = await new_session(client, tmp_path, write_script(tmp_path / "s.jsonl", []))
    ids = []
    for stream in ("gem-a", "gem-b"):
        result = await client.call("toolwire/toolCalls/merge", {
            "sessionId": sid, "streamId": stream, "format": "gemini",
            "chunks": [gemini_call("read_file", {"path": "a.txt"})], "end": True})
        ids.append([c["toolCallId"] for c in result["toolCalls"]])
    assert ids == [["gem-a-0"], ["gem-b-0"]]
    assert_ids_unique_and_revs_increase(client.updates[sid])


async def test_two_gemini_responses_without_ids_and_ids_reused_across_turns(client, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    for n in (1, 2):
        (tmp_path / f"g{n}.jsonl").write_text(json.dumps(gemini_call("read_file", {"path": "a.txt"})) + "\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"stream": "g1.jsonl"}, {"stream": "g2.jsonl"}, {"text": "Read twice."},
        # the next turn: a provider that numbers its calls per response reuses "call_1"
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}, "id": "call_1"}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}, "id": "call_1"}]},
        {"text": "Done."},
    ])
    sid = await new_session(client, root, script)
    assert (await prompt(client, sid, "read"))["stopReason"] == "end_turn"
    assert (await prompt(client, sid, "again"))["stopReason"] == "end_turn"
    by_id = assert_ids_unique_and_revs_increase(client.updates[sid])
    assert len(by_id) == 4 and all(snaps[-1]["status"] == "done" for snaps in by_id.values())
    assert "call_1" in by_id and "call_1_2" in by_id
    snapshot = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    sent = [c["id"] for m in snapshot["messages"] if m.get("role") == "assistant" for c in m.get("tool_calls", [])]
    results = [m["tool_call_id"] for m in snapshot["messages"] if m.get("role") == "tool"]
    assert sent == results == list(by_id)  # the model sees the same ids, one result each, in order
    assert len(set(sent)) == 4
