"""Cohere v2 chat stream events (Cohere API reference, "Chat (v2)" streaming)."""

from __future__ import annotations

from toolwire.streaming.merge import merge_payloads
from toolwire.streaming.state import Status


def start(index: int, id: str, name: str) -> dict:
    calls = {"id": id, "type": "function", "function": {"name": name, "arguments": ""}}
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": calls}}}


def piece(index: int, text: str) -> dict:
    return {"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": {"function": {"arguments": text}}}}}


END = {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL", "usage": {"tokens": {"input_tokens": 5, "output_tokens": 6}}}}


def test_calls_keyed_by_top_level_index_with_plan_and_text() -> None:
    m = merge_payloads(
        [
            {"type": "message-start", "delta": {"message": {"role": "assistant"}}},
            {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will"}}},
            start(0, "w_1", "weather"),
            piece(0, '{"loc'),
            piece(0, '": "SF"}'),
            {"type": "tool-call-end", "index": 0},
            start(1, "c_2", "city"),
            piece(1, "{}"),
            {"type": "tool-call-end", "index": 1},
            {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "ok"}}}},
            END,
        ]
    )
    assert [(c.id, c.name, c.arguments) for c in m.calls] == [("w_1", "weather", {"loc": "SF"}), ("c_2", "city", {})]
    assert (m.reasoning, m.text, m.finish_reasons, m.usage.output_tokens) == ("I will", "ok", ["TOOL_CALL"], 6)


def test_missing_end_is_truncated_and_list_shaped_tool_calls_are_accepted() -> None:
    listed = {"type": "tool-call-start", "index": 0,
              "delta": {"message": {"tool_calls": [{"id": "x", "function": {"name": "f", "arguments": "{"}}]}}}  # fmt: skip
    m = merge_payloads([listed, piece(0, '"a": 1}'), END])
    assert m.calls[0].status is Status.ERRORED and m.calls[0].error.code == "truncated"
