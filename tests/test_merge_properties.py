"""Property tests: however a real stream is cut, the final calls are the same.

Three re-splittings, each checked against the corpus (tests/data/corpus):

* the argument text of every call, re-split at random UTF-16 code-unit
  boundaries (so a surrogate pair may be cut in two, as a JSON ``\\ud83d`` escape
  delivers it) into a random number of deltas;
* OpenAI chat chunks rebuilt from the expected calls with random fragment
  boundaries, ids on the first or on every chunk (full or empty), header chunks
  with or without ``arguments``, several fragments in one chunk and calls
  interleaved;
* the raw body cut at random byte offsets (inside UTF-8 characters, CRLF pairs
  and binary event stream messages).

``max_examples`` stays small per file so the whole module runs in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire.streaming.delta import ToolCallDelta
from toolwire.streaming.formats.registry import detect_format, make_normalizer
from toolwire.streaming.framing import eventstream_frames, frames_from_bytes, jsonl_frames, sse_frames
from toolwire.streaming.merge import merge_bytes, merge_frames, merge_payloads
from toolwire.streaming.merger import StreamMerger

CORPUS = Path(__file__).parent / "data" / "corpus"
EXPECTED: dict[str, dict] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
FILES = sorted(EXPECTED)
CHAT_FILES = [n for n in FILES if detect_format(next(iter(frames_from_bytes((CORPUS / n).read_bytes()))).payload) == "openai-chat"
              and EXPECTED[n]["calls"]]  # fmt: skip
PROPERTY = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def final(merger: StreamMerger) -> list[tuple[Any, ...]]:
    return [(c.id, c.name, c.kind, c.arguments, c.arguments_text, c.status.value, c.error.code if c.error else None)
            for c in merger.calls]  # fmt: skip


def stream_events(name: str) -> tuple[str, list]:
    frames = list(frames_from_bytes((CORPUS / name).read_bytes()))
    fmt = next(f for f in (detect_format(fr.payload, fr.event) for fr in frames if fr.error is None) if f)
    normalizer = make_normalizer(fmt)
    events = [e for fr in frames if not fr.done and fr.error is None for e in normalizer.feed(fr.payload, fr.event)]
    return fmt, events + normalizer.close()


def merge_events(fmt: str, events: list) -> StreamMerger:
    merger = StreamMerger(explicit_ends=make_normalizer(fmt).explicit_ends, refresh_bytes=1)
    for event in events:
        merger.apply(event)
        if len(merger.calls) % 2:
            merger.refresh_all()  # live views on the way must never raise
    merger.finish()
    return merger


def utf16_pieces(text: str, cuts: list[int]) -> list[str]:
    units = text.encode("utf-16-le", "surrogatepass")
    n = len(units) // 2
    bounds = sorted({c % (n + 1) for c in cuts} | {0, n})
    return [units[2 * a : 2 * b].decode("utf-16-le", "surrogatepass") for a, b in zip(bounds, bounds[1:]) if b > a]


def resplit(events: list, cuts: list[int]) -> list:
    """Move each key's argument text to its first argument delta, re-split there."""
    texts: dict[Any, list[str]] = {}
    for e in events:
        if isinstance(e, ToolCallDelta) and e.arguments:
            texts.setdefault(e.key, []).append(e.arguments)
    out: list = []
    placed: set[Any] = set()
    for e in events:
        if not (isinstance(e, ToolCallDelta) and e.arguments):
            out.append(e)
            continue
        out.append(ToolCallDelta(e.key, e.id, e.name, e.name_whole, None, e.arguments_whole, e.arguments_final, e.kind, e.new_call))
        if e.key not in placed:
            placed.add(e.key)
            out.extend(ToolCallDelta(e.key, arguments=p) for p in utf16_pieces("".join(texts[e.key]), cuts))
    return out


@pytest.mark.parametrize("name", FILES)
@PROPERTY
@given(cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=40))
def test_resplitting_argument_text_gives_the_same_calls(name: str, cuts: list[int]) -> None:
    fmt, events = stream_events(name)
    assert final(merge_events(fmt, resplit(events, cuts))) == final(merge_events(fmt, events))


@st.composite
def chat_chunks(draw: st.DrawFn, calls: list[dict]) -> list[dict]:
    per_call: list[list[dict]] = []
    id_mode = draw(st.sampled_from(["first", "every", "empty"]))
    for index, call in enumerate(calls):
        text = call["arguments_text"]
        cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=12))) | {0, len(text)})
        pieces = [text[a:b] for a, b in zip(cuts, cuts[1:])]
        header: dict[str, Any] = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["name"]}}
        if draw(st.booleans()):
            header["function"]["arguments"] = pieces.pop(0) if pieces and draw(st.booleans()) else ""
        seq = [header]
        for piece in pieces:
            part: dict[str, Any] = {"index": index, "function": {"arguments": piece}}
            if id_mode != "first":
                part["id"] = call["id"] if id_mode == "every" else ""
            seq.append(part)
        per_call.append(seq)
    chunks: list[dict] = []
    started = [False] * len(per_call)
    while any(per_call):
        # Interleave freely, but a call starts only after the one before it (order of appearance).
        live = [i for i, s in enumerate(per_call) if s and (i == 0 or started[i - 1])]
        i = live[draw(st.integers(0, len(live) - 1))]
        seq, started[i] = per_call[i], True
        take = draw(st.integers(1, 3))
        parts, seq[:] = seq[:take], seq[take:]
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": parts}, "finish_reason": None}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return chunks


@pytest.mark.parametrize("name", CHAT_FILES)
@PROPERTY
@given(data=st.data())
def test_resplitting_openai_chunks_gives_the_expected_calls(name: str, data: st.DataObject) -> None:
    calls = EXPECTED[name]["calls"]
    merger = merge_payloads(data.draw(chat_chunks(calls)), "openai-chat")
    got = [(c.id, c.name, c.arguments, c.arguments_text, c.status.value) for c in merger.calls]
    assert got == [(c["id"], c["name"], c["arguments"], c["arguments_text"], "generated") for c in calls]


FRAMERS = {".sse": sse_frames, ".jsonl": jsonl_frames, ".eventstream": eventstream_frames}


@pytest.mark.parametrize("name", FILES)
@PROPERTY
@given(cuts=st.lists(st.integers(min_value=0, max_value=40_000), max_size=60))
def test_rechunking_the_body_at_random_byte_offsets(name: str, cuts: list[int]) -> None:
    body = (CORPUS / name).read_bytes()
    bounds = sorted({c % (len(body) + 1) for c in cuts} | {0, len(body)})
    pieces = [body[a:b] for a, b in zip(bounds, bounds[1:])]
    framer = FRAMERS[Path(name).suffix]
    merged = merge_frames(framer(pieces))
    whole = merge_bytes(body)
    assert final(merged) == final(whole)
    assert (merged.text, merged.reasoning, merged.finish_reasons) == (whole.text, whole.reasoning, whole.finish_reasons)
