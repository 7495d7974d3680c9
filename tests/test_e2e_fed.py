"""Client-fed mode over the real protocol: ``toolwire/toolCalls/merge`` and ``toolwire/toolCalls/run``.

A real server over stdio (one per module), the editor's side played by the test
client: it feeds raw provider chunks in many small batches, receives the same
``toolwire/session/update`` notifications a server-run turn pushes, answers the
permission requests, and gets back one model-shaped result per call.

Every recorded stream of ``tests/data/corpus`` is fed (seeded random batches of
1–3 payloads, as objects with ``format`` and as JSON text without it) and must
end in the calls ``expected.json`` gives.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from conftest import DATA, ToolwireTestClient
from test_corpus import PROVIDER_KINDS, expected_format
from toolwire.streaming.framing import frames_from_bytes
from toolwire.streaming.merge import merge_bytes
from toolwire.lsp.call_wire import ARGUMENT_FIELDS, brief_form

pytestmark = pytest.mark.asyncio(loop_scope="module")

MERGE = "toolwire/toolCalls/merge"
RUN = "toolwire/toolCalls/run"
CORPUS = DATA / "corpus"
EXPECTED: dict[str, dict[str, Any]] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))


# --------------------------------------------------------------------- helpers
async def open_session(client: ToolwireTestClient, root: Path, **settings: Any) -> str:
    """A new session on ``root`` (the embedded replay model; fed mode never asks it)."""
    params: dict[str, Any] = {"cwd": str(root), "model": "replay"}
    if settings:
        params["settings"] = settings
    return (await client.call("toolwire/session/new", params))["sessionId"]


def corpus_items(name: str) -> list[Any]:
    """The payloads of a recorded stream as a client would feed them.

    A frame with an event name (SSE ``event:``, AWS ``:event-type``) becomes
    ``{"event": NAME, "data": PAYLOAD}``; the ``[DONE]`` sentinel is the string
    ``"[DONE]"``.
    """
    items: list[Any] = []
    for frame in frames_from_bytes((CORPUS / name).read_bytes()):
        assert frame.error is None, (name, frame.error)
        if frame.done:
            items.append("[DONE]")
        elif frame.event is not None:
            items.append({"event": frame.event, "data": frame.payload})
        else:
            items.append(frame.payload)
    return items


def as_text(item: Any, rng: random.Random) -> str:
    """One payload as JSON text, sometimes with an SSE ``data:`` prefix (with or without its space)."""
    text = item if item == "[DONE]" else json.dumps(item, ensure_ascii=rng.random() < 0.5)
    return rng.choice(["", "data: ", "data:"]) + text


def batches(items: list[Any], rng: random.Random) -> list[list[Any]]:
    """Split ``items`` into consecutive batches of 1–3."""
    out: list[list[Any]] = []
    pos = 0
    while pos < len(items):
        size = rng.randint(1, 3)
        out.append(items[pos:pos + size])
        pos += size
    return out


async def feed(client: ToolwireTestClient, sid: str, stream_id: str, items: list[Any], rng: random.Random,
               fmt: str | None = None) -> list[dict[str, Any]]:
    """Feed ``items`` in random small batches, then end the stream (sometimes with the last batch).

    Returns:
        Every merge result, in order.
    """
    parts = batches(items, rng)
    end_with_last = bool(parts) and rng.random() < 0.5
    results = []
    for n, chunks in enumerate(parts):
        params: dict[str, Any] = {"sessionId": sid, "streamId": stream_id, "chunks": chunks}
        if fmt is not None and n == 0:
            params["format"] = fmt
        if end_with_last and n == len(parts) - 1:
            params["end"] = True
        results.append(await client.call(MERGE, params))
    if not end_with_last:
        results.append(await client.call(MERGE, {"sessionId": sid, "streamId": stream_id, "chunks": [], "end": True}))
    return results


def final_states(client: ToolwireTestClient, sid: str, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The full final state of every call the merge results mention, in call order.

    Merge results carry the calls without their argument fields; the state is the
    one the client rebuilt from the session's updates (``ToolwireTestClient.updates``).
    """
    last: dict[int, dict[str, Any]] = {}
    for result in results:
        for call in result["toolCalls"]:
            assert not set(call) & set(ARGUMENT_FIELDS), call  # those travel in the notifications only
            last[call["index"]] = call
    rebuilt = client.tool_calls(sid)
    out = []
    for index in sorted(last):
        brief = last[index]
        full = rebuilt[brief["toolCallId"] or f"#{index}"][-1]
        assert brief.items() <= full.items(), (brief, full)
        out.append(full)
    return out


