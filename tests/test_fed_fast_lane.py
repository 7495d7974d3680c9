"""Client-fed streams take a fast lane for bare argument fragments (issue 12, goal 2):
``FedStream.merge`` hands them to the merger without the general normalizer walk.
The lane must not change anything a client sees: the same calls, the same
argument text, the same ``rev`` after every batch, the same calls reported as
changed, as when every chunk goes through ``normalizer.feed`` and ``merger.apply``.
"""

from __future__ import annotations

import json
import random

import pytest

from toolwire.agent.fed import FedStream
from toolwire.streaming.formats.openai_chat import OpenAIChatNormalizer
from toolwire.streaming.merger import StreamMerger


def chunk(delta: dict, finish: str | None = None, **extra) -> dict:
    return {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta,
                                                                      "finish_reason": finish}], **extra}


def frag(index: int, text) -> dict:
    return chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})


def stream() -> list:
    """Two parallel calls, text between fragments, fragments of a call that does not
    exist yet, an SSE-event-wrapped and a JSON-text chunk, a usage chunk, the finish
    and the ``[DONE]`` sentinel. (A fragment of the wrong type is refused before
    either path sees it: see the test below.)"""
    args0 = json.dumps({"path": "a.txt", "content": "héllo \"quoted\" \\ 😀 " * 40})
    args1 = json.dumps({"path": "b.txt", "content": "x" * 300})
    out = [chunk({"role": "assistant", "content": ""}),
           chunk({"content": "Let me write."}),
           frag(5, "{\"orphan\":"),  # no call with index 5 yet: the general path opens one
           chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                  "function": {"name": "create_file", "arguments": ""}}]})]
    for i in range(0, len(args0), 7):
        out.append(frag(0, args0[i:i + 7]))
        if i == 70:
            out.append(chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                              "function": {"name": "create_file", "arguments": ""}}]}))
            out.append({"event": "message", "data": frag(1, args1[:20])})
            out.append("data: " + json.dumps(frag(1, args1[20:40])))
            out.append(frag(1, args1[40:]))
        if i == 140:
            out.append(chunk({"content": " still going"}))
    out.append(chunk({}, "tool_calls"))
    out.append(chunk({}, usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}))
    out.append("[DONE]")
    return out


def reference(batches: list[list]) -> tuple[list[list[tuple]], StreamMerger]:
    """Per batch, (index, rev, argument text) of the changed calls, every chunk through
    ``normalizer.feed`` and ``merger.apply`` one by one; and the merger."""
    normalizer, merger, seen = OpenAIChatNormalizer(), StreamMerger(), []
    for batch in batches:
        changed = {}
        for item in batch:
            if item == "[DONE]":
                continue
            if isinstance(item, str):
                item = json.loads(item.removeprefix("data: "))
            if "event" in item:
                item = item["data"]
            for event in normalizer.feed(item):
                call = merger.apply(event)
                if call is not None:
                    changed[call.index] = call
        seen.append([(i, changed[i].rev, changed[i].arguments_text) for i in sorted(changed)])
    return seen, merger


def state(merger: StreamMerger) -> list[tuple]:
    return [(c.index, c.id, c.name, c.rev, c.status, c.arguments_text) for c in merger.calls]


@pytest.mark.parametrize("seed", range(6))
def test_the_fast_lane_reports_what_the_general_path_would(seed):
    items = stream()
    rng = random.Random(seed)
    batches, at = [], 0
    while at < len(items):  # batches of 1-40 chunks; the first one holds the detection
        size = rng.randint(1, 40)
        batches.append(items[at:at + size])
        at += size
    fed = FedStream("s")
    got = []
    for batch in batches:
        changed = fed.merge(batch, fmt="openai-chat" if seed % 2 else None)
        got.append([(call.index, call.rev, call.arguments_text) for call in changed])
    expected, merger = reference(batches)
    assert got == expected
    assert state(fed.merger) == state(merger)
    assert fed.merger.anomalies == merger.anomalies
    assert [c.arguments_text for c in fed.merger.calls][1:] == [
        json.dumps({"path": "a.txt", "content": "héllo \"quoted\" \\ 😀 " * 40}),
        json.dumps({"path": "b.txt", "content": "x" * 300})]


def test_a_fragment_of_the_wrong_type_is_refused_before_the_lane():
    """``arguments: 12`` would be left out by either path: the batch is refused whole."""
    from toolwire.agent.fed import FedStreamError

    fed = FedStream("s", "openai-chat")
    fed.merge([chunk({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "f", "arguments": ""}}]})])
    before = state(fed.merger)
    with pytest.raises(FedStreamError, match=r"^chunk 1 of the batch: choices\[0\]\.delta\.tool_calls\[0\]"
                                             r"\.function\.arguments is a number, not a string or an object$"):
        fed.merge([frag(0, '{"a": '), frag(0, 12), frag(0, "1}")])
    assert state(fed.merger) == before
