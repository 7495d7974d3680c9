"""The update form of ``tool_call`` updates (protocol.md, "ToolCall updates").

Argument text travels as appended pieces (``argumentsDelta``), whole once at
completion; ``partialArguments`` is a bounded preview; ``arguments`` only when it
changed. A client rebuilds the exact state (:class:`toolwire.headless.mirror.CallMirror`),
and the bytes sent for a call grow linearly with its arguments.
"""

from __future__ import annotations

import json
import random

import pytest

from conftest import ToolwireTestClient, new_session, write_script
from rawrpc import RawServer
from test_e2e_fed import CORPUS, EXPECTED, MERGE, chat_stream, corpus_items, open_session
from toolwire.headless.mirror import CallMirror
from toolwire.lsp.protocol import ToolCallUpdateWire, ToolCallWire
from toolwire.streaming.merger import StreamMerger
from toolwire.streaming.delta import ToolCallDelta, ToolCallEnd
from toolwire.streaming.state import Status, ToolCallState
from toolwire.agent.events import call_changed
from toolwire.lsp import call_wire
from toolwire.streaming.changes import PREVIEW_BUDGET, PREVIEW_CHARS


def update_form(call: ToolCallState) -> dict:
    """The call's next ``tool_call`` update as the LSP front-end writes it."""
    return call_wire.update_form(call_changed(call))


# ----------------------------------------------------------------- in process
def stream_call(text: str, piece: int, *, name: str = "create_file") -> tuple[StreamMerger, list[dict]]:
    """Merge one call's argument text in ``piece``-sized deltas; an update after each."""
    merger = StreamMerger()
    updates = [update_form(merger.apply(ToolCallDelta(0, id="c1", name=name)))]
    for i in range(0, len(text), piece):
        call = merger.apply(ToolCallDelta(0, arguments=text[i:i + piece]))
        updates.append(update_form(call))
    merger.apply(ToolCallEnd(0))
    updates.append(update_form(merger.calls[0]))
    return merger, updates


def test_pieces_rebuild_the_text_and_the_whole_text_is_sent_once():
    text = json.dumps({"path": "a.txt", "content": "é\"\\x" * 500})
    merger, updates = stream_call(text, 7)
    call = merger.calls[0]
    assert call.status is Status.GENERATED
    offset = 0
    for update in updates[:-1]:
        assert "argumentsText" not in update and "arguments" not in update
        assert update["status"] == "generating"
        delta = update.get("argumentsDelta")
        if delta is not None:
            assert delta["offset"] == offset
            offset += len(delta["text"])
    final = updates[-1]
    if "argumentsDelta" in final:  # the last piece may come with the status change
        assert final["argumentsDelta"]["offset"] == offset
        offset += len(final["argumentsDelta"]["text"])
    assert offset == len(text)
    assert final["arguments"] == json.loads(text)
    assert "argumentsText" not in final and "partialArguments" not in final  # the pieces built it exactly
    # after completion: neither the text nor the unchanged arguments again
    call.transition(Status.CALLING)
    again = update_form(call)
    assert not {"argumentsText", "arguments", "partialArguments", "argumentsDelta"} & set(again)
    mirror = CallMirror()
    for update in updates:
        state = mirror.apply(update)
        ToolCallUpdateWire.model_validate(update)
    full = {**call.to_wire(), "status": "generated", "rev": final["rev"]}
    # everything equals the full snapshot, except that partialArguments stays the last preview
    # (a client uses ``arguments`` once it is set)
    assert {**state, "partialArguments": None} == {**full, "partialArguments": None}
    assert state["partialArguments"]["content"] == json.loads(text)["content"][:PREVIEW_CHARS]
    ToolCallWire.model_validate(state)


def test_a_split_surrogate_pair_travels_as_replacement_characters_with_exact_offsets():
    call = ToolCallState(key=0, index=0, id="c", name="f")
    mirror = CallMirror()
    for frag in ['{"e": "', "\ud83d", "\ude00", '"}']:
        call.fragments.append(frag)
        call.arguments_size += len(frag)
        call.rev += 1
        update = update_form(call)
        update["argumentsDelta"]["text"].encode("utf-8")  # valid Unicode on the wire
        mirror.apply(update)
    assert mirror.calls()[(None, "c")]["argumentsText"] == '{"e": "\ufffd\ufffd"}'
    from toolwire.streaming.completion import complete_call

    complete_call(call, cut=None, explicit_ends=False)
    final = update_form(call)
    assert final["argumentsText"] == '{"e": "\U0001f600"}'  # the finalized text replaces the pieces
    assert mirror.apply(final)["argumentsText"] == '{"e": "\U0001f600"}'