def pushed(client: ToolwireTestClient, sid: str, kind: str) -> list[dict[str, Any]]:
    """The session's updates of one ``sessionUpdate`` kind, in arrival order."""
    return [u for u in client.updates[sid] if u["sessionUpdate"] == kind]


def assert_revs_increase(snapshots: list[dict[str, Any]]) -> None:
    """Per call (by index: one stream per session here), every snapshot has a greater rev."""
    seen: dict[int, int] = {}
    for snap in snapshots:
        index = snap["index"]
        assert snap["rev"] > seen.get(index, -1), (index, snap["rev"], seen.get(index))
        seen[index] = snap["rev"]


def check_against_expected(name: str, calls: list[dict[str, Any]]) -> None:
    """Final wire states equal the corpus expectation (same rules as tests/test_corpus.py)."""
    expected = EXPECTED[name]["calls"]
    assert [c["name"] for c in calls] == [w["name"] for w in expected], name
    for call, want in zip(calls, expected):
        label = f"{name} call {call['index']}"
        if want.get("id"):
            assert call["toolCallId"] == want["id"], label
        else:
            assert call["toolCallId"], f"{label}: a stable id must be generated"
        if "arguments_text" in want:
            assert call["argumentsText"] == want["arguments_text"], label
        want_kind = want.get("kind")
        assert call["kind"] == (want_kind if want_kind in PROVIDER_KINDS else "function"), label
        if want["arguments"] is None:
            assert call["status"] == "errored", label
            assert call["error"]["code"] == "truncated", label
            assert call["arguments"] is None, label
        else:
            assert call["status"] == "generated", (label, call.get("error"))
            assert call["arguments"] == want["arguments"], label


async def feed_and_check(client: ToolwireTestClient, root: Path, name: str, mode: str) -> None:
    """Feed one corpus stream in one of two ways, on its own session, and check everything."""
    rng = random.Random(f"{name}/{mode}")
    sid = await open_session(client, root)
    items = corpus_items(name)
    if mode == "objects+format":
        items = [item for item in items if item != "[DONE]"]
        results = await feed(client, sid, "resp", items, rng, fmt=expected_format(name))
    else:
        results = await feed(client, sid, "resp", [as_text(item, rng) for item in items], rng)
    assert results[-1]["ended"] is True
    assert results[-1]["format"] == expected_format(name)
    assert all(r["ended"] is False for r in results[:-1])
    calls = final_states(client, sid, results)
    check_against_expected(name, calls)

    # The pushed updates are the answered ones (which leave out the argument fields), in order,
    # with increasing revs.
    sent = [p["update"]["toolCall"] for p in client.raw_updates[sid] if p["update"]["sessionUpdate"] == "tool_call"]
    assert [brief_form(u) for u in sent] == [call for r in results for call in r["toolCalls"]]
    assert_revs_increase(sent)
    # Text and reasoning reach the client as chunks, all of it.
    reference = merge_bytes((CORPUS / name).read_bytes())
    text = "".join(u["content"]["text"] for u in pushed(client, sid, "agent_message_chunk"))
    thought = "".join(u["content"]["text"] for u in pushed(client, sid, "agent_thought_chunk"))
    assert (text, thought) == (reference.text, reference.reasoning), name
    # Nothing of a turn: fed mode has no turn states and no usage.
    assert not pushed(client, sid, "turn") and not pushed(client, sid, "usage")


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    """One OpenAI Chat Completions stream chunk."""
    return {"id": "chatcmpl-fed", "object": "chat.completion.chunk", "created": 1, "model": "test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def chat_stream(calls: list[tuple[str, str, str]], text: str = "", piece: int = 7) -> list[dict[str, Any]]:
    """An OpenAI chat stream: optional text, then ``(id, name, argument text)`` calls with the
    argument text split every ``piece`` characters, then ``finish_reason: tool_calls``."""
    chunks = [chat_chunk({"role": "assistant", "content": ""})]
    if text:
        chunks += [chat_chunk({"content": text[i:i + 5]}) for i in range(0, len(text), 5)]
    for index, (call_id, name, args) in enumerate(calls):
        chunks.append(chat_chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                                  "function": {"name": name, "arguments": ""}}]}))
        for i in range(0, len(args), piece):
            chunks.append(chat_chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i:i + piece]}}]}))
    chunks.append(chat_chunk({}, finish="tool_calls"))
    return chunks


