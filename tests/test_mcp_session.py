"""Issue 23, the core's part: a session's MCP servers as the host runs them for every front-end.

Their tools are offered after the built-in ones and follow the servers between the model
requests of a turn (``tools/list_changed``); a turn waits for servers still starting; state
changes are ``McpServerChanged`` events on the session's outlet and a failure is told once; an
allowlist name or a ``permissions`` key naming nothing is a ``mcp_config`` warning; undo names
the MCP calls it cannot undo (``toolwire undo`` too); ``toolwire/tools/list`` shows where each tool comes from.

Driven through :class:`~toolwire.agent.host.SessionHost` with replay scripts, against real
MCP servers over stdio (``tests/mcp_servers.py``: our probe server, ``mcp-server-time``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import write_script
from mcp_servers import probe_server, time_server
from toolwire.agent.events import (AgentEvent, CallSnapshot, McpServerChanged, PermissionAnswer, RecordingSink,
                                   SessionWarning, TurnUpdate)
from toolwire.agent.host import Hosted, SessionHost
from toolwire.settings import Settings
from toolwire.workspace.documents import NoOpenDocuments

#: A safety net for waits on real servers (a loaded machine); never what a test measures.
SLOW = 60.0
ECHO = "mcp__probe__echo"
#: A server that never answers ``initialize`` (it reads its stdin until Toolwire closes it).
SILENT = {"type": "stdio", "command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}
ADD = "mcp__probe__add_tool"


class Approver:
    """Allows every call, noting each question."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def request_permission(self, call: CallSnapshot, subject: dict[str, Any]) -> PermissionAnswer:
        self.asked.append((call.name, subject))
        return PermissionAnswer("allow_once")


@pytest.fixture
async def host() -> AsyncIterator[SessionHost]:
    host = SessionHost(Settings())
    try:
        yield host
    finally:
        await host.close_all()


async def open_session(host: SessionHost, tmp_path: Path, lines: list[dict[str, Any]],
                       **settings: Any) -> tuple[Hosted, RecordingSink]:
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    script = write_script(tmp_path / "script.jsonl", lines)
    outlet = RecordingSink()
    settings.setdefault("maxTools", 32)  # room for every built-in and MCP tool
    hosted = await host.open(root, f"replay:{script}", settings, NoOpenDocuments(), lambda session: outlet)
    return hosted, outlet


