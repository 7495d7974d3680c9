"""Problems after every edit, measured through the real server (``make bench``).

``toolwire serve`` over stdio (``bench/peer.py``) with a scripted editor that declares
``toolwireEditor.diagnostics``, has the edited file open, applies ``workspace/applyEdit``
(versioned, reported with ``didChange``) and, like a language server that answers at once,
reports ``toolwire/editor/diagnosticsChanged`` for the file right after each edit; it
answers ``toolwire/editor/diagnostics`` with three problems of that file.

* ``problems_edit_latency_ms``: ``calling`` → ``done`` of one ``edit_file`` of the open
  file (auto-approved), the median over the turns; ``baseline`` is the same edit from an
  editor that declares no diagnostics (another server, same turns, interleaved per turn so
  a burst of load hits both). ``added_median_ms`` / ``added_p95_ms`` are the differences of
  the medians and of the 95th percentiles: the price of problems after every edit when they
  settle quickly; the 250 ms quiet period is most of it, by design.
* ``get_diagnostics_ms``: ``calling`` → ``done`` of ``get_diagnostics`` ``{"paths": null}``
  against an editor holding 1,000 problems over 50 files (the tool ranks, bounds and formats
  them): the median and 95th percentile, and the cost per problem. There is no bare
  server to compare with (``baseline`` is null). Skipped, with a note, when the server
  offers no ``get_diagnostics``.

Usage::

    python bench/problems.py                # 30 turns each
    python bench/problems.py --turns 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer import Peer  # noqa: E402

SOURCE = "".join(f"v{n} = {n}\n" for n in range(200))
PERMISSION = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def _diag(line: int, message: str, severity: int = 1) -> dict[str, Any]:
    return {"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 2}},
            "severity": severity, "source": "bench", "code": 1000 + line % 7, "message": message}


class Editor:
    """The scripted editor's buffers and problems, answering the server's requests."""

    def __init__(self, peer: Peer, problems: dict[str, list[dict[str, Any]]]) -> None:
        self.peer = peer
        self.buffers: dict[str, tuple[list[str], int]] = {}
        self.problems = problems

    def open(self, path: Path) -> str:
        uri = path.as_uri()
        text = path.read_text()
        self.buffers[uri] = (text.split("\n"), 1)
        self.peer.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}})
        return uri

    def answer(self, message: dict[str, Any]) -> Any:
        method, params = message["method"], message.get("params") or {}
        if method == "workspace/applyEdit":
            return self._apply(params["edit"])
        if method == "toolwire/editor/diagnostics":
            uris = params.get("uris")
            chosen = uris if uris is not None else list(self.problems)
            return {"items": [{"uri": uri, "diagnostics": self.problems.get(uri, [])} for uri in chosen]}
        return PERMISSION

    def _apply(self, edit: dict[str, Any]) -> dict[str, Any]:
        for change in edit.get("documentChanges") or []:
            uri = change["textDocument"]["uri"]
            lines, version = self.buffers[uri]
            text = "\n".join(lines)
            for one in sorted(change["edits"], key=lambda e: (e["range"]["start"]["line"],
                                                             e["range"]["start"]["character"]), reverse=True):
                start, end = one["range"]["start"], one["range"]["end"]  # ASCII text: code units are characters
                offsets = [0]
                for line in lines:
                    offsets.append(offsets[-1] + len(line) + 1)
                a = offsets[start["line"]] + start["character"]
                b = offsets[end["line"]] + end["character"]
                text = text[:a] + one["newText"] + text[b:]
                lines = text.split("\n")
            self.buffers[uri] = (lines, version + 1)
            self.peer.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version + 1},
                                                        "contentChanges": [{"text": text}]})
            self.peer.notify("toolwire/editor/diagnosticsChanged", {"uris": [uri]})  # a fast language server
        return {"applied": True}


async def _server(root: Path, script: Path, declared: dict[str, Any] | None,
                  problems: dict[str, list[dict[str, Any]]]) -> tuple[Peer, Editor, str]:
    peer = Peer([sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"], dict(os.environ))
    editor = Editor(peer, problems)
    peer.answer = editor.answer
    await peer.start()
    capabilities: dict[str, Any] = {"workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}}}
    if declared is not None:
        capabilities["experimental"] = {"toolwireEditor": declared}
    await peer.request("initialize", {"processId": None, "rootUri": None, "capabilities": capabilities})
    peer.notify("initialized", {})
    created = await peer.request("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}",
                                                          "settings": {"permissions": {"edits": "auto"}}})
    return peer, editor, created["sessionId"]


async def _turn(peer: Peer, sid: str, call_id: str) -> tuple[float, dict[str, Any]]:
    """One turn; ``calling`` → ``done`` of its call in seconds, and the call's result."""
    mark = len(peer.received)
    await peer.request("toolwire/session/prompt", {"sessionId": sid, "prompt": "go"})
    seen: dict[str, float] = {}
    result: dict[str, Any] = {}
    for _, at, msg in peer.received[mark:]:
        call = ((msg.get("params") or {}).get("update") or {}).get("toolCall") or {}
        if call.get("toolCallId") == call_id:
            seen.setdefault(call["status"], at)
            if call.get("result"):
                result = call["result"]
    if "calling" not in seen or "done" not in seen:
        raise RuntimeError(f"call {call_id} ended {sorted(seen)}: {result}")
    return seen["done"] - seen["calling"], result


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _ms(value: float) -> float:
    return round(value * 1000, 2)