def edit_args(path: str, old: str, new: str) -> str:
    return json.dumps({"path": path, "old_string": old, "new_string": new})


# ------------------------------------------------------------- corpus streams
@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_corpus_stream_fed_in_small_batches(client, tmp_path, name):
    await asyncio.gather(
        feed_and_check(client, tmp_path, name, "objects+format"),
        feed_and_check(client, tmp_path, name, "text+detected"),
    )


async def test_fed_stream_pushes_the_same_updates_as_a_server_run_turn(client, tmp_path):
    """The same OpenAI chat stream, fed and run by the server's replay model: same update kinds,
    same call shapes, same text."""
    args = json.dumps({"path": "hello.txt"})
    stream = chat_stream([("call_same", "read_file", args)], text="Reading the file.", piece=3)
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in stream) + "data: [DONE]\n\n"
    (tmp_path / "resp.sse").write_text(body)
    (tmp_path / "hello.txt").write_text("hello\n")
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"stream": "resp.sse"}) + "\n")

    turn_sid = (await client.call("toolwire/session/new", {"cwd": str(tmp_path), "model": f"replay:{script}"}))["sessionId"]
    await client.call("toolwire/session/prompt", {"sessionId": turn_sid, "prompt": "go"})
    fed_sid = await open_session(client, tmp_path)
    await feed(client, fed_sid, "r1", [f"data: {json.dumps(c)}" for c in stream] + ["data: [DONE]"],
               random.Random(7))

    def kinds(sid: str) -> set[str]:
        return {u["sessionUpdate"] for u in client.updates[sid]}

    assert kinds(fed_sid) == kinds(turn_sid) - {"turn", "usage"} == {"tool_call", "agent_message_chunk"}
    fed_text = "".join(u["content"]["text"] for u in pushed(client, fed_sid, "agent_message_chunk"))
    turn_text = "".join(u["content"]["text"] for u in pushed(client, turn_sid, "agent_message_chunk"))
    assert fed_text == "Reading the file." and turn_text.startswith(fed_text)
    fed_calls = client.tool_calls(fed_sid)["call_same"]
    turn_calls = client.tool_calls(turn_sid)["call_same"]
    assert [s["status"] for s in fed_calls][0] == "generating" and fed_calls[-1]["status"] == "generated"
    assert_revs_increase(fed_calls)
    assert set(fed_calls[-1]) == set(next(s for s in turn_calls if s["status"] == "generated"))
    generated = next(s for s in turn_calls if s["status"] == "generated")
    for key in ("toolCallId", "index", "name", "kind", "argumentsText", "arguments", "path"):
        assert fed_calls[-1][key] == generated[key], key


