"""Issue 11 §1: one stable, unique id per call within a session, from its first
snapshot to the history sent to the model, whatever ids the provider sends."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from pygls.exceptions import JsonRpcInvalidParams

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


async def test_fed_calls_renamed_in_the_session_carry_the_providers_id(client, repo):
    """Two client-fed streams reuse the provider's ids: the later calls are renamed
    ``<id>_<n>`` and every form of them says the provider's own id in
    ``providerCallId``, so the client can send each result back under it."""
    from test_e2e_fed import chat_stream, edit_args
    from toolwire.lsp.messages import ToolCallBrief, ToolCallRunResult
    from toolwire.lsp.protocol import ToolCallUpdateWire, ToolCallWire

    (repo / "other.txt").write_text("other\n")
    sid = (await client.call("toolwire/session/new", {"cwd": str(repo), "model": "replay"}))["sessionId"]
    merge, run = "toolwire/toolCalls/merge", "toolwire/toolCalls/run"
    first = await client.call(merge, {"sessionId": sid, "streamId": "resp-1", "end": True, "chunks": chat_stream(
        [("call_1", "read_file", json.dumps({"path": "hello.txt"}))])})
    assert first["toolCalls"][0]["toolCallId"] == "call_1" and "providerCallId" not in first["toolCalls"][0]
    # the second response numbers its calls from 1 again; its "call_1_2" collides with the renamed call_1
    second = await client.call(merge, {"sessionId": sid, "streamId": "resp-2", "end": True, "chunks": chat_stream([
        ("call_1", "edit_file", edit_args("other.txt", "other", "changed")),
        ("call_1_2", "read_file", json.dumps({"path": "other.txt"})),
    ])})
    briefs = second["toolCalls"]
    assert [(b["toolCallId"], b["providerCallId"]) for b in briefs] == [("call_1_2", "call_1"),
                                                                        ("call_1_2_2", "call_1_2")]
    for brief in [*first["toolCalls"], *briefs]:
        ToolCallBrief.model_validate(brief)
    sent = [p["update"]["toolCall"] for p in client.raw_updates[sid] if p["update"]["sessionUpdate"] == "tool_call"]
    by_stream: dict[str, set] = defaultdict(set)
    for params in client.raw_updates[sid]:
        if params["update"]["sessionUpdate"] == "tool_call":
            call = params["update"]["toolCall"]
            by_stream[params["streamId"]].add((call["toolCallId"], call.get("providerCallId")))
    assert by_stream == {"resp-1": {("call_1", None)},
                         "resp-2": {("call_1_2", "call_1"), ("call_1_2_2", "call_1_2")}}  # in every update
    for update in sent:
        ToolCallUpdateWire.model_validate(update)

    answer = await client.call(run, {"sessionId": sid, "streamId": "resp-2"})
    results = answer["results"]
    assert [(r["toolCallId"], r["providerCallId"], r["status"]) for r in results] == [
        ("call_1_2", "call_1", "done"), ("call_1_2_2", "call_1_2", "done")]
    assert "changed" in results[1]["content"]  # the read ran after the edit, under its own provider id
    for result in results:
        ToolCallRunResult.model_validate(result)
    [asked] = client.permission_requests[sid]  # the edit's approval names both ids
    assert (asked["toolCall"]["toolCallId"], asked["toolCall"]["providerCallId"]) == ("call_1_2", "call_1")
    ToolCallWire.model_validate(asked["toolCall"])
    assert (repo / "other.txt").read_text() == "changed\n"

    plain = (await client.call(run, {"sessionId": sid, "streamId": "resp-1"}))["results"]
    assert [r["toolCallId"] for r in plain] == ["call_1"] and "providerCallId" not in plain[0]
    # runs name calls by toolCallId: the provider's reused id names the first stream's call only
    with pytest.raises(JsonRpcInvalidParams, match="call_1"):
        await client.call(run, {"sessionId": sid, "streamId": "resp-2", "toolCallIds": ["call_1"]})


async def test_a_server_run_turn_shows_the_providers_id_of_a_renamed_call(client, tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    call = {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}, "id": "call_1"}]}
    script = write_script(tmp_path / "s.jsonl", [call, {"text": "one"}, call, {"text": "two"}])
    sid = await new_session(client, root, script)
    for text in ("read", "again"):
        assert (await prompt(client, sid, text))["stopReason"] == "end_turn"
    ids = {(u["toolCall"]["toolCallId"], u["toolCall"].get("providerCallId"))
           for u in client.updates[sid] if u["sessionUpdate"] == "tool_call"}
    assert ids == {("call_1", None), ("call_1_2", "call_1")}
    snapshot = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    assert [(c["toolCallId"], c["providerCallId"]) for c in snapshot["toolCalls"]] == [("call_1_2", "call_1")]
