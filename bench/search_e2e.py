"""The ``search_files`` / ``list_files`` figures once more through the real server, for
``bench/search_files.py --only e2e``.

``toolwire serve`` over stdio (``bench/peer.py``), one session on the generated tree, a
replay model whose every turn makes one call of the case; the call's time is its
``calling`` → ``done`` updates as the client receives them. The engine is run directly
(as in ``search_files.py``) right before and right after each turn, so a burst of load
hits both sides; ``paired_ratio`` is the median over the turns of the call against
the mean of those two runs.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from peer import Peer


async def e2e_figure(root: Path, case: Any, engine: str, argv: list[str], turns: int,
                     run_direct: Any) -> dict[str, Any]:
    """calling → done of ``case`` over the server (its engine: ``TOOLWIRE_ENGINE=engine``),
    against ``argv`` run directly."""
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-e2e-") as tmp:
        script = Path(tmp) / "script.jsonl"
        steps = []
        for t in range(turns + 1):  # turn 0 warms the server (imports, the engine's first run)
            steps.append({"tool_calls": [{"name": case.tool, "id": f"c{t}", "arguments": case.args}]})
            steps.append({"text": "ok"})
        script.write_text("".join(json.dumps(step) + "\n" for step in steps))
        peer = Peer([sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
                    {**os.environ, "TOOLWIRE_ENGINE": engine})
        await peer.start()
        try:
            await peer.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
            peer.notify("initialized", {})
            sid = (await peer.request("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}"}
                                      ))["sessionId"]
            raw: list[float] = []
            calls: list[float] = []
            pairs: list[float] = []
            data: dict[str, Any] = {}
            for turn in range(turns + 1):
                before = run_direct(argv, root)[0]
                mark = len(peer.received)
                await peer.request("toolwire/session/prompt", {"sessionId": sid, "prompt": "go"})
                after = run_direct(argv, root)[0]
                seen: dict[str, float] = {}
                for _, at, msg in peer.received[mark:]:
                    call = ((msg.get("params") or {}).get("update") or {}).get("toolCall") or {}
                    if call.get("toolCallId") == f"c{turn}":
                        seen.setdefault(call["status"], at)
                        if call["status"] in ("done", "errored"):
                            data = (call.get("result") or {}).get("data") or {}
                if "done" not in seen or "calling" not in seen:
                    return {"figure": f"{case.figure}_e2e", "error": f"the call ended {sorted(seen)}", "data": data}
                if turn:
                    raw += [before, after]
                    calls.append(seen["done"] - seen["calling"])
                    pairs.append(calls[-1] / ((before + after) / 2))
        finally:
            await peer.stop()
    return {"figure": f"{case.figure}_e2e", "engine": data.get("engine"), "args": case.args,
            "toolwire_ms": round(statistics.median(calls) * 1000, 2),
            "engine_ms": round(statistics.median(raw) * 1000, 2),
            "ratio": round(statistics.median(calls) / statistics.median(raw), 3),
            "paired_ratio": round(statistics.median(pairs), 3), "tool_total": data.get("total"),
            "target": "ratio <= 1.3", "turns": turns, "mode": "toolwire serve over stdio, calling -> done"}
