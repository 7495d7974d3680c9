"""Gemini whole ``functionCall`` parts and Vertex streamed ``partialArgs``."""

from __future__ import annotations

import pytest

from toolwire.streaming.formats.gemini import JsonPathError, parse_json_path, set_path
from toolwire.streaming.merge import merge_payloads
from toolwire.streaming.state import Status


def event(*parts: dict, finish: str | None = None, response_id: str = "r1") -> dict:
    candidate: dict = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "responseId": response_id}


def fc(**fields) -> dict:
    return {"functionCall": fields}


def pa(path: str, more: bool = True, **value) -> dict:
    entry = {"jsonPath": path, **value}
    return fc(partialArgs=[entry], willContinue=more) if more else fc(partialArgs=[entry])


def test_whole_calls_several_in_one_event_get_stable_distinct_ids() -> None:
    payloads = [event(fc(name="add", args={"a": 1}), fc(name="mul", args={"b": 2}), finish="STOP")]
    m = merge_payloads(payloads)
    assert [(c.id, c.name, c.arguments) for c in m.calls] == [("r1-0", "add", {"a": 1}), ("r1-1", "mul", {"b": 2})]
    assert [c.id for c in merge_payloads(payloads).calls] == ["r1-0", "r1-1"]
    assert all(c.status is Status.GENERATED for c in m.calls) and m.finish_reasons == ["STOP"]


def test_given_ids_are_kept_and_missing_args_mean_empty() -> None:
    m = merge_payloads([event(fc(name="f", id="abc")), event({"text": ""}, finish="STOP")])
    assert (m.calls[0].id, m.calls[0].arguments, m.calls[0].arguments_text) == ("abc", {}, "")


def test_partial_args_build_nested_values_and_append_strings() -> None:
    m = merge_payloads(
        [
            event(fc(name="cook", willContinue=True)),
            event(pa("$.recipe.steps[0]", stringValue="Pre")),
            event(pa("$.recipe.steps[0]", stringValue="heat")),
            event(pa("$.recipe.steps[0]", stringValue="")),
            event(fc(willContinue=True)),
            event(pa("$.recipe.n", numberValue=2)),
            event(pa("$.recipe.ok", boolValue=True)),
            event(pa("$.recipe['odd key']", nullValue=None)),
            event(pa("$.recipe.items[1].name", more=False, stringValue="egg")),
            event(fc(name="next", args={}), finish="STOP"),
        ]
    )
    first = m.calls[0]
    assert first.arguments == {"recipe": {"steps": ["Preheat"], "n": 2, "ok": True, "odd key": None, "items": [None, {"name": "egg"}]}}
    assert first.arguments_text.startswith('{"recipe":{"steps":["Preheat"]')
    assert [c.status for c in m.calls] == [Status.GENERATED, Status.GENERATED]


def test_live_view_grows_while_arguments_stream() -> None:
    from toolwire.streaming.formats.gemini import GeminiNormalizer
    from toolwire.streaming.merger import StreamMerger

    normalizer, merger = GeminiNormalizer(), StreamMerger(explicit_ends=True)
    merger.feed(normalizer.feed(event(fc(name="f", willContinue=True))))
    merger.feed(normalizer.feed(event(pa("$.city", stringValue="Bos"))))
    assert merger.calls[0].partial == {"city": "Bos"}


def test_stream_that_never_sends_the_closing_part() -> None:
    opened = [event(fc(name="f", willContinue=True)), event(pa("$.a", stringValue="x"))]
    stopped = merge_payloads([*opened, event(finish="STOP")])
    assert stopped.calls[0].status is Status.GENERATED and stopped.calls[0].arguments == {"a": "x"}
    cut = merge_payloads([*opened, event(finish="MAX_TOKENS")])
    assert cut.calls[0].error.code == "truncated"
    dropped = merge_payloads(opened)
    assert dropped.calls[0].error.code == "truncated"


def test_thought_parts_are_reasoning_and_usage_is_read() -> None:
    m = merge_payloads([{**event({"text": "plan", "thought": True}, {"text": "Hi"}, finish="STOP"),
                         "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 4}}])  # fmt: skip
    assert (m.reasoning, m.text, m.usage.input_tokens, m.usage.output_tokens) == ("plan", "Hi", 3, 4)


def test_malformed_function_call_finish_and_error_payloads() -> None:
    m = merge_payloads([event(finish="MALFORMED_FUNCTION_CALL")])
    assert m.errors[0].code == "MALFORMED_FUNCTION_CALL"
    m = merge_payloads([event(fc(name="f", willContinue=True)), {"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}], "gemini")
    assert m.errors[0].code == "UNAVAILABLE" and m.calls[0].status is Status.ERRORED


def test_bad_json_path_errors_the_stream() -> None:
    m = merge_payloads([event(fc(name="f", willContinue=True)), event(pa("city", more=False, stringValue="x")), event(finish="STOP")])
    assert m.errors and m.errors[0].code == "malformed_chunk"


@pytest.mark.parametrize(
    ("path", "parts"),
    [("$.a", ["a"]), ("$.a.b[3]", ["a", "b", 3]), ("$['a b'][0]", ["a b", 0]), ('$["x"].y', ["x", "y"])],
)
def test_json_paths(path: str, parts: list) -> None:
    assert parse_json_path(path) == parts


def test_json_path_errors() -> None:
    for bad in ("a.b", "$.a[", "$..a"):
        with pytest.raises(JsonPathError):
            parse_json_path(bad)
    with pytest.raises(JsonPathError):
        set_path({"a": "text"}, ["a", 0], 1, append=False)
    with pytest.raises(JsonPathError):
        set_path({}, [], 1, append=False)


def test_safety_finish_leaves_a_streamed_call_cut_off() -> None:
    m = merge_payloads([event(fc(name="f", willContinue=True)), event(pa("$.a", stringValue="x")), event(finish="SAFETY")])
    assert m.calls[0].error.code == "truncated" and m.calls[0].arguments is None