async def test_payloads_as_json_text_with_data_prefix_and_event_wrappers(client, tmp_path):
    """JSON text, ``data:`` prefixes, ``[DONE]``, and ``{"event", "data"}`` with the data as text."""
    sid = await open_session(client, tmp_path)
    name = "anthropic__text-then-tool-use.sse"
    chunks = []
    for n, item in enumerate(corpus_items(name)):
        if n % 3 == 0:
            chunks.append({"event": item["event"], "data": json.dumps(item["data"])})
        elif n % 3 == 1:
            chunks.append("data: " + json.dumps(item))
        else:
            chunks.append(json.dumps(item))
    results = await feed(client, sid, "a", chunks, random.Random(3))
    check_against_expected(name, final_states(client, sid, results))
    assert results[-1]["format"] == "anthropic"

    sid = await open_session(client, tmp_path)
    name = "openai__chat-single-call-nyc.sse"
    lines = [line for line in (CORPUS / name).read_text().splitlines() if line.startswith("data:")]
    assert lines[-1].strip() == "data: [DONE]"
    results = await feed(client, sid, "b", lines, random.Random(4))
    check_against_expected(name, final_states(client, sid, results))


async def test_format_alias_is_answered_by_its_canonical_name(client, tmp_path):
    sid = await open_session(client, tmp_path)
    stream = chat_stream([("c1", "read_file", '{"path": "x"}')])
    result = await client.call(MERGE, {"sessionId": sid, "streamId": "s", "format": "openai", "chunks": stream,
                                       "end": True})
    assert result["format"] == "openai-chat" and result["ended"] is True
    assert [c["status"] for c in result["toolCalls"]] == ["generated"]


async def test_format_may_come_after_undetectable_chunks(client, tmp_path):
    """Chunks that tell no format are held; ``format`` on a later batch applies them."""
    sid = await open_session(client, tmp_path)
    name = "anthropic__text-then-tool-use.sse"
    bare = [item["data"] for item in corpus_items(name)]  # event names stripped
    ping = {"type": "ping"}
    first = await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": [ping]})
    assert first == {"toolCalls": [], "format": None, "ended": False}
    rest = await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": bare, "format": "anthropic",
                                     "end": True})
    check_against_expected(name, final_states(client, sid, [rest]))
    # a format contradicting the detected one is refused
    sid = await open_session(client, tmp_path)
    await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": bare[:2]})
    with pytest.raises(JsonRpcInvalidParams, match="gemini"):
        await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": bare[2:], "format": "gemini"})


# --------------------------------------------------------------------- errors
async def test_chunk_that_is_not_json_rejects_the_batch_and_the_stream_keeps_going(client, tmp_path):
    sid = await open_session(client, tmp_path)
    name = "openai__chat-parallel-two-tools.sse"
    items = [i for i in corpus_items(name) if i != "[DONE]"]
    first = await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": items[:5]})
    before = len(client.updates[sid])
    with pytest.raises(JsonRpcInvalidParams) as info:
        await client.call(MERGE, {"sessionId": sid, "streamId": "s",
                                  "chunks": [items[5], "data: {not json", items[6]]})
    message = str(info.value)
    assert "chunk 1" in message and "{not json" in message, message
    assert len(client.updates[sid]) == before  # nothing of the rejected batch was merged or pushed
    # The same batch without the bad chunk, then the rest: the stream ends exactly as recorded.
    rest = await feed(client, sid, "s", items[5:], random.Random(5))
    check_against_expected(name, final_states(client, sid, [first, *rest]))

    with pytest.raises(JsonRpcInvalidParams, match="not JSON"):
        await client.call(MERGE, {"sessionId": sid, "streamId": "t", "chunks": ["", "{}"]})


async def test_chunks_after_end_are_refused_and_end_is_idempotent(client, tmp_path):
    sid = await open_session(client, tmp_path)
    stream = chat_stream([("c1", "read_file", '{"path": "x"}')])
    done = await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": stream, "end": True})
    assert done["ended"] is True
    with pytest.raises(JsonRpcInvalidParams, match="already ended"):
        await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": stream[-1:]})
    again = await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": [], "end": True})
    assert again == {"toolCalls": [], "format": "openai-chat", "ended": True}


