"""Cancelling a running MCP call from the other front-ends, with the probe server recording
what reached it: Ctrl-C in ``toolwire run`` (a subprocess in its own process group, as in a
terminal; the MCP server runs in a group of its own, so the signal never reaches it) and
ACP's ``session/cancel`` (``toolwire acp`` driven by the ACP SDK's client side). The server
receives ``notifications/cancelled`` for its request, and ``toolwire run`` leaves no server
behind. (tests/test_cli_mcp.py and tests/test_acp_mcp.py cover the approvals and failures.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

from acp.schema import EnvVariable, McpServerStdio

from cli_run import TOOLWIRE, final_calls
from conftest import write_script
from mcp_servers import probe_record  # noqa: F401 (a fixture)
from mcp_servers import probe_server
from test_acp import RecordingClient, initialize, script, start, text
from test_mcp_runtime import alive

BLOCK = {"tool_calls": [{"name": "mcp__probe__block", "arguments": {}, "id": "b1"}]}


def test_ctrl_c_in_toolwire_run_cancels_the_call_on_the_server_and_stops_it(repo, tmp_path, probe_record):
    replay = write_script(tmp_path / "s.jsonl", [BLOCK, {"text": "never"}])
    settings = json.dumps({"mcpServers": {"probe": probe_server(probe_record, ["block"])},
                           "permissions": {"mcp__probe": "auto"}})
    proc = subprocess.Popen([*TOOLWIRE, "run", "--workspace", str(repo), "--model", f"replay:{replay}", "--json",
                             "--settings", settings, "go"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        started = probe_record.wait_for("started")
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: toolwire run's whole group
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert probe_record.wait_for("cancelled")["requestId"] == started["requestId"]
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[-1]["stopReason"] == "cancelled"
    final = final_calls(out)["b1"]
    assert (final["status"], final["cancelReason"]) == ("canceled", "turn_cancelled")
    assert not alive(started["pid"]), "toolwire run left its MCP server running"


async def test_acp_session_cancel_cancels_the_call_on_the_server(repo: Path, tmp_path: Path, probe_record) -> None:
    entry = probe_server(probe_record, ["block"])
    client = RecordingClient()
    model = script(tmp_path, [BLOCK, {"text": "never"}])
    async with await start(client, f"replay:{model}", settings={"permissions": {"mcp__probe": "auto"}}) as (conn, _):
        await initialize(conn)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[
            McpServerStdio(name="probe", command=entry["command"], args=entry["args"],
                           env=[EnvVariable(name=k, value=v) for k, v in entry["env"].items()])])
        turn = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=text("wait")))
        started = await probe_record.await_for("started")
        await conn.cancel(session_id=session.session_id)
        assert (await turn).stop_reason == "cancelled"
        assert (await probe_record.await_for("cancelled"))["requestId"] == started["requestId"]
    assert client.final("b1")["status"] == "failed"  # ACP has no canceled status: failed, with the reason
    assert client.final("b1")["raw_output"]["cancelReason"] == "turn_cancelled"
    assert not client.invalid, client.invalid
