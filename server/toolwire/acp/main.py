"""Running the ACP agent over stdio (``toolwire acp``)."""

from __future__ import annotations

import asyncio
import logging

from acp import run_agent
from acp.stdio import stdio_streams

from toolwire.acp.agent import ToolwireAcpAgent
from toolwire.acp.incoming import guard
from toolwire.acp.outgoing import RedactingWriter
from toolwire.settings import Settings

log = logging.getLogger(__name__)

#: Longest line accepted from the client (ACP messages are one JSON object a line).
LINE_LIMIT = 50 * 1024 * 1024


async def serve(settings: Settings) -> bool:
    """Serve one ACP client on stdin/stdout (newline-delimited JSON-RPC) until it closes.

    Every line passes :func:`toolwire.acp.incoming.guard` before the SDK reads it;
    every message written is redacted (:class:`toolwire.acp.outgoing.RedactingWriter`).

    Returns:
        False when reading stdin failed (logged), True when the client closed it.
    """
    agent = ToolwireAcpAgent(settings)
    raw_reader, raw_writer = await stdio_streams(limit=LINE_LIMIT)
    writer = RedactingWriter(raw_writer)
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    agent.requests.writer = writer
    reading = asyncio.get_running_loop().create_task(guard(raw_reader, reader, writer, agent.requests))
    try:
        # the SDK routes session/close and session/resume only as "unstable" (ACP v1 has them stable)
        await run_agent(agent, writer, reader, use_unstable_protocol=True, observers=[agent.requests.observe])
    finally:
        reading.cancel()
        await agent.close()
    if reading.done() and not reading.cancelled() and reading.exception() is not None:
        log.error("stopped reading the client's messages", exc_info=reading.exception())
        return False
    return True


def run(settings: Settings) -> int:
    """Entry point of ``toolwire acp``; returns the exit code."""
    try:
        served = asyncio.run(serve(settings))
    except KeyboardInterrupt:
        return 130
    return 0 if served else 1
