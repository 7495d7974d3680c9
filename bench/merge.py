"""Benchmark: merging streamed tool-call arguments, Toolwire vs. the OpenAI SDK vs. a naive merger.

One tool call whose arguments (a JSON object ``{"path": ..., "content": ...}``)
are 100 KB and 1 MB of UTF-8 text arrives in 8-byte ``function.arguments``
deltas, each wrapped in a realistic Chat Completions chunk. Three consumers
merge the same stream while keeping a live partial view of the arguments
current, the way a client-facing server would:

* ``toolwire``: ``OpenAIChatNormalizer.feed`` -> ``StreamMerger.feed`` per
  chunk, reading ``call.partial`` for every changed call (what a push to the
  client reads), then ``StreamMerger.finish``. The live view is whatever the
  merger's bounded-rate refresh produces.
* ``sdk``: ``openai.lib.streaming.chat.ChatCompletionStreamState.handle_chunk``
  per chunk, with the tool declared ``strict`` so the SDK keeps
  ``function.parsed_arguments`` current (its live partial view, read after
  every chunk), then ``get_final_completion``.
* ``naive``: appends each delta to one string and re-parses the whole buffer
  with ``pydantic_core.from_json(..., allow_partial="trailing-strings")`` after
  every delta (the same view Toolwire gives: a trailing unfinished string is
  kept), then ``json.loads`` at the end.

Inputs (chunk dicts, and ``ChatCompletionChunk`` objects for the SDK, built with
``model_validate``) are prepared outside the timed region and are not mutated
by any consumer. Every run asserts that the final arguments equal the source
object, so no path can skip work. Each figure is the best (minimum) wall time
of several runs; ``gc.collect()`` runs before each one.

The SDK and naive mergers are quadratic in the argument size; at 1 MB they run
only with ``--full`` (and once), otherwise their fields are null and a ``note``
says why. ``--quick`` uses small sizes for a CI smoke run.

Usage::

    python bench/merge.py            # 100 KB and 1 MB (SDK/naive at 100 KB only)
    python bench/merge.py --full     # SDK and naive at 1 MB too (minutes)
    python bench/merge.py --quick    # 2 KB and 20 KB, one run each, asserts only
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections.abc import Callable
from typing import Any

import pydantic_core
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from toolwire.streaming.formats.openai_chat import OpenAIChatNormalizer
from toolwire.streaming.merger import StreamMerger

DELTA_BYTES = 8
TOOL_NAME = "write_file"
CALL_ID = "call_bench0123456789abcdef"
SDK_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        },
    }
]
_LINES = (
    'def render(name: str) -> str:\n',
    '    """Return a greeting for \\"name\\"."""\n',
    '\treturn f"Grüße, {name}! café → naïve — 漢字 😀"\n',
    '# path C:\\temp\\out.txt, tabs\tand "quotes"\n',
    'print(render("Zoë"))  # ½ ≠ ⅓\n',
)


def make_arguments(size: int) -> tuple[dict[str, str], str]:
    """Build the argument object and its JSON text (UTF-8 length >= ``size``, just over)."""
    lines: list[str] = []
    total = len('{"path": "src/big.py", "content": ""}')
    i = 0
    while total < size:
        line = f"{i:06d} " + _LINES[i % len(_LINES)]
        lines.append(line)
        total += len(json.dumps(line, ensure_ascii=False).encode()) - 2
        i += 1
    obj = {"path": "src/big.py", "content": "".join(lines)}
    return obj, json.dumps(obj, ensure_ascii=False)


def split_utf8(text: str, width: int = DELTA_BYTES) -> list[str]:
    """Cut ``text`` into pieces of at most ``width`` UTF-8 bytes, never inside a character."""
    raw = text.encode()
    pieces, start = [], 0
    while start < len(raw):
        end = min(start + width, len(raw))
        while end < len(raw) and (raw[end] & 0xC0) == 0x80:
            end -= 1
        if end == start:  # a character wider than width: take it whole
            end = start + 1
            while end < len(raw) and (raw[end] & 0xC0) == 0x80:
                end += 1
        pieces.append(raw[start:end].decode())
        start = end
    return pieces


def make_chunks(pieces: list[str]) -> list[dict[str, Any]]:
    """Wrap argument pieces in Chat Completions chunk dicts as OpenAI streams them."""
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1764400000,
            "model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_bench"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

    first = chunk({"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": CALL_ID, "type": "function", "function": {"name": TOOL_NAME, "arguments": ""}}]})
    body = [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    return [first, *body, chunk({}, "tool_calls")]


def run_toolwire(chunks: list[dict[str, Any]], expected: dict[str, str]) -> int:
    """Merge with Toolwire, reading the live view per changed call; return how many views the client saw."""
    normalizer = OpenAIChatNormalizer()
    merger = StreamMerger(explicit_ends=normalizer.explicit_ends)
    seen, last = 0, None
    for chunk in chunks:
        for call in merger.feed(normalizer.feed(chunk)):
            view = call.partial  # what a push to the client would send
            if view is not last:
                seen, last = seen + 1, view
    merger.feed(normalizer.close())
    merger.finish()
    call = merger.calls[0]
    assert len(merger.calls) == 1 and call.name == TOOL_NAME and call.id == CALL_ID
    assert call.status.value == "generated" and call.arguments == expected, "toolwire: wrong final arguments"
    return seen


def run_sdk(chunks: list[ChatCompletionChunk], expected: dict[str, str]) -> int:
    """Merge with the SDK accumulator, reading ``parsed_arguments`` after every chunk."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState(input_tools=SDK_TOOLS)
    seen = 0
    for chunk in chunks:
        state.handle_chunk(chunk)
        tool_calls = state.current_completion_snapshot.choices[0].message.tool_calls
        if tool_calls and tool_calls[0].function.parsed_arguments is not None:
            seen += 1
    final = state.get_final_completion().choices[0].message.tool_calls[0].function
    assert final.name == TOOL_NAME and final.parsed_arguments == expected, "sdk: wrong final arguments"
    return seen


