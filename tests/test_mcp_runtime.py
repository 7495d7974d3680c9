"""MCP servers running under Toolwire (toolwire.mcp.connection, toolwire.mcp.pool), against real
servers (tests/mcp_servers.py): mcp-server-time, mcp-server-git, server-everything over stdio and
streamable HTTP, and the probe server, which records what it receives on a fifo. Nothing waits
on time: each step waits on a recorded event, a listener's event or the end of a call, with a
generous safety net."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_servers import (PROBE, everything_http, everything_stdio, git_server, probe_record, probe_server,
                         start_everything_http, stop, time_server)
from toolwire.mcp import connection as connection_module
from toolwire.mcp.config import ServerSpec, parse_servers, resolve_servers
from toolwire.mcp.config import HttpServerConfig, StdioServerConfig
from toolwire.mcp.connection import McpCallError, McpConnection
from toolwire.mcp.failures import RunEnd, reason
from toolwire.mcp.pool import McpPool
from toolwire.mcp.status import ServerStatus, ToolsChanged
from toolwire.redaction import Redactor

__all__ = ["everything_http", "probe_record"]  # fixtures

NET = 60  # seconds: the safety net of every wait, never what a test measures


def spec(root: Path, name: str, entry: dict[str, Any]) -> ServerSpec:
    specs, warnings = resolve_servers(parse_servers({name: entry}), root=root, workspace_file=False)
    assert not warnings
    return specs[0]


async def started(spec: ServerSpec, *, start_timeout: float = NET, redactor: Redactor | None = None) -> McpConnection:
    connection = McpConnection(spec, start_timeout=start_timeout, redactor=redactor)
    connection.start()
    with anyio.fail_after(NET + start_timeout):
        await connection.wait_started()
    return connection


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def wrapped(record, script: str) -> dict[str, Any]:
    """The probe server started by ``sh -c script`` (``{probe}`` in it runs the server)."""
    probe = f"{shlex.quote(sys.executable)} {shlex.quote(str(PROBE))}"
    return {**probe_server(record), "command": "sh", "args": ["-c", script.format(probe=probe)]}


async def test_time_server_is_ready_lists_its_tools_answers_and_stops(tmp_path):
    connection = await started(spec(tmp_path, "time", time_server()))
    try:
        assert (connection.state, connection.error) == ("ready", None)
        assert [tool.name for tool in connection.tools] == ["get_current_time", "convert_time"]
        result = await connection.call("get_current_time", {"timezone": "UTC"}, timeout=NET)
        assert not result.is_error and '"timezone": "UTC"' in result.content[0].text
        with pytest.raises(McpCallError) as failed:
            await connection.call("no_such_tool", {}, timeout=NET)
        assert failed.value.code == "mcp_error" and "no_such_tool" in failed.value.message
        pid = connection.pid
    finally:
        await connection.stop()
    assert connection.state == "stopped" and connection.tools == () and not alive(pid)
    with pytest.raises(McpCallError) as failed:
        await connection.call("get_current_time", {"timezone": "UTC"}, timeout=NET)
    assert failed.value.code == "mcp_server_unavailable"


async def test_git_server_answers_about_its_repository(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], check=True)
    connection = await started(spec(tmp_path, "git", git_server(repo)))
    try:
        assert connection.state == "ready", connection.error
        result = await connection.call("git_status", {"repo_path": str(repo)}, timeout=NET)
        assert not result.is_error and "trunk" in result.content[0].text
    finally:
        await connection.stop()


async def test_every_page_of_the_tool_list_is_read(tmp_path, probe_record):
    entry = probe_server(probe_record)
    entry["env"]["TOOLWIRE_PROBE_PAGE_SIZE"] = "2"
    connection = await started(spec(tmp_path, "probe", entry))
    try:
        assert [tool.name for tool in connection.tools] == ["echo", "block", "crash", "fail", "add_tool"]
        assert (await connection.call("echo", {"text": "hi"}, timeout=NET)).content[0].text == "echo: hi"
    finally:
        await connection.stop()


@pytest.mark.parametrize("ignore_cancel", [False, True], ids=["server-stops", "server-ignores-it"])
async def test_cancelling_a_call_sends_notifications_cancelled_and_returns_at_once(tmp_path, probe_record,
                                                                                   ignore_cancel):
    connection = await started(spec(tmp_path, "probe", probe_server(probe_record)))
    try:
        call = asyncio.create_task(connection.call("block", {"ignore_cancel": ignore_cancel}, timeout=NET))
        request = (await probe_record.await_for("started"))["requestId"]
        call.cancel()
        with anyio.fail_after(NET):
            with pytest.raises(asyncio.CancelledError):
                await call
        assert (await probe_record.await_for("cancelled"))["requestId"] == request
        assert (await connection.call("echo", {"text": "still here"}, timeout=NET)).content[0].text == "echo: still here"
        if ignore_cancel:
            os.kill(connection.pid, signal.SIGKILL)  # its stop would wait out the SDK's 2 s grace
    finally:
        await connection.stop()


async def test_a_call_past_its_timeout_is_cancelled(tmp_path, probe_record):
    connection = await started(spec(tmp_path, "probe", probe_server(probe_record)))
    try:
        with pytest.raises(McpCallError) as failed:
            await connection.call("block", {}, timeout=0.2)
        assert failed.value.code == "timeout"
        assert failed.value.message == "block of the MCP server probe did not answer within 0.2 s (mcpCallTimeout); " \
                                       "the call was cancelled"
        cancelled = await probe_record.await_for("cancelled")
        assert cancelled["requestId"] == next(e["requestId"] for e in probe_record.events if e["event"] == "started")
    finally:
        await connection.stop()


async def test_list_changed_lists_the_tools_again(tmp_path, probe_record):
    pool = McpPool()
    try:
        servers = pool.attach("s", [spec(tmp_path, "probe", probe_server(probe_record))], start_timeout=NET)
        await servers.wait_started(NET)
        seen: list[ServerStatus | ToolsChanged] = []
        servers.subscribe(seen.append)
        revision = servers.revision
        connection = servers.connections[0]
        await connection.call("add_tool", {"name": "extra"}, timeout=NET)
        # the list_changed came before the answer: the re-list is known pending (or done) once the call returns
        assert connection.relisting or connection.tools[-1].name == "extra"
        await servers.wait_relisted(NET)
        assert not connection.relisting
        assert seen == [ToolsChanged("probe")]
        assert [tool.name for tool in connection.tools][-1] == "extra"
        assert servers.revision == revision + 1
    finally:
        await pool.aclose()


async def test_servers_that_never_start_fail_with_the_reason(tmp_path):
    missing = await started(spec(tmp_path, "gone", {"command": "toolwire-no-such-command"}))
    assert (missing.state, missing.error) == ("failed", "command not found: toolwire-no-such-command")
    secret = "sk-live-0123456789abcdef"
    redactor = Redactor(env={})
    redactor.add_env("API_TOKEN", secret)
    exits = await started(spec(tmp_path, "exits", {"command": "sh", "args": ["-c", 'echo "token $API_TOKEN" >&2; exit 3'],
                                                   "env": {"API_TOKEN": secret}}), redactor=redactor)
    assert (exits.state, exits.error) == ("failed", "exited during start (code 3)")
    assert exits.stderr_tail() == "token ***"
    folder = await started(spec(tmp_path, "folder", {"command": str(tmp_path)}))
    assert (folder.state, folder.error) == ("failed", f"cannot run {tmp_path}: it is a folder")
    (tmp_path / "file").write_text("")
    in_a_file = await started(spec(tmp_path, "in-a-file", {"command": "sh", "cwd": str(tmp_path / "file")}))
    assert (in_a_file.state, in_a_file.error) == ("failed", f"working folder is not a folder: {tmp_path / 'file'}")
    silent = await started(spec(tmp_path, "silent", {"command": "sh", "args": ["-c", "cat > /dev/null"]}),
                           start_timeout=0.2)  # reads its stdin to the end, never answers
    assert (silent.state, silent.error) == ("failed", "did not start within 0.2 s")
    for connection in (missing, exits, folder, in_a_file, silent):
        await connection.stop()
        assert connection.state == "stopped"


async def test_a_server_crashing_mid_call_fails_the_call_and_keeps_its_stderr_for_the_log(tmp_path, probe_record, caplog):
    connection = await started(spec(tmp_path, "probe", probe_server(probe_record)))
    failed_state = anyio.Event()
    connection.watch(lambda c, change: failed_state.set() if c.state == "failed" else None)
    try:
        with pytest.raises(McpCallError) as failed:
            await connection.call("crash", {"code": 7}, timeout=NET)
        assert failed.value.code == "mcp_server_exited"
        assert "crashing" not in failed.value.message
        with anyio.fail_after(NET):
            await failed_state.wait()
        assert connection.error == "exited (code 7)"
        assert connection.stderr_tail() == "probe server: crashing with code 7"
        assert "probe server: crashing with code 7" in caplog.text
    finally:
        await connection.stop()


async def test_a_wrapper_killed_mid_call_is_seen_and_its_server_stopped_then_restarted(tmp_path, probe_record,
                                                                                      monkeypatch):
    """The shell is killed; the server it started keeps the pipes open (stdout does not end):
    the exit is seen all the same, the call fails, the rest of the group is stopped."""
    connection = await started(spec(tmp_path, "probe", wrapped(probe_record, "{probe}; :")))
    changes: list[str] = []
    failed_state = anyio.Event()

    def changed(c: McpConnection, change: str) -> None:
        changes.append(f"{change}:{c.state}")
        if c.state == "failed":
            failed_state.set()

    connection.watch(changed)
    try:
        call = asyncio.create_task(connection.call("block", {}, timeout=NET))
        server_pid = (await probe_record.await_for("started"))["pid"]
        os.kill(connection.pid, signal.SIGKILL)
        with anyio.fail_after(NET):
            with pytest.raises(McpCallError) as failed:
                await call
            await failed_state.wait()
        assert failed.value.code == "mcp_server_exited"
        assert connection.error == "exited (signal 9)"
        assert not alive(server_pid)  # the rest of the group was stopped: no orphan
        monkeypatch.setattr(connection, "_retry_at", 0.0)
        assert connection.restart_if_due()
        await connection.wait_started()
        assert connection.state == "ready"
        assert changes == ["state:failed", "state:starting", "state:ready", "tools:ready"]
    finally:
        await connection.stop()


async def test_a_failed_server_restarts_after_a_backoff_doubling_to_a_minute(tmp_path, monkeypatch):
    now = [100.0]
    monkeypatch.setattr(connection_module.time, "monotonic", lambda: now[0])
    connection = await started(spec(tmp_path, "gone", {"command": "toolwire-no-such-command"}))
    waits = []
    for _ in range(8):
        assert connection.state == "failed"
        retry_at = connection._retry_at
        waits.append(retry_at - now[0])
        now[0] = retry_at - 0.01
        assert not connection.restart_if_due()
        now[0] = retry_at
        assert connection.restart_if_due()
        await connection.wait_started()
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60]
    await connection.stop()


async def test_stop_ends_the_whole_process_group(tmp_path, probe_record):
    """The server's child keeps running after the server exits on its closed stdin."""
    script = """sleep 600 & echo '{{"event": "child", "pid": '$!'}}' > "$TOOLWIRE_PROBE_RECORD"; exec {probe}"""
    connection = await started(spec(tmp_path, "probe", wrapped(probe_record, script)))
    child = (await probe_record.await_for("child"))["pid"]
    server = connection.pid
    assert alive(child) and alive(server)
    await connection.stop()
    assert not alive(server) and not alive(child)


