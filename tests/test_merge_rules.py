"""Merger robustness on OpenAI-style chat chunks: one test per quirk real servers show.

Chunks are built by hand in the Chat Completions shape (OpenAI API reference,
"The chat completion chunk object") and merged through the normalizer, as a
live stream would be.
"""

from __future__ import annotations

import json
from typing import Any

from toolwire.streaming.delta import ToolCallDelta
from toolwire.streaming.formats.openai_chat import OpenAIChatNormalizer
from toolwire.streaming.framing import sse_frames
from toolwire.streaming.merge import merge_frames, merge_payloads
from toolwire.streaming.merger import StreamMerger
from toolwire.streaming.state import Status


def chunk(*calls: dict, content: str | None = None, reasoning: str | None = None, finish: str | None = None,
          usage: dict | None = None, **extra: Any) -> dict:  # fmt: skip
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning_content"] = reasoning
    if calls:
        delta["tool_calls"] = list(calls)
    out: dict[str, Any] = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        out["usage"] = usage
    out.update(extra)
    return out


def tc(index: int | None = 0, id: str | None = None, name: str | None = None, args: str | None = None) -> dict:
    call: dict[str, Any] = {"function": {}}
    if index is not None:
        call["index"] = index
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    if name is not None:
        call["function"]["name"] = name
    if args is not None:
        call["function"]["arguments"] = args
    return call


def merged(*chunks: dict) -> StreamMerger:
    return merge_payloads(list(chunks), "openai-chat")


def summary(merger: StreamMerger) -> list[tuple[str, str, Any, str]]:
    return [(c.id, c.name, c.arguments, c.status.value) for c in merger.calls]


def test_id_only_on_the_first_chunk() -> None:
    m = merged(chunk(tc(0, "call_1", "f", "")), chunk(tc(0, args='{"a"')), chunk(tc(0, args=": 1}")), chunk(finish="tool_calls"))
    assert summary(m) == [("call_1", "f", {"a": 1}, "generated")]


def test_id_repeated_on_every_chunk_full_or_empty() -> None:
    full = merged(chunk(tc(0, "c1", "f", '{"a"')), chunk(tc(0, "c1", None, ": 1}")), chunk(finish="tool_calls"))
    empty = merged(chunk(tc(0, "c1", "f", '{"a"')), chunk(tc(0, "", None, ": 1}")), chunk(finish="tool_calls"))
    assert summary(full) == summary(empty) == [("c1", "f", {"a": 1}, "generated")]


def test_id_arriving_only_after_the_first_fragments() -> None:
    m = merged(chunk(tc(0, None, "f", '{"a":')), chunk(tc(0, "late_id", None, " 1}")), chunk(finish="tool_calls"))
    assert summary(m) == [("late_id", "f", {"a": 1}, "generated")]


def test_no_index_at_all() -> None:
    m = merged(
        chunk(tc(None, "a1", "f", '{"x": 1}')),
        chunk(tc(None, "b2", "g", '{"y"')),
        chunk(tc(None, None, None, ": 2}")),
        chunk(finish="tool_calls"),
    )
    assert summary(m) == [("a1", "f", {"x": 1}, "generated"), ("b2", "g", {"y": 2}, "generated")]


def test_sparse_index() -> None:
    m = merged(chunk(tc(1, "c1", "f", "")), chunk(tc(1, args='{"a": 1}')), chunk(finish="tool_calls"))
    assert summary(m) == [("c1", "f", {"a": 1}, "generated")]


def test_several_fragments_for_one_index_inside_one_chunk() -> None:
    m = merged(chunk(tc(0, "c1", "f", '{"a'), tc(0, args='": '), tc(0, args="1}")), chunk(finish="tool_calls"))
    assert summary(m) == [("c1", "f", {"a": 1}, "generated")]


def test_parallel_calls_sharing_one_index_with_distinct_ids() -> None:
    m = merged(chunk(tc(0, "c1", "f", '{"a": 1}')), chunk(tc(0, "c2", "g", '{"b": 2}')), chunk(finish="tool_calls"))
    assert summary(m) == [("c1", "f", {"a": 1}, "generated"), ("c2", "g", {"b": 2}, "generated")]


def test_parallel_calls_sharing_one_index_interleaved_by_id() -> None:
    m = merged(
        chunk(tc(0, "c1", "f", '{"a"')),
        chunk(tc(0, "c2", "g", '{"b"')),
        chunk(tc(0, "c1", None, ": 1}")),
        chunk(tc(0, "c2", None, ": 2}")),
        chunk(finish="tool_calls"),
    )
    assert summary(m) == [("c1", "f", {"a": 1}, "generated"), ("c2", "g", {"b": 2}, "generated")]


