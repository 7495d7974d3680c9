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

Optional keys on any line: ``"delay": seconds`` between frames (0 to 3600; for
tests of cancellation while a response streams), ``"cut_after": K`` to end the
stream after K frames as if the connection dropped (raises :class:`ModelError`).

Every line is checked when the script is loaded (:func:`load_script`): a key a line
does not take, a value of the wrong kind, or a stream file none of whose payloads a
known format recognizes is an error naming the line and the key.

When the script runs out the model answers with a short text and stops, so a turn
always ends. ``replay`` with no script is the embedded demo: its first answer says it is
Toolwire's offline demo; past it, each answer says how to choose a real model and the
turn carries the ``demo_finished`` notice (:attr:`ReplayModel.notice`). Every request received is kept in :attr:`ReplayModel.requests` and,
when ``log_path`` is given, appended to that file as one JSON line (an image part as
``{"type": "image", "mimeType", "bytes"}``, not its data).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
from anyio.lowlevel import checkpoint

from toolwire.llm.base import ModelError, ModelRequest
from toolwire.streaming.formats.registry import FORMATS, detect_format
from toolwire.streaming.framing import Frame, frames_from_bytes

#: Text the model sends once its script has no lines left.
SCRIPT_FINISHED = "The replay script has no more responses."

#: The embedded demo (``replay`` with no script): its first answer says what it is.
DEMO_LINES: list[dict[str, Any]] = [{"text": (
    "This is Toolwire's **offline demo**: scripted answers, no model and no network, so what you type is not read.\n\n"
    "With a real model Toolwire reads and searches your workspace, proposes edits you approve or reject, runs git "
    "and undoes whole turns. To use one, choose a model (e.g. `openai:gpt-4o-mini`) and set an API key.")}]
#: The embedded demo's answer once its script is done (its turns carry the ``demo_finished`` notice).
DEMO_FINISHED = ("That is all of Toolwire's offline demo: it only plays scripted answers. To work on your code, "
                 "choose a real model (e.g. `openai:gpt-4o-mini`, or any OpenAI-compatible endpoint) and set an API key.")
#: The notice of a turn the embedded demo answered after its script was done.
DEMO_NOTICE = "demo_finished"


class ReplayScriptError(ValueError):
    """The script file is missing or a line is not one of the accepted shapes."""


