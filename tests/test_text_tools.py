"""Tool calling for models without native tool calls: plain-text calls and results."""

from __future__ import annotations

import json
import random

import pytest

from toolwire.agent.text_tools import CLOSE, OPEN, TextToolCallReader, to_text_messages
from toolwire.streaming.formats.openai_chat import OpenAIChatNormalizer
from toolwire.streaming.merger import StreamMerger


def text_chunks(text: str, size: int) -> list[dict]:
    return [{"choices": [{"index": 0, "delta": {"content": text[i:i + size]}, "finish_reason": None}]}
            for i in range(0, len(text), size)] + [
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]


def merge_chunks(chunks: list[dict]) -> StreamMerger:
    """Chat chunks through the text reader into a finished merger, as the server runs them."""
    reader = TextToolCallReader(OpenAIChatNormalizer())
    merger = StreamMerger(explicit_ends=reader.explicit_ends)
    for chunk in chunks:
        merger.feed(reader.feed(chunk))
    merger.feed(reader.close())
    merger.finish()
    return merger


def merge(text: str, size: int) -> StreamMerger:
    return merge_chunks(text_chunks(text, size))


def merge_cut(text: str, cuts: list[int]) -> StreamMerger:
    """``text`` cut at the sorted offsets ``cuts`` into content deltas."""
    return merge_chunks([{"choices": [{"index": 0, "delta": {"content": text[a:b]}}]}
                         for a, b in zip([0, *cuts], [*cuts, len(text)])])


REPLY = ('I will read it first. <tool_c'  # a look-alike that is not a tag stays text
         f'\n{OPEN}\n{{"name": "read_file", "arguments": {{"path": "a <b>.py"}}}}\n{CLOSE}\n'
         f'and then {OPEN}{{"name": "git_status", "arguments": {{}}}}{CLOSE} done.')


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11, 1000])
def test_blocks_become_calls_whatever_the_chunking(size):
    merger = merge(REPLY, size)
    assert [(c.name, c.arguments, c.status.value) for c in merger.calls] == [
        ("read_file", {"path": "a <b>.py"}, "generated"), ("git_status", {}, "generated")]
    assert [c.id for c in merger.calls] == ["call_text_1", "call_text_2"]
    assert merger.text == "I will read it first. <tool_c\n\nand then  done."


def test_random_chunking_gives_the_same_calls():
    rng = random.Random(7)
    expected = [(c.name, c.arguments) for c in merge(REPLY, 1000).calls]
    for _ in range(50):
        merger = merge_cut(REPLY, sorted(rng.sample(range(1, len(REPLY)), 8)))
        assert [(c.name, c.arguments) for c in merger.calls] == expected


def test_a_malformed_block_is_an_errored_call_showing_what_was_written():
    merger = merge(f'{OPEN}{{"name": "read_file", "arguments": {{"path": }}{CLOSE}', 4)
    [call] = merger.calls
    assert call.status.value == "errored" and '"path": }' in call.error.message


def test_a_block_left_open_is_cut_off():
    merger = merge(f'ok {OPEN}{{"name": "read_file", "argu', 3)
    [call] = merger.calls
    assert call.status.value == "errored" and call.error.code == "truncated" and call.name == "read_file"


def test_history_is_rewritten_as_plain_chat():
    tools = [{"type": "function", "function": {"name": "read_file", "description": "Read.", "parameters": {"type": "object"}}}]
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
            {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "b"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "A"},
        {"role": "tool", "tool_call_id": "c2", "content": "B"},
    ]
    out = to_text_messages(history, tools)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert "read_file" in out[0]["content"] and "Be brief." in out[0]["content"]
    assert out[2]["content"].count(OPEN) == 2 and "tool_calls" not in out[2]
    assert '<tool_result id="c1" name="read_file">\nA\n</tool_result>' in out[3]["content"]
    assert all("_results" not in m for m in out)
    json.dumps(out)


async def test_a_whole_turn_in_text_mode(tmp_path):
    from test_turn import GatedTool, ScriptedApprover, assert_invariants, make_session
    from toolwire.agent.events import RecordingSink
    from toolwire.agent.turn import Turn

    tool = GatedTool()
    tool.gate("x").set()
    lines = [{"text": f'Let me. {OPEN}{{"name": "gated", "arguments": {{"name": "x"}}}}{CLOSE}', "chunk_size": 4},
             {"text": "Finished."}]
    session = make_session(tmp_path, lines, [tool], tool_calling="text")
    sink = RecordingSink()
    outcome = await Turn(session, sink, ScriptedApprover()).run("go")
    assert outcome.stop_reason == "end_turn" and tool.finished == ["x"]
    second = session.model.requests[1]
    assert second.tools == [] and all("tool_calls" not in m and m["role"] != "tool" for m in second.messages)
    assert "finished x" in second.messages[-1]["content"]
    assert_invariants(session, sink)


def test_duplicate_keys_in_a_block_are_refused_like_native_arguments():
    doubled_path = f'{OPEN}{{"name": "edit_file", "arguments": {{"path": "a.txt", "path": "b.txt"}}}}{CLOSE}'
    doubled_name = f'{OPEN}{{"name": "read_file", "name": "delete_file", "arguments": {{"path": "a"}}}}{CLOSE}'
    for reply in (doubled_path, doubled_name):
        [call] = merge(reply, 5).calls
        assert call.status.value == "errored" and call.error.code == "duplicate_key", reply


# ---- issue 11 §1: only calls the model made (not in <think>, not in a code fence)

DELETE = f'{OPEN}{{"name": "delete_file", "arguments": {{"path": "important.txt"}}}}{CLOSE}'
NOT_CALLS = (
    f"<think>Maybe I should {DELETE} — no, better not.</think>\n"
    "Here is how a call looks:\n"
    f"```xml\n{DELETE}\n```\n"
    f"~~~~\n{DELETE}\n~~~ (not closed: fewer tildes)\n{DELETE}\n~~~~\n"
    f"  ```\n{DELETE}\n  ```\n"
    "I will only read: "
    f'{OPEN}{{"name": "read_file", "arguments": {{"path": "a.txt"}}}}{CLOSE}\n'
    f"```\nan unclosed fence runs to the end {DELETE}\n"
)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 7, 13, 10_000])
def test_blocks_in_think_or_in_code_fences_are_text(size):
    merger = merge(NOT_CALLS, size)
    assert [(c.name, c.arguments) for c in merger.calls] == [("read_file", {"path": "a.txt"})]
    assert merger.text.count(DELETE) == 6  # every example is kept as text, verbatim


def test_random_chunking_of_think_and_fences():
    rng = random.Random(11)
    for _ in range(60):
        merger = merge_cut(NOT_CALLS, sorted(rng.sample(range(1, len(NOT_CALLS)), 12)))
        assert [c.name for c in merger.calls] == ["read_file"]
        assert merger.text == merge(NOT_CALLS, 10_000).text


def test_a_fence_must_open_a_line_and_backticks_inside_text_are_not_fences():
    text = f"Use ``` inline ``` like this: {DELETE}"
    assert [c.name for c in merge(text, 3).calls] == ["delete_file"]


def test_the_reasoning_channel_is_never_read_for_calls():
    merger = merge_chunks([{"choices": [{"index": 0, "delta": {"reasoning_content": DELETE}}]},
                           {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}])
    assert merger.calls == [] and DELETE in merger.reasoning