def test_interleaved_parallel_fragments() -> None:
    m = merged(
        chunk(tc(0, "c1", "f", ""), tc(1, "c2", "g", "")),
        chunk(tc(1, args='{"b"')),
        chunk(tc(0, args='{"a"')),
        chunk(tc(0, args=": 1}"), tc(1, args=": 2}")),
        chunk(finish="tool_calls"),
    )
    assert summary(m) == [("c1", "f", {"a": 1}, "generated"), ("c2", "g", {"b": 2}, "generated")]


def test_name_streamed_in_pieces() -> None:
    m = merged(chunk(tc(0, "c1", "get_", "")), chunk(tc(0, None, "weather", "{}")), chunk(finish="tool_calls"))
    assert m.calls[0].name == "get_weather"


def test_name_repeated_whole_on_every_chunk_or_cumulative() -> None:
    whole = merged(chunk(tc(0, "c1", "get_weather", "{")), chunk(tc(0, "c1", "get_weather", "}")), chunk(finish="stop"))
    grows = merged(chunk(tc(0, "c1", "get", "{")), chunk(tc(0, "c1", "get_weather", "}")), chunk(finish="stop"))
    assert whole.calls[0].name == grows.calls[0].name == "get_weather"


def test_empty_name_mid_call_never_overwrites() -> None:
    m = merged(chunk(tc(0, "c1", "f", "{")), chunk(tc(0, "", "", "}")), chunk(finish="tool_calls"))
    assert summary(m) == [("c1", "f", {}, "generated")]


def test_header_chunk_without_arguments_key() -> None:
    m = merged(chunk(tc(0, "c1", "f", None)), chunk(tc(0, args='{"q": "x"}')), chunk(tc(0, args=""), finish="tool_calls"))
    assert summary(m) == [("c1", "f", {"q": "x"}, "generated")]
    assert m.calls[0].arguments_text == '{"q": "x"}'


def test_header_chunk_already_carrying_the_first_argument_text() -> None:
    m = merged(chunk(tc(0, "c1", "f", '{"')), chunk(tc(0, args='q": 1}')), chunk(finish="tool_calls"))
    assert m.calls[0].arguments == {"q": 1}


def test_arguments_split_inside_strings_and_escapes() -> None:
    text = '{"s": "a\\"b\\\\c\\u00e9\\ud83d\\ude00 \\n"}'
    for cut in range(1, len(text)):
        m = merged(chunk(tc(0, "c1", "f", text[:cut])), chunk(tc(0, args=text[cut:])), chunk(finish="tool_calls"))
        assert m.calls[0].arguments == {"s": 'a"b\\c\u00e9\U0001f600 \n'}, cut
        assert m.calls[0].arguments_text == text


def test_surrogate_pair_split_between_two_fragments_is_restored() -> None:
    # The chunks' own JSON escapes deliver each half as a lone surrogate.
    first = json.loads('{"x": "{\\"e\\": \\"\\ud83d"}')["x"]
    second = json.loads('{"x": "\\ude00\\"}"}')["x"]
    merger = StreamMerger(refresh_bytes=1)
    normalizer = OpenAIChatNormalizer()
    merger.feed(normalizer.feed(chunk(tc(0, "c1", "f", first))))
    assert merger.calls[0].partial == {"e": ""}  # the half waits for its pair; nothing raises
    merger.feed(normalizer.feed(chunk(tc(0, args=second), finish="tool_calls")))
    merger.refresh_all()
    merger.finish()
    call = merger.calls[0]
    assert call.status is Status.GENERATED
    assert call.arguments == {"e": "\U0001f600"}
    assert call.arguments_text == '{"e": "\U0001f600"}'
    call.arguments_text.encode("utf-8")  # valid UTF-8: no lone surrogate left


def test_multibyte_utf8_split_at_the_byte_level_of_the_sse_body() -> None:
    body = ("data: " + json.dumps(chunk(tc(0, "c1", "f", '{"city": "Zürich 東京 😀"}')), ensure_ascii=False)
            + "\n\ndata: " + json.dumps(chunk(finish="tool_calls")) + "\n\ndata: [DONE]\n\n").encode("utf-8")  # fmt: skip
    for size in (1, 2, 3, 5, 7):
        pieces = [body[i : i + size] for i in range(0, len(body), size)]
        m = merge_frames(sse_frames(pieces), "openai-chat")
        assert m.calls[0].arguments == {"city": "Zürich 東京 😀"}, size


