"""The embedded ``replay`` model: plays scripted or recorded responses, no network.

A script is a JSONL file, one line per model response, in order. Each line is one of:

* ``{"stream": "PATH"}`` — a recorded provider stream (an SSE body, JSONL of chunk
  payloads, or an AWS event stream), PATH relative to the script. Its format is
  detected from its payloads.
* ``{"text": "...", "tool_calls": [{"name": "...", "arguments": {...} | "raw text",
  "id": "optional"}], "chunk_size": N}`` — turned into an OpenAI Chat Completions
  chunk stream, the argument text split every N bytes (on character boundaries;
  default 16). ``arguments`` given as a string is sent exactly as written, valid
  JSON or not. ``"usage": {"prompt_tokens": N, "completion_tokens": M}`` sets the
  token counts the stream's last chunk reports (default 0 and 0).

Optional keys on any line: ``"delay": seconds`` between frames (for tests of
cancellation while a response streams), ``"cut_after": K`` to end the stream
after K frames as if the connection dropped (raises :class:`ModelError`).

When the script runs out the model answers with a short text and stops, so a turn
always ends. Every request received is kept in :attr:`ReplayModel.requests` and,
when ``log_path`` is given, appended to that file as one JSON line.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from anyio.lowlevel import checkpoint

from toolwire.llm.base import ModelError, ModelRequest
from toolwire.streaming.framing import Frame, frames_from_bytes

#: Text the model sends once its script has no lines left.
SCRIPT_FINISHED = "The replay script has no more responses."


class ReplayScriptError(ValueError):
    """The script file is missing or a line is not one of the accepted shapes."""


def load_script(path: Path) -> list[dict[str, Any]]:
    """Read and check a replay script.

    Args:
        path: The JSONL script.

    Returns:
        One dict per non-blank line.

    Raises:
        ReplayScriptError: unreadable file, a line that is not a JSON object, a
            ``stream`` file that does not exist, or a malformed ``tool_calls`` entry;
            the message names the line number.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReplayScriptError(f"cannot read replay script {path}: {exc.strerror or exc}") from None
    lines: list[dict[str, Any]] = []
    for number, raw in enumerate(text.split("\n"), start=1):  # JSON Lines: only LF (U+2028 may be in a string)
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            line = json.loads(raw)
        except ValueError as exc:
            raise ReplayScriptError(f"{where}: not valid JSON ({exc})") from None
        if not isinstance(line, dict):
            raise ReplayScriptError(f"{where}: each line must be a JSON object")
        if "stream" in line:
            target = (path.parent / str(line["stream"])).resolve()
            if not target.is_file():
                raise ReplayScriptError(f"{where}: stream file {target} does not exist")
            line = {**line, "stream": str(target)}
        else:
            calls = line.get("tool_calls", [])
            if not isinstance(calls, list) or not all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls):
                raise ReplayScriptError(f"{where}: tool_calls must be a list of objects with a string name")
            size = line.get("chunk_size", 16)
            if not isinstance(size, int) or size < 1:
                raise ReplayScriptError(f"{where}: chunk_size must be a positive integer")
            usage = line.get("usage", {})
            if not isinstance(usage, dict) or not all(
                    k in ("prompt_tokens", "completion_tokens") and type(v) is int and v >= 0 for k, v in usage.items()):
                raise ReplayScriptError(f"{where}: usage must be an object of non-negative integer "
                                        "prompt_tokens and completion_tokens")
        lines.append(line)
    return lines


def _split(text: str, size: int) -> list[str]:
    """Split ``text`` into pieces of at most ``size`` UTF-8 bytes, on character boundaries."""
    pieces: list[str] = []
    current: list[str] = []
    used = 0
    for char in text:
        width = len(char.encode("utf-8", "surrogatepass"))
        if used and used + width > size:
            pieces.append("".join(current))
            current, used = [], 0
        current.append(char)
        used += width
    if current:
        pieces.append("".join(current))
    return pieces


def scripted_chunks(line: dict[str, Any], response_number: int) -> list[dict[str, Any]]:
    """OpenAI Chat Completions chunks for one scripted response line.

    Args:
        line: ``{"text"?, "tool_calls"?, "chunk_size"?, "usage"?}``.
        response_number: 1-based position of the response in the session, used
            for generated call ids (``call_r<response>_<index>``).

    Returns:
        Chunk payloads, the last one carrying ``finish_reason`` and usage.
    """
    size = line.get("chunk_size", 16)
    rid = f"chatcmpl-replay-{response_number}"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": rid,
            "object": "chat.completion.chunk",
            "model": "replay",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    for piece in _split(str(line.get("text") or ""), size):
        out.append(chunk({"content": piece}))
    calls = line.get("tool_calls") or []
    for index, call in enumerate(calls):
        arguments = call.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        call_id = call.get("id") or f"call_r{response_number}_{index}"
        header = {"index": index, "id": call_id, "type": "function", "function": {"name": call["name"], "arguments": ""}}
        out.append(chunk({"tool_calls": [header]}))
        for piece in _split(text, size):
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    final = chunk({}, "tool_calls" if calls else "stop")
    out.append(final)
    usage = {"prompt_tokens": 0, "completion_tokens": 0, **(line.get("usage") or {})}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    out.append({"id": rid, "object": "chat.completion.chunk", "model": "replay", "choices": [], "usage": usage})
    return out


class ReplayModel:
    """Plays a replay script, one line per request (see the module docstring).

    Args:
        script: Path of the JSONL script, or None for a model that only answers
            with :data:`SCRIPT_FINISHED`.
        log_path: Optional file to append every request to, one JSON line each.

    Raises:
        ReplayScriptError: the script is unreadable or malformed (at construction).
    """

    format = None

    def __init__(self, script: Path | None, log_path: Path | None = None) -> None:
        self.script = script
        self.lines = load_script(script) if script is not None else []
        self.model_id = f"replay:{script}" if script is not None else "replay"
        self.requests: list[ModelRequest] = []
        self._log_path = log_path

    def _record(self, request: ModelRequest) -> None:
        self.requests.append(request)
        if self._log_path is not None:
            entry = {"messages": request.messages, "tools": [t["function"]["name"] for t in request.tools]}
            with self._log_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")

    async def stream(self, request: ModelRequest) -> AsyncIterator[Frame]:
        """Yield the next scripted response as frames (see :class:`~toolwire.llm.base.Model`)."""
        self._record(request)
        number = len(self.requests)
        line = self.lines[number - 1] if number <= len(self.lines) else {"text": SCRIPT_FINISHED}
        if "stream" in line:
            frames = list(frames_from_bytes(Path(line["stream"]).read_bytes()))
        else:
            frames = [Frame(None, payload) for payload in scripted_chunks(line, number)]
        delay = float(line.get("delay", 0) or 0)
        cut_after = line.get("cut_after")
        for position, frame in enumerate(frames):
            if cut_after is not None and position >= int(cut_after):
                raise ModelError("the connection dropped mid-stream (replay cut_after)", retryable=True)
            if delay:
                await anyio.sleep(delay)
            else:
                await checkpoint()
            yield frame