def run_naive(chunks: list[dict[str, Any]], expected: dict[str, str]) -> int:
    """Append every delta and re-parse the whole buffer in partial mode each time."""
    buf, seen, from_json = "", 0, pydantic_core.from_json
    for chunk in chunks:
        for choice in chunk["choices"]:
            for tc in choice["delta"].get("tool_calls") or ():
                piece = tc["function"].get("arguments")
                if piece:
                    buf += piece
                    from_json(buf, allow_partial="trailing-strings")
                    seen += 1
    assert json.loads(buf) == expected, "naive: wrong final arguments"
    return seen


def best_of(fn: Callable[..., int], args: tuple[Any, ...], repeats: int) -> float:
    """Best (minimum) wall time of ``repeats`` calls of ``fn(*args)``, each after a GC."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b`` rounded, or None when either is missing."""
    return round(a / b, 1) if a is not None and b else None


def bench_size(size: int, *, slow: bool, repeats: int, slow_repeats: int) -> dict[str, Any]:
    """Measure one size; ``slow`` says whether to run the quadratic SDK and naive mergers."""
    expected, text = make_arguments(size)
    chunks = make_chunks(split_utf8(text))
    sdk_chunks = [ChatCompletionChunk.model_validate(c) for c in chunks] if slow else None
    run_toolwire(chunks, expected)  # warm-up, and the correctness check
    tw = best_of(run_toolwire, (chunks, expected), repeats)
    views = run_toolwire(chunks, expected)
    sdk = best_of(run_sdk, (sdk_chunks, expected), slow_repeats) if slow else None
    naive = best_of(run_naive, (chunks, expected), slow_repeats) if slow else None
    out: dict[str, Any] = {
        "size_bytes": len(text.encode()), "deltas": len(chunks) - 2,
        "toolwire_s": round(tw, 5),
        "sdk_s": None if sdk is None else round(sdk, 4),
        "naive_s": None if naive is None else round(naive, 4),
        "sdk_over_toolwire": ratio(sdk, tw), "naive_over_toolwire": ratio(naive, tw),
        "toolwire_live_views": views,
    }
    if not slow:
        out["note"] = "sdk and naive are quadratic; measured at this size only with --full"
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one JSON line per size, then the scaling line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--full", action="store_true", help="also run the SDK and naive mergers at 1 MB")
    mode.add_argument("--quick", action="store_true", help="small sizes, one run each (CI smoke)")
    parser.add_argument("--repeats", type=int, default=5, help="runs per Toolwire figure (best is kept)")
    opts = parser.parse_args(argv)
    small, large = (2_000, 20_000) if opts.quick else (100_000, 1_000_000)
    repeats = 1 if opts.quick else opts.repeats
    slow_repeats = 1 if opts.quick else 3
    rows = []
    for size, slow, slow_runs in ((small, True, slow_repeats), (large, opts.quick or opts.full, 1)):
        rows.append(bench_size(size, slow=slow, repeats=repeats, slow_repeats=slow_runs))
        print(json.dumps(rows[-1]), flush=True)
    scaling = rows[1]["toolwire_s"] / rows[0]["toolwire_s"]
    label = "toolwire_large_over_small" if opts.quick else "toolwire_1mb_over_100kb"
    final: dict[str, Any] = {label: round(scaling, 2)}
    if not opts.quick:
        final["sdk_100x_at_100kb_met"] = (rows[0]["sdk_over_toolwire"] or 0) >= 100
        final["scaling_12x_met"] = scaling <= 12
        final["timing"] = f"best of {repeats} (toolwire), best of {slow_repeats} (sdk/naive at 100 KB), 1 run at 1 MB"
    print(json.dumps(final), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
