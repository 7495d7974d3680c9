"""Byte framing: SSE (WHATWG "Server-sent events" §9.2.6), JSONL, JSON arrays, AWS event streams."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from toolwire.streaming.eventstream import EventStreamDecoder, EventStreamError, looks_like_eventstream
from toolwire.streaming.framing import SSEDecoder, frames_from_bytes, jsonl_frames, sse_frames

CORPUS = Path(__file__).parent / "data" / "corpus"


def events(body: bytes, size: int | None = None) -> list[tuple[str | None, str]]:
    decoder, out = SSEDecoder(), []
    step = size or len(body) or 1
    for i in range(0, len(body), step):
        out += decoder.feed(body[i : i + step])
    return out + decoder.close()


def test_sse_fields_comments_crlf_and_multiline_data() -> None:
    body = b"\xef\xbb\xbf: comment\r\nevent: a\r\ndata: 1\r\ndata:2\r\nid: 7\r\nretry: 5\r\n\r\ndata\n\n:x\rdata: {}\r\rdata: last"
    assert events(body) == [("a", "1\n2"), (None, ""), (None, "{}"), (None, "last")]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_sse_split_anywhere_gives_the_same_events(size: int) -> None:
    body = "event: e\r\ndata: {\"t\": \"Zürich 😀\"}\r\n\r\ndata: [DONE]\r\n\r\n".encode()
    assert events(body, size) == events(body) == [("e", '{"t": "Zürich 😀"}'), (None, "[DONE]")]


def test_sse_keeps_unicode_line_separators_inside_data() -> None:
    payload = json.dumps({"t": "a\u2028b\x1cc\x85d"}, ensure_ascii=False)
    frames = list(sse_frames([f"data: {payload}\n\n".encode()]))
    assert frames[0].payload == {"t": "a\u2028b\x1cc\x85d"}


def test_sse_done_and_undecodable_payloads() -> None:
    frames = list(sse_frames([b"data: {bad\n\ndata: [DONE]\n\n"]))
    assert frames[0].error and "not valid JSON" in frames[0].error and frames[1].done


def test_long_line_in_tiny_pieces_stays_linear() -> None:
    line = b"data: " + json.dumps({"a": "x" * 200_000}).encode() + b"\n\n"
    decoder, out = SSEDecoder(), []
    for i in range(0, len(line), 16):
        out += decoder.feed(line[i : i + 16])
    assert len(out) == 1 and len(out[0][1]) == len(line) - 8


def test_jsonl_split_anywhere_and_without_final_newline() -> None:
    body = '{"a": "é"}\n\n{"b": 2}'.encode()
    whole = [f.payload for f in jsonl_frames([body])]
    pieces = [f.payload for f in jsonl_frames([body[i : i + 1] for i in range(len(body))])]
    assert whole == pieces == [{"a": "é"}, {"b": 2}]


def test_json_array_body() -> None:
    assert [f.payload for f in frames_from_bytes(b' [{"candidates": []}, {"x": 1}]')] == [{"candidates": []}, {"x": 1}]


def test_layout_detection_on_the_corpus() -> None:
    for path in CORPUS.iterdir():
        if path.suffix not in {".sse", ".jsonl", ".eventstream"}:
            continue
        frames = list(frames_from_bytes(path.read_bytes()))
        assert frames and all(f.error is None for f in frames), path.name
        assert looks_like_eventstream(path.read_bytes()[:12]) == (path.suffix == ".eventstream")


@pytest.mark.parametrize("name", [p.name for p in sorted(CORPUS.glob("*.eventstream"))])
def test_eventstream_split_at_every_offset(name: str) -> None:
    body = (CORPUS / name).read_bytes()
    whole = EventStreamDecoder().feed(body)
    assert whole and all(m.headers[":message-type"] == "event" for m in whole)
    for cut in range(1, len(body), 37):
        decoder = EventStreamDecoder()
        assert decoder.feed(body[:cut]) + decoder.feed(body[cut:]) == whole
        decoder.close()


def test_eventstream_errors() -> None:
    body = (CORPUS / "bedrock__nova-micro-converse-stream-text-then-tooluse.eventstream").read_bytes()
    decoder = EventStreamDecoder()
    decoder.feed(body[:-3])
    with pytest.raises(EventStreamError, match="ended inside a message"):
        decoder.close()
    broken = bytearray(body)
    broken[9] ^= 1
    with pytest.raises(EventStreamError, match="prelude CRC"):
        EventStreamDecoder().feed(bytes(broken))
    frames = list(frames_from_bytes(body[:-3]))
    assert frames[-1].fatal and "ended inside a message" in frames[-1].error


def test_eventstream_header_value_types() -> None:
    from toolwire.streaming.eventstream import _parse_headers

    raw = b"".join(
        [
            b"\x01t\x00", b"\x01f\x01", b"\x01b\x02\xff", b"\x01s\x03" + struct.pack(">h", -2),
            b"\x01i\x04" + struct.pack(">i", 7), b"\x01l\x05" + struct.pack(">q", 9),
            b"\x01y\x06\x00\x02ab", b"\x01z\x07\x00\x02hi", b"\x01d\x08" + struct.pack(">q", 1000), b"\x01u\x09" + bytes(16),
        ]
    )  # fmt: skip
    assert _parse_headers(raw) == {"t": True, "f": False, "b": -1, "s": -2, "i": 7, "l": 9, "y": b"ab", "z": "hi", "d": 1000, "u": bytes(16)}
    with pytest.raises(EventStreamError):
        _parse_headers(b"\x01x\x0a")
    prelude = struct.pack(">II", 16, 0)
    assert looks_like_eventstream(prelude + struct.pack(">I", zlib.crc32(prelude)))
