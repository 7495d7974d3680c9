"""An MCP server run in the test's own process, behind the ``call()`` of
:class:`toolwire.mcp.connection.McpConnection`: the SDK's ``MCPServer`` and its in-memory
client (``mcp.client.Client`` connects to a server object directly), so a test exercises
the real SDK on both sides without a process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import mcp_types
from mcp.client import Client
from mcp.server.mcpserver import MCPServer


class InProcessConnection:
    """A connection to an in-process server: ``name``, ``tools`` and ``call`` as McpConnection has them.

    Attributes:
        calls: ``(tool, arguments, timeout)`` of every call made, in order.
    """

    def __init__(self, name: str, client: Client, tools: list[mcp_types.Tool]) -> None:
        self.name = name
        self.tools = tuple(tools)
        self.calls: list[tuple[str, dict[str, Any], float]] = []
        self._client = client

    def listed(self, tool: str) -> mcp_types.Tool:
        """The tool called ``tool`` as the server lists it."""
        return next(t for t in self.tools if t.name == tool)

    async def call(self, tool: str, arguments: dict[str, Any], *, timeout: float) -> mcp_types.CallToolResult:
        """``tools/call`` on the server."""
        self.calls.append((tool, arguments, timeout))
        return await self._client.call_tool(tool, arguments)


@contextlib.asynccontextmanager
async def connected(server: MCPServer, name: str = "demo") -> AsyncIterator[InProcessConnection]:
    """A connection to ``server`` under the configured name ``name``, its tools listed."""
    async with Client(server) as client:
        listed = await client.list_tools()
        yield InProcessConnection(name, client, listed.tools)