def test_partial_arguments_is_a_bounded_preview():
    content = "".join(f"line {n}\n" for n in range(20000))  # about 200 KB
    text = json.dumps({"path": "big.txt", "content": content})
    _, updates = stream_call(text, 8)
    previews = [u["partialArguments"] for u in updates if "partialArguments" in u]
    assert previews, "a long call shows a preview while it streams"
    assert previews[0]["path"] == "big.txt"
    for shown in previews:
        assert len(shown.get("content", "")) <= PREVIEW_CHARS
    preview_bytes = sum(len(json.dumps(p, ensure_ascii=False, separators=(",", ":"))) for p in previews)
    assert preview_bytes * PREVIEW_BUDGET <= len(text)
    # never the same preview twice in a row
    assert all(a != b for a, b in zip(previews, previews[1:]))


def test_many_keys_preview_stays_bounded():
    """An object whose keys keep coming (the preview is as long as the text) adds ≤ 1/4 too."""
    text = json.dumps({"path": "p", "edits": [{"old": f"a{n}", "new": f"b{n}"} for n in range(3000)]})
    _, updates = stream_call(text, 8)
    previews = [u["partialArguments"] for u in updates if "partialArguments" in u]
    total = sum(len(json.dumps(p, ensure_ascii=False, separators=(",", ":"))) for p in previews)
    assert total * PREVIEW_BUDGET <= len(text)


def test_mirror_overlap_gap_and_reused_id():
    mirror = CallMirror()
    base = {"toolCallId": "c", "index": 0, "name": "f", "kind": "function", "status": "generating", "path": None}
    mirror.apply({**base, "rev": 1, "argumentsDelta": {"offset": 0, "text": "abc"}})
    mirror.apply({**base, "rev": 2, "argumentsDelta": {"offset": 1, "text": "bcde"}})  # overlaps: only "de" is new
    assert mirror.calls()[(None, "c")]["argumentsText"] == "abcde"
    assert mirror.apply({**base, "rev": 2, "argumentsDelta": {"offset": 5, "text": "x"}}) is None  # stale rev
    mirror.apply({**base, "rev": 3, "argumentsDelta": {"offset": 9, "text": "zz"}})  # a piece was missed
    assert mirror.gaps == {(None, "c")} and mirror.calls()[(None, "c")]["argumentsText"] == "abcde"
    mirror.reset({**base, "rev": 4, "argumentsText": "abcdefghizz", "partialArguments": None, "arguments": None})
    assert not mirror.gaps
    mirror.apply({**base, "rev": 5, "status": "generated", "argumentsText": "{}", "arguments": {}})
    fresh = mirror.apply({**base, "rev": 1, "argumentsDelta": {"offset": 0, "text": "{"}})  # a new call, same id
    assert fresh["argumentsText"] == "{" and fresh["arguments"] is None and fresh["status"] == "generating"


# ------------------------------------------------------------ over stdio
def pieces_only(sent: list[dict]) -> dict[str, str]:
    """Per call, the text rebuilt from ``argumentsDelta`` pieces alone (``argumentsText`` ignored)."""
    texts: dict[str, str] = {}
    names: dict[int, str] = {}
    for call in sent:
        key = call["toolCallId"] or names.get(call["index"]) or f"#{call['index']}"
        if call["toolCallId"] and f"#{call['index']}" in texts:
            texts[call["toolCallId"]] = texts.pop(f"#{call['index']}")
        names[call["index"]] = key
        delta = call.get("argumentsDelta")
        if delta is not None:
            have = texts.setdefault(key, "")
            assert delta["offset"] == len(have), (key, delta["offset"], len(have))
            texts[key] = have + delta["text"]
    return texts


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_every_corpus_stream_is_rebuilt_from_its_pieces_over_stdio(client: ToolwireTestClient, tmp_path, name):
    """One chunk per request, then the end alone: every piece arrives at its offset, the pieces alone
    rebuild the streamed text, and the rebuilt state is the final state."""
    sid = await open_session(client, tmp_path)
    for n, item in enumerate(corpus_items(name)):
        await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": [item]})
    await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": [], "end": True})
    sent = [p["update"]["toolCall"] for p in client.raw_updates[sid] if p["update"]["sessionUpdate"] == "tool_call"]
    for update in sent:
        ToolCallUpdateWire.model_validate(update)
    texts = pieces_only(sent)
    finals = {cid: snaps[-1] for cid, snaps in client.tool_calls(sid).items()}
    expected = EXPECTED[name]["calls"]
    assert len(finals) == len(expected)
    for (cid, final), want in zip(finals.items(), expected):
        if "arguments_text" in want:
            assert final["argumentsText"] == want["arguments_text"], cid
        if want["arguments"] is not None:
            assert final["arguments"] == want["arguments"], cid
        streamed = texts.get(cid, "")
        # What streamed is exactly the final text, unless the provider gave the text whole at the end
        # (nothing streamed) or the final text joined surrogate halves.
        assert streamed == final["argumentsText"] or streamed == "" or "\ufffd" in streamed, (cid, streamed)
        assert sum("argumentsText" in u for u in sent if (u["toolCallId"] or cid) == cid) <= 1


