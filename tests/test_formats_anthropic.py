"""Anthropic Messages stream events (Anthropic docs, "Streaming Messages")."""

from __future__ import annotations

from toolwire.streaming.merge import merge_payloads
from toolwire.streaming.state import Status


def start(index: int, kind: str = "tool_use", id: str = "toolu_1", name: str = "f", input: dict | None = None) -> dict:
    block = {"type": kind, "id": id, "name": name, "input": {} if input is None else input}
    return {"type": "content_block_start", "index": index, "content_block": block}


def json_delta(index: int, text: str) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": text}}


def stop(index: int) -> dict:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str) -> dict:
    return {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 9}}


HEAD = {"type": "message_start", "message": {"usage": {"input_tokens": 4, "output_tokens": 1}}}
PING = {"type": "ping"}


def test_input_given_whole_in_the_start_block_is_used_only_without_delta_text() -> None:
    whole = merge_payloads([HEAD, start(0, input={"q": "x"}), json_delta(0, ""), stop(0), message_delta("tool_use")])
    assert whole.calls[0].arguments == {"q": "x"} and whole.calls[0].arguments_text == '{"q":"x"}'
    streamed = merge_payloads([HEAD, start(0, input={"q": "x"}), json_delta(0, '{"q": "y"}'), stop(0), message_delta("tool_use")])
    assert streamed.calls[0].arguments == {"q": "y"}


def test_server_and_mcp_tool_blocks_keep_their_kind() -> None:
    m = merge_payloads([HEAD, start(0, "server_tool_use", "srvtoolu_1", "web_search"), json_delta(0, '{"query": "a"}'), stop(0),
                        start(1, "mcp_tool_use", "mcptoolu_1", "ask"), json_delta(1, "{}"), stop(1),
                        start(2, "tool_use", "toolu_2", "edit"), json_delta(2, "{}"), stop(2), message_delta("tool_use")])  # fmt: skip
    assert [c.kind for c in m.calls] == ["server_tool_use", "mcp_tool_use", "function"]


def test_text_thinking_ping_and_usage() -> None:
    m = merge_payloads(
        [
            HEAD,
            PING,
            {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
            stop(0),
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Let me check."}},
            stop(1),
            start(2),
            PING,
            json_delta(2, '{"a": 1}'),
            stop(2),
            message_delta("tool_use"),
            {"type": "message_stop"},
        ]
    )
    assert (m.reasoning, m.text) == ("hmm", "Let me check.")
    assert (m.usage.input_tokens, m.usage.output_tokens) == (4, 9)
    assert m.calls[0].status is Status.GENERATED and m.calls[0].arguments == {"a": 1}


def test_block_stop_completes_before_the_message_ends() -> None:
    from toolwire.streaming.formats.anthropic import AnthropicNormalizer
    from toolwire.streaming.merger import StreamMerger

    normalizer, merger = AnthropicNormalizer(), StreamMerger(explicit_ends=True)
    for event in (HEAD, start(0), json_delta(0, "{}"), stop(0)):
        merger.feed(normalizer.feed(event))
    assert merger.calls[0].status is Status.GENERATED


def test_stream_ending_without_block_stop_is_truncated_even_if_finish_says_tool_use() -> None:
    m = merge_payloads([HEAD, start(0), json_delta(0, '{"a": 1}'), message_delta("tool_use")])
    assert m.calls[0].error.code == "truncated"