def toolwire_undo(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolwire", "undo", "--workspace", str(root), *args],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=SLOW)


def offered(request: Any) -> list[str]:
    return [tool["function"]["name"] for tool in request.tools]


def results(hosted: Hosted) -> list[str]:
    return [m["content"] for m in hosted.session.conversation.messages if m["role"] == "tool"]


def events(outlet: RecordingSink, kind: type) -> list[Any]:
    return [event for event in outlet.events if isinstance(event, kind)]


async def test_a_turn_waits_for_its_servers_then_offers_their_tools_after_the_builtins(host, tmp_path):
    lines = [{"tool_calls": [{"id": "e1", "name": ECHO, "arguments": {"text": "hi"}}]}, {"text": "done"}]
    hosted, outlet = await open_session(host, tmp_path, lines, mcpServers={"probe": probe_server()})
    listing = host.tool_listing(hosted)
    assert listing["mcpServers"] == [{"name": "probe", "state": "starting", "tools": 0, "offered": 0}]
    assert all(tool["source"] == "builtin" for tool in listing["tools"])
    sink, approver = RecordingSink(), Approver()
    with anyio.fail_after(SLOW):
        outcome = await host.run_turn(hosted, "echo hi", sink, approver)
    assert outcome.stop_reason == "end_turn"
    request = hosted.session.model.requests[0]
    names = offered(request)
    builtin = names.index(ECHO)
    assert names[builtin:] == [ECHO, "mcp__probe__block", "mcp__probe__crash", "mcp__probe__fail", ADD]
    assert not any(name.startswith("mcp__") for name in names[:builtin])
    assert results(hosted) == ["echo: hi"]
    assert [name for name, _ in approver.asked] == [ECHO]  # asked, although it is marked readOnlyHint
    assert events(outlet, McpServerChanged) == [McpServerChanged("probe", "ready", None)]
    listing = host.tool_listing(hosted)
    echo = next(tool for tool in listing["tools"] if tool["function"]["name"] == ECHO)
    assert echo["source"] == {"mcpServer": "probe", "tool": "echo"}
    assert echo["annotations"] == {"readOnlyHint": True}
    assert listing["mcpServers"] == [{"name": "probe", "state": "ready", "tools": 5, "offered": 5}]
    assert listing["count"] == len(names) and listing["leftOut"] == []


async def test_a_tool_list_that_changes_mid_turn_is_offered_from_the_next_request(host, tmp_path):
    lines = [{"tool_calls": [{"id": "a1", "name": ADD, "arguments": {"name": "extra"}}]},
             {"tool_calls": [{"id": "x1", "name": "mcp__probe__extra", "arguments": {}}]},
             {"text": "done"}]
    hosted, _ = await open_session(host, tmp_path, lines, mcpServers={"probe": probe_server()})
    with anyio.fail_after(SLOW):
        await host.run_turn(hosted, "add a tool", RecordingSink(), Approver())
    requests = hosted.session.model.requests
    assert "mcp__probe__extra" not in offered(requests[0])
    assert offered(requests[1])[-1] == "mcp__probe__extra"  # the request right after the change
    assert results(hosted) == ["added extra", "extra ran"]


def fed_call(call_id: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """One OpenAI Chat Completions stream calling ``name`` (the client runs the model: client-fed mode)."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"id": "fed", "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": delta, "finish_reason": finish}]}
    return [chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                   "function": {"name": name, "arguments": json.dumps(arguments)}}]}),
            chunk({}, "tool_calls")]


async def test_client_fed_runs_take_the_tools_the_servers_list_then(host, tmp_path):
    hosted, _ = await open_session(host, tmp_path, [], mcpServers={"probe": probe_server()})
    with anyio.fail_after(SLOW):
        await hosted.session.mcp.wait_started(SLOW)  # the session opened before its server listed any tool
        host.merge(hosted, "s1", fed_call("a1", ADD, {"name": "extra"}), RecordingSink(), end=True)
        [added] = await host.run_fed(hosted, "s1", None, RecordingSink(), Approver())
        # the run answers once the list its call changed is in: the client's next listing offers the new tool
        assert "mcp__probe__extra" in [t["function"]["name"] for t in host.tool_listing(hosted)["tools"]]
        host.merge(hosted, "s2", fed_call("x1", "mcp__probe__extra", {}), RecordingSink(), end=True)
        [ran] = await host.run_fed(hosted, "s2", None, RecordingSink(), Approver())
    assert (added["status"], added["content"]) == ("done", "added extra")
    assert (ran["status"], ran["content"]) == ("done", "extra ran")


async def test_undo_names_the_mcp_calls_it_cannot_undo(host, tmp_path):
    lines = [{"tool_calls": [{"id": "c1", "name": "create_file", "arguments": {"path": "a.txt", "content": "a\n"}},
                             {"id": "a1", "name": ADD, "arguments": {"name": "extra"}},
                             {"id": "e1", "name": ECHO, "arguments": {"text": "read only"}}]},
             {"text": "done"},
             {"tool_calls": [{"id": "a2", "name": ADD, "arguments": {"name": "other"}}]},
             {"text": "done again"}]
    hosted, _ = await open_session(host, tmp_path, lines, mcpServers={"probe": probe_server()},
                                   permissions={"create_file": "auto"})
    with anyio.fail_after(SLOW):
        await host.run_turn(hosted, "first", RecordingSink(), Approver())
        await host.run_turn(hosted, "second", RecordingSink(), Approver())
    first, second = hosted.session.turn_records
    add_1, add_2 = first.mcp_calls[0].call_id, second.mcp_calls[0].call_id
    assert [call.tool for call in first.mcp_calls] == [ADD]  # the echo is marked readOnlyHint
    # the second turn changed no file: undo says what it cannot do, not "nothing to undo" alone
    result = await host.undo(hosted, None)
    assert result["turnId"] == "t1"  # the last turn with something to undo
    assert result["status"] == "undone"
    assert result["notUndone"] == [{"callId": add_1, "tool": ADD}]
    assert result["message"] == (f"Undid turn t1: 1 file(s) restored. Toolwire cannot undo what MCP tools do: "
                                 f"{add_1} ({ADD}) was not undone.")
    assert not (hosted.session.root / "a.txt").exists()
    only_mcp = await host.undo(hosted, "t2")
    assert only_mcp["status"] == "nothing_to_do"
    assert only_mcp["notUndone"] == [{"callId": add_2, "tool": ADD}]
    assert only_mcp["message"] == (f"Turn t2 changed no files; there is nothing to undo. Toolwire cannot undo what "
                                   f"MCP tools do: {add_2} ({ADD}) was not undone.")
    assert (await host.undo(hosted, None))["turnId"] == "t2"  # nothing else is left to undo
    assert (await host.undo(hosted, "t1", redo=True))["notUndone"] == []
    note = hosted.session.history_notes[0]
    assert f"what the MCP calls {add_1} ({ADD}) did was not undone (Toolwire cannot undo MCP tools)" in note
    # toolwire undo reads the saved records: an MCP-only turn was saved too
    saved = toolwire_undo(hosted.session.root, "--turn", "t2", "--json")
    assert json.loads(saved.stdout)["notUndone"] == [{"callId": add_2, "tool": ADD}], saved.stdout + saved.stderr


async def test_a_server_that_never_starts_is_told_once_and_no_turn_waits_for_it(host, tmp_path):
    lines = [{"text": "one"}, {"tool_calls": [{"name": "mcp__gone__run", "arguments": {}}]}, {"text": "two"}]
    missing = {"type": "stdio", "command": str(tmp_path / "no-such-server")}
    hosted, outlet = await open_session(host, tmp_path, lines, mcpServers={"gone": missing})
    with anyio.fail_after(SLOW):
        await hosted.session.mcp.wait_started(SLOW)
        await host.run_turn(hosted, "first", RecordingSink(), Approver())
        await host.run_turn(hosted, "second", RecordingSink(), Approver())
    failures = [w for w in events(outlet, SessionWarning) if w.code == "mcp_server_failed"]
    assert len(failures) == 1 and failures[0].names == ("gone",)
    assert failures[0].message.startswith("MCP server gone is not available: ")
    state = host.snapshot(hosted)
    assert failures[0] in state.warnings
    changed = events(outlet, McpServerChanged)
    assert changed and changed[-1].state == "failed" and changed[-1].error
    status = host.tool_listing(hosted)["mcpServers"][0]
    assert status["state"] == "failed" and status["offered"] == 0 and status["error"] == changed[-1].error
    assert not any(name.startswith("mcp__") for name in offered(hosted.session.model.requests[0]))
    [told] = results(hosted)  # the model learns why the tool is not there
    assert told.startswith(f"Error (unknown_tool): there is no tool named 'mcp__gone__run': the MCP server gone is "
                           f"not available (failed: command not found: {tmp_path / 'no-such-server'}); available "
                           "tools: read_file, "), told


async def test_allowlist_names_and_permission_keys_that_name_nothing_are_warned_once(host, tmp_path):
    entry = {**probe_server(), "tools": ["fail", "nosuch", "echo"]}
    permissions = {"mcp__probe__echo": "auto", "mcp__probe__gone": "deny", "mcp__elsewhere": "ask"}
    hosted, outlet = await open_session(host, tmp_path, [{"text": "ok"}], mcpServers={"probe": entry},
                                        permissions=permissions)
    at_open = [w for w in events(outlet, SessionWarning)]
    assert at_open == [SessionWarning("mcp_config", "The permissions key mcp__elsewhere names no MCP server of this "
                                      "session: it applies to nothing.", ("mcp__elsewhere",))]
    with anyio.fail_after(SLOW):
        await hosted.session.mcp.wait_started(SLOW)
        await host.run_turn(hosted, "go", RecordingSink(), Approver())
    warnings = [w for w in events(outlet, SessionWarning)]
    assert warnings[1:] == [
        SessionWarning("mcp_config", "The tools allowlist of MCP server probe names nosuch, which the server does not "
                       "list: it is not offered.", ("probe/nosuch",)),
        SessionWarning("mcp_config", "The permissions key mcp__probe__gone names a tool MCP server probe does not "
                       "list: it applies to nothing.", ("mcp__probe__gone",))]
    assert host.snapshot(hosted).warnings == warnings
    names = offered(hosted.session.model.requests[0])
    assert [name for name in names if name.startswith("mcp__")] == ["mcp__probe__fail", ECHO]


async def test_mcp_tools_left_out_by_max_tools_are_named_in_the_warning(host, tmp_path):
    hosted, _ = await open_session(host, tmp_path, [{"text": "ok"}], mcpServers={"time": time_server()}, maxTools=17)
    sink = RecordingSink()
    with anyio.fail_after(SLOW):
        await host.run_turn(hosted, "go", sink, Approver())
    warning = next(w for w in events(sink, SessionWarning) if w.code == "tools_left_out")
    assert warning.names == ("mcp__time__get_current_time", "mcp__time__convert_time")
    listing = host.tool_listing(hosted)
    assert listing["leftOut"] == list(warning.names)
    assert listing["mcpServers"] == [{"name": "time", "state": "ready", "tools": 2, "offered": 0}]


async def test_the_first_request_waits_at_most_mcp_start_timeout_for_a_server_still_starting(host, tmp_path):
    hosted, outlet = await open_session(host, tmp_path, [{"text": "ok"}], mcpServers={"silent": SILENT},
                                        mcpStartTimeout=0.5)
    with anyio.fail_after(SLOW):
        outcome = await host.run_turn(hosted, "go", RecordingSink(), Approver())
    assert outcome.stop_reason == "end_turn"
    assert not any(name.startswith("mcp__") for name in offered(hosted.session.model.requests[0]))
    assert events(outlet, McpServerChanged)[-1] == McpServerChanged("silent", "failed", "did not start within 0.5 s")


class Started(RecordingSink):
    """Sets ``started`` when the turn starts."""

    def __init__(self) -> None:
        super().__init__()
        self.started = anyio.Event()

    def emit(self, event: AgentEvent) -> None:
        super().emit(event)
        if isinstance(event, TurnUpdate) and event.state == "started":
            self.started.set()


async def test_a_turn_cancelled_while_it_waits_for_its_servers_ends_without_a_request(host, tmp_path):
    hosted, _ = await open_session(host, tmp_path, [{"text": "never sent"}], mcpServers={"silent": SILENT},
                                   mcpStartTimeout=600)
    sink = Started()
    turn = host.begin_turn(hosted, sink, Approver())
    async with anyio.create_task_group() as tg:
        outcome: list[Any] = []

        async def run() -> None:
            outcome.append(await host.finish_turn(hosted, turn, "go"))

        tg.start_soon(run)
        with anyio.fail_after(SLOW):
            await sink.started.wait()
        assert host.cancel_turn(hosted.id)
    assert outcome[0].stop_reason == "cancelled"
    assert hosted.session.model.requests == []
    assert host.tool_listing(hosted)["mcpServers"][0]["state"] == "starting"


async def test_sessions_with_the_same_servers_share_them_and_a_later_one_is_warned_at_once(host, tmp_path):
    first, _ = await open_session(host, tmp_path, [{"text": "ok"}], mcpServers={"probe": probe_server()})
    with anyio.fail_after(SLOW):
        await first.session.mcp.wait_started(SLOW)
    second, outlet = await open_session(host, tmp_path, [{"text": "ok"}], mcpServers={"probe": probe_server()},
                                        permissions={"mcp__probe__gone": "deny"})
    assert second.session.mcp.connections[0] is first.session.mcp.connections[0]
    assert events(outlet, SessionWarning) == [SessionWarning(
        "mcp_config", "The permissions key mcp__probe__gone names a tool MCP server probe does not list: it applies "
        "to nothing.", ("mcp__probe__gone",))]
    assert events(outlet, McpServerChanged) == []  # its state at opening is in the answers
    await host.close(first.id)
    assert host.tool_listing(second)["mcpServers"][0]["state"] == "ready"  # the last session stops it


async def test_changed_mcp_servers_settings_reach_an_open_session_when_it_is_idle(host, tmp_path):
    assert host.change_settings({"mcpServers": {"probe": probe_server()}}) == []
    lines = [{"text": "one"}, {"text": "two"}, {"text": "three"}]
    hosted, outlet = await open_session(host, tmp_path, lines)
    with anyio.fail_after(SLOW):
        await host.run_turn(hosted, "first", RecordingSink(), Approver())
    probe, stopped = hosted.session.mcp.connections[0], anyio.Event()
    probe.watch(lambda connection, change: connection.state == "stopped" and stopped.set())
    assert host.change_settings({"mcpServers": {"time": time_server()}}) == []
    assert events(outlet, McpServerChanged)[-2:] == [McpServerChanged("time", "starting", None),
                                                      McpServerChanged("probe", "stopped", None)]
    with anyio.fail_after(SLOW):
        await host.run_turn(hosted, "second", RecordingSink(), Approver())
    mcp = [name for name in offered(hosted.session.model.requests[1]) if name.startswith("mcp__")]
    assert mcp == ["mcp__time__get_current_time", "mcp__time__convert_time"]
    with anyio.fail_after(SLOW):
        await stopped.wait()  # no other session used it
    assert host.change_settings({"mcpServers": {}}) == []
    assert events(outlet, McpServerChanged)[-1] == McpServerChanged("time", "stopped", None)
    assert hosted.session.mcp is None and host.tool_listing(hosted)["mcpServers"] == []
    with anyio.fail_after(SLOW):
        await host.run_turn(hosted, "third", RecordingSink(), Approver())
    assert not any(name.startswith("mcp__") for name in offered(hosted.session.model.requests[2]))
