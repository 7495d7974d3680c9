"""The test MCP servers themselves (tests/mcp_servers.py), through a bare SDK client: each
entry starts and lists the tools the MCP tests rely on, so a changed pin fails here first,
and the probe server records what it promises."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from mcp_servers import everything_http, probe_record  # noqa: F401 (fixtures)
from mcp_servers import everything_stdio, git_server, probe_server, time_server

EVERYTHING_TOOLS = {"echo", "get-sum", "get-tiny-image", "get-annotated-message", "get-structured-content",
                    "get-resource-links", "get-resource-reference", "gzip-file-as-resource",
                    "trigger-long-running-operation"}


@asynccontextmanager
async def session(entry: dict[str, Any]):
    """A bare SDK client session with the server of ``entry``, initialized."""
    if entry["type"] == "http":
        transport = streamable_http_client(entry["url"])
    else:
        transport = stdio_client(StdioServerParameters(command=entry["command"], args=entry["args"],
                                                       env=entry.get("env")))
    async with transport as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def names(entry: dict[str, Any]) -> set[str]:
    async with session(entry) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def test_registry_servers_list_the_tools_the_tests_use(repo: Path, everything_http):
    assert {"get_current_time", "convert_time"} <= await names(time_server())
    assert {"git_status", "git_log", "git_commit", "git_reset"} <= await names(git_server(repo))
    assert EVERYTHING_TOOLS <= await names(everything_stdio())
    assert EVERYTHING_TOOLS <= await names(everything_http)


async def test_registry_servers_answer_is_error_without_the_network():
    async with session(time_server()) as client:
        bad_zone = await client.call_tool("get_current_time", {"timezone": "Nowhere/Atlantis"})
    async with session(everything_stdio()) as client:
        bad_url = await client.call_tool("gzip-file-as-resource", {"data": "ftp://example.invalid/a"})
        image = await client.call_tool("get-tiny-image", {})
    assert bad_zone.is_error and bad_url.is_error
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
