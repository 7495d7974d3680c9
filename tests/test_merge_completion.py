"""Completion rules: when a call becomes ``generated``, when ``errored``, and what the error says."""

from __future__ import annotations

import pytest

from toolwire.streaming.delta import Finish, StreamError, TextDelta, ToolCallDelta, ToolCallEnd
from toolwire.streaming.merge import merge_payloads
from toolwire.streaming.merger import StreamMerger
from toolwire.streaming.state import Status


def run(events: list, *, explicit_ends: bool = False, stream_error: str | None = None) -> StreamMerger:
    merger = StreamMerger(explicit_ends=explicit_ends)
    merger.feed(events)
    merger.finish(stream_error=stream_error)
    return merger


def call(text: str, key: int = 0, name: str = "edit", id: str = "c1") -> ToolCallDelta:
    return ToolCallDelta(key=key, id=id, name=name, arguments=text)


def test_complete_json_is_generated_with_parsed_arguments() -> None:
    m = run([call('{"path": "a.py", "n": 1}'), Finish("tool_calls")])
    c = m.calls[0]
    assert (c.status, c.arguments, c.path, c.error) == (Status.GENERATED, {"path": "a.py", "n": 1}, "a.py", None)


def test_empty_arguments_mean_no_arguments() -> None:
    m = run([ToolCallDelta(key=0, id="c1", name="f"), Finish("tool_calls")])
    assert m.calls[0].arguments == {} and m.arguments_for_model(m.calls[0]) == "{}"


def test_invalid_json_names_what_where_and_shows_a_snippet() -> None:
    m = run([call('{"a": 1,, "b": 2}'), Finish("tool_calls")])
    c = m.calls[0]
    assert c.status is Status.ERRORED and c.error.code == "invalid_json" and not c.error.retryable
    assert "'edit' (c1)" in c.error.message and "char 8" in c.error.message and '1,, "b' in c.error.message
    assert c.arguments is None and c.arguments_text == '{"a": 1,, "b": 2}'  # kept, never repaired


def test_json_that_is_not_an_object() -> None:
    m = run([call("[1, 2]"), Finish("tool_calls")])
    assert m.calls[0].error.code == "not_object"


def test_text_that_stops_early_although_finish_claims_tool_calls() -> None:
    m = run([call('{"path": "a.py", "text": "hel'), Finish("tool_calls")])
    c = m.calls[0]
    assert c.status is Status.ERRORED and c.error.code == "incomplete_json"
    assert "Unterminated string" in c.error.message and "hel" in c.error.message


@pytest.mark.parametrize("reason", ["length", "max_tokens", "MAX_TOKENS", "max_output_tokens"])
def test_max_tokens_inside_the_arguments_is_truncated(reason: str) -> None:
    m = run([call('{"text": "abc'), Finish(reason)])
    c = m.calls[0]
    assert c.error.code == "truncated" and c.error.retryable and f"({reason})" in c.error.message
    assert "13 characters received" in c.error.message


def test_dropped_connection_inside_the_arguments() -> None:
    m = run([call('{"text": [1, 2'), Finish("tool_calls")], stream_error="the connection dropped")
    c = m.calls[0]
    assert c.error.code == "truncated" and "the connection dropped" in c.error.message


def test_error_event_after_complete_text_is_a_stream_error() -> None:
    m = run([call('{"a": 1}'), StreamError("overloaded", "overloaded_error")])
    c = m.calls[0]
    assert c.error.code == "stream_error" and "overloaded" in c.error.message and c.error.retryable


def test_explicit_end_completes_the_call_at_once() -> None:
    m = StreamMerger(explicit_ends=True)
    m.feed([call('{"a": 1}'), ToolCallEnd(0)])
    assert m.calls[0].status is Status.GENERATED  # before the stream finished
    m.feed([call('{"b": 2}', key=1, id="c2"), StreamError("boom")])
    m.finish()
    assert [c.status for c in m.calls] == [Status.GENERATED, Status.ERRORED]


def test_unclosed_call_in_a_closing_format_is_truncated_even_if_it_parses() -> None:
    m = run([call('{"a": 1}'), Finish("tool_use")], explicit_ends=True)
    c = m.calls[0]
    assert c.error.code == "truncated" and "never closed" in c.error.message and c.arguments is None


def test_closed_call_with_incomplete_text() -> None:
    m = run([call('{"a": '), ToolCallEnd(0), Finish("tool_use")], explicit_ends=True)
    assert m.calls[0].error.code == "incomplete_json"


def test_missing_name() -> None:
    m = run([ToolCallDelta(key=0, id="c1", arguments="{}"), Finish("tool_calls")])
    assert m.calls[0].error.code == "missing_name"


def test_arguments_given_whole() -> None:
    m = run([ToolCallDelta(key=0, id="c1", name="f", arguments_whole={"a": [1, "é"]}), ToolCallEnd(0)], explicit_ends=True)
    c = m.calls[0]
    assert c.arguments == {"a": [1, "é"]} and c.arguments_text == '{"a":[1,"é"]}'
    bad = run([ToolCallDelta(key=0, id="c1", name="f", arguments_whole=[1]), ToolCallEnd(0)], explicit_ends=True)
    assert bad.calls[0].error.code == "not_object"
    nan = run([ToolCallDelta(key=0, id="c1", name="f", arguments_whole={"x": float("nan")}), ToolCallEnd(0)])
    assert nan.calls[0].error.code == "invalid_json"


def test_streamed_text_wins_over_whole_and_final_arguments() -> None:
    m = run(
        [
            ToolCallDelta(key=0, id="c1", name="f", arguments_whole={}),
            ToolCallDelta(key=0, arguments='{"a": 1}'),
            ToolCallDelta(key=0, arguments_final='{"a": 2}'),
            ToolCallEnd(0),
        ],
        explicit_ends=True,
    )
    assert m.calls[0].arguments == {"a": 1}
    assert any("differs from the streamed one" in a for a in m.anomalies)


def test_final_arguments_used_when_nothing_streamed() -> None:
    m = run([ToolCallDelta(key=0, id="c1", name="f", arguments_final='{"a": 2}'), ToolCallEnd(0)], explicit_ends=True)
    assert m.calls[0].arguments == {"a": 2} and m.calls[0].arguments_text == '{"a": 2}'


def test_unknown_tool_names_are_not_the_mergers_concern() -> None:
    m = run([call("{}", name="no_such_tool"), Finish("tool_calls")])
    assert m.calls[0].status is Status.GENERATED


def test_gemini_stop_after_calls_is_fine_and_text_is_kept() -> None:
    m = run([TextDelta("ok"), call("{}"), ToolCallEnd(0), Finish("STOP")], explicit_ends=True)
    assert m.calls[0].status is Status.GENERATED and m.text == "ok" and m.anomalies == []


def test_every_call_is_terminal_after_finish_and_finish_is_idempotent() -> None:
    m = StreamMerger()
    m.feed([call('{"a"'), call("{}", key=1, id="c2"), Finish("length")])
    changed = m.finish()
    assert [c.index for c in changed] == [0, 1]
    assert all(c.status.terminal or c.status is Status.GENERATED for c in m.calls)
    assert m.finish() == []


def test_anthropic_truncation_by_error_event_mid_arguments() -> None:
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 3}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"a": [1, '}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]  # fmt: skip
    m = merge_payloads(events)
    c = m.calls[0]
    assert c.error.code == "truncated" and "Overloaded" in c.error.message and "overloaded_error" in c.error.message
