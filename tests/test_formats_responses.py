"""OpenAI Responses API events (OpenAI API reference, "Responses — Streaming events")."""

from __future__ import annotations

from toolwire.streaming.merge import merge_payloads
from toolwire.streaming.state import Status


def added(index: int, item_id: str | None, call_id: str, name: str, kind: str = "function_call") -> dict:
    item = {"type": kind, "call_id": call_id, "name": name, "arguments": ""}
    if item_id:
        item["id"] = item_id
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def delta(text: str, item_id: str | None = None, index: int | None = None) -> dict:
    out: dict = {"type": "response.function_call_arguments.delta", "delta": text}
    if item_id:
        out["item_id"] = item_id
    if index is not None:
        out["output_index"] = index
    return out


def done(text: str, item_id: str | None = None, index: int | None = None) -> dict:
    out: dict = {"type": "response.function_call_arguments.done", "arguments": text}
    if item_id:
        out["item_id"] = item_id
    if index is not None:
        out["output_index"] = index
    return out


COMPLETED = {"type": "response.completed", "response": {"usage": {"input_tokens": 7, "output_tokens": 3}}}


def test_done_with_no_deltas_at_all() -> None:
    m = merge_payloads([added(0, "fc_1", "call_1", "f"), done('{"a": 1}', "fc_1"), COMPLETED])
    c = m.calls[0]
    assert (c.id, c.name, c.arguments, c.arguments_text, c.status) == ("call_1", "f", {"a": 1}, '{"a": 1}', Status.GENERATED)
    assert m.finish_reasons == ["completed"] and (m.usage.input_tokens, m.usage.output_tokens) == (7, 3)


def test_keyed_by_output_index_when_deltas_have_no_item_id() -> None:
    m = merge_payloads([added(0, "fc_1", "c1", "f"), added(1, "fc_2", "c2", "g"), delta('{"b"', index=1), delta('{"a"', index=0),
                        delta(": 2}", index=1), delta(": 1}", index=0), done('{"a": 1}', index=0), done('{"b": 2}', index=1),
                        COMPLETED])  # fmt: skip
    assert [(c.id, c.arguments) for c in m.calls] == [("c1", {"a": 1}), ("c2", {"b": 2})]


def test_items_without_ids_fall_back_to_output_index() -> None:
    m = merge_payloads([added(3, None, "c1", "f"), delta("{}", index=3), done("{}", index=3), COMPLETED], "openai-responses")
    assert m.calls[0].arguments == {} and m.calls[0].status is Status.GENERATED


def test_output_item_done_closes_a_call_without_arguments_done() -> None:
    item_done = {"type": "response.output_item.done", "output_index": 0,
                 "item": {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": '{"x": true}'}}  # fmt: skip
    m = merge_payloads([added(0, "fc_1", "c1", "f"), delta('{"x": true}', "fc_1"), item_done, COMPLETED])
    assert m.calls[0].arguments == {"x": True} and m.anomalies == []


def test_stream_cut_before_done_is_truncated() -> None:
    m = merge_payloads([added(0, "fc_1", "c1", "f"), delta('{"x": 1}', "fc_1")])
    assert m.calls[0].error.code == "truncated"


def test_incomplete_and_failed_responses() -> None:
    incomplete = {"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}
    m = merge_payloads([added(0, "fc_1", "c1", "f"), delta('{"x": "ab', "fc_1"), incomplete])
    assert m.finish_reasons == ["max_output_tokens"] and m.calls[0].error.code == "truncated"
    failed = {"type": "response.failed", "response": {"error": {"code": "server_error", "message": "boom"}}}
    m = merge_payloads([added(0, "fc_1", "c1", "f"), delta("{}", "fc_1"), failed])
    assert m.finish_reasons == ["failed"] and m.calls[0].error.code == "stream_error" and "boom" in m.calls[0].error.message


def test_error_event() -> None:
    m = merge_payloads([added(0, "fc_1", "c1", "f"), {"type": "error", "code": "rate_limit", "message": "slow down", "sequence_number": 3}])
    assert m.errors[0].message == "slow down" and m.calls[0].status is Status.ERRORED


def test_text_refusal_and_reasoning() -> None:
    m = merge_payloads(
        [
            {"type": "response.reasoning_summary_text.delta", "delta": "think"},
            {"type": "response.output_text.delta", "delta": "Hello "},
            added(1, "fc_1", "c1", "f"),
            done("{}", "fc_1"),
            {"type": "response.output_text.delta", "delta": "after"},
            COMPLETED,
        ]
    )
    assert (m.text, m.reasoning, m.calls[0].status) == ("Hello after", "think", Status.GENERATED)


def test_mcp_calls_are_kept_apart() -> None:
    item = {"type": "mcp_call", "id": "mcp_1", "name": "ask", "server_label": "wiki", "arguments": ""}
    m = merge_payloads([{"type": "response.output_item.added", "output_index": 0, "item": item},
                        {"type": "response.mcp_call_arguments.delta", "item_id": "mcp_1", "delta": '{"q": 1}'},
                        {"type": "response.mcp_call_arguments.done", "item_id": "mcp_1", "arguments": '{"q": 1}'}, COMPLETED])  # fmt: skip
    assert (m.calls[0].kind, m.calls[0].id, m.calls[0].arguments) == ("mcp_call", "mcp_1", {"q": 1})