async def edit_latency(turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-problems-") as tmp:
        roots = {name: Path(tmp) / name for name in ("with", "without")}
        script = Path(tmp) / "script.jsonl"
        steps = []
        for t in range(turns + 1):  # turn 0 warms each server up
            steps.append({"tool_calls": [{"name": "edit_file", "id": f"c{t}", "arguments": {
                "path": "app.py", "old_string": f"v{t} = {t}\n", "new_string": f"v{t} = {t + 1}\n"}}]})
            steps.append({"text": "ok"})
        script.write_text("".join(json.dumps(step) + "\n" for step in steps))
        servers = {}
        for name, root in roots.items():
            root.mkdir()
            (root / "app.py").write_text(SOURCE)
            uri = (root / "app.py").as_uri()
            problems = {uri: [_diag(150, "undefined name 'x'"), _diag(160, "unused import", 2), _diag(170, "too long", 3)]}
            peer, editor, sid = await _server(root, script, {"diagnostics": True} if name == "with" else None, problems)
            editor.open(root / "app.py")
            servers[name] = (peer, sid)
        times: dict[str, list[float]] = {"with": [], "without": []}
        last: dict[str, Any] = {}
        try:
            for t in range(turns + 1):
                for name, (peer, sid) in servers.items():
                    took, result = await _turn(peer, sid, f"c{t}")
                    if t:
                        times[name].append(took)
                    last[name] = result
        finally:
            for peer, _ in servers.values():
                await peer.stop()
    checked = (last["with"].get("data") or {}).get("diagnostics")
    if not checked or checked.get("checked") is not True:
        raise RuntimeError(f"the edit's result carries no problems: {last['with']}")
    with_med, without_med = statistics.median(times["with"]), statistics.median(times["without"])
    return {"figure": "problems_edit_latency_ms", "toolwire": _ms(with_med), "baseline": _ms(without_med),
            "ratio": round(with_med / without_med, 2), "unit": "ms",
            "added_median_ms": _ms(with_med - without_med),
            "added_p95_ms": _ms(_p95(times["with"]) - _p95(times["without"])),
            "p95_ms": _ms(_p95(times["with"])), "baseline_p95_ms": _ms(_p95(times["without"])),
            "final": checked.get("final"), "turns": turns,
            "baseline_is": "the same edit from an editor declaring no diagnostics",
            "measured": "calling->done, problems reported at once (quiet period 250 ms)",
            "target": "added_median_ms ~ 250 ms quiet period + 2 round trips"}


async def get_diagnostics_cost(turns: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-problems-") as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        problems: dict[str, list[dict[str, Any]]] = {}
        for f in range(50):
            path = root / f"m{f:02}.py"
            path.write_text(SOURCE)
            problems[path.as_uri()] = [_diag(n * 9 % 200, f"problem {n} of m{f:02}", 1 + n % 4) for n in range(20)]
        script = Path(tmp) / "script.jsonl"
        steps = []
        for t in range(turns + 1):
            steps.append({"tool_calls": [{"name": "get_diagnostics", "id": f"d{t}", "arguments": {"paths": None}}]})
            steps.append({"text": "ok"})
        script.write_text("".join(json.dumps(step) + "\n" for step in steps))
        peer, _, sid = await _server(root, script, {"diagnostics": True}, problems)
        try:
            offered = await peer.request("toolwire/tools/list", {"sessionId": sid})
            names = [tool["function"]["name"] for tool in offered["tools"]]
            if "get_diagnostics" not in names:
                return {"figure": "get_diagnostics_ms", "skipped": "the server offers no get_diagnostics"}
            diag_times = []
            result: dict[str, Any] = {}
            for t in range(turns + 1):
                took, result = await _turn(peer, sid, f"d{t}")
                if t:
                    diag_times.append(took)
        finally:
            await peer.stop()
    d = statistics.median(diag_times)
    return {"figure": "get_diagnostics_ms", "toolwire": _ms(d), "baseline": None, "ratio": None,
            "unit": "ms", "p95_ms": _ms(_p95(diag_times)), "per_problem_us": round(d / 1000 * 1e6, 1),
            "problems": 1000, "files": 50, "total_reported": (result.get("data") or {}).get("total"),
            "turns": turns, "measured": "calling->done, toolwire serve over stdio"}


async def run(turns: int) -> list[dict[str, Any]]:
    return [await edit_latency(turns), await get_diagnostics_cost(turns)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=30, help="measured turns per figure (default 30)")
    opts = parser.parse_args()
    for record in asyncio.run(run(opts.turns)):
        print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