async def test_unknown_or_undetectable_format_is_invalid_params(client, tmp_path):
    sid = await open_session(client, tmp_path)
    stream = chat_stream([("c1", "read_file", '{"path": "x"}')])
    with pytest.raises(JsonRpcInvalidParams, match="unknown stream format 'klingon'"):
        await client.call(MERGE, {"sessionId": sid, "streamId": "s", "format": "klingon", "chunks": stream})
    # the failed first batch opened nothing: the same stream id starts afresh
    ok = await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": stream, "end": True})
    assert ok["format"] == "openai-chat" and [c["status"] for c in ok["toolCalls"]] == ["generated"]
    # end on chunks that tell no format: refused, the stream stays open for a format
    with pytest.raises(JsonRpcInvalidParams, match="pass format"):
        await client.call(MERGE, {"sessionId": sid, "streamId": "u", "chunks": [{"hello": 1}], "end": True})
    late = await client.call(MERGE, {"sessionId": sid, "streamId": "u", "chunks": stream, "format": "openai-chat",
                                     "end": True})
    # stream "s" already has a call "c1" in this session: ids are unique per session (protocol.md)
    assert late["ended"] is True and [c["toolCallId"] for c in late["toolCalls"]] == ["c1_2"]


async def test_unknown_session_is_31002(client):
    for method, params in ((MERGE, {"chunks": []}), (RUN, {})):
        with pytest.raises(JsonRpcException) as info:
            await client.call(method, {"sessionId": "nope", "streamId": "s", **params})
        assert info.value.code == -31002, method


async def test_malformed_params_name_the_field(client, tmp_path):
    sid = await open_session(client, tmp_path)
    with pytest.raises(JsonRpcInvalidParams, match="streamId"):
        await client.call(MERGE, {"sessionId": sid, "chunks": []})
    with pytest.raises(JsonRpcInvalidParams, match="chunks"):
        await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": "not a list"})
    with pytest.raises(JsonRpcInvalidParams, match="toolCallIds"):
        await client.call(RUN, {"sessionId": sid, "streamId": "s", "toolCallIds": "c1"})


async def test_run_errors(client, repo):
    sid = await open_session(client, repo)
    with pytest.raises(JsonRpcInvalidParams, match="unknown stream 'nope'"):
        await client.call(RUN, {"sessionId": sid, "streamId": "nope"})
    stream = chat_stream([("c1", "read_file", '{"path": "hello.txt"}')])
    await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": stream})
    with pytest.raises(JsonRpcInvalidParams, match="has not ended"):
        await client.call(RUN, {"sessionId": sid, "streamId": "s"})
    await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": [], "end": True})
    with pytest.raises(JsonRpcInvalidParams, match="c9") as info:
        await client.call(RUN, {"sessionId": sid, "streamId": "s", "toolCallIds": ["c1", "c9"]})
    assert "c1" not in str(info.value).split("no calls", 1)[-1]
    # nothing ran: the call is still waiting
    assert client.statuses(sid)["c1"] == ["generating", "generated"]


