"""MCP calls of a turn against a real server process (the probe server through McpConnection):
cancelling the call or the turn ends it at once even when the server ignores the cancel, a
server exiting mid-call makes the call errored, mcpCallTimeout bounds a call, and a server's
own secrets it echoes are kept from the model. Every wait
is on an event the server records; the timeouts are safety nets."""

from __future__ import annotations

import os
import signal

import anyio

from mcp_servers import everything_stdio, probe_record, probe_server
from test_mcp_runtime import NET, spec, started
from test_turn import ScriptedApprover, assert_invariants, call_updates, make_session, tool_messages
from toolwire.agent.events import RecordingSink
from toolwire.agent.turn import Turn
from toolwire.mcp.config import register_secrets
from toolwire.mcp.tool import McpTool
from toolwire.redaction import shared
from toolwire.tools.base import ToolContext

__all__ = ["probe_record"]  # fixture


async def probe_turn(tmp_path, record, arguments: dict, tool: str = "block", **settings):
    """A started probe server, and a turn (not run yet) calling its ``tool`` once as ``c1``."""
    connection = await started(spec(tmp_path, "probe", probe_server(record)))
    tools = [McpTool(connection, listed) for listed in connection.tools]
    session = make_session(tmp_path, [{"tool_calls": [{"name": f"mcp__probe__{tool}", "arguments": arguments,
                                                        "id": "c1"}]}, {"text": "done"}],
                           tools, permissions={"mcp__probe": "auto"}, **settings)
    sink = RecordingSink()
    return connection, session, sink, Turn(session, sink, ScriptedApprover())


async def test_cancelling_the_call_ends_it_at_once_though_the_server_ignores_it(tmp_path, probe_record):
    connection, session, sink, turn = await probe_turn(tmp_path, probe_record, {"ignore_cancel": True})
    try:
        with anyio.fail_after(NET):
            async with anyio.create_task_group() as tg:
                tg.start_soon(turn.run, "wait")
                request = (await probe_record.await_for("started"))["requestId"]
                assert turn.scheduler.cancel_call("c1")
        assert turn.outcome.stop_reason == "end_turn"  # the turn went on to its next request
        final = call_updates(sink)["c1"][-1]
        assert (final["status"], final["cancelReason"]) == ("canceled", "call_cancelled")
        assert (await probe_record.await_for("cancelled"))["requestId"] == request
        assert_invariants(session, sink)
        os.kill(connection.pid, signal.SIGKILL)  # it ignores cancels: its stop would wait out the SDK's grace
    finally:
        await connection.stop()


async def test_cancelling_the_turn_ends_the_call_canceled(tmp_path, probe_record):
    connection, session, sink, turn = await probe_turn(tmp_path, probe_record, {})
    try:
        with anyio.fail_after(NET):
            async with anyio.create_task_group() as tg:
                tg.start_soon(turn.run, "wait")
                await probe_record.await_for("started")
                turn.cancel()
        assert turn.outcome.stop_reason == "cancelled"
        final = call_updates(sink)["c1"][-1]
        assert (final["status"], final["cancelReason"]) == ("canceled", "turn_cancelled")
        await probe_record.await_for("cancelled")
        assert_invariants(session, sink)
    finally:
        await connection.stop()


async def test_a_server_exiting_mid_call_makes_it_errored_without_its_stderr(tmp_path, probe_record):
    connection, session, sink, turn = await probe_turn(tmp_path, probe_record, {"code": 5}, tool="crash")
    try:
        with anyio.fail_after(NET):
            await turn.run("crash it")
        final = call_updates(sink)["c1"][-1]
        assert final["status"] == "errored" and final["error"]["code"] == "mcp_server_exited"
        text = tool_messages(session)[0]["content"]
        assert text.startswith("Error (mcp_server_exited): the MCP server probe exited during the call")
        assert "crashing" not in text  # its stderr is for the log
        assert_invariants(session, sink)
    finally:
        await connection.stop()


async def test_mcp_call_timeout_bounds_a_call_instead_of_tool_timeout(tmp_path, probe_record):
    connection, session, sink, turn = await probe_turn(tmp_path, probe_record, {}, mcp_call_timeout=0.3,
                                                       tool_timeout=NET)
    try:
        with anyio.fail_after(NET):
            await turn.run("wait")
        final = call_updates(sink)["c1"][-1]
        assert final["status"] == "errored" and final["error"]["code"] == "timeout"
        assert final["error"]["retryable"] is True
        assert "0.3 s" in final["error"]["message"] and "mcpCallTimeout" in final["error"]["message"]
        await probe_record.await_for("cancelled")
        assert_invariants(session, sink)
    finally:
        await connection.stop()


async def test_a_secret_of_the_servers_env_never_reaches_the_model(tmp_path):
    secret = "tw-secret-0123456789abcdef"
    entry = {**everything_stdio(), "env": {"TRACKER_TOKEN": secret}}
    server = spec(tmp_path, "everything", entry)
    register_secrets(shared(), [server])  # as a session opening does
    connection = await started(server)
    try:
        tool = McpTool(connection, next(t for t in connection.tools if t.name == "get-env"))
        ctx = ToolContext(root=tmp_path, extra={"result_limit": 100_000})
        with anyio.fail_after(NET):
            result = await tool.run(tool.validate({}), ctx)
        assert result.ok and "TRACKER_TOKEN" in result.content
        assert secret not in result.content
    finally:
        await connection.stop()
