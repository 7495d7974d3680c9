"""Bedrock ConverseStream and InvokeModelWithResponseStream, over real AWS event stream framing."""

from __future__ import annotations

import base64
import json
import struct
import zlib

from toolwire.streaming.framing import frames_from_bytes
from toolwire.streaming.merge import merge_bytes, merge_payloads
from toolwire.streaming.state import Status


def encode(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event stream message (string headers only), per "Event stream encoding"."""
    raw = b"".join(
        bytes([len(k)]) + k.encode() + b"\x07" + struct.pack(">H", len(v.encode())) + v.encode() for k, v in headers.items()
    )
    total = 12 + len(raw) + len(payload) + 4
    prelude = struct.pack(">II", total, len(raw))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + raw + payload
    return body + struct.pack(">I", zlib.crc32(body))


def converse(event: str, body: dict) -> bytes:
    headers = {":event-type": event, ":content-type": "application/json", ":message-type": "event"}
    return encode(headers, json.dumps({**body, "p": "abcdef"}).encode())


def exception(kind: str, message: str) -> bytes:
    return encode({":exception-type": kind, ":message-type": "exception"}, json.dumps({"message": message}).encode())


def test_converse_stream_with_reasoning_text_and_a_split_tool_input() -> None:
    body = b"".join(
        [
            converse("messageStart", {"role": "assistant"}),
            converse("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "hm"}}}),
            converse("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Sure."}}),
            converse("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}),
            converse("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"a": '}}}),
            converse("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": "1}"}}}),
            converse("contentBlockStop", {"contentBlockIndex": 2}),
            converse("messageStop", {"stopReason": "tool_use"}),
            converse("metadata", {"usage": {"inputTokens": 8, "outputTokens": 9}}),
        ]
    )
    m = merge_bytes(body)
    assert [(c.id, c.name, c.arguments, c.status) for c in m.calls] == [("t1", "f", {"a": 1}, Status.GENERATED)]
    assert (m.reasoning, m.text, m.finish_reasons, m.usage.input_tokens) == ("hm", "Sure.", ["tool_use"], 8)


def test_exception_mid_stream_errors_the_open_call() -> None:
    body = converse("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}})
    body += converse("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a'}}})
    body += exception("modelStreamErrorException", "model failed")
    m = merge_bytes(body)
    assert m.errors[0].code == "modelStreamErrorException"
    assert m.calls[0].error.code == "truncated" and "model failed" in m.calls[0].error.message


def test_broken_crc_ends_the_stream_as_an_error() -> None:
    good = converse("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}})
    good += converse("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}})
    bad = bytearray(converse("contentBlockStop", {"contentBlockIndex": 0}))
    bad[-6] ^= 0xFF
    m = merge_bytes(good + bytes(bad))
    assert m.calls[0].status is Status.ERRORED and "CRC" in m.calls[0].error.message


def test_boto3_shaped_payloads_are_unwrapped() -> None:
    m = merge_payloads(
        [
            {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}},
            {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{}"}}}},
            {"contentBlockStop": {"contentBlockIndex": 0}},
            {"messageStop": {"stopReason": "tool_use"}},
        ]
    )
    assert m.calls[0].status is Status.GENERATED and m.finish_reasons == ["tool_use"]


def test_invoke_model_chunks_decode_to_anthropic_events() -> None:
    events = [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"x": 2}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
    ]  # fmt: skip
    body = b"".join(
        encode({":event-type": "chunk", ":message-type": "event"},
               json.dumps({"bytes": base64.b64encode(json.dumps(e).encode()).decode(), "p": "ab"}).encode())
        for e in events
    )  # fmt: skip
    assert [f.event for f in frames_from_bytes(body)] == ["chunk"] * 4
    m = merge_bytes(body)
    assert (m.calls[0].id, m.calls[0].arguments, m.finish_reasons) == ("toolu_1", {"x": 2}, ["tool_use"])


def test_invoke_model_bad_base64_is_reported() -> None:
    m = merge_payloads([("chunk", {"bytes": "%%%"})], "bedrock-invoke")
    assert m.errors[0].code == "malformed_chunk"