# ------------------------------------------------------------------------ run
async def test_run_real_tools_one_result_per_call_in_call_order(client, repo):
    sid = await open_session(client, repo)
    stream = chat_stream([
        ("call_read", "read_file", json.dumps({"path": "hello.txt"})),
        ("call_edit", "edit_file", edit_args("hello.txt", "hello", "hello world")),
        ("call_unknown", "launch_rockets", "{}"),
        ("call_bad", "read_file", '{"path": "hello.txt"'),
    ], text="Let me fix that.", piece=4)
    results = await feed(client, sid, "resp-1", stream, random.Random(11))
    assert [c["status"] for c in final_states(client, sid, results)] == ["generated", "generated", "generated", "errored"]

    answer = await client.call(RUN, {"sessionId": sid, "streamId": "resp-1"})
    out = answer["results"]
    assert [r["toolCallId"] for r in out] == ["call_read", "call_edit", "call_unknown", "call_bad"]
    assert [r["name"] for r in out] == ["read_file", "edit_file", "launch_rockets", "read_file"]
    assert [r["status"] for r in out] == ["done", "done", "errored", "errored"]
    assert [r["isError"] for r in out] == [False, False, True, True]
    assert all(set(r) == {"toolCallId", "name", "status", "content", "isError"} for r in out)
    assert all(isinstance(r["content"], str) and r["content"] for r in out)
    read, edit, unknown, bad = (r["content"] for r in out)
    assert "hello" in read and "world" not in read  # the read ran before the edit (per-path lock, call order)
    assert "hello.txt" in edit
    assert unknown.startswith("Error (unknown_tool):") and "launch_rockets" in unknown
    assert bad.startswith("Error (") and '{"path": "hello.txt"' in bad
    assert (repo / "hello.txt").read_text() == "hello world\n"

    # Approval: only the edit asked, with its exact diff.
    [asked] = client.permission_requests[sid]
    assert asked["toolCall"]["toolCallId"] == "call_edit" and asked["subject"]["kind"] == "edit"
    assert "+hello world" in asked["subject"]["diff"]
    # Updates: the same status sequences as a server-run turn.
    statuses = client.statuses(sid)
    assert statuses["call_read"] == statuses["call_edit"] == ["generating", "generated", "calling", "done"]
    assert statuses["call_unknown"] == ["generating", "generated", "errored"]
    assert statuses["call_bad"] == ["generating", "errored"]
    for snaps in client.tool_calls(sid).values():
        assert_revs_increase(snaps)
    assert client.tool_calls(sid)["call_edit"][-1]["result"]["ok"] is True

    # Running again answers the recorded results and runs nothing.
    updates_before = len(client.updates[sid])
    again = await client.call(RUN, {"sessionId": sid, "streamId": "resp-1"})
    assert again == answer
    assert (repo / "hello.txt").read_text() == "hello world\n"
    assert len(client.permission_requests[sid]) == 1 and len(client.updates[sid]) == updates_before


async def test_run_subset_answers_in_call_order_and_the_rest_later(client, repo):
    """``toolCallIds`` picks calls; results come in call order (the stream's), one per id."""
    for name in ("a.txt", "b.txt", "c.txt"):
        (repo / name).write_text(f"{name}\n")
    sid = await open_session(client, repo)
    stream = chat_stream([
        ("a", "read_file", json.dumps({"path": "a.txt"})),
        ("b", "edit_file", edit_args("b.txt", "b.txt", "B")),
        ("c", "read_file", json.dumps({"path": "c.txt"})),
    ])
    await feed(client, sid, "s", stream, random.Random(13))
    client.answers[sid] = [{"optionId": "reject", "reason": "not now"}]

    first = await client.call(RUN, {"sessionId": sid, "streamId": "s", "toolCallIds": ["c", "a", "c"]})
    assert [r["toolCallId"] for r in first["results"]] == ["a", "c"]
    assert client.statuses(sid)["b"] == ["generating", "generated"]  # untouched

    rest = await client.call(RUN, {"sessionId": sid, "streamId": "s"})
    assert [r["toolCallId"] for r in rest["results"]] == ["a", "b", "c"]
    assert [rest["results"][0], rest["results"][2]] == first["results"]  # recorded, not run again
    b = rest["results"][1]
    assert b["status"] == "canceled" and b["isError"] is True
    assert "rejected" in b["content"] and "not now" in b["content"]
    assert (repo / "b.txt").read_text() == "b.txt\n"
    assert client.statuses(sid)["a"] == ["generating", "generated", "calling", "done"]


