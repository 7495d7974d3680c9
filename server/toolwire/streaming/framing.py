"""Byte framing: recorded or live stream bodies into payloads.

Three layouts reach us:

* **SSE** (``text/event-stream``), parsed per the WHATWG HTML standard,
  "Server-sent events", §9.2.6 "Interpreting an event stream": lines end in CRLF,
  LF or CR; ``data:`` lines of one event are joined with ``\\n``; one space after
  the colon is dropped; lines starting with ``:`` are comments; a blank line
  dispatches the event. ``data: [DONE]`` (OpenAI) ends the stream.
* **JSONL**: one JSON payload per line (recorded fixtures).
* **AWS event stream** (Bedrock): binary frames, see :mod:`toolwire.streaming.eventstream`.

The decoders are incremental: bytes may be split anywhere, including inside a
multi-byte UTF-8 character.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

#: The OpenAI end-of-stream sentinel.
DONE = "[DONE]"


@dataclass(slots=True, frozen=True)
class Frame:
    """One payload of a stream.

    Attributes:
        event: The SSE ``event:`` name (or AWS ``:event-type``), if any.
        payload: The decoded JSON value, or None when ``error`` is set.
        raw: The undecoded data text (for error messages).
        error: Why ``raw`` could not be decoded, or None.
        done: True for the ``[DONE]`` sentinel.
    """

    event: str | None
    payload: Any
    raw: str = ""
    error: str | None = None
    done: bool = False


def decode_data(event: str | None, data: str) -> Frame:
    """Decode one event's data text as JSON into a :class:`Frame` (never raises)."""
    text = data.strip()
    if text == DONE:
        return Frame(event, None, data, done=True)
    try:
        return Frame(event, json.loads(text), data)
    except ValueError as exc:
        return Frame(event, None, data, error=f"not valid JSON ({exc}): {text[:80]!r}")


class SSEDecoder:
    """Incremental SSE parser: feed bytes, get ``(event, data)`` pairs."""

    __slots__ = ("_utf8", "_buffer", "_event", "_data", "_pending_cr")

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ""
        self._event: str | None = None
        self._data: list[str] = []
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """Add bytes; return the events completed by them."""
        text = self._utf8.decode(chunk)
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]
        self._pending_cr = text.endswith("\r")
        self._buffer += text
        lines = self._buffer.splitlines(keepends=True)
        out: list[tuple[str | None, str]] = []
        rest = ""
        for line in lines:
            if not line.endswith(("\n", "\r")):
                rest = line
                break
            self._line(line.rstrip("\r\n"), out)
        self._buffer = rest
        return out

    def close(self) -> list[tuple[str | None, str]]:
        """End of input: dispatch what is pending (a final event without its blank line)."""
        out: list[tuple[str | None, str]] = []
        tail = self._utf8.decode(b"", final=True)
        self._buffer += tail
        if self._buffer:
            self._line(self._buffer, out)
            self._buffer = ""
        self._line("", out)
        return out

    def _line(self, line: str, out: list[tuple[str | None, str]]) -> None:
        if not line:
            if self._data:
                out.append((self._event, "\n".join(self._data)))
            self._event = None
            self._data = []
            return
        if line.startswith(":"):
            return
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value


def sse_frames(chunks: Iterable[bytes]) -> Iterator[Frame]:
    """Frames of an SSE body given as byte chunks (split anywhere)."""
    decoder = SSEDecoder()
    for chunk in chunks:
        for event, data in decoder.feed(chunk):
            yield decode_data(event, data)
    for event, data in decoder.close():
        yield decode_data(event, data)


def jsonl_frames(chunks: Iterable[bytes]) -> Iterator[Frame]:
    """Frames of a JSONL body (one payload per line; blank lines skipped)."""
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    buffer = ""
    for chunk in chunks:
        buffer += utf8.decode(chunk)
        *lines, buffer = buffer.split("\n")
        for line in lines:
            if line.strip():
                yield decode_data(None, line)
    buffer += utf8.decode(b"", final=True)
    if buffer.strip():
        yield decode_data(None, buffer)


def looks_like_sse(head: bytes) -> bool:
    """True when the first bytes of a body look like SSE rather than JSONL."""
    for line in head.lstrip().splitlines()[:5]:
        if line.startswith((b"data:", b"event:", b":", b"id:", b"retry:")):
            return True
    return False


def frames_from_bytes(body: bytes) -> Iterator[Frame]:
    """Frames of a whole SSE or JSONL body (layout detected from the first lines)."""
    if looks_like_sse(body[:512]):
        return sse_frames([body])
    return jsonl_frames([body])
