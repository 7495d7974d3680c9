"""An MCP tool as a Toolwire tool (toolwire.mcp.tool): its definition, validation against the
server's input schema, and a run through the scheduler, against a real SDK server in process."""

from __future__ import annotations

import base64
import logging
import socket
import threading
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer

from mcp_inprocess import connected
from test_turn import ScriptedApprover, assert_invariants, call_updates, make_session, tool_messages
from toolwire.agent.events import RecordingSink
from toolwire.agent.turn import Turn
from toolwire.mcp import tool as tool_module
from toolwire.mcp.tool import CALL_TIMEOUT, IMAGE_INPUT, McpTool
from toolwire.tools.base import ArgumentsInvalid, ToolContext

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 100


def demo_server() -> MCPServer:
    server = MCPServer("demo")

    @server.tool(annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def echo(text: str, times: int = 1) -> str:
        """Say it again."""
        return text * times

    @server.tool()
    def configure(options: dict[str, int], tags: list[str] | None = None) -> str:
        """Set options."""
        return ",".join(f"{k}={v}" for k, v in sorted(options.items()))

    @server.tool()
    def refuse(city: str) -> types.CallToolResult:
        """Always fails."""
        return types.CallToolResult(content=[types.TextContent(text=f"no such city: {city}")], is_error=True)

    @server.tool()
    def chart() -> types.CallToolResult:
        """A picture."""
        return types.CallToolResult(content=[types.TextContent(text="the chart"),
                                             types.ImageContent(data=base64.b64encode(PNG).decode(),
                                                                mime_type="image/png")])

    return server


async def test_the_tool_is_offered_as_the_server_lists_it():
    async with connected(demo_server(), name="my server") as conn:
        tool = McpTool(conn, conn.listed("echo"))
        assert (tool.name, tool.server, tool.original) == ("mcp__my_server__echo", "my server", "echo")
        assert tool.source() == {"mcpServer": "my server", "tool": "echo"}
        assert tool.annotations == {"readOnlyHint": True, "openWorldHint": False}
        assert tool.hint("readOnlyHint") is True and tool.hint("destructiveHint") is None
        assert tool.read_only is False  # a hint never skips the question
        definition = tool.definition({"read_file"})
        assert definition == {"type": "function", "function": {
            "name": "mcp__my_server__echo", "description": "Say it again.", "parameters": conn.listed("echo").input_schema}}
        assert McpTool(conn, conn.listed("configure")).annotations is None
        assert tool.paths(tool.validate({"text": "a", "path": "x.py"})) == []


async def test_arguments_are_validated_against_the_input_schema():
    async with connected(demo_server()) as conn:
        echo = McpTool(conn, conn.listed("echo"))
        assert echo.validate({"text": "hi"}).arguments == {"text": "hi"}  # no default added: the server's to fill
        with pytest.raises(ArgumentsInvalid) as bad:
            echo.validate({"times": "twice"})
        assert str(bad.value) == ("invalid arguments for mcp__demo__echo: (arguments): 'text' is a required property; "
                                  "times: 'twice' is not of type 'integer'")
        with pytest.raises(ArgumentsInvalid, match=r"\(arguments\): must be a JSON object"):
            echo.validate(["hi"])  # type: ignore[arg-type]
        configure = McpTool(conn, conn.listed("configure"))
        decoded = configure.validate({"options": '{"a": 1}', "tags": '["x"]'})  # double-encoded by the model
        assert decoded.arguments == {"options": {"a": 1}, "tags": ["x"]}
        with pytest.raises(ArgumentsInvalid, match=r"options\.a: 'one' is not of type 'integer'"):
            configure.validate({"options": '{"a": "one"}'})


async def test_a_schema_that_is_not_json_schema_leaves_the_checking_to_the_server(caplog):
    async with connected(demo_server()) as conn:
        listed = conn.listed("echo").model_copy(update={"input_schema": {"type": "object", "properties": 3}})
        with caplog.at_level(logging.WARNING):
            tool = McpTool(conn, listed)
            assert "not valid JSON Schema" not in caplog.text  # checked at the first call, not when listed
            assert tool.validate({"anything": 1}).arguments == {"anything": 1}
        assert "not valid JSON Schema" in caplog.text


async def test_a_ref_to_another_document_is_never_fetched(caplog):
    async with connected(demo_server()) as conn:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen()
            port = listener.getsockname()[1]
            schema = {"type": "object", "properties": {"a": {"$ref": f"http://127.0.0.1:{port}/schema.json"}}}
            tool = McpTool(conn, conn.listed("echo").model_copy(update={"input_schema": schema}))
            checked: list[Any] = []
            thread = threading.Thread(target=lambda: checked.append(tool.validate({"a": 1})), daemon=True)
            with caplog.at_level(logging.WARNING):
                thread.start()
                thread.join(60)  # a safety net: fetching it would wait for an answer that never comes
            listener.setblocking(False)
            with pytest.raises(BlockingIOError):
                listener.accept()  # nothing connected
        assert [c.arguments for c in checked] == [{"a": 1}]  # left to the server to check
        assert "the input schema cannot be used" in caplog.text


async def test_thousands_of_listed_tools_are_built_without_checking_their_schemas(monkeypatch):
    checked = []
    monkeypatch.setattr(tool_module, "_validator", lambda text, name: checked.append(name))
    async with connected(demo_server()) as conn:
        listed = conn.listed("echo")
        tools = [McpTool(conn, listed.model_copy(update={"name": f"t{i}", "input_schema": {
            "type": "object", "properties": {f"p{i}": {"type": "string"}}}})) for i in range(3000)]
        assert checked == []  # a server's tools are built again on every list change
        tools[7].validate({"p7": "x"})
        tools[7].validate({"p7": "y"})
        assert checked == ["mcp__demo__t7"]


async def test_run_maps_the_answer_and_passes_the_call_timeout(tmp_path):
    async with connected(demo_server()) as conn:
        ctx = ToolContext(root=tmp_path, extra={"result_limit": 5000, CALL_TIMEOUT: 7.5, IMAGE_INPUT: "auto"})
        echo = McpTool(conn, conn.listed("echo"))
        result = await echo.run(echo.validate({"text": "hi", "times": 2}), ctx)
        assert result.ok and result.content == "hihi"
        assert conn.calls == [("echo", {"text": "hi", "times": 2}, 7.5)]
        refuse = McpTool(conn, conn.listed("refuse"))
        failed = await refuse.run(refuse.validate({"city": "Atlantis"}), ctx)
        assert (failed.ok, failed.error_code, failed.content) == (
            False, "mcp_tool_error", "Error (mcp_tool_error): no such city: Atlantis")
        chart = McpTool(conn, conn.listed("chart"))
        pictured = await chart.run(chart.validate({}), ctx)
        assert [i.mime_type for i in pictured.images] == ["image/png"]
        ctx.extra[IMAGE_INPUT] = False
        unpictured = await chart.run(chart.validate({}), ctx)
        assert unpictured.images == () and "[image image/png, 108 bytes: not shown to the model]" in unpictured.content


async def test_a_turn_asks_runs_and_never_sends_invalid_arguments(tmp_path):
    async with connected(demo_server()) as conn:
        tools = [McpTool(conn, conn.listed(name)) for name in ("echo", "refuse")]
        calls = [{"name": "mcp__demo__echo", "arguments": {"times": 2}, "id": "c1"},
                 {"name": "mcp__demo__echo", "arguments": {"text": "ok"}, "id": "c2"},
                 {"name": "mcp__demo__refuse", "arguments": {"city": "Atlantis"}, "id": "c3"}]
        session = make_session(tmp_path, [{"tool_calls": calls}, {"text": "done"}], tools)
        sink = RecordingSink()
        approver = ScriptedApprover()
        with anyio.fail_after(20):
            outcome = await Turn(session, sink, approver).run("go")
        assert outcome.stop_reason == "end_turn"
        assert approver.asked == ["c2", "c3"]  # asked by default, readOnlyHint or not; c1 was never valid
        assert [c[:2] for c in conn.calls] == [("echo", {"text": "ok"}), ("refuse", {"city": "Atlantis"})]
        finals = {cid: snaps[-1] for cid, snaps in call_updates(sink).items()}
        assert finals["c1"]["status"] == "errored" and finals["c1"]["error"]["code"] == "invalid_arguments"
        assert "'text' is a required property" in finals["c1"]["error"]["message"]
        assert finals["c2"]["status"] == "done"
        assert finals["c3"]["status"] == "errored" and finals["c3"]["error"] == {
            "code": "mcp_tool_error", "message": "no such city: Atlantis", "retryable": False}
        assert [m["content"] for m in tool_messages(session)][1:] == ["ok", "Error (mcp_tool_error): no such city: Atlantis"]
        assert_invariants(session, sink)
