"""Vercel AI SDK stream parts: UI message stream and core / provider stream parts.

Written from the AI SDK docs ("Stream Protocols") and the ``UIMessageChunk``
type; no public recording with tool calls was available for the corpus.
"""

from __future__ import annotations

from toolwire.streaming.framing import frames_from_bytes
from toolwire.streaming.merge import merge_frames, merge_payloads
from toolwire.streaming.state import Status

UI_STREAM = (
    'data: {"type":"start","messageId":"m1"}\n\n'
    'data: {"type":"start-step"}\n\n'
    'data: {"type":"text-start","id":"t0"}\n\n'
    'data: {"type":"text-delta","id":"t0","delta":"Checking "}\n\n'
    'data: {"type":"text-end","id":"t0"}\n\n'
    'data: {"type":"tool-input-start","toolCallId":"call_1","toolName":"weather"}\n\n'
    'data: {"type":"tool-input-delta","toolCallId":"call_1","inputTextDelta":"{\\"city\\":"}\n\n'
    'data: {"type":"tool-input-delta","toolCallId":"call_1","inputTextDelta":" \\"Paris\\"}"}\n\n'
    'data: {"type":"tool-input-available","toolCallId":"call_1","toolName":"weather","input":{"city":"Paris"}}\n\n'
    'data: {"type":"tool-input-available","toolCallId":"call_2","toolName":"time","input":{}}\n\n'
    'data: {"type":"finish-step"}\n\n'
    'data: {"type":"finish","finishReason":"tool-calls"}\n\n'
    "data: [DONE]\n\n"
).encode()


def test_ui_message_stream() -> None:
    m = merge_frames(frames_from_bytes(UI_STREAM))
    assert [(c.id, c.name, c.arguments, c.status) for c in m.calls] == [
        ("call_1", "weather", {"city": "Paris"}, Status.GENERATED),
        ("call_2", "time", {}, Status.GENERATED),
    ]
    assert m.calls[0].arguments_text == '{"city": "Paris"}'  # the streamed text wins over the whole input
    assert (m.text, m.finish_reasons) == ("Checking ", ["tool-calls"])


def test_core_stream_parts_with_tool_call_and_usage() -> None:
    m = merge_payloads(
        [
            {"type": "reasoning-delta", "id": "r", "delta": "hm"},
            {"type": "tool-input-start", "id": "c1", "toolName": "f"},
            {"type": "tool-input-delta", "id": "c1", "delta": '{"a":1}'},
            {"type": "tool-input-end", "id": "c1"},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "f", "input": '{"a":1}'},
            {"type": "tool-call", "toolCallId": "c2", "toolName": "g", "input": '{"b":'},
            {"type": "tool-call", "toolCallId": "c3", "toolName": "web", "input": "{}", "providerExecuted": True},
            {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 3, "outputTokens": 4}},
        ],
        "vercel",
    )
    assert m.reasoning == "hm" and m.usage.output_tokens == 4
    assert [(c.name, c.status.value, c.kind) for c in m.calls] == [
        ("f", "generated", "function"),
        ("g", "errored", "function"),
        ("web", "generated", "provider"),
    ]
    assert m.calls[1].error.code == "incomplete_json"


def test_input_end_without_whole_input_closes_at_stream_end() -> None:
    m = merge_payloads(
        [
            {"type": "tool-input-start", "id": "c1", "toolName": "f"},
            {"type": "tool-input-delta", "id": "c1", "delta": "{}"},
            {"type": "tool-input-end", "id": "c1"},
            {"type": "finish", "finishReason": "tool-calls"},
        ]
    )
    assert m.calls[0].status is Status.GENERATED


def test_error_and_abort_parts_error_open_calls() -> None:
    for last in ({"type": "error", "errorText": "rate limited"}, {"type": "abort"}):
        m = merge_payloads([{"type": "tool-input-start", "toolCallId": "c1", "toolName": "f"},
                            {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": '{"a'}, last])  # fmt: skip
        assert m.calls[0].error.code == "truncated" and m.errors
