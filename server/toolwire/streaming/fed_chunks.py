"""The chunks a client feeds (``toolwire/toolCalls/merge``): decoded and checked, or refused.

A chunk is a provider payload (an object), the JSON text of one (a leading
``data:`` stripped, ``[DONE]`` skipped), or an SSE event as an envelope: an object
holding ``event`` (its name, or a Bedrock ``:event-type``; ``null`` for none) and
``data`` (the payload, or its JSON text), and optionally SSE's other fields ``id`` and
``retry`` (HTML Living Standard, "Server-sent events"), which are not used.

Everything is checked before anything is merged (a request is all or nothing):
a chunk that is not JSON, not an object, an envelope field of the wrong type, or
a payload field the format's normalizer would leave out for its type
(:mod:`toolwire.streaming.chunk_shapes`) raises :class:`ChunkError` naming the
chunk's position in the batch and the field.
"""

from __future__ import annotations

from typing import Any

from toolwire.streaming.chunk_shapes import json_type, wrong_field
from toolwire.streaming.partial import loads_marking_duplicates

__all__ = ["ChunkError", "decode_chunks", "check_fields"]

#: The OpenAI end-of-stream sentinel; skipped when fed as text.
_DONE = "[DONE]"
#: The fields an SSE event envelope may hold (``event`` and ``data`` are required).
_ENVELOPE = frozenset({"event", "data", "id", "retry"})

Decoded = tuple[int, dict[str, Any], str | None]


class ChunkError(ValueError):
    """A fed chunk that cannot be merged; the message names its position and why."""


def _is_envelope(chunk: dict[str, Any]) -> bool:
    return "event" in chunk and "data" in chunk and chunk.keys() <= _ENVELOPE


def decode_chunks(chunks: list[Any]) -> list[Decoded]:
    """``(position, payload, event)`` for each chunk but the ``[DONE]`` sentinels.

    Raises:
        ChunkError: the first chunk that is not JSON, not an object, or an
            envelope with a field of the wrong type.
    """
    out: list[Decoded] = []
    for position, chunk in enumerate(chunks):
        item = _unwrap(chunk, position)
        if item is not None:
            out.append((position, *item))
    return out


def check_fields(fmt: str, decoded: list[Decoded]) -> None:
    """Refuse the first payload with a field ``fmt``'s normalizer would leave out for its type.

    Raises:
        ChunkError: e.g. ``chunk 2 of the batch: choices[0].delta.tool_calls[0].id
            is a number, not a string``.
    """
    for position, payload, event in decoded:
        problem = wrong_field(fmt, payload, event)
        if problem is not None:
            raise ChunkError(f"chunk {position} of the batch: {problem}")


def _unwrap(chunk: Any, position: int) -> tuple[dict[str, Any], str | None] | None:
    """Decode one fed chunk into ``(payload, event)``; None for the ``[DONE]`` sentinel."""
    if type(chunk) is dict and not _is_envelope(chunk):
        return chunk, None  # the common case: a payload object
    if isinstance(chunk, str):
        text = chunk.strip()
        if text.startswith("data:"):
            text = text[5:].strip()
        if text == _DONE:
            return None
        chunk = _json(text, position)
    if not (isinstance(chunk, dict) and _is_envelope(chunk)):
        return _object(chunk, position), None
    event, data, sse_id, retry = chunk["event"], chunk["data"], chunk.get("id"), chunk.get("retry")
    if event is not None and not isinstance(event, str):  # null: an event without a name
        raise _wrong(position, "event", event, "a string")
    if sse_id is not None and not isinstance(sse_id, str):
        raise _wrong(position, "id", sse_id, "a string")
    if retry is not None and not (type(retry) is int and retry >= 0):
        raise _wrong(position, "retry", retry, "a non-negative integer")
    if isinstance(data, str):
        if data.strip() == _DONE:
            return None
        data = _json(data.strip(), position)
    elif not isinstance(data, dict):
        raise _wrong(position, "data", data, "an object or the JSON text of one")
    return _object(data, position), event


def _wrong(position: int, field: str, value: Any, wanted: str) -> ChunkError:
    return ChunkError(f"chunk {position} of the batch: {field} is {json_type(value)}, not {wanted}")


def _object(payload: Any, position: int) -> dict[str, Any]:
    """A provider payload is a JSON object: anything else is refused (protocol.md, merge ``chunks``)."""
    if not isinstance(payload, dict):
        raise ChunkError(f"chunk {position} of the batch is neither an object nor the JSON text of one "
                         f"(got {type(payload).__name__ if payload is not None else 'null'})")
    return payload


def _json(text: str, position: int) -> Any:
    try:
        return loads_marking_duplicates(text)  # keys named twice in whole arguments are refused later
    except ValueError as exc:
        raise ChunkError(f"chunk {position} of the batch is not JSON ({exc}): {text[:80]!r}") from None
    except RecursionError:  # [[[[…]]]] deeper than the parser goes (about 1000 levels)
        raise ChunkError(f"chunk {position} of the batch nests arrays or objects too deeply to be read: "
                         f"{text[:80]!r}") from None
