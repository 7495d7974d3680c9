"""Byte framing: recorded or live stream bodies into payloads.

Three layouts reach us:

* **SSE** (``text/event-stream``), parsed per the WHATWG HTML standard,
  "Server-sent events", §9.2.6 "Interpreting an event stream": lines end in CRLF,
  LF or CR; ``data:`` lines of one event are joined with ``\\n``; one space after
  the colon is dropped; lines starting with ``:`` are comments; a blank line
  dispatches the event. ``data: [DONE]`` (OpenAI) ends the stream.
* **JSONL**: one JSON payload per line (recorded fixtures); also a single JSON
  array of payloads (Gemini streaming without ``alt=sse``).
* **AWS event stream** (Bedrock): binary frames, see :mod:`toolwire.streaming.eventstream`.

The decoders are incremental: bytes may be split anywhere, including inside a
multi-byte UTF-8 character.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from toolwire.streaming.eventstream import (
    EventStreamDecoder,
    EventStreamError,
    looks_like_eventstream,
    message_frame_fields,
)
from toolwire.streaming.partial import loads_marking_duplicates

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
        fatal: True when the framing itself broke (an AWS event stream CRC
            mismatch, a body cut inside a binary message): nothing after it
            can be read, so calls still open must end ``errored``.
    """

    event: str | None
    payload: Any
    raw: str = ""
    error: str | None = None
    done: bool = False
    fatal: bool = False


#: Payload text that may hold tool arguments as a whole object (Gemini ``args``,
#: Anthropic/Vercel ``input``, object-valued ``arguments``).
_WHOLE_ARGUMENTS = ('"args"', '"input"', '"arguments":{', '"arguments": {')


def decode_data(event: str | None, data: str) -> Frame:
    """Decode one event's data text as JSON into a :class:`Frame` (never raises)."""
    text = data.strip()
    if text == DONE:
        return Frame(event, None, data, done=True)
    try:
        if any(marker in text for marker in _WHOLE_ARGUMENTS):
            # arguments given whole as an object: keep the news of a key named twice
            return Frame(event, loads_marking_duplicates(text), data)
        return Frame(event, json.loads(text), data)
    except ValueError as exc:
        return Frame(event, None, data, error=f"not valid JSON ({exc}): {text[:80]!r}")
    except RecursionError:  # [[[[…]]]] deeper than the parser goes (about 1000 levels)
        return Frame(event, None, data, error=f"not valid JSON (nested too deeply to be read): {text[:80]!r}")


#: SSE line ends (WHATWG §9.2.6): CRLF, LF or CR, and nothing else; U+2028 and
#: the other characters ``str.splitlines`` knows are ordinary data.
_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEDecoder:
    """Incremental SSE parser: feed bytes, get ``(event, data)`` pairs.

    Linear in the input however it is split: only new text is searched for
    line ends, and a long line arriving in many pieces is joined once.
    """

    __slots__ = ("_utf8", "_partial", "_event", "_data", "_pending_cr", "_started")

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._partial: list[str] = []
        self._event: str | None = None
        self._data: list[str] = []
        self._pending_cr = False
        self._started = False

    def feed(self, chunk: bytes) -> list[tuple[str | None, str]]:
        """Add bytes (split anywhere, even inside a UTF-8 character); return the events they complete."""
        return self._text(self._utf8.decode(chunk))

    def close(self) -> list[tuple[str | None, str]]:
        """End of input: dispatch what is pending (a final event without its blank line)."""
        out = self._text(self._utf8.decode(b"", final=True))
        if self._partial:
            self._line("".join(self._partial), out)
            self._partial = []
        self._line("", out)
        return out

    def _text(self, text: str) -> list[tuple[str | None, str]]:
        out: list[tuple[str | None, str]] = []
        if not text:
            return out
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]
        self._pending_cr = False
        pos = 0
        for match in _LINE_END.finditer(text):
            piece = text[pos : match.start()]
            if self._partial:
                self._partial.append(piece)
                piece = "".join(self._partial)
                self._partial = []
            self._line(piece, out)
            pos = match.end()
            if match.group() == "\r" and pos == len(text):
                self._pending_cr = True  # a CRLF may be split between chunks
        if pos < len(text):
            self._partial.append(text[pos:])
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
        elif field == "error":  # llama.cpp's server before Sep 2025 (PR 16109): ``error: {...}`` ends a stream
            self._event = "error"
            self._data.append(value)


def sse_frames(chunks: Iterable[bytes]) -> Iterator[Frame]:
    """Frames of an SSE body given as byte chunks (split anywhere)."""
    decoder = SSEDecoder()
    for chunk in chunks:
        for event, data in decoder.feed(chunk):
            yield decode_data(event, data)
    for event, data in decoder.close():
        yield decode_data(event, data)


def jsonl_frames(chunks: Iterable[bytes]) -> Iterator[Frame]:
    """Frames of a JSONL body (one payload per line; blank lines skipped; linear however split)."""
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    partial: list[str] = []
    for chunk in chunks:
        text = utf8.decode(chunk)
        pos = 0
        while True:
            nl = text.find("\n", pos)
            if nl < 0:
                break
            partial.append(text[pos:nl])
            line = "".join(partial)
            partial = []
            pos = nl + 1
            if line.strip():
                yield decode_data(None, line)
        if pos < len(text):
            partial.append(text[pos:])
    partial.append(utf8.decode(b"", final=True))
    line = "".join(partial)
    if line.strip():
        yield decode_data(None, line)


def eventstream_frames(chunks: Iterable[bytes]) -> Iterator[Frame]:
    """Frames of an AWS event stream body (Bedrock), see :mod:`toolwire.streaming.eventstream`.

    A broken message (CRC mismatch, cut-off body) ends the frames with one
    ``fatal`` error frame; nothing after it can be trusted.
    """
    decoder = EventStreamDecoder()
    try:
        for chunk in chunks:
            for message in decoder.feed(chunk):
                event, payload, raw, error = message_frame_fields(message)
                yield Frame(event, payload, raw, error=error)
        decoder.close()
    except EventStreamError as exc:
        yield Frame(None, None, "", error=f"AWS event stream is broken: {exc}", fatal=True)


def json_array_frames(body: bytes) -> Iterator[Frame] | None:
    """Frames of a body that is one JSON array of payloads (Gemini without ``alt=sse``), or None."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    return iter([Frame(None, item, "") for item in value])


def looks_like_sse(head: bytes) -> bool:
    """True when the first bytes of a body look like SSE rather than JSONL."""
    for line in head.lstrip(b"\xef\xbb\xbf \t\r\n").splitlines()[:5]:
        if line.startswith((b"data:", b"event:", b":", b"id:", b"retry:")) or line in (b"data", b"event"):
            return True
    return False


def frames_from_bytes(body: bytes) -> Iterator[Frame]:
    """Frames of a whole body; the layout is detected from its first bytes.

    Order of checks: an AWS event stream prelude with a valid CRC; SSE field
    lines; a single JSON array; otherwise JSONL.
    """
    if looks_like_eventstream(body[:12]):
        return eventstream_frames([body])
    if looks_like_sse(body[:512]):
        return sse_frames([body])
    if body.lstrip()[:1] == b"[":
        frames = json_array_frames(body)
        if frames is not None:
            return frames
    return jsonl_frames([body])