def big_arguments(size: int = 100_000) -> str:
    lines = []
    n = 0
    while sum(map(len, lines)) < size:
        lines.append(f'    print("line {n}", end="\\n")  # é\n')
        n += 1
    return json.dumps({"path": "big.py", "content": "".join(lines)}, ensure_ascii=False)


#: Bytes a message costs whatever its payload: headers, JSON-RPC envelope, ids, status, rev, offset.
FIXED_COST = 400


def bytes_for(server: RawServer, start: int) -> tuple[int, int]:
    """(bytes, messages) the server sent since message number ``start``."""
    got = server.received[start:]
    return sum(size for size, _ in got), len(got)


@pytest.mark.asyncio
async def test_bytes_on_the_wire_for_a_100_kb_call_are_linear(tmp_path):
    """Client-fed (16 chunks per request): all the server sends about the call (updates and merge
    results) is at most 3× its argument bytes plus a fixed cost per message. Server-run (the replay
    model, 8-character deltas): the same bound up to the status change that completes the call, and
    through ``done`` (the result aside): the arguments are sent once."""
    args = big_arguments()
    arg_bytes = len(args.encode())
    server = RawServer()
    await server.start()
    try:
        sid = (await server.request("toolwire/session/new", {"cwd": str(tmp_path), "model": "replay"}))["sessionId"]
        chunks = chat_stream([("big", "create_file", args)], piece=8)
        start = len(server.received)
        for i in range(0, len(chunks), 16):
            await server.request(MERGE, {"sessionId": sid, "streamId": "s", "chunks": chunks[i:i + 16]})
        done = await server.request(MERGE, {"sessionId": sid, "streamId": "s", "chunks": [], "end": True})
        assert done["ended"] is True
        fed_bytes, fed_messages = bytes_for(server, start)
        assert fed_messages > 2 * len(chunks) // 16
        assert fed_bytes <= 3 * arg_bytes + FIXED_COST * fed_messages, (fed_bytes / arg_bytes, fed_messages)

        script = write_script(tmp_path / "s.jsonl", [
            {"tool_calls": [{"name": "create_file", "arguments": json.loads(args), "id": "big2"}], "chunk_size": 8},
            {"text": "done"}])
        turn_sid = (await server.request("toolwire/session/new", {
            "cwd": str(tmp_path), "model": f"replay:{script}",
            "settings": {"permissions": {"create_file": "auto"}}}))["sessionId"]
        start = len(server.received)
        await server.request("toolwire/session/prompt", {"sessionId": turn_sid, "prompt": "go"})
        sent = [(size, m) for size, m in server.received[start:]
                if m.get("method") == "toolwire/session/update" and m["params"]["update"]["sessionUpdate"] == "tool_call"]
        calls = [m["params"]["update"]["toolCall"] for _, m in sent]
        generated = next(n for n, call in enumerate(calls) if call["status"] == "generated")
        # Streaming, up to and including the status change that completes the call: linear.
        streaming = sum(size for size, _ in sent[:generated + 1])
        assert streaming <= 3 * arg_bytes + FIXED_COST * (generated + 1), (streaming / arg_bytes, generated + 1)
        # After that no argument field at all: validation fills in create_file's ``overwrite``
        # default for the tool, but the wire's arguments stay the model's and travel once. So the
        # whole call, through ``done``, stays in the bound (the tool's result is the tool's answer,
        # not measured here).
        later = calls[generated + 1:]
        assert [call["status"] for call in later] == ["calling", "done"]
        assert not any({"argumentsDelta", "argumentsText", "partialArguments", "arguments"} & set(call)
                       for call in later)
        whole = sum(size for size, _ in sent) - sum(
            len(json.dumps(call["result"], ensure_ascii=False, separators=(",", ":")).encode())
            for call in calls if "result" in call)
        assert whole <= 3 * arg_bytes + FIXED_COST * len(sent), (whole / arg_bytes, len(sent))
        assert sum("arguments" in call for call in calls) == 1 and calls[generated]["arguments"] == json.loads(args)
        mirror = CallMirror()
        for _, m in sent:
            state = mirror.apply(m["params"]["update"]["toolCall"])
        assert state["status"] == "done" and json.loads(state["argumentsText"]) == json.loads(args)
        assert (tmp_path / "big.py").read_text(encoding="utf-8") == json.loads(args)["content"]
    finally:
        await server.stop()
