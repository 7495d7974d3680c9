"""The test MCP servers themselves (tests/mcp_servers.py), through a bare SDK client:
server-everything has the tools and answers the MCP tests rely on (a changed pin fails here
first; test_mcp_runtime.py covers mcp-server-time, mcp-server-git and the HTTP transport), and
the probe server records what it promises."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from mcp_servers import probe_record  # noqa: F401 (a fixture)
from mcp_servers import everything_stdio, probe_server

EVERYTHING_TOOLS = {"echo", "get-sum", "get-tiny-image", "get-annotated-message", "get-structured-content",
                    "get-resource-links", "get-resource-reference", "gzip-file-as-resource",
                    "trigger-long-running-operation"}


@asynccontextmanager
async def session(entry: dict[str, Any]):
    """A bare SDK client session with the stdio server of ``entry``, initialized."""
    transport = stdio_client(StdioServerParameters(command=entry["command"], args=entry["args"], env=entry.get("env")))
    async with transport as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def test_server_everything_has_what_the_tests_use():
    async with session(everything_stdio()) as client:
        assert EVERYTHING_TOOLS <= {tool.name for tool in (await client.list_tools()).tools}
        bad_url = await client.call_tool("gzip-file-as-resource", {"data": "ftp://example.invalid/a"})
        image = await client.call_tool("get-tiny-image", {})
    assert bad_url.is_error  # refused before any fetch
    assert [part.type for part in image.content] == ["text", "image", "text"]


async def test_probe_server_records_cancel_and_crashes(probe_record):
    async with session(probe_server(probe_record)) as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "block", {})
            started = await probe_record.await_for("started")
            tg.cancel_scope.cancel()
        cancelled = await probe_record.await_for("cancelled")
        assert cancelled["requestId"] == started["requestId"]
        assert (await client.call_tool("add_tool", {"name": "late"})).content[0].text == "added late"
        assert "late" in {tool.name for tool in (await client.list_tools()).tools}
        failed = None
        try:
            await client.call_tool("crash", {"code": 4})
        except Exception as error:  # the SDK's "Connection closed"
            failed = error
        assert failed is not None and probe_record.wait_for("started")["tool"] == "crash"
