"""MCP servers an ACP editor sends with ``session/new`` (issue 23, "ACP"): ``toolwire acp`` over
stdio with the SDK's client side, a real ``mcp-server-time`` (tests/mcp_servers.py), a replayed
turn. ``initialize`` advertises HTTP servers (not SSE); a stdio server is started and its tools
run with the pipeline's approvals; an SSE one is refused with an agent message, and one that
never starts is told once as an agent message; the answer's ``_meta.toolwire.mcpServers`` says
how the servers are."""

from __future__ import annotations

from pathlib import Path

from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio, SseMcpServer

from mcp_servers import everything_http, time_server
from test_acp import RecordingClient, initialize, script, start, text

__all__ = ["everything_http"]  # the fixture

SECRET = "acp-mcp-env-secret-31337"


def messages(client: RecordingClient) -> list[str]:
    return [u.content.text for u in client.updates if u.session_update == "agent_message_chunk"]


async def test_acp_session_new_starts_a_stdio_server_and_refuses_an_sse_one(repo: Path, tmp_path: Path) -> None:
    entry = time_server()
    model = script(tmp_path, [
        {"tool_calls": [{"id": "t1", "name": "mcp__time__get_current_time", "arguments": {"timezone": "UTC"}}]},
        {"text": "done"}])
    client = RecordingClient(answers=["allow_once"])
    async with await start(client, f"replay:{model}", settings={"mcpStartTimeout": 60}) as (conn, _):
        init = await initialize(conn)
        assert (init.agent_capabilities.mcp_capabilities.http, init.agent_capabilities.mcp_capabilities.sse) == (True, False)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[
            McpServerStdio(name="time", command=entry["command"], args=entry["args"],
                           env=[EnvVariable(name="TIME_TOKEN", value=SECRET)]),
            SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse",
                         headers=[HttpHeader(name="Authorization", value=f"Bearer {SECRET}")]),
            McpServerStdio(name="broken", command=str(tmp_path / "no-such-server"), args=[], env=[]),
        ])
        sid = session.session_id
        told = session.field_meta["toolwire"]["mcpServers"]
        assert [s["name"] for s in told] == ["time", "broken"] and told[0]["state"] in ("starting", "ready"), told
        answer = await conn.prompt(session_id=sid, prompt=text("what time is it"))
        assert answer.stop_reason == "end_turn"
        await client.wait_for(lambda: any("MCP server broken" in m for m in messages(client)))
        live = messages(client)
        loaded = await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
    servers = loaded.field_meta["toolwire"]["mcpServers"]
    assert servers[0] == {"name": "time", "state": "ready", "tools": 2, "offered": 2}
    assert (servers[1]["name"], servers[1]["state"]) == ("broken", "failed") and servers[1]["error"], servers
    [failed] = [m for m in live if "MCP server broken" in m]  # once, whatever the turns
    assert failed.startswith("[Warning: MCP server broken is not available: "), failed
    [refused] = [m for m in live if "'old'" in m]
    assert refused.startswith("[Warning: MCP server 'old' uses the sse transport"), refused
    assert messages(client)[len(live):] == live  # session/load tells the history again as it was told
    [asked] = client.permissions
    shown = "\n".join(c.content.text for c in asked.content if c.type == "content")
    assert shown.startswith("mcp__time__get_current_time: get_current_time from the MCP server time\n"
                            "Hints from the server, not checked: read-only, not destructive, closed world.\n"), shown
    assert "cannot undo" not in shown  # a read-only tool
    final = client.final("t1")
    assert final["status"] == "completed" and final["kind"] == "read"  # the server marks it readOnlyHint
    assert '"timezone": "UTC"' in final["content"][0]["content"]["text"]
    assert SECRET not in repr(client.updates) + repr(session) + repr(loaded)
    assert not client.invalid, client.invalid


async def test_acp_session_new_reaches_an_http_server(repo: Path, tmp_path: Path, everything_http) -> None:
    model = script(tmp_path, [{"text": "ready"}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}", settings={"mcpStartTimeout": 60}) as (conn, _):
        await initialize(conn)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[HttpMcpServer(
            type="http", name="web", url=everything_http["url"], headers=[HttpHeader(name="X-Token", value=SECRET)])])
        await conn.prompt(session_id=session.session_id, prompt=text("hi"))  # the turn waits for the server
        loaded = await conn.load_session(cwd=str(repo), session_id=session.session_id, mcp_servers=[])
    [web] = loaded.field_meta["toolwire"]["mcpServers"]
    assert (web["name"], web["state"]) == ("web", "ready") and web["tools"] >= 10, web
    assert SECRET not in repr(client.updates) + repr(loaded)
    assert not client.invalid, client.invalid
