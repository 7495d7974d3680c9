"""The closing message of a code action (:func:`toolwire.lsp.actions.summary`): an MCP call
that ran is told as an MCP call, under ``Ran MCP tools:`` with its server and whether Toolwire
can undo it, never as a changed file; a built-in tool's change stays under ``Changed:``."""

from __future__ import annotations

from types import SimpleNamespace

import mcp_types as types
from lsprotocol.types import MessageType
from mcp.server.mcpserver import MCPServer

from mcp_inprocess import connected
from toolwire.agent.turn import TurnOutcome
from toolwire.lsp.actions import summary
from toolwire.mcp.tool import McpTool
from toolwire.streaming.state import Status, ToolCallState
from toolwire.tools import session_tools
from toolwire.tools.base import Registry


def git_like() -> MCPServer:
    server = MCPServer("git")

    @server.tool()
    def git_add(files: list[str]) -> str:
        """Stage files."""
        return "staged"

    @server.tool(annotations=types.ToolAnnotations(read_only_hint=True))
    def git_status() -> str:
        """Show the status."""
        return "clean"

    return server


def done(index: int, name: str, content: str) -> ToolCallState:
    return ToolCallState(key=index, index=index, id=f"c{index}", name=name, status=Status.DONE,
                         result={"content": content})


async def test_mcp_calls_are_told_as_mcp_calls_not_as_changed_files():
    async with connected(git_like(), "git") as conn:
        mcp = [McpTool(conn, conn.listed("git_add")), McpTool(conn, conn.listed("git_status"))]
    edit = next(tool for tool in session_tools() if tool.name == "edit_file")
    session = SimpleNamespace(registry=Registry([edit, *mcp]),
                              conversation=SimpleNamespace(messages=[{"role": "assistant", "content": "Staged."}]))
    turn = SimpleNamespace(calls=[done(0, "mcp__git__git_add", "staged"), done(1, "mcp__git__git_status", "clean"),
                                  done(2, "edit_file", "Edited a.py: 1 replacement at line 1")])
    level, text = summary(turn, session, TurnOutcome("end_turn"), "fix")
    assert level == MessageType.Info
    assert text.splitlines() == [
        "Toolwire (fix): done",
        "Changed: Edited a.py: 1 replacement at line 1",
        "Ran MCP tools: git_add from the MCP server git (not undoable); git_status from the MCP server git",
        "Staged.",
    ]
    turn.calls = turn.calls[:1]
    assert summary(turn, session, TurnOutcome("end_turn"), "fix")[1].splitlines()[1:3] == [
        "No files changed.", "Ran MCP tools: git_add from the MCP server git (not undoable)"]
