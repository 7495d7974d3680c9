"""Benchmark: Toolwire's server from outside, over stdio, side by side with a bare pygls 2 server.

Starts ``toolwire serve`` and ``bench/echo_server.py`` (pygls' own
``LanguageServer``, one ``bench/echo`` request that sends one small notification
and answers its params) as subprocesses and talks to both the same way: JSON-RPC
with ``Content-Length`` framing over their stdio, one request at a time (the next
is sent when the previous one is answered). Every figure is measured in the same
run for both, ``--rounds`` times (3 by default), and the median of the rounds is
printed, one JSON line per figure:

``{"figure", "toolwire", "baseline", "ratio", "unit", "target", ...details}``

``ratio`` is ``toolwire / baseline`` (for a rate: higher is better; for a time or a
size: lower is better; ``target`` says which bound the issue sets).

Figures:

* ``cold_start_s``: process start to the ``initialize`` answer (per round, the median
  of ``COLD_SAMPLES`` starts of each server, alternating). The ``toolwire`` package is
  byte-compiled first, as an installed package is.
* ``fed_chunks_per_s`` (batch 1, 16, 256): one call whose ~100 KB of arguments
  arrive in 8-byte Chat Completions deltas, fed with ``toolwire/toolCalls/merge``
  ``batch`` chunks per request; the baseline gets the same params as
  ``bench/echo``, the requests interleaved one by one so both servers see the
  same load. ``toolwire`` is Toolwire's chunks per second, ``baseline`` the bare
  server's messages (requests) per second at the same batch size: the issue's
  bound is chunks/s ≥ 0.8 × the bare server's message rate. ``per_chunk_ratio``
  compares chunks/s with chunks/s (the same work on both sides; equal at batch 1).
  ``toolwire serve`` reads a stdin pipe on its event loop, where pygls' default
  reader costs three worker-thread round trips per message; the bare server is
  measured with pygls' reader (the issue's baseline) and also, as a third server
  in the same interleaving, with the same reader as Toolwire
  (``echo_server.py --loop-reader``): ``same_reader_chunks_per_s`` and
  ``same_reader_per_chunk_ratio`` leave only Toolwire's own handling to compare.
* ``bytes_per_argument_byte``: all bytes the server wrote (headers included) while
  that call was fed 16 chunks per request, per byte of its argument text; the
  baseline's bytes for the same requests. Split into the argument fields
  (``argument_fields_per_argument_byte``: pieces, whole text, preview, arguments)
  and the fixed cost of each message (``other_bytes_per_message``: headers,
  envelope, ids, status, merge answers). ``turn`` gives the same figure for a
  server-run turn (the replay model, 8-character deltas), from the first update
  to the status change that completes the call (no baseline can run a turn), and
  ``through_done_without_result`` for every update of the call through ``done``
  (the ``calling`` and ``done`` updates included, the tool's result left out).
* ``latency_ms`` (``small`` and ``100kb``, ``p50`` and ``p99``): from sending the
  request that completes a fed call (``end: true``) to receiving the update with
  its new status; baseline: from sending ``bench/echo`` to receiving its notification.
* ``edit_file_ms`` (10 KB, 10 MB): a server-run ``edit_file`` of one line (asked
  for approval, answered ``allow_once`` at once), from ``calling`` to ``done``
  (the re-check against the approved diff, the undo checkpoints before and after,
  the atomic write with its fsync): the issue's bound. The baseline is the same
  edit of a 10 KB file in the same round, so ``ratio`` is 10 MB against 10 KB.
  ``generated_to_done_ms`` (and ``baseline_generated_to_done_ms``) also count the
  approval's plan and diff and the permission round trip. A third line edits a
  10 MB file with CRLF line endings and an emoji on every line (Python holds such a
  text at 4 bytes per character, so every pass over it costs more).
* ``git_status_ms``: ``git_status`` in a repository of 5,000 files with 200
  modified, ``calling`` to ``done``, against ``git status --porcelain=v2`` run
  directly (process start to exit; one run right before and one right after
  each of 8 turns of two calls, so a burst of load hits both sides). Two
  sessions are open, one on the repository and one on the folder holding it
  (nested folders, as the fed figures and editors open them). ``toolwire`` is
  the median of the turns' second calls (the repository facts are cached
  within a turn: one git process each); ``first_call_ms`` the median of their
  first calls (they learn the facts: three processes), ``git_processes`` what
  each call of a turn reports. ``paired_ratio`` is the median, over the turns,
  of a turn's second call against the mean of the raw runs right before and
  after that turn: it follows the load of the moment less than the ratio of
  the medians does.

Usage::

    python bench/server.py                  # everything, 3 rounds (a few minutes)
    python bench/server.py --only fed,bytes --rounds 1
    python bench/server.py --pythonpath /tmp/old/server   # measure another checkout's server

``--pythonpath`` puts a directory first on the servers' ``PYTHONPATH`` (a checkout's
``server/`` folder), so the same bench measures code before and after a change.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer import Peer  # noqa: E402

HERE = Path(__file__).resolve().parent
MERGE = "toolwire/toolCalls/merge"
ARG_SIZE = 100_000
PIECE = 8
LATENCY_SAMPLES = 30
#: Starts of each server per round for the cold-start figure (their median is the round's figure).
COLD_SAMPLES = 5


def argument_text(size: int = ARG_SIZE) -> str:
    """A ``create_file`` argument object of about ``size`` UTF-8 bytes: source-like
    lines with quotes, backslashes and some non-ASCII text."""
    lines, total, n = [], 0, 0
    while total < size:
        line = f'    log.info("step {n}: %s", value)  # naïve \\ check\n' if n % 5 else f"def f{n}(x):\n"
        lines.append(line)
        total += len(line.encode())
        n += 1
    return json.dumps({"path": "big.py", "content": "".join(lines)}, ensure_ascii=False)


def chat_chunks(call_id: str, name: str, args: str, piece: int = PIECE) -> list[dict[str, Any]]:
    """An OpenAI Chat Completions stream of one call, arguments in ``piece``-character deltas."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "bench",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""}),
           chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                  "function": {"name": name, "arguments": ""}}]})]
    out += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + piece]}}]})
            for i in range(0, len(args), piece)]
    out.append(chunk({}, finish="tool_calls"))
    return out


