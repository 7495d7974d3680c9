"""Compacting (protocol.md, ``toolwire/session/compact``): every tool result older than the last
turn becomes the context-fitting note, whatever the fill, the images of older calls theirs; the
last turn's stay. Over LSP (the real server over stdio) it is not a turn and is refused while one
runs; the turn's plan arrives as a ``plan`` update there too."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from conftest import new_session, prompt, write_script
from toolwire.agent.conversation import DROPPED_PREFIX, IMAGES_DROPPED, Conversation
from toolwire.lsp.messages import SessionCompactResult, SessionUpdateParams
from toolwire.tools.base import ImagePart

PIXEL = ImagePart("image/png", "iVBORw0KGgo=", 8)
ASYNC = pytest.mark.asyncio(loop_scope="module")  # the module's server and its client share the loop


def two_turns() -> Conversation:
    conversation = Conversation("system")
    for turn, call in (("t1", "a"), ("t2", "b")):
        conversation.start_turn(turn)
        conversation.add_user(f"turn {turn}")
        conversation.add_assistant("", [(call, "read_file", "{}")])
        conversation.add_tool_result(call, f"result {call} " * 20)
        conversation.add_images([("read_file", call, [PIXEL])])
        conversation.add_assistant("done", [])
    return conversation


def test_compact_replaces_the_results_and_images_before_the_last_turn():
    conversation = two_turns()
    size = conversation.size()
    freed = conversation.compact()
    assert freed == size - conversation.size() and freed > 0
    assert conversation.last_dropped == ["a"]
    tool = {m["tool_call_id"]: m["content"] for m in conversation.messages if m["role"] == "tool"}
    assert tool == {"a": f"{DROPPED_PREFIX} it was {len('result a ' * 20)} characters]", "b": "result b " * 20}
    images = [m["content"] for m in conversation.messages if m["role"] == "user" and isinstance(m["content"], list)]
    assert images[0] == [{"type": "text", "text": f"{IMAGES_DROPPED} read_file (a)]"}]
    assert images[1][1]["type"] == "image_url"  # the last turn's image stays
    assert conversation.compact() == 0 and conversation.last_dropped == []  # nothing older is left
    assert conversation.problems() == []


def test_without_its_turn_the_last_user_message_starts_the_last_turn():
    for known in (None, "t9"):  # no turn recorded; the last turn rewound out of the history
        conversation = two_turns()
        conversation.turn = known
        conversation.compact()
        assert conversation.last_dropped == ["a"]
    conversation = two_turns()
    conversation.messages.append({"role": "user", "content": "more"})  # added from outside: owners unknown
    conversation.compact()
    assert conversation.last_dropped == ["a", "b"]


@ASYNC
async def test_compact_over_lsp_and_the_plan_update(client, repo: Path, tmp_path: Path):
    entries = [{"content": "Read hello", "status": "in_progress", "priority": "high"}]
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"id": "p", "name": "update_plan", "arguments": {"entries": entries}},
                        {"id": "r1", "name": "read_file", "arguments": {"path": "hello.txt"}}]},
        {"text": "Read."},
        {"tool_calls": [{"id": "r2", "name": "read_file", "arguments": {"path": "hello.txt"}}]},
        {"text": "Again."},
        {"text": "Third."}])
    sid = await new_session(client, repo, script, replayLog=str(log))
    await prompt(client, sid, "read hello")
    plans = [u for u in client.updates[sid] if u["sessionUpdate"] == "plan"]
    assert plans == [{"sessionUpdate": "plan", "entries": entries}]
    SessionUpdateParams.model_validate({"sessionId": sid, "update": plans[0]})
    await prompt(client, sid, "again")
    sent = len(log.read_text().splitlines())
    result = await client.call("toolwire/session/compact", {"sessionId": sid})
    SessionCompactResult.model_validate(result)
    last = json.loads(log.read_text().splitlines()[-1])["messages"]
    kept = {m["tool_call_id"]: m["content"] for m in last if m["role"] == "tool"}
    freed = sum(len(json.dumps(kept[c], ensure_ascii=False)) -
                len(json.dumps(f"{DROPPED_PREFIX} it was {len(kept[c])} characters]")) for c in ("p", "r1"))
    tokens = math.ceil(freed / 4)
    assert result == {"compacted": 2, "tokensFreed": tokens,
                      "message": f"compacted 2 results, about {tokens} tokens freed"}
    assert len(log.read_text().splitlines()) == sent  # no model request
    await prompt(client, sid, "third")
    after = {m["tool_call_id"]: m["content"] for m in json.loads(log.read_text().splitlines()[-1])["messages"]
             if m["role"] == "tool"}
    assert after["r2"] == kept["r2"] and after["r1"].startswith(DROPPED_PREFIX)
    turns = [u.get("turnId") for u in client.updates[sid] if u["sessionUpdate"] == "turn" and u["state"] == "started"]
    assert turns == ["t1", "t2", "t3"]  # compacting took no turn id


@ASYNC
async def test_compact_is_refused_while_a_turn_runs(client, repo: Path, tmp_path: Path):
    script = write_script(tmp_path / "s.jsonl", [{"text": "slow", "delay": 30}])
    sid = await new_session(client, repo, script)
    started = client.wait_for(lambda p: p["sessionId"] == sid and p["update"].get("state") == "model_request")
    turn = asyncio.create_task(client.call("toolwire/session/prompt",
                                           {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}))
    await started
    with pytest.raises(Exception) as info:
        await client.call("toolwire/session/compact", {"sessionId": sid})
    assert getattr(info.value, "code", None) == -31001
    assert "a turn is running in this session" in str(info.value)
    client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    assert (await turn)["stopReason"] == "cancelled"