async def test_concurrent_runs_of_one_stream_run_each_call_once(client, repo):
    sid = await open_session(client, repo)
    stream = chat_stream([("e1", "edit_file", edit_args("hello.txt", "hello", "hello again"))])
    await feed(client, sid, "s", stream, random.Random(17))
    answers = await asyncio.gather(*(client.call(RUN, {"sessionId": sid, "streamId": "s"}) for _ in range(3)))
    assert all(a == answers[0] for a in answers)
    assert [r["status"] for r in answers[0]["results"]] == ["done"]
    assert len(client.permission_requests[sid]) == 1
    assert (repo / "hello.txt").read_text() == "hello again\n"


async def test_many_small_batches_of_a_long_stream_then_run(client, repo):
    """A long create_file argument fed one tiny fragment per request, then run."""
    sid = await open_session(client, repo, permissions={"create_file": "auto"})
    content = "".join(f"line {n}: {'é' if n % 7 == 0 else 'x'}\n" for n in range(300))
    args = json.dumps({"path": "big.txt", "content": content})
    stream = chat_stream([("big", "create_file", args)], piece=9)
    assert len(stream) > 300
    results = await feed(client, sid, "long", [json.dumps(c) for c in stream], random.Random(19))
    assert len(results) > 100
    [call] = final_states(client, sid, results)
    assert call["status"] == "generated" and call["argumentsText"] == args and call["path"] == "big.txt"
    snaps = client.tool_calls(sid)["big"]
    assert_revs_increase(snaps)
    assert any(s["partialArguments"] and s["status"] == "generating" for s in snaps)
    out = await client.call(RUN, {"sessionId": sid, "streamId": "long"})
    assert [r["status"] for r in out["results"]] == ["done"]
    assert (repo / "big.txt").read_text(encoding="utf-8") == content
    assert client.permission_requests[sid] == []


async def test_calls_without_ids_get_stable_ids_at_end_and_can_be_run(client, repo):
    """Servers that send no call ids: the end names every call ``<streamId>-<index>``."""
    sid = await open_session(client, repo)
    stream = [
        chat_chunk({"tool_calls": [{"index": 0, "function": {"name": "read_file", "arguments": '{"path": '}}]}),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"hello.txt"}'}}]}),
        chat_chunk({"tool_calls": [{"index": 1, "function": {"name": "git_status", "arguments": ""}}]}),
        chat_chunk({}, finish="tool_calls"),
    ]
    results = await feed(client, sid, "noids", stream, random.Random(23))
    calls = final_states(client, sid, results)
    assert [c["toolCallId"] for c in calls] == ["noids-0", "noids-1"]
    assert [c["status"] for c in calls] == ["generated", "generated"]
    out = await client.call(RUN, {"sessionId": sid, "streamId": "noids", "toolCallIds": ["noids-1"]})
    assert [(r["toolCallId"], r["status"]) for r in out["results"]] == [("noids-1", "done")]


async def test_provider_executed_calls_are_shown_but_never_run(client, repo):
    sid = await open_session(client, repo)
    name = "anthropic__server-tool-then-client-tool-interleaved-text.sse"
    results = await feed(client, sid, "s", corpus_items(name), random.Random(29))
    server_call, client_call = final_states(client, sid, results)
    assert server_call["kind"] == "server_tool_use" and client_call["kind"] == "function"
    with pytest.raises(JsonRpcInvalidParams, match="no client calls"):
        await client.call(RUN, {"sessionId": sid, "streamId": "s", "toolCallIds": [server_call["toolCallId"]]})
    out = await client.call(RUN, {"sessionId": sid, "streamId": "s"})
    [only] = out["results"]
    assert only["toolCallId"] == client_call["toolCallId"] and only["status"] == "errored"
    assert only["content"].startswith("Error (unknown_tool):")  # get_exchange_rate is not a Toolwire tool


async def test_an_empty_stream_ends_with_no_calls(client, tmp_path):
    sid = await open_session(client, tmp_path)
    result = await client.call(MERGE, {"sessionId": sid, "streamId": "empty", "chunks": ["data: [DONE]"], "end": True})
    assert result == {"toolCalls": [], "format": None, "ended": True}
    assert (await client.call(RUN, {"sessionId": sid, "streamId": "empty"})) == {"results": []}


