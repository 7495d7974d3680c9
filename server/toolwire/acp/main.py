"""Running the ACP agent over stdio (``toolwire acp``)."""

from __future__ import annotations

import asyncio
import json
import logging

from acp import run_agent
from acp.stdio import stdio_streams

from toolwire.acp.agent import ToolwireAcpAgent
from toolwire.settings import Settings

log = logging.getLogger(__name__)

#: Longest line accepted from the client (ACP messages are one JSON object a line).
LINE_LIMIT = 50 * 1024 * 1024

#: The longest piece of a refused line echoed in an error message.
ECHO_LIMIT = 80


def _error(code: int, message: str) -> bytes:
    """A JSON-RPC error response with ``id: null`` (JSON-RPC 2.0, section 5)."""
    return (json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}) + "\n").encode()


def check_line(line: bytes) -> bytes | None:
    """None when ``line`` is a JSON object (handed to the SDK), else the error to answer.

    The SDK logs and drops text that is not JSON, but stops reading altogether on
    JSON that is not an object (a batch array, a number): both are refused here with
    JSON-RPC's codes (-32700 Parse error, -32600 Invalid Request; ACP has no batches).
    """
    stripped = line.strip()
    if not stripped:
        return b""
    try:
        value = json.loads(stripped)
    except ValueError as exc:
        return _error(-32700, f"Parse error: {exc.msg} in {stripped[:ECHO_LIMIT]!r}")
    if not isinstance(value, dict):
        kind = "a batch (array)" if isinstance(value, list) else f"a JSON {type(value).__name__}"
        return _error(-32600, f"Invalid Request: expected one JSON object per line, got {kind}")
    return None


async def _guard(source: asyncio.StreamReader, target: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy lines from ``source`` to ``target``, answering malformed ones instead."""
    try:
        while True:
            line = await source.readline()
            if not line:
                break
            refusal = check_line(line)
            if refusal is None:
                target.feed_data(line)
            elif refusal:
                log.warning("refused a malformed message from the client")
                writer.write(refusal)
                await writer.drain()
    finally:
        target.feed_eof()


async def serve(settings: Settings) -> None:
    """Serve one ACP client on stdin/stdout (newline-delimited JSON-RPC) until it closes."""
    agent = ToolwireAcpAgent(settings)
    raw_reader, writer = await stdio_streams(limit=LINE_LIMIT)
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    guard = asyncio.get_running_loop().create_task(_guard(raw_reader, reader, writer))
    try:
        await run_agent(agent, writer, reader)
    finally:
        guard.cancel()
        await agent.close()


def run(settings: Settings) -> int:
    """Entry point of ``toolwire acp``; returns the exit code."""
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        return 130
    return 0
