"""Malformed provider payloads are skipped with an anomaly; they never raise or lose the other calls."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from toolwire.streaming.framing import frames_from_bytes
from toolwire.streaming.merge import merge_frames, merge_payloads

CORPUS = Path(__file__).parent / "data" / "corpus"
EXPECTED = json.loads((CORPUS / "expected.json").read_text())
FILES = sorted(name for name in EXPECTED if EXPECTED[name]["calls"])

#: Payload shapes seen from buggy servers or fuzzers: right keys, wrong types.
HOSTILE = [
    {"type": ["content_block_start"], "index": 0},
    {"type": {"x": 1}},
    {"type": "content_block_delta", "index": {"a": 1}, "delta": ["x"]},
    {"choices": [{"index": "²", "delta": {"tool_calls": [{"index": "²"}]}}]},
    {"choices": [{"delta": {"tool_calls": "nope"}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": -1, "function": {"arguments": "zz"}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "x", "function": {"arguments": "zz"}}]}}]},
    {"type": "content_block_delta", "index": "zero", "delta": {"type": "input_json_delta", "partial_json": "zz"}},
    {"type": "content_block_start", "index": -3, "content_block": {"type": "tool_use", "id": "p", "name": "phantom"}},
    {"type": "response.output_item.added", "item": ["function_call"], "output_index": None},
    {"candidates": [{"content": {"parts": [{"functionCall": ["x"]}]}}]},
    {"type": "tool-call-delta", "index": [], "delta": None},
    {"type": "tool-input-delta", "toolCallId": {"x": 1}, "inputTextDelta": 5},
    [1, 2, 3],
    "just a string",
    None,
]


def merge_cli_format(frames):
    from toolwire.streaming.formats.registry import detect_format

    return next(f for f in (detect_format(fr.payload, fr.event) for fr in frames) if f)


def test_hostile_payloads_never_break_detection():
    from toolwire.streaming.formats.registry import detect_format

    for payload in HOSTILE:
        for event in (None, "content_block_start", "chunk", "error"):
            detect_format(payload, event)  # never raises


def calls_of(merger):
    return [(c.name, c.arguments) for c in merger.calls if c.status.value == "generated"]


@pytest.mark.parametrize("name", FILES)
def test_hostile_payloads_between_real_ones_change_nothing(name):
    frames = [f for f in frames_from_bytes((CORPUS / name).read_bytes()) if not f.done and f.error is None]
    clean = merge_frames(iter(frames))
    rng = random.Random(name)
    mixed = []
    for frame in frames:
        mixed.append((frame.event, frame.payload))
        if rng.random() < 0.5:
            mixed.append((rng.choice([None, frame.event]), rng.choice(HOSTILE)))
    fmt = merge_cli_format(frames)
    dirty = merge_payloads(mixed, fmt)  # never raises
    assert calls_of(dirty) == calls_of(clean)
    assert [c.name for c in dirty.calls if c.name] == [c.name for c in clean.calls if c.name]


def test_the_cli_reports_instead_of_crashing(tmp_path):
    body = (CORPUS / "anthropic__text-then-tool-use.sse").read_text()
    bad = tmp_path / "bad.sse"
    bad.write_text('event: content_block_start\ndata: {"type": ["list"], "index": 9}\n\n' + body)
    done = subprocess.run([sys.executable, "-m", "toolwire", "merge", "--json", "--details", str(bad)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [c["name"] for c in result["calls"]] == ["get_weather"]
    assert result["calls"][0]["arguments"] == {"location": "Paris"}
