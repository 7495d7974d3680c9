"""Approvals of MCP tools: the permission keys, ask by default whatever the hints, "allow
always" for that tool and never its server, the approval's subject, and no checkpoint or
irreversible rule (toolwire.agent.permissions, toolwire.agent.scheduler)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer

from mcp_inprocess import connected
from test_turn import ScriptedApprover, assert_invariants, call_updates, make_session
from toolwire.agent.events import RecordingSink
from toolwire.agent.permissions import Decision, PermissionPolicy, build_subject, policy_keys
from toolwire.agent.turn import Turn
from toolwire.mcp.tool import McpTool
from toolwire.tools.base import ToolContext

ROOT = Path("/ws")
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def mcp_tool(server: str, name: str, **hints: bool) -> McpTool:
    annotations = types.ToolAnnotations(**hints) if hints else None
    return McpTool(SimpleNamespace(name=server), types.Tool(name=name, input_schema=SCHEMA, annotations=annotations))


def test_every_mcp_tool_asks_by_default_and_its_keys_go_from_tool_to_server_to_other():
    read = mcp_tool("db", "query", read_only_hint=True)
    policy = PermissionPolicy()
    assert policy.decide(read, read.validate({"q": "x"})) is Decision.ASK
    assert policy_keys(read, read.validate({})) == ["mcp__db__query", "mcp__db__query", "mcp__db", "other"]
    policy.set_overrides({"mcp__db": "auto", "mcp__db__drop": "deny", "other": "deny"})
    drop = mcp_tool("db", "drop")
    assert policy.decide(read, read.validate({})) is Decision.AUTO
    assert policy.decide(drop, drop.validate({})) is Decision.DENY
    assert policy.decide(*(lambda t: (t, t.validate({})))(mcp_tool("web", "fetch"))) is Decision.DENY
    policy.set_overrides({"read": "auto", "git": "auto", "edits": "auto"})  # no built-in group covers them
    assert policy.decide(read, read.validate({})) is Decision.ASK


def test_a_cut_name_is_matched_by_its_uncut_key_too():
    tool = mcp_tool("a server with a long name", "and a tool whose name is long as well")
    assert len(tool.name) == 64
    uncut = "mcp__a_server_with_a_long_name__and_a_tool_whose_name_is_long_as_well"
    assert policy_keys(tool, tool.validate({}))[:2] == [tool.name, uncut]
    assert PermissionPolicy({uncut: "auto"}).decide(tool, tool.validate({})) is Decision.AUTO
    assert PermissionPolicy({tool.name: "deny", uncut: "auto"}).decide(tool, tool.validate({})) is Decision.DENY


def test_allow_always_covers_the_tool_for_any_arguments_never_its_server():
    query, drop = mcp_tool("db", "query"), mcp_tool("db", "drop")
    policy = PermissionPolicy()
    policy.remember_always(query, query.validate({"q": "select 1"}), ROOT)
    assert policy.decide(query, query.validate({"q": "anything else"})) is Decision.AUTO
    assert policy.decide(drop, drop.validate({"q": "select 1"})) is Decision.ASK
    assert PermissionPolicy({"mcp__db__query": "deny"}).decide(query, query.validate({})) is Decision.DENY


async def test_the_subject_names_the_server_the_hints_and_the_undo_line(tmp_path):
    ctx = ToolContext(root=tmp_path)
    write = mcp_tool("db", "insert", destructive_hint=False, open_world_hint=False, idempotent_hint=True)
    subject = await build_subject(write, write.validate({"q": "row"}), ctx)
    assert subject == {"kind": "mcp", "tool": "mcp__db__insert", "server": "db", "serverTool": "insert",
                       "arguments": {"q": "row"}, "hints": {"destructiveHint": False, "openWorldHint": False},
                       "undo": "Toolwire cannot undo what this tool does"}
    read = mcp_tool("db", "query", read_only_hint=True)
    assert await build_subject(read, read.validate({}), ctx) == {
        "kind": "mcp", "tool": "mcp__db__query", "server": "db", "serverTool": "query", "arguments": {},
        "hints": {"readOnlyHint": True}}
    bare = mcp_tool("db", "other")
    assert (await build_subject(bare, bare.validate({}), ctx))["hints"] == {}


def touching_server(folder: Path) -> MCPServer:
    server = MCPServer("files")

    @server.tool()
    def touch(name: str) -> str:
        """Create a file the server's own way (outside Toolwire's tools)."""
        (folder / name).write_text("made by the server\n")
        return f"created {name}"

    return server


async def test_allow_always_then_auto_and_no_checkpoint_or_irreversible_question(tmp_path):
    async with connected(touching_server(tmp_path), name="files") as conn:
        tool = McpTool(conn, conn.listed("touch"))
        calls = [[{"name": "mcp__files__touch", "arguments": {"name": n}, "id": f"c{n}"}] for n in ("a", "b")]
        session = make_session(tmp_path, [{"tool_calls": calls[0]}, {"tool_calls": calls[1]}, {"text": "done"}],
                               [tool], allow_irreversible=False)
        sink = RecordingSink()
        approver = ScriptedApprover(["allow_always"])
        subjects: list[dict] = []
        ask = approver.request_permission

        async def recording(call, subject):
            subjects.append(subject)
            return await ask(call, subject)

        approver.request_permission = recording  # type: ignore[method-assign]
        turn = Turn(session, sink, approver)
        with anyio.fail_after(20):
            outcome = await turn.run("make two files")
        assert outcome.stop_reason == "end_turn"
        assert approver.asked == ["ca"]  # the second call of the tool ran unasked, other arguments or not
        assert [s["kind"] for s in subjects] == ["mcp"] and "irreversible" not in subjects[0]
        assert {cid: snaps[-1]["status"] for cid, snaps in call_updates(sink).items()} == {"ca": "done", "cb": "done"}
        assert (tmp_path / "a").exists() and (tmp_path / "b").exists()
        assert turn.checkpoint.paths == {}  # nothing recorded: undo cannot restore what a server did
        assert_invariants(session, sink)
