"""Benchmark: one MCP ``tools/call`` through Toolwire, side by side with the same call made
by a bare ``mcp`` SDK client (issue 23: overhead within 1.2x + 2 ms per call).

The call is server-everything's ``echo`` (``{"message": "bench"}``; installed by
``make mcp-servers``), over stdio and over streamable HTTP on 127.0.0.1. Two servers of the
same kind run side by side: one is Toolwire's, one the bare client's.

* ``toolwire``: what a user pays per call. ``toolwire serve`` over stdio (``bench/peer.py``),
  one session whose ``mcpServers`` holds the server and whose ``permissions`` allow
  ``mcp__everything__echo`` (no approval round trip), a replay model making one call per
  turn; a call's time is its ``calling`` -> ``done`` updates as the client receives them:
  the scheduler, ``McpTool`` (validation against the input schema, the run), the
  connection's ``tools/call``, the result's mapping for the model and the card, and the
  two updates' encoding and delivery.
* ``baseline``: ``ClientSession.call_tool`` on the bare client's own connection, timed right
  before and right after each turn, so a burst of load hits both sides.

A second figure, ``mcp_tool_run_ms``, leaves the turn out: ``McpTool.run`` in this process
(``McpConnection.call`` on the connection Toolwire keeps, then the result's mapping by
``mcp/results.py``) against the bare client's call, the two interleaved call by call.

One JSON line per figure and transport, like the other benches:
``{"figure": "mcp_call_ms" | "mcp_tool_run_ms", "transport", "toolwire", "baseline", "ratio", "paired_ratio",
"bound", "within", "unit": "ms", "target", "calls", "mode"}``: medians over ``--calls``
turns or calls (the first, warming one left out); ``paired_ratio`` the median of each turn's
call against the mean of its two baseline calls (of each call against the next bare one); ``bound`` is ``1.2 x baseline + 2`` and
``within`` whether ``toolwire`` is at most that.

Usage::

    python bench/mcp_overhead.py                  # 40 calls per figure and transport (~1 min)
    python bench/mcp_overhead.py --calls 10 --only stdio
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from mcp_servers import everything_stdio, start_everything_http, stop  # noqa: E402
from peer import Peer  # noqa: E402
from toolwire.mcp.config import parse_servers, resolve_servers  # noqa: E402
from toolwire.mcp.connection import McpConnection  # noqa: E402
from toolwire.mcp.tool import McpTool  # noqa: E402
from toolwire.tools.base import ToolContext  # noqa: E402

ARGUMENTS = {"message": "bench"}
TOOL = "mcp__everything__echo"


@asynccontextmanager
async def bare_session(entry: dict[str, Any]) -> AsyncIterator[ClientSession]:
    """The bare SDK client: a ``ClientSession`` with the server of ``entry``, initialized."""
    async with AsyncExitStack() as stack:
        if entry["type"] == "http":
            transport = streamable_http_client(entry["url"])
        else:
            quiet = stack.enter_context(open(os.devnull, "w"))  # the server's banner on its stderr
            transport = stdio_client(StdioServerParameters(command=entry["command"], args=entry["args"]),
                                     errlog=quiet)
        read, write = await stack.enter_async_context(transport)
        session = await stack.enter_async_context(ClientSession(read, write))
        await session.initialize()
        yield session


async def bare_call(session: ClientSession) -> float:
    """Seconds of one ``echo`` call made by the bare client."""
    start = time.perf_counter()
    result = await session.call_tool("echo", ARGUMENTS)
    elapsed = time.perf_counter() - start
    assert not result.is_error and result.content[0].text == "Echo: bench", result
    return elapsed


def script(path: Path, calls: int) -> Path:
    """A replay script of ``calls + 1`` turns, each one ``echo`` call (``c0`` warms up) then text."""
    steps: list[dict[str, Any]] = []
    for turn in range(calls + 1):
        steps.append({"tool_calls": [{"name": TOOL, "id": f"c{turn}", "arguments": ARGUMENTS}]})
        steps.append({"text": "ok"})
    path.write_text("".join(json.dumps(step) + "\n" for step in steps))
    return path


def call_times(received: list[tuple[int, float, dict[str, Any]]], call_id: str) -> dict[str, float]:
    """The arrival time of the first update of each status of ``call_id``."""
    seen: dict[str, float] = {}
    for _, at, message in received:
        call = ((message.get("params") or {}).get("update") or {}).get("toolCall") or {}
        if call.get("toolCallId") == call_id:
            seen.setdefault(call["status"], at)
    return seen


async def call_figure(transport: str, entry: dict[str, Any], baseline_entry: dict[str, Any], calls: int) -> dict[str, Any]:
    """Both sides for one transport: Toolwire on ``entry``, the bare client on ``baseline_entry``."""
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-mcp-") as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        replay = script(Path(tmp) / "script.jsonl", calls)
        peer = Peer([sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"], dict(os.environ))
        await peer.start()
        try:
            await peer.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
            peer.notify("initialized", {})
            settings = {"mcpServers": {"everything": entry}, "permissions": {TOOL: "auto"}}
            sid = (await peer.request("toolwire/session/new", {
                "cwd": str(root), "model": f"replay:{replay}", "settings": settings}))["sessionId"]
            async with bare_session(baseline_entry) as bare:
                await bare_call(bare)
                tool: list[float] = []
                base: list[float] = []
                pairs: list[float] = []
                for turn in range(calls + 1):
                    before = await bare_call(bare)
                    mark = len(peer.received)
                    await peer.request("toolwire/session/prompt", {"sessionId": sid, "prompt": "go"})
                    after = await bare_call(bare)
                    seen = call_times(peer.received[mark:], f"c{turn}")
                    if "done" not in seen or "calling" not in seen:
                        return {"figure": "mcp_call_ms", "transport": transport,
                                "error": f"call c{turn} went through {sorted(seen)}, not calling -> done"}
                    if turn:
                        tool.append(seen["done"] - seen["calling"])
                        base += [before, after]
                        pairs.append(tool[-1] / ((before + after) / 2))
        finally:
            await peer.stop()
    return summary("mcp_call_ms", transport, tool, base, pairs, calls,
                   "toolwire serve over stdio, calling -> done; bare ClientSession.call_tool")


def summary(figure: str, transport: str, tool: list[float], base: list[float], pairs: list[float],
            calls: int, mode: str) -> dict[str, Any]:
    """The JSON line of one figure: medians in ms, the ratios, the bound and whether it holds."""
    toolwire_ms = statistics.median(tool) * 1000
    baseline_ms = statistics.median(base) * 1000
    bound = 1.2 * baseline_ms + 2
    return {"figure": figure, "transport": transport, "toolwire": round(toolwire_ms, 2),
            "baseline": round(baseline_ms, 2), "ratio": round(toolwire_ms / baseline_ms, 3),
            "paired_ratio": round(statistics.median(pairs), 3), "bound": round(bound, 2),
            "within": toolwire_ms <= bound, "unit": "ms", "target": "toolwire <= 1.2 x baseline + 2 ms",
            "calls": calls, "mode": mode}


async def tool_run_figure(transport: str, entry: dict[str, Any], baseline_entry: dict[str, Any],
                          calls: int) -> dict[str, Any]:
    """``McpTool.run`` on Toolwire's connection to ``entry`` against the bare client's call."""
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-mcp-") as tmp:
        root = Path(tmp)
        [spec], _ = resolve_servers(parse_servers({"everything": entry}), root=root, workspace_file=False)
        connection = McpConnection(spec, start_timeout=60)
        connection.start()
        try:
            await connection.wait_started()
            [listed] = [tool for tool in connection.tools if tool.name == "echo"]
            echo = McpTool(connection, listed)
            ctx = ToolContext(root=root)
            async with bare_session(baseline_entry) as bare:
                tool: list[float] = []
                base: list[float] = []
                pairs: list[float] = []
                for n in range(calls + 1):
                    start = time.perf_counter()
                    result = await echo.run(echo.validate(ARGUMENTS), ctx)
                    elapsed = time.perf_counter() - start
                    assert result.ok and result.content == "Echo: bench", result
                    against = await bare_call(bare)
                    if n:
                        tool.append(elapsed)
                        base.append(against)
                        pairs.append(elapsed / against)
        finally:
            await connection.stop()
    return summary("mcp_tool_run_ms", transport, tool, base, pairs, calls,
                   "McpTool.run in process (McpConnection.call, results.to_result); bare ClientSession.call_tool")


async def both(transport: str, ours: dict[str, Any], theirs: dict[str, Any], calls: int) -> None:
    """Print both figures of one transport (Toolwire on ``ours``, the bare client on ``theirs``)."""
    print(json.dumps(await tool_run_figure(transport, ours, theirs, calls)), flush=True)
    print(json.dumps(await call_figure(transport, ours, theirs, calls)), flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=40, help="timed calls per figure and transport (default 40)")
    parser.add_argument("--only", default="stdio,http", help="transports, comma-separated (stdio, http)")
    args = parser.parse_args()
    for transport in args.only.split(","):
        if transport == "stdio":
            await both("stdio", everything_stdio(), everything_stdio(), args.calls)
            continue
        servers = [start_everything_http(), start_everything_http()]
        try:
            ours, theirs = ({"type": "http", "url": f"http://127.0.0.1:{port}/mcp"} for _, port, _ in servers)
            await both("http", ours, theirs, args.calls)
        finally:
            for proc, _, _ in servers:
                stop(proc)


if __name__ == "__main__":
    asyncio.run(main())