async def test_a_fed_call_can_be_cancelled_alone_and_updates_name_their_stream(client, repo):
    sid = await open_session(client, repo)
    stream = chat_stream([
        ("call_new", "create_file", json.dumps({"path": "new.txt", "content": "x\n"})),
        ("call_read", "read_file", json.dumps({"path": "hello.txt"})),
    ])
    await feed(client, sid, "resp-c", stream, random.Random(3))
    client.permission_asked.clear()
    client.permission_hold = asyncio.Event()
    try:
        running = asyncio.ensure_future(client.call(RUN, {"sessionId": sid, "streamId": "resp-c"}))
        await asyncio.wait_for(client.permission_asked.wait(), 20)
        assert await client.call("toolwire/toolCall/cancel", {"sessionId": sid, "toolCallId": "call_new"}) == {"cancelled": True}
        client.permission_hold.set()
        out = (await asyncio.wait_for(running, 20))["results"]
    finally:
        client.permission_hold = None
    assert [(r["toolCallId"], r["status"]) for r in out] == [("call_new", "canceled"), ("call_read", "done")]
    assert out[0]["content"].startswith("Canceled by the user")
    assert not (repo / "new.txt").exists()
    assert client.tool_calls(sid)["call_new"][-1]["cancelReason"] == "call_cancelled"
    fed = [p for p in client.raw_updates[sid] if p["update"]["sessionUpdate"] == "tool_call"]
    assert fed and all(p.get("streamId") == "resp-c" for p in fed)


async def test_a_queued_fed_call_can_be_cancelled_before_it_is_asked_about(client, repo):
    sid = await open_session(client, repo)
    stream = chat_stream([
        ("call_one", "create_file", json.dumps({"path": "one.txt", "content": "1\n"})),
        ("call_two", "create_file", json.dumps({"path": "two.txt", "content": "2\n"})),
    ])
    await feed(client, sid, "resp-q", stream, random.Random(5))
    client.permission_asked.clear()
    client.permission_hold = asyncio.Event()
    try:
        running = asyncio.ensure_future(client.call(RUN, {"sessionId": sid, "streamId": "resp-q"}))
        await asyncio.wait_for(client.permission_asked.wait(), 20)  # asking about call_one
        assert await client.call("toolwire/toolCall/cancel", {"sessionId": sid, "toolCallId": "call_two"}) == {"cancelled": True}
        client.permission_hold.set()
        out = (await asyncio.wait_for(running, 20))["results"]
    finally:
        client.permission_hold = None
    assert [(r["toolCallId"], r["status"]) for r in out] == [("call_one", "done"), ("call_two", "canceled")]
    assert [p["toolCall"]["toolCallId"] for p in client.permission_requests[sid]] == ["call_one"]
    assert (repo / "one.txt").exists() and not (repo / "two.txt").exists()


async def test_closing_the_session_stops_its_fed_run(client, repo):
    sid = await open_session(client, repo)
    stream = chat_stream([("call_new", "create_file", json.dumps({"path": "fed.txt", "content": "x\n"}))])
    await feed(client, sid, "resp-close", stream, random.Random(8))
    client.permission_asked.clear()
    client.permission_hold = asyncio.Event()
    try:
        running = asyncio.ensure_future(client.call(RUN, {"sessionId": sid, "streamId": "resp-close"}))
        await asyncio.wait_for(client.permission_asked.wait(), 20)
        assert await client.call("toolwire/session/close", {"sessionId": sid}) == {"closed": True}
        out = (await asyncio.wait_for(running, 20))["results"]
        client.permission_hold.set()
    finally:
        client.permission_hold = None
    assert [(r["toolCallId"], r["status"]) for r in out] == [("call_new", "canceled")]
    assert not (repo / "fed.txt").exists()