#: Keys every line may carry.
COMMON_KEYS = ("delay", "cut_after")
#: Keys of a ``{"stream": …}`` line.
STREAM_KEYS = ("stream", *COMMON_KEYS)
#: Keys of a scripted line.
SCRIPTED_KEYS = ("text", "tool_calls", "chunk_size", "usage", *COMMON_KEYS)
#: Keys of one ``tool_calls`` entry.
CALL_KEYS = ("name", "arguments", "id")
#: Longest ``delay`` accepted (seconds): a turn that waits longer between chunks is a typo.
MAX_DELAY = 3600.0


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unknown_keys(where: str, given: dict[str, Any], accepted: tuple[str, ...], what: str) -> None:
    """Raise naming the first key of ``given`` not in ``accepted`` (with a close match, if any)."""
    for key in given:
        if key not in accepted:
            close = difflib.get_close_matches(str(key), accepted, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ReplayScriptError(f"{where}: unknown key {str(key)[:80]!r}{hint}; {what} takes "
                                    f"{', '.join(accepted)}")


def _check_stream(where: str, target: Path) -> None:
    """Raise unless some payload of the recorded stream at ``target`` is one a known format recognizes."""
    try:
        body = target.read_bytes()
    except OSError as exc:
        raise ReplayScriptError(f"{where}: stream: cannot read {target}: {exc.strerror or exc}") from None
    for frame in frames_from_bytes(body):
        if frame.error is None and not frame.done and detect_format(frame.payload, frame.event) is not None:
            return
        if frame.fatal:
            break
    raise ReplayScriptError(f"{where}: stream: no format matched the payloads of {target} "
                            f"(known: {', '.join(sorted(FORMATS))})")


def _check_line(where: str, line: dict[str, Any]) -> None:
    """Raise :class:`ReplayScriptError` naming ``where`` and the key for anything a line may not hold."""
    if "delay" in line:
        delay = line["delay"]
        if not _number(delay) or not 0 <= delay <= MAX_DELAY:
            raise ReplayScriptError(f"{where}: delay must be a number of seconds from 0 to {MAX_DELAY:g} "
                                    f"(got {json.dumps(delay)[:80]})")
    if "cut_after" in line:
        cut = line["cut_after"]
        if type(cut) is not int or cut < 0:
            raise ReplayScriptError(f"{where}: cut_after must be a non-negative integer (got {json.dumps(cut)[:80]})")
    if "stream" in line:
        _unknown_keys(where, line, STREAM_KEYS, "a stream line")
        if not isinstance(line["stream"], str) or not line["stream"]:
            raise ReplayScriptError(f"{where}: stream must be the path of a recorded stream file")
        return
    _unknown_keys(where, line, SCRIPTED_KEYS, "a scripted line")
    if line.get("text") is not None and not isinstance(line["text"], str):
        raise ReplayScriptError(f"{where}: text must be a string")
    calls = line.get("tool_calls", [])
    if not isinstance(calls, list):
        raise ReplayScriptError(f"{where}: tool_calls must be a list of objects with a string name")
    for index, call in enumerate(calls):
        at = f"{where}: tool_calls[{index}]"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            raise ReplayScriptError(f"{at}: must be an object with a string name")
        _unknown_keys(at, call, CALL_KEYS, "a tool call")
        if "id" in call and not isinstance(call["id"], str):
            raise ReplayScriptError(f"{at}: id must be a string")
    size = line.get("chunk_size", 16)
    if type(size) is not int or size < 1:
        raise ReplayScriptError(f"{where}: chunk_size must be a positive integer")
    usage = line.get("usage", {})
    if not isinstance(usage, dict) or not all(
            k in ("prompt_tokens", "completion_tokens") and type(v) is int and v >= 0 for k, v in usage.items()):
        raise ReplayScriptError(f"{where}: usage must be an object of non-negative integer "
                                "prompt_tokens and completion_tokens")


def load_script(path: Path) -> list[dict[str, Any]]:
    """Read and check a replay script: every line is checked here, so a script that
    loads plays without surprises.

    Args:
        path: The JSONL script.

    Returns:
        One dict per non-blank line (a ``stream`` path made absolute).

    Raises:
        ReplayScriptError: unreadable file, a line that is not a JSON object, a key a
            line (or a ``tool_calls`` entry) does not take, a value of the wrong kind
            (``delay`` outside 0–3600 s, ``cut_after`` or ``chunk_size`` not a
            non-negative/positive integer, malformed ``usage``), a ``stream`` file that
            does not exist or whose payloads no known format recognizes; the message
            names the line number and the key.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReplayScriptError(f"cannot read replay script {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ReplayScriptError(f"replay script {path} is not UTF-8 ({exc.reason} at byte {exc.start})") from None
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
        _check_line(where, line)
        if "stream" in line:
            target = (path.parent / line["stream"]).resolve()
            if not target.is_file():
                raise ReplayScriptError(f"{where}: stream file {target} does not exist")
            _check_stream(where, target)
            line = {**line, "stream": str(target)}
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


def _logged(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the replay log keeps it: each image part as ``{"type": "image", "mimeType",
    "bytes"}`` (its media type and decoded size), not its data."""
    content = message.get("content")
    if not isinstance(content, list):
        return message
    return {**message, "content": [_logged_part(p) for p in content]}


def _logged_part(part: Any) -> Any:
    url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) and part.get("type") == "image_url" else None
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url:
        return part
    head, data = url[len("data:"):].split(";base64,", 1)
    padding = len(data) - len(data.rstrip("="))
    return {"type": "image", "mimeType": head, "bytes": len(data) * 3 // 4 - padding}


class ReplayModel:
    """Plays a replay script, one line per request (see the module docstring).

    Args:
        script: Path of the JSONL script, or None for the embedded demo (:data:`DEMO_LINES`, then
            :data:`DEMO_FINISHED` with :attr:`notice` set to :data:`DEMO_NOTICE`).
        log_path: Optional file to append every request to, one JSON line each.

    Raises:
        ReplayScriptError: the script is unreadable or malformed (at construction).
    """

    format = None

    def __init__(self, script: Path | None, log_path: Path | None = None) -> None:
        self.script = script
        self.lines = load_script(script) if script is not None else list(DEMO_LINES)
        #: ``demo_finished`` once the embedded demo answered past its script (read by the turn), else None.
        self.notice: str | None = None
        self.model_id = f"replay:{script}" if script is not None else "replay"
        self.requests: list[ModelRequest] = []
        self._log_path = log_path

    def _record(self, request: ModelRequest) -> None:
        self.requests.append(request)
        if self._log_path is not None:
            entry = {"messages": [_logged(m) for m in request.messages],
                     "tools": [t["function"]["name"] for t in request.tools]}
            with self._log_path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(entry, ensure_ascii=False) + "\n")

    async def stream(self, request: ModelRequest) -> AsyncIterator[Frame]:
        """Yield the next scripted response as frames (see :class:`~toolwire.llm.base.Model`)."""
        self._record(request)
        number = len(self.requests)
        if number <= len(self.lines):
            line = self.lines[number - 1]
        elif self.script is None:
            line, self.notice = {"text": DEMO_FINISHED}, DEMO_NOTICE
        else:
            line = {"text": SCRIPT_FINISHED}
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