async def test_equal_keys_share_one_server_until_the_last_owner_leaves(tmp_path, probe_record):
    pool = McpPool()
    try:
        first = pool.attach("session-1", [spec(tmp_path, "probe", probe_server(probe_record))], start_timeout=NET)
        second = pool.attach("session-2", [spec(tmp_path, "probe", probe_server(probe_record))], start_timeout=NET)
        assert first.connections[0] is second.connections[0]
        await first.wait_started(NET)
        pid = first.connections[0].pid
        assert [s.to_wire() for s in second.statuses()] == [{"name": "probe", "state": "ready", "tools": 5, "offered": 0}]
        await pool.detach("session-1")
        assert second.connections[0].state == "ready" and alive(pid)
        await pool.detach("session-2")
        assert second.connections[0].state == "stopped" and not alive(pid)
    finally:
        await pool.aclose()


async def test_the_allowlist_chooses_and_orders_the_tools_and_names_the_missing(tmp_path, probe_record):
    pool = McpPool()
    try:
        entry = {**probe_server(probe_record), "tools": ["fail", "echo", "nope"]}
        servers = pool.attach("s", [spec(tmp_path, "probe", entry)], start_timeout=NET)
        seen: list[ServerStatus | ToolsChanged] = []
        servers.subscribe(seen.append)
        await servers.wait_started(NET)
        assert seen == [ServerStatus("probe", "ready", tools=2)]
        assert [tool.original for tool in servers.tools()] == ["fail", "echo"]
        assert [tool.name for tool in servers.tools()] == ["mcp__probe__fail", "mcp__probe__echo"]
        assert servers.missing_allowed() == ["probe/nope"]
    finally:
        await pool.aclose()
    assert servers.statuses() == [ServerStatus("probe", "stopped")]


