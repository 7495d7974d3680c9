"""AWS event stream framing (``application/vnd.amazon.eventstream``), as Bedrock streams it.

Spec source: AWS documentation, "Event stream encoding" (Amazon S3 / Transcribe /
Bedrock streaming APIs all use it). Every message is::

    +----------------------+------------------------+--------------------+
    | total length  uint32 | headers length  uint32 | prelude CRC uint32 |   prelude: 12 bytes
    +----------------------+------------------------+--------------------+
    | headers (headers length bytes)                                     |
    | payload (total - headers - 16 bytes)                               |
    | message CRC uint32                                                 |
    +--------------------------------------------------------------------+

All integers are big-endian. Both CRCs are CRC-32 (IEEE 802.3, the one
:func:`zlib.crc32` computes): the prelude CRC covers the first 8 bytes, the
message CRC everything before it. Each header is ``name length (uint8)``,
``name (UTF-8)``, ``value type (uint8)`` and a value whose layout the type gives:
0 true, 1 false (no bytes), 2 int8, 3 int16, 4 int32, 5 int64, 6 bytes and
7 string (uint16 length + bytes), 8 timestamp (int64 ms), 9 UUID (16 bytes).

Bedrock sets ``:message-type`` (``event``, ``exception`` or ``error``),
``:event-type`` (``chunk``, ``contentBlockDelta``, ...), ``:exception-type``
and ``:content-type``; the payload is JSON.
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass
from typing import Any

#: Smallest possible message: prelude (12) + message CRC (4).
_MIN_MESSAGE = 16
#: Refuse messages larger than this (AWS caps event stream messages at 16 MiB).
MAX_MESSAGE = 16 * 1024 * 1024

_FIXED_SIZES = {2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
_INT_FORMATS = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}


class EventStreamError(ValueError):
    """The bytes are not a valid AWS event stream (bad length, CRC or header)."""


@dataclass(slots=True, frozen=True)
class EventMessage:
    """One decoded event stream message.

    Attributes:
        headers: Header name -> value (``str``, ``bytes``, ``int``, ``bool``).
        payload: The payload bytes (JSON for Bedrock).
    """

    headers: dict[str, Any]
    payload: bytes


def _parse_headers(raw: bytes) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    pos, end = 0, len(raw)
    while pos < end:
        name_len = raw[pos]
        pos += 1
        name = raw[pos : pos + name_len].decode("utf-8", "replace")
        pos += name_len
        if pos >= end:
            raise EventStreamError(f"header {name!r} has no value type")
        kind = raw[pos]
        pos += 1
        if kind in (0, 1):
            value: Any = kind == 0
        elif kind in (6, 7):
            if pos + 2 > end:
                raise EventStreamError(f"header {name!r} is cut off")
            (length,) = struct.unpack_from(">H", raw, pos)
            pos += 2
            value = raw[pos : pos + length]
            if len(value) != length:
                raise EventStreamError(f"header {name!r} is cut off")
            if kind == 7:
                value = value.decode("utf-8", "replace")
            pos += length
        elif kind in _FIXED_SIZES:
            size = _FIXED_SIZES[kind]
            if pos + size > end:
                raise EventStreamError(f"header {name!r} is cut off")
            value = raw[pos : pos + size] if kind == 9 else struct.unpack_from(_INT_FORMATS[kind], raw, pos)[0]
            pos += size
        else:
            raise EventStreamError(f"header {name!r} has unknown value type {kind}")
        headers[name] = value
    return headers


def looks_like_eventstream(head: bytes) -> bool:
    """True when ``head`` starts with a valid event stream prelude (lengths and CRC agree)."""
    if len(head) < 12:
        return False
    total, headers_len, crc = struct.unpack_from(">III", head, 0)
    return (
        _MIN_MESSAGE <= total <= MAX_MESSAGE
        and headers_len <= total - _MIN_MESSAGE
        and zlib.crc32(head[:8]) == crc
    )


class EventStreamDecoder:
    """Incremental decoder: feed bytes split anywhere, get whole messages.

    Raises:
        EventStreamError: from :meth:`feed` / :meth:`close` when a prelude or
            message CRC does not match, a length is impossible, or the input
            ends inside a message. Decoding cannot resynchronise after that.
    """

    __slots__ = ("_buffer", "_start", "_failed")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._start = 0
        self._failed: EventStreamError | None = None

    def feed(self, chunk: bytes) -> list[EventMessage]:
        """Add bytes; return the messages they complete, in order.

        Messages decoded before a broken one are returned first; the error is
        raised by the next call.
        """
        if self._failed is not None:
            raise self._failed
        out: list[EventMessage] = []
        try:
            self._decode(chunk, out)
        except EventStreamError as exc:
            if not out:
                raise
            self._failed = exc
        return out

    def _decode(self, chunk: bytes, out: list[EventMessage]) -> None:
        self._buffer += chunk
        buf = self._buffer
        while len(buf) - self._start >= 12:
            start = self._start
            total, headers_len, crc = struct.unpack_from(">III", buf, start)
            if zlib.crc32(buf[start : start + 8]) != crc:
                raise EventStreamError(f"prelude CRC mismatch at byte {start}")
            if not (_MIN_MESSAGE <= total <= MAX_MESSAGE) or headers_len > total - _MIN_MESSAGE:
                raise EventStreamError(f"impossible lengths at byte {start} (total {total}, headers {headers_len})")
            if len(buf) - start < total:
                break
            body_end = start + total - 4
            (message_crc,) = struct.unpack_from(">I", buf, body_end)
            if zlib.crc32(buf[start:body_end]) != message_crc:
                raise EventStreamError(f"message CRC mismatch for the message at byte {start}")
            headers = _parse_headers(bytes(buf[start + 12 : start + 12 + headers_len]))
            out.append(EventMessage(headers, bytes(buf[start + 12 + headers_len : body_end])))
            self._start = start + total
        if self._start and self._start * 2 >= len(buf):
            # Drop consumed bytes now and then (amortised linear).
            del buf[: self._start]
            self._start = 0

    def close(self) -> None:
        """End of input.

        Raises:
            EventStreamError: the input ended inside a message, or an error
                held back by :meth:`feed`.
        """
        if self._failed is not None:
            raise self._failed
        left = len(self._buffer) - self._start
        if left:
            raise EventStreamError(f"the stream ended inside a message ({left} bytes left over)")


def message_frame_fields(message: EventMessage) -> tuple[str | None, Any, str, str | None]:
    """``(event, payload, raw, error)`` for one message, as :class:`~toolwire.streaming.framing.Frame` wants.

    ``event`` is ``:event-type`` for events, ``:exception-type`` for exceptions
    (e.g. ``throttlingException``) and ``"error"`` for error messages, whose
    payload becomes ``{"message": :error-message, "code": :error-code}``.
    """
    headers = message.headers
    kind = headers.get(":message-type", "event")
    raw = message.payload.decode("utf-8", "replace")
    if kind == "error":
        payload = {"message": headers.get(":error-message", raw), "code": headers.get(":error-code")}
        return "error", payload, raw, None
    event = headers.get(":exception-type") if kind == "exception" else headers.get(":event-type")
    if not raw.strip():
        return event, {}, raw, None
    try:
        return event, json.loads(raw), raw, None
    except RecursionError:
        return event, None, raw, f"event stream payload is not valid JSON (nested too deeply to be read): {raw[:80]!r}"
    except ValueError as exc:
        return event, None, raw, f"event stream payload is not valid JSON ({exc}): {raw[:80]!r}"