def test_text_and_reasoning_before_between_and_after_calls() -> None:
    m = merged(
        chunk(reasoning="think "),
        chunk(content="before "),
        chunk(tc(0, "c1", "f", "{}")),
        chunk(content="between ", reasoning="more"),
        chunk(tc(1, "c2", "g", "{}")),
        chunk(content="after", finish="tool_calls"),
    )
    assert m.text == "before between after"
    assert m.reasoning == "think more"
    assert [c.name for c in m.calls] == ["f", "g"]


def test_finish_reasons_repeated_are_kept_in_order() -> None:
    m = merged(chunk(tc(0, "c1", "f", "{}"), finish="tool_calls"), chunk(finish="tool_calls"))
    assert m.finish_reasons == ["tool_calls", "tool_calls"]
    assert m.calls[0].status is Status.GENERATED


def test_missing_finish_reason_is_named_but_complete_calls_stand() -> None:
    m = merged(chunk(tc(0, "c1", "f", '{"a": 1}')))
    assert m.calls[0].status is Status.GENERATED
    assert "stream ended with no finish reason" in m.anomalies


def test_finish_contradicting_the_calls() -> None:
    stop = merged(chunk(tc(0, "c1", "f", "{}")), chunk(finish="stop"))
    assert stop.calls[0].status is Status.GENERATED
    none = merged(chunk(content="hi"), chunk(finish="tool_calls"))
    assert "finish reason says tool calls but none came" in none.anomalies


def test_usage_only_chunks_and_usage_on_every_chunk() -> None:
    m = merged(
        chunk(tc(0, "c1", "f", "{}"), usage={"prompt_tokens": 5, "completion_tokens": 1}),
        chunk(finish="tool_calls", usage={"prompt_tokens": 5, "completion_tokens": 2}),
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}},
    )
    assert (m.usage.input_tokens, m.usage.output_tokens) == (5, 3)
    assert m.calls[0].status is Status.GENERATED


def test_error_event_mid_stream_errors_the_open_call() -> None:
    m = merged(chunk(tc(0, "c1", "f", '{"a": "x')), {"error": {"message": "overloaded", "code": "server_error"}})
    call = m.calls[0]
    assert call.status is Status.ERRORED and call.error.code == "truncated" and call.error.retryable
    assert "overloaded" in call.error.message and "Unterminated string" in call.error.message
    complete = merged(chunk(tc(0, "c1", "f", '{"a": 1}')), {"error": {"message": "overloaded"}})
    assert complete.calls[0].error.code == "stream_error"


def test_provider_padding_fields_are_ignored() -> None:
    m = merged(
        chunk(tc(0, "c1", "f", '{"a": 1'), obfuscation="xYz12", p="abcdef"),
        chunk(tc(0, args="   }"), finish="tool_calls", obfuscation=""),
    )
    assert m.calls[0].arguments == {"a": 1} and m.calls[0].arguments_text == '{"a": 1   }'


def test_refusal_and_legacy_function_call() -> None:
    m = merge_payloads(
        [
            {"choices": [{"index": 0, "delta": {"refusal": "no "}}]},
            {"choices": [{"index": 0, "delta": {"function_call": {"name": "f", "arguments": '{"a"'}}}]},
            {"choices": [{"index": 0, "delta": {"function_call": {"arguments": ": 1}"}}, "finish_reason": "function_call"}]},
        ],
        "openai-chat",
    )
    assert m.text == "no " and (m.calls[0].name, m.calls[0].arguments) == ("f", {"a": 1})


def test_other_choices_are_ignored() -> None:
    m = merged(chunk(tc(0, "c1", "f", "{}")), {"choices": [{"index": 1, "delta": {"tool_calls": [tc(0, "x", "g", "{}")]}}]},
               chunk(finish="tool_calls"))  # fmt: skip
    assert [c.name for c in m.calls] == ["f"]


def test_delta_key_may_be_any_hashable() -> None:
    m = StreamMerger()
    m.apply(ToolCallDelta(key=("anything", 3), id="c", name="f", arguments="{}"))
    m.finish()
    assert m.calls[0].status is Status.GENERATED


def test_index_reused_without_ids_for_the_next_call() -> None:
    m = merged(chunk(tc(0, None, "f", '{"a": 1}')), chunk(tc(0, None, "g", '{"b": 2}')), chunk(finish="tool_calls"))
    assert [(c.name, c.arguments) for c in m.calls] == [("f", {"a": 1}), ("g", {"b": 2})]