def listening(port: int) -> set[str]:
    """The local addresses (hex, as ``/proc/net/tcp*`` write them) of the sockets listening on ``port``."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


async def test_streamable_http_server_is_ready_and_answers(tmp_path, everything_http):
    port = int(everything_http["url"].rsplit(":", 1)[1].split("/")[0])
    assert listening(port) == {"0100007F"}  # 127.0.0.1 only, not every interface
    connection = await started(spec(tmp_path, "everything", everything_http))
    try:
        assert connection.state == "ready", connection.error
        result = await connection.call("echo", {"message": "over http"}, timeout=NET)
        assert result.content[0].text == "Echo: over http"
    finally:
        await connection.stop()
    url = everything_http["url"].replace("/mcp", "/nope")
    wrong = await started(spec(tmp_path, "wrong", {"type": "http", "url": url}))
    assert (wrong.state, wrong.error) == ("failed", f"{url} answered HTTP 404 Not Found")
    await wrong.stop()


async def test_an_http_server_gone_fails_the_next_call_and_the_server(tmp_path):
    process, port, _stderr = start_everything_http()
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        connection = await started(spec(tmp_path, "everything", {"type": "http", "url": url}))
        failed_state = anyio.Event()
        connection.watch(lambda c, change: failed_state.set() if c.state == "failed" else None)
    finally:
        stop(process)
    try:
        with pytest.raises(McpCallError) as failed:
            await connection.call("echo", {"message": "anyone?"}, timeout=NET)
        assert failed.value.code == "mcp_server_exited"
        assert "closed the connection during the call" in failed.value.message
        with anyio.fail_after(NET):
            await failed_state.wait()
        assert connection.error == f"the connection to {url} was lost"
    finally:
        await connection.stop()


async def test_everything_over_stdio_is_ready_with_its_env_and_not_toolwires(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLWIRE_API_KEY", "sk-toolwire-own-key-0123")
    connection = await started(spec(tmp_path, "everything", {**everything_stdio(), "env": {"GIVEN": "yes"}}))
    try:
        assert connection.state == "ready", connection.error
        assert "trigger-long-running-operation" in {tool.name for tool in connection.tools}
        assert (await connection.call("get-sum", {"a": 2, "b": 3}, timeout=NET)).content[0].text.endswith("5.")
        seen = (await connection.call("get-env", {}, timeout=NET)).content[0].text
        assert '"GIVEN": "yes"' in seen and "PATH" in seen and "TOOLWIRE_API_KEY" not in seen
    finally:
        await connection.stop()


async def test_a_session_leaving_while_its_server_starts_stops_it(tmp_path, probe_record):
    pool = McpPool()
    servers = pool.attach("s", [spec(tmp_path, "probe", probe_server(probe_record))], start_timeout=NET)
    assert servers.statuses() == [ServerStatus("probe", "starting")]
    await pool.detach("s")
    assert servers.statuses() == [ServerStatus("probe", "stopped")]
    await pool.aclose()


STDIO = StdioServerConfig(command="srv", cwd="/w")
HTTP = HttpServerConfig(type="http", url="https://user:pw@host/mcp?token=t0k")


@pytest.mark.parametrize(("config", "end", "sentence"), [
    (STDIO, RunEnd(gone=True, ready=True, returncode=-9), "exited (signal 9)"),
    (STDIO, RunEnd(gone=True, ready=False, returncode=None), "closed its output during start"),
    (STDIO, RunEnd(False, False, failure=ExceptionGroup("g", [FileNotFoundError(2, "No such file", "/w")])),
     "working folder not found: /w"),
    (STDIO, RunEnd(False, False, failure=PermissionError(13, "Permission denied")), "cannot run srv: Permission denied"),
    (HTTP, RunEnd(False, False, http_error="401 Unauthorized"), "https://***@host/mcp?token=*** answered HTTP 401 Unauthorized"),
    (HTTP, RunEnd(False, False, failure=connection_module.httpx2.ConnectError("refused")),
     "cannot reach https://***@host/mcp?token=***: refused"),
    (HTTP, RunEnd(False, False, failure=connection_module.MCPError(-32600, "unsupported version")),
     "initialize failed: unsupported version"),
])
async def test_each_way_a_run_ends_has_its_sentence(config, end, sentence):
    assert reason(config, end) == sentence
