"""``toolwire merge FILE``: read a recorded provider stream and print the tool calls it holds.

Runs nothing: it only normalizes and merges. The body may be SSE, JSONL, a JSON
array or an AWS event stream (detected); the provider format is detected from
the payloads unless ``--format`` names it. Any tool name is accepted.

Exit status: 0 when the stream was read (even if some calls ended ``errored``);
2 when the file cannot be read, is empty, is binary but not an AWS event stream,
no known format matches, ``--format`` contradicts the payloads (or none of them
is of that format), or ``--details`` is given without ``--json`` (message on
stderr, saying what to do).

``--json`` prints exactly one JSON object, with exactly these keys::

    {"calls": [{"id", "name", "arguments", "argumentsText", "status", "error"}],
     "finishReasons": [...], "text": "..."}

``--json --details`` adds ``kind`` to each call and ``format``, ``reasoning``,
``usage`` ({inputTokens, outputTokens} or null), ``errors`` (provider error
events) and ``anomalies`` (rejected or skipped pieces) to the object.

``arguments`` is the parsed object, or null when the text is not valid JSON;
``status`` is ``generated`` or ``errored``; ``error`` is null or
``{code, message, retryable}``.

The summary (without ``--json``) shows every text from the stream (tool
names, ids, argument text, message text, provider errors) in display form
(:func:`toolwire.workspace.names.display_text`): control, bidirectional and
invisible characters as escapes (``\\x1b``, ``\\u202e``), newlines as ``\\n``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from toolwire.streaming.formats.registry import ALIASES, FORMATS, UnknownFormat, detect_format
from toolwire.streaming.framing import Frame, frames_from_bytes
from toolwire.streaming.merge import merge_frames
from toolwire.streaming.merger import StreamMerger
from toolwire.streaming.state import ToolCallState
from toolwire.workspace.names import display_text


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``merge`` arguments to ``parser``."""
    parser.add_argument("file", metavar="FILE", help="recorded stream body; '-' reads standard input")
    parser.add_argument(
        "--format",
        dest="format",
        choices=sorted([*FORMATS, *ALIASES]),
        default=None,
        help="provider format (default: detected from the payloads)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    parser.add_argument("--details", action="store_true",
                        help="with --json: add kind, format, reasoning, usage, errors and anomalies")