def argument_field_bytes(message: dict[str, Any]) -> int:
    """Bytes of a tool_call update's argument fields (compact UTF-8 JSON, as Toolwire writes them)."""
    call = ((message.get("params") or {}).get("update") or {}).get("toolCall") or {}
    return sum(len(json.dumps(call[k], ensure_ascii=False, separators=(",", ":")).encode())
               for k in ("argumentsDelta", "argumentsText", "partialArguments", "arguments") if k in call)


def line(figure: str, toolwire: Any, baseline: Any, unit: str, target: str, **extra: Any) -> dict[str, Any]:
    ratio = (toolwire / baseline) if isinstance(toolwire, (int, float)) and isinstance(baseline, (int, float)) \
        and baseline else None
    out = {"figure": figure, **extra, "toolwire": _round(toolwire), "baseline": _round(baseline),
           "ratio": _round(ratio), "unit": unit, "target": target}
    return out


def _round(value: Any) -> Any:
    return round(value, 4) if isinstance(value, float) else value


class Bench:
    """Starts the servers and measures; see the module docstring."""

    def __init__(self, pythonpath: str | None, workdir: Path) -> None:
        self.env = dict(os.environ)
        if pythonpath:
            self.env["PYTHONPATH"] = pythonpath + os.pathsep + self.env.get("PYTHONPATH", "")
        self.workdir = workdir

    def precompile(self) -> None:
        """Byte-compile the ``toolwire`` package the servers will import, as an installed
        package is (pip compiles at install time). An editable install run with
        ``PYTHONDONTWRITEBYTECODE=1`` (as on these machines) would otherwise compile every
        changed module at every start, while the bare server's pygls is compiled."""
        where = subprocess.run([sys.executable, "-c", "import os, toolwire; print(os.path.dirname(toolwire.__file__))"],
                               env=self.env, capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run([sys.executable, "-m", "compileall", "-q", where], env=self.env, check=True,
                       stdout=subprocess.DEVNULL)

    def toolwire_cmd(self) -> list[str]:
        return [sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"]

    def echo_cmd(self, loop_reader: bool = False) -> list[str]:
        return [sys.executable, str(HERE / "echo_server.py"), *(["--loop-reader"] if loop_reader else [])]

    async def start(self, cmd: list[str]) -> Peer:
        peer = Peer(cmd, self.env)
        await peer.start()
        await peer.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        peer.notify("initialized", {})
        return peer

    # ----------------------------------------------------------------- figures
    async def cold_start(self) -> tuple[float, float]:
        """Median seconds to the ``initialize`` answer over :data:`COLD_SAMPLES` starts of
        each, alternating (one start at a time)."""
        async def once(cmd: list[str]) -> float:
            peer = Peer(cmd, self.env)
            began = time.perf_counter()
            await peer.start()
            await peer.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
            took = time.perf_counter() - began
            await peer.stop()
            return took
        tw, echo = [], []
        for _ in range(COLD_SAMPLES):
            tw.append(await once(self.toolwire_cmd()))
            echo.append(await once(self.echo_cmd()))
        return statistics.median(tw), statistics.median(echo)

    async def fed(self, tw: Peer, echo: Peer, batch: int, args: str, *, keep: bool = False,
                  loop_echo: Peer | None = None) -> dict[str, float]:
        """Chunks/s for each server, and the bytes and messages each wrote for the stream.

        ``loop_echo`` (the bare server with Toolwire's stdin reader) is measured as
        ``same_reader`` when given. With ``keep`` the messages are kept and the
        bytes of Toolwire's argument fields counted (after the clock stopped).
        """
        sid = (await tw.request("toolwire/session/new", {"cwd": str(self.workdir), "model": "replay"}))["sessionId"]
        chunks = chat_chunks(f"fed{batch}", "create_file", args)
        batches = [chunks[i:i + batch] for i in range(0, len(chunks), batch)]
        stream = f"s{batch}-{time.monotonic_ns()}"
        peers = [("toolwire", tw, MERGE), ("baseline", echo, "bench/echo")]
        if loop_echo is not None:
            peers.append(("same_reader", loop_echo, "bench/echo"))
        out: dict[str, float] = {}
        marks = {who: (peer.bytes_in, peer.messages_in, len(peer.received)) for who, peer, _ in peers}
        took = {who: 0.0 for who, _, _ in peers}
        for _, peer, _ in peers:
            peer.keep = keep
        try:
            # Interleaved, one request each in turn, so all see the same load on a shared machine.
            for n, part in enumerate(batches):
                params = {"sessionId": sid, "streamId": stream, "chunks": part, "end": n == len(batches) - 1}
                for who, peer, method in peers:
                    began = time.perf_counter()
                    answer = await peer.request(method, params)
                    took[who] += time.perf_counter() - began
                    if peer is tw:
                        result = answer
        finally:
            for _, peer, _ in peers:
                peer.keep = True
        assert result["ended"] and result["toolCalls"][-1]["status"] == "generated", result
        for who, peer, _ in peers:
            start_bytes, start_messages, mark = marks[who]
            out[who] = len(chunks) / took[who]
            out[who + "_requests_per_s"] = len(batches) / took[who]
            out[who + "_bytes"] = peer.bytes_in - start_bytes
            out[who + "_messages"] = peer.messages_in - start_messages
            if keep:
                out[who + "_argument_field_bytes"] = sum(argument_field_bytes(m) for _, _, m in peer.received[mark:])
                del peer.received[mark:]
        return out

    async def turn_bytes(self, tw: Peer, args: str) -> tuple[int, int, int]:
        """Bytes of the tool_call updates of a server-run call: up to the one that completes it,
        how many those were, and all of them through ``done`` without the tool's result."""
        script = self.workdir / f"turn-{time.monotonic_ns()}.jsonl"
        script.write_text(json.dumps({"tool_calls": [{"name": "create_file", "arguments": json.loads(args),
                                                      "id": "turnbig"}], "chunk_size": PIECE}) + "\n"
                          + json.dumps({"text": "ok"}) + "\n")
        folder = self.workdir / f"turn-{time.monotonic_ns()}"
        folder.mkdir()
        sid = (await tw.request("toolwire/session/new", {
            "cwd": str(folder), "model": f"replay:{script}",
            "settings": {"permissions": {"create_file": "auto"}}}))["sessionId"]
        mark = len(tw.received)
        await tw.request("toolwire/session/prompt", {"sessionId": sid, "prompt": "go"})
        total = count = whole = 0
        completed = False
        for size, _, msg in tw.received[mark:]:
            update = msg.get("params", {}).get("update", {}) if msg.get("method") == "toolwire/session/update" else {}
            call = update.get("toolCall")
            if call and call.get("toolCallId") == "turnbig":
                result = call.get("result")
                whole += size - (len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode())
                                 if result is not None else 0)
                if not completed:
                    total += size
                    count += 1
                    completed = call["status"] != "generating"
        return total, count, whole

    async def latency(self, tw: Peer, echo: Peer, args: str) -> dict[str, float]:
        """Milliseconds from the completing request to the status update (toolwire) / notification (echo)."""
        tw_times, echo_times = [], []
        chunks = chat_chunks("lat", "create_file", args)
        batches = [chunks[i:i + 256] for i in range(0, len(chunks), 256)]
        sid = (await tw.request("toolwire/session/new", {"cwd": str(self.workdir), "model": "replay"}))["sessionId"]
        tw.keep = echo.keep = False  # only arrival times matter here
        try:
            return await self._latency(tw, echo, sid, batches, tw_times, echo_times)
        finally:
            tw.keep = echo.keep = True

    async def _latency(self, tw: Peer, echo: Peer, sid: str, batches: list, tw_times: list[float],
                       echo_times: list[float]) -> dict[str, float]:
        for n in range(LATENCY_SAMPLES):
            stream = f"lat-{n}-{time.monotonic_ns()}"
            for part in batches:
                await tw.request(MERGE, {"sessionId": sid, "streamId": stream, "chunks": part})

            def completes(msg: dict[str, Any], stream: str = stream) -> bool:
                params = msg.get("params") or {}
                call = (params.get("update") or {}).get("toolCall") or {}
                return params.get("streamId") == stream and call.get("status") not in (None, "generating")
            began = time.perf_counter()
            waiter = tw.wait_for(completes)
            tw.send_request(MERGE, {"sessionId": sid, "streamId": stream, "chunks": [], "end": True})
            arrived = await waiter
            tw_times.append((arrived - began) * 1000)
            began = time.perf_counter()
            waiter = echo.wait_for(lambda msg: msg.get("method") == "bench/update")
            echo.send_request("bench/echo", {"sessionId": sid, "streamId": stream, "chunks": [], "end": True})
            arrived = await waiter
            echo_times.append((arrived - began) * 1000)
            await tw.settle()
            await echo.settle()
        return {"tw_p50": percentile(tw_times, 50), "tw_p99": percentile(tw_times, 99),
                "echo_p50": percentile(echo_times, 50), "echo_p99": percentile(echo_times, 99)}

    async def edit(self, tw: Peer, size: int, windows: bool = False) -> tuple[float | None, float | None, str]:
        """(generated→done ms, calling→done ms, final status) of a one-line edit_file on a ``size``-byte file.

        With ``windows`` the file has CRLF line endings and an emoji on every line
        (Python then holds its text at 4 bytes per character)."""
        root = self.workdir / f"edit-{size}-{time.monotonic_ns()}"
        root.mkdir()
        emoji, newline = ("\N{GRINNING FACE} ", "\r\n") if windows else ("", "\n")
        lines = [f"line {n}: some text {emoji}of the file, padded to look like code ({n % 97}){newline}"
                 for n in range(size // 60 + 1)]
        (root / "big.txt").write_bytes("".join(lines).encode("utf-8"))
        target = lines[len(lines) // 2].rstrip("\r\n") + "\n"  # the model sends LF line breaks
        script = root / "script.jsonl"
        script.write_text(json.dumps({"tool_calls": [{"name": "edit_file", "id": "edit1", "arguments": {
            "path": "big.txt", "old_string": target, "new_string": target.replace("line", "LINE")}}]}) + "\n"
            + json.dumps({"text": "ok"}) + "\n")
        sid = (await tw.request("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}"}))["sessionId"]
        mark = len(tw.received)
        await tw.request("toolwire/session/prompt", {"sessionId": sid, "prompt": "go"})
        times: dict[str, float] = {}
        for _, at, msg in tw.received[mark:]:
            call = ((msg.get("params") or {}).get("update") or {}).get("toolCall") or {}
            if call.get("toolCallId") == "edit1":
                times.setdefault(call["status"], at)
        status = next(s for s in ("done", "errored", "canceled") if s in times) if times else "missing"
        if status != "done":
            return None, None, status
        return ((times["done"] - times["generated"]) * 1000, (times["done"] - times["calling"]) * 1000, status)

    async def git_status(self, tw: Peer, repo: Path, turns: int = 8, calls: int = 2) -> dict[str, Any]:
        """calling→done ms of ``calls`` git_status calls in each of ``turns`` turns, and
        of direct ``git status`` runs, one right before and one right after each turn
        (interleaved, so a burst of load on this shared machine hits both sides).

        Returns ``{"warm": [ms…], "cold": [ms…], "raw": [ms…], "processes": [n…]}``:
        the first call of a turn learns the repository facts (``cold``), the others
        use them (``warm``); ``processes`` are the git processes each call of the last
        turn reports.
        """
        script = repo.parent / f"git-{time.monotonic_ns()}.jsonl"
        steps = [{"tool_calls": [{"name": "git_status", "id": f"gs{t}_{n}", "arguments": {}}]} if n < calls
                 else {"text": "ok"} for t in range(turns) for n in range(calls + 1)]
        script.write_text("".join(json.dumps(step) + "\n" for step in steps))
        # A session on the folder that holds the repository too, as the fed figures open
        # (and as an editor does with a workspace and a repository inside it): the two
        # sessions' folders nest, whatever ``--only`` selects.
        await tw.request("toolwire/session/new", {"cwd": str(repo.parent), "model": "replay"})
        sid = (await tw.request("toolwire/session/new", {"cwd": str(repo), "model": f"replay:{script}"}))["sessionId"]
        raw: list[float] = []
        cold: list[float] = []
        warm: list[float] = []
        pairs: list[float] = []
        processes: dict[str, Any] = {}
        for turn in range(turns):
            raw.append(self._raw_status(repo))
            mark = len(tw.received)
            await tw.request("toolwire/session/prompt", {"sessionId": sid, "prompt": "go"})
            raw.append(self._raw_status(repo))
            seen: dict[str, dict[str, float]] = {}
            for _, at, msg in tw.received[mark:]:
                call = ((msg.get("params") or {}).get("update") or {}).get("toolCall") or {}
                if str(call.get("toolCallId", "")).startswith(f"gs{turn}_"):
                    seen.setdefault(call["toolCallId"], {}).setdefault(call["status"], at)
                    if call["status"] == "done":
                        processes[call["toolCallId"].split("_")[1]] = (
                            ((call.get("result") or {}).get("data") or {}).get("git_processes"))
            for n in range(calls):
                got = seen.get(f"gs{turn}_{n}", {})
                if "done" in got and "calling" in got:
                    (warm if n else cold).append((got["done"] - got["calling"]) * 1000)
                    if n:
                        pairs.append(warm[-1] / ((raw[-2] + raw[-1]) / 2))
        return {"cold": cold, "warm": warm, "raw": raw, "pairs": pairs,
                "processes": [processes.get(str(n)) for n in range(calls)]}

    @staticmethod
    def _raw_status(repo: Path) -> float:
        """ms of one ``git status --porcelain=v2`` run directly (process start to exit)."""
        began = time.perf_counter()
        subprocess.run(["git", "status", "--porcelain=v2"], cwd=repo, check=True, capture_output=True,
                       stdin=subprocess.DEVNULL)
        return (time.perf_counter() - began) * 1000


def percentile(values: list[float], pct: float) -> float:
    """The ``pct`` percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def make_repo(root: Path, files: int = 5000, modified: int = 200) -> Path:
    """A git repository of ``files`` committed files in 50 folders, ``modified`` of them changed."""
    repo = root / "repo"
    repo.mkdir()
    # No automatic gc: git would repack the 5,000 new objects in the background (a
    # detached ``git gc --auto``) while the first figures are measured.
    git = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false",
           "-c", "gc.auto=0", "-c", "maintenance.auto=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=repo, check=True)
    for n in range(files):
        folder = repo / f"pkg{n % 50}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod{n}.py").write_text(f"VALUE = {n}\n")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "initial"], cwd=repo, check=True)
    for n in range(0, files, files // modified):
        (repo / f"pkg{n % 50}" / f"mod{n}.py").write_text(f"VALUE = {n + 1}\n")
    return repo


async def run(opts: argparse.Namespace) -> list[dict[str, Any]]:
    only = set(opts.only.split(",")) if opts.only else {"cold", "fed", "bytes", "latency", "edit", "git"}
    work = Path(tempfile.mkdtemp(prefix="toolwire-bench-"))
    bench = Bench(opts.pythonpath, work)
    bench.precompile()
    rounds: list[dict[str, Any]] = []
    args = argument_text()
    small = json.dumps({"path": "hello.txt"})
    repo = make_repo(work) if "git" in only else None
    try:
        for _ in range(opts.rounds):
            got: dict[str, Any] = {}
            if "cold" in only:
                got["cold"] = await bench.cold_start()
            tw = await bench.start(bench.toolwire_cmd())
            echo = await bench.start(bench.echo_cmd())
            loop_echo = await bench.start(bench.echo_cmd(loop_reader=True)) if "fed" in only else None
            try:
                if "fed" in only:
                    for batch in (1, 16, 256):
                        got[f"fed{batch}"] = await bench.fed(tw, echo, batch, args, loop_echo=loop_echo)
                if "bytes" in only:
                    got["bytes16"] = await bench.fed(tw, echo, 16, args, keep=True)
                if "bytes" in only:
                    got["turn_bytes"] = await bench.turn_bytes(tw, args)
                if "latency" in only:
                    got["lat_small"] = await bench.latency(tw, echo, small)
                    got["lat_big"] = await bench.latency(tw, echo, args)
                if "edit" in only:
                    got["edit_small"] = await bench.edit(tw, 10_000)
                    got["edit_big"] = await bench.edit(tw, 10_000_000)
                    got["edit_big_windows"] = await bench.edit(tw, 10_000_000, windows=True)
                if repo is not None:
                    got["git"] = await bench.git_status(tw, repo)
            finally:
                await tw.stop()
                await echo.stop()
                if loop_echo is not None:
                    await loop_echo.stop()
            rounds.append(got)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summarize(rounds, len(args.encode()))


def med(values: list[Any]) -> Any:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarize(rounds: list[dict[str, Any]], arg_bytes: int) -> list[dict[str, Any]]:
    """One line per figure, each the median over the rounds."""
    out: list[dict[str, Any]] = []
    first = rounds[0]
    if "cold" in first:
        out.append(line("cold_start_s", med([r["cold"][0] for r in rounds]), med([r["cold"][1] for r in rounds]),
                        "s", "ratio <= 1.1"))
    for batch in ((1, 16, 256) if "fed1" in first else ()):
        key = f"fed{batch}"
        # The bound: Toolwire's chunks/s against the bare server's message (request) rate.
        out.append(line("fed_chunks_per_s", med([r[key]["toolwire"] for r in rounds]),
                        med([r[key]["baseline_requests_per_s"] for r in rounds]), "chunks/s vs messages/s",
                        "ratio >= 0.8", batch=batch,
                        baseline_chunks_per_s=_round(med([r[key]["baseline"] for r in rounds])),
                        per_chunk_ratio=_round(med([r[key]["toolwire"] / r[key]["baseline"] for r in rounds])),
                        same_reader_chunks_per_s=_round(med([r[key]["same_reader"] for r in rounds])),
                        same_reader_per_chunk_ratio=_round(med([r[key]["toolwire"] / r[key]["same_reader"]
                                                                for r in rounds]))))
    if "bytes16" in first:
        out.append(line("bytes_per_argument_byte", med([r["bytes16"]["toolwire_bytes"] / arg_bytes for r in rounds]),
                        med([r["bytes16"]["baseline_bytes"] / arg_bytes for r in rounds]), "bytes/byte",
                        "toolwire <= 3 + fixed cost per message", mode="fed, 16 chunks per request",
                        argument_bytes=arg_bytes, messages=med([r["bytes16"]["toolwire_messages"] for r in rounds]),
                        argument_fields_per_argument_byte=_round(med(
                            [r["bytes16"]["toolwire_argument_field_bytes"] / arg_bytes for r in rounds])),
                        other_bytes_per_message=_round(med(
                            [(r["bytes16"]["toolwire_bytes"] - r["bytes16"]["toolwire_argument_field_bytes"])
                             / r["bytes16"]["toolwire_messages"] for r in rounds]))))
    if "turn_bytes" in first:
        out.append(line("bytes_per_argument_byte", med([r["turn_bytes"][0] / arg_bytes for r in rounds]), None,
                        "bytes/byte", "toolwire <= 3 + fixed cost per update",
                        mode="server-run turn, through the completing update",
                        updates=med([r["turn_bytes"][1] for r in rounds]), argument_bytes=arg_bytes,
                        through_done_without_result=_round(med([r["turn_bytes"][2] / arg_bytes for r in rounds]))))
    for key, label in (("lat_small", "small"), ("lat_big", "100kb")):
        if key in first:
            for pct in ("p50", "p99"):
                out.append(line("latency_ms", med([r[key][f"tw_{pct}"] for r in rounds]),
                                med([r[key][f"echo_{pct}"] for r in rounds]), "ms",
                                "100kb p99 <= 5 ms", call=label, percentile=pct))
    if "edit_small" in first:
        small = [med([r["edit_small"][i] for r in rounds]) for i in (0, 1)]
        for key, label in (("edit_small", "10KB"), ("edit_big", "10MB"),
                           ("edit_big_windows", "10MB, CRLF, an emoji per line")):
            out.append(line("edit_file_ms", med([r[key][1] for r in rounds]), small[1], "ms",
                            "10MB calling->done < 150 ms", file=label, measured="calling->done",
                            baseline_is="the same edit of a 10 KB file",
                            generated_to_done_ms=_round(med([r[key][0] for r in rounds])),
                            baseline_generated_to_done_ms=_round(small[0]), status=rounds[-1][key][2]))
    if "git" in first:
        out.append(line("git_status_ms", med([med(r["git"]["warm"]) for r in rounds]),
                        med([med(r["git"]["raw"]) for r in rounds]), "ms", "ratio <= 1.2",
                        repo="5000 files, 200 modified", baseline_is="git status --porcelain=v2",
                        calls="2nd of each turn (facts cached)",
                        first_call_ms=_round(med([med(r["git"]["cold"]) for r in rounds])),
                        paired_ratio=_round(med([x for r in rounds for x in r["git"]["pairs"]])),
                        git_processes=rounds[-1]["git"]["processes"]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each figure is their median (default 3)")
    parser.add_argument("--only", help="comma-separated: cold, fed, bytes, latency, edit, git (default: all)")
    parser.add_argument("--pythonpath", help="a directory put first on the servers' PYTHONPATH")
    opts = parser.parse_args()
    for record in asyncio.run(run(opts)):
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