def _read(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    with open(path, "rb") as handle:
        return handle.read()


def _unusable(body: bytes) -> str | None:
    """Why ``body`` cannot be a recorded stream (empty; binary and not an AWS event stream), or None."""
    if not body.strip():
        return "the file is empty: record the response body (SSE or JSONL) into it first"
    sample = body[:4096]
    if len(body) >= 12 and _looks_like_eventstream(body):
        return None
    if b"\0" in sample:
        return ("the file is binary (it holds NUL bytes) and is not an AWS event stream; "
                "give a recorded SSE body, JSONL of payloads, or a JSON array")
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 4:  # not just a character cut at the sample's end
            return (f"the file is not UTF-8 text (byte {exc.start}) and not an AWS event stream; "
                    "give a recorded SSE body, JSONL of payloads, or a JSON array")
    return None


def _looks_like_eventstream(body: bytes) -> bool:
    """An AWS event stream prelude: total length (4 bytes), headers length (4), CRC (4)."""
    total = int.from_bytes(body[:4], "big")
    headers = int.from_bytes(body[4:8], "big")
    return 16 <= total <= len(body) and headers < total


def _detected(frames: list[Frame]) -> str | None:
    for frame in frames:
        if frame.error is None and not frame.done:
            found = detect_format(frame.payload, frame.event)
            if found:
                return found
    return None


def call_to_json(call: ToolCallState, details: bool = False) -> dict[str, Any]:
    """One call as ``--json`` prints it (``kind`` too with ``details``)."""
    out: dict[str, Any] = {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "argumentsText": call.arguments_text,
        "status": call.status.value,
        "error": call.error.to_wire() if call.error else None,
    }
    if details:
        out["kind"] = call.kind
    return out


def result_to_json(merger: StreamMerger, fmt: str | None, details: bool = False) -> dict[str, Any]:
    """The whole ``--json`` object (the extra keys only with ``details``)."""
    out: dict[str, Any] = {
        "calls": [call_to_json(c, details) for c in merger.calls],
        "finishReasons": list(merger.finish_reasons),
        "text": merger.text,
    }
    if not details:
        return out
    usage = merger.usage
    return out | {
        "format": fmt,
        "reasoning": merger.reasoning,
        "usage": {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens} if usage else None,
        "errors": [{"message": e.message, "code": e.code} for e in merger.errors],
        "anomalies": list(merger.anomalies),
    }


def _shorten(text: str, limit: int = 200) -> str:
    """``text`` on one line in display form, cut to ``limit`` characters (the last one ``…``)."""
    text = display_text(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def summary(merger: StreamMerger, fmt: str | None, source: str) -> str:
    """A readable summary of what the stream holds.

    A ``generated`` call of a stream that ended with no finish reason (and no
    error) is marked: nothing tells whether its arguments were complete.
    """
    lines = [f"{source}: format {fmt or '?'}, {len(merger.calls)} tool call(s)"]
    unfinished = not merger.finish_reasons and not merger.errors
    for call in merger.calls:
        kind = "" if call.kind == "function" else f" [{call.kind}, run by the provider]"
        doubt = (" (the stream ended with no finish reason: the arguments may be incomplete)"
                 if unfinished and call.status.value == "generated" else "")
        lines.append(f"  {call.index + 1}. {call.name or '(no name)'} id={call.id or '-'} {call.status.value}{kind}{doubt}")
        if call.arguments is not None:
            lines.append(f"     arguments: {_shorten(json.dumps(call.arguments, ensure_ascii=False))}")
        else:
            lines.append(f"     argument text: {_shorten(call.arguments_text)!s}")
        if call.error is not None:
            lines.append(f"     error ({call.error.code}): {call.error.message}")
    lines.append(f"finish: {', '.join(merger.finish_reasons) or '(none)'}")
    if merger.usage is not None:
        lines.append(f"usage: {merger.usage.input_tokens} in, {merger.usage.output_tokens} out")
    if merger.text:
        lines.append(f"text: {_shorten(merger.text)}")
    if merger.reasoning:
        lines.append(f"reasoning: {_shorten(merger.reasoning)}")
    for error in merger.errors:
        lines.append(f"provider error{f' ({error.code})' if error.code else ''}: {error.message}")
    for anomaly in merger.anomalies:
        lines.append(f"note: {anomaly}")
    return "\n".join(display_text(line) for line in lines)


def run(args: argparse.Namespace) -> int:
    """Merge ``args.file`` and print the result.

    Returns:
        0 when the stream was read, 2 when the file is unreadable or no known
        format matches.
    """
    source = "<stdin>" if args.file == "-" else args.file
    if args.details and not args.json:
        print("toolwire merge: --details only applies with --json (use --json --details)", file=sys.stderr)
        return 2
    try:
        body = _read(args.file)
    except OSError as exc:
        print(f"toolwire merge: cannot read {source}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    problem = _unusable(body)
    if problem:
        print(f"toolwire merge: {source}: {problem}", file=sys.stderr)
        return 2
    frames = list(frames_from_bytes(body))
    detected = _detected(frames)
    wanted = ALIASES.get(args.format, args.format) if args.format else None
    if wanted and detected and ALIASES.get(detected, detected) != wanted:
        print(f"toolwire merge: {source}: the payloads are {ALIASES.get(detected, detected)}, not {wanted} "
              f"(--format {args.format}); drop --format to detect it, or give the right one", file=sys.stderr)
        return 2
    fmt = args.format or detected
    try:
        merger = merge_frames(frames, args.format)
    except UnknownFormat as exc:
        known = ", ".join(sorted(FORMATS))
        print(f"toolwire merge: {source}: {exc}; give --format (one of: {known})", file=sys.stderr)
        return 2
    if wanted and detected is None and not (merger.calls or merger.text or merger.finish_reasons or merger.reasoning):
        print(f"toolwire merge: {source}: no payload is a {wanted} event (--format {args.format}); "
              "is it the right format?", file=sys.stderr)
        return 2
    if args.json:
        result = result_to_json(merger, ALIASES.get(fmt, fmt), details=args.details)
        sys.stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
    else:
        print(summary(merger, ALIASES.get(fmt, fmt), source))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point: ``python -m toolwire.merge_cli FILE [--format F] [--json]``."""
    parser = argparse.ArgumentParser(prog="toolwire merge", description=__doc__.splitlines()[0])
    configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
