"""``toolwire serve --socket PATH``: sessions outlive a client that disconnects and
comes back (a reloaded editor window), over a real Unix socket.

Every test starts the server in its own process group and kills the group at the
end (then checks nothing is left); nothing sleeps: the tests wait on messages,
queues and process exit.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from socketclient import SocketClient, SocketServer

GREET = 'def greet(name):\n    return "Hello " + name\n'
FIXED = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n'
EDIT_CAPS = {"workspace": {"applyEdit": True, "workspaceEdit": {"documentChanges": True}}}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "greet.py").write_text(GREET)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.fixture
def script(tmp_path: Path) -> Path:
    """A replay script: one edit of greet.py (asks for approval), then a text answer."""
    path = tmp_path / "edit.jsonl"
    lines = [
        {"text": "Fixing it.", "tool_calls": [{"name": "edit_file", "arguments": {
            "path": "greet.py", "old_string": GREET, "new_string": FIXED}}], "chunk_size": 16},
        {"text": "Done."},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.fixture
async def server(tmp_path: Path):
    """Start servers with ``start(*flags)``; every one is killed (its whole group) at the end."""
    started: list[SocketServer] = []
    sock = tmp_path / "run" / "toolwire.sock"

    async def start(*flags: str) -> SocketServer:
        server = await SocketServer(sock, *flags).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()
        if server.proc is not None:
            await server.proc.wait()
            with pytest.raises(ProcessLookupError):
                os.killpg(server.proc.pid, 0)  # the group is empty: no daemon left behind


def snapshot_calls(snapshot: dict) -> list[tuple[str, str, str]]:
    return [(c["toolCallId"], c["name"], c["status"]) for c in snapshot["toolCalls"]]


async def start_turn(client: SocketClient, workspace: Path, script: Path) -> tuple[str, asyncio.Future]:
    session = await client.request("toolwire/session/new", {"cwd": str(workspace), "model": f"replay:{script}"})
    sid = session["sessionId"]
    prompt = client.send("toolwire/session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "fix"}]})
    return sid, prompt


ALLOW = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


async def test_a_client_that_leaves_mid_turn_comes_back_to_the_same_calls_and_answers_the_same_approval(
        server, workspace, script):
    srv = await server("--idle-exit", "60")
    assert stat.S_IMODE(srv.path.stat().st_mode) == 0o600 and stat.S_IMODE(srv.path.parent.stat().st_mode) == 0o700
    first = await SocketClient().connect(srv.path)
    sid, prompt = await start_turn(first, workspace, script)
    asked = await first.ask("toolwire/session/requestPermission")
    before = await first.request("toolwire/session/snapshot", {"sessionId": sid})
    assert snapshot_calls(before) == [(asked["params"]["toolCall"]["toolCallId"], "edit_file", "generated")]
    await first.close()  # the window reloads: no shutdown, no exit
    assert not prompt.done()

    second = await SocketClient().connect(srv.path)
    again = await second.ask("toolwire/session/requestPermission")  # sent again, same id, same call
    assert again["id"] == asked["id"] and again["params"] == asked["params"]
    after = await second.request("toolwire/session/snapshot", {"sessionId": sid})
    assert after["running"] is True and after["turnId"] == before["turnId"]
    assert after["toolCalls"] == before["toolCalls"] and after["messages"] == before["messages"]
    assert [p["toolCall"]["toolCallId"] for p in after["pendingPermissions"]] == [asked["params"]["toolCall"]["toolCallId"]]

    second.answer(again["id"], ALLOW)
    ended = await second.update_until(lambda u: u["sessionUpdate"] == "turn" and u["state"] == "ended")
    assert ended["stopReason"] == "end_turn"
    assert (workspace / "greet.py").read_text() == FIXED
    final = await second.request("toolwire/session/snapshot", {"sessionId": sid})
    assert snapshot_calls(final) == [(asked["params"]["toolCall"]["toolCallId"], "edit_file", "done")]
    assert final["pendingPermissions"] == [] and final["running"] is False
    assert not prompt.done()  # the first client's answer is never sent to the second one

    await second.stop_server()  # the explicit stop
    assert await srv.exited() == 0
    assert not srv.path.exists()


async def test_the_server_exits_after_the_grace_period_without_a_client(server, workspace):
    srv = await server("--idle-exit", "0.5")
    client = await SocketClient().connect(srv.path)
    session = await client.request("toolwire/session/new", {"cwd": str(workspace), "model": "replay"})
    assert session["sessionId"]
    await client.close()
    assert await srv.exited() == 0
    assert not srv.path.exists()


async def test_a_turn_waiting_for_an_absent_client_is_cancelled_when_the_grace_period_ends(
        server, workspace, script, tmp_path):
    log_file = tmp_path / "server.log"
    srv = await server("--idle-exit", "1", "--log-level", "INFO", "--log-file", str(log_file))
    client = await SocketClient().connect(srv.path)
    await start_turn(client, workspace, script)
    asked = await client.ask("toolwire/session/requestPermission")
    await client.close()
    assert await srv.exited() == 0
    assert (workspace / "greet.py").read_text() == GREET  # nothing was written
    call_id = asked["params"]["toolCall"]["toolCallId"]
    assert f"cancelled (shutdown): {call_id} edit_file canceled" in log_file.read_text()  # ended terminal


async def test_a_new_connection_takes_over_and_the_old_one_is_closed(server, workspace):
    srv = await server()
    first = await SocketClient().connect(srv.path)
    sid = (await first.request("toolwire/session/new", {"cwd": str(workspace), "model": "replay"}))["sessionId"]
    second = await SocketClient().connect(srv.path)
    await asyncio.wait_for(first.eof.wait(), 30)  # closed by the server
    snapshot = await second.request("toolwire/session/snapshot", {"sessionId": sid})
    assert snapshot["sessionId"] == sid and snapshot["running"] is False
    await second.stop_server()
    assert await srv.exited() == 0


async def edit_lost_after_sending(server, workspace, script):
    """A turn whose edit of the open greet.py was sent to a client that left unanswered."""
    srv = await server()
    uri = (workspace / "greet.py").as_uri()
    first = await SocketClient().connect(srv.path, EDIT_CAPS)
    first.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                           "text": GREET}})
    sid, _ = await start_turn(first, workspace, script)
    asked = await first.ask("toolwire/session/requestPermission")
    first.answer(asked["id"], ALLOW)
    edit = await first.ask("workspace/applyEdit")
    await first.close()  # the answer is lost
    return srv, sid, uri, edit


async def test_an_unconfirmed_edit_of_an_open_buffer_is_sent_again_once_when_the_new_client_has_the_old_text(
        server, workspace, script):
    srv, sid, uri, edit = await edit_lost_after_sending(server, workspace, script)
    second = SocketClient()
    await second.connect(srv.path, EDIT_CAPS)
    second.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 7,
                                                            "text": GREET}})
    resent = await second.ask("workspace/applyEdit")
    change = resent["params"]["edit"]["documentChanges"][0]
    assert change["textDocument"]["version"] == 7  # against the new client's buffer
    assert change["edits"] == edit["params"]["edit"]["documentChanges"][0]["edits"]
    second.answer(resent["id"], {"applied": True})
    second.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 8},
                                             "contentChanges": [{"text": FIXED}]})
    await second.update_until(lambda u: u["sessionUpdate"] == "turn" and u["state"] == "ended")
    snapshot = await second.request("toolwire/session/snapshot", {"sessionId": sid})
    assert [c["status"] for c in snapshot["toolCalls"]] == ["done"]
    assert second.asks.empty()  # sent once
    assert (workspace / "greet.py").read_text() == GREET  # the editor's buffer has it, the disk is untouched


async def test_an_edit_the_old_client_applied_is_not_sent_again(server, workspace, script):
    srv, sid, uri, _ = await edit_lost_after_sending(server, workspace, script)
    second = SocketClient()
    await second.connect(srv.path, EDIT_CAPS)
    second.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 3,
                                                            "text": FIXED}})
    await second.update_until(lambda u: u["sessionUpdate"] == "turn" and u["state"] == "ended")
    snapshot = await second.request("toolwire/session/snapshot", {"sessionId": sid})
    assert [c["status"] for c in snapshot["toolCalls"]] == ["done"]
    assert second.asks.empty()  # nothing sent twice


async def test_an_unconfirmed_edit_whose_buffer_changed_meanwhile_errs_and_writes_nothing(server, workspace, script):
    srv, sid, uri, _ = await edit_lost_after_sending(server, workspace, script)
    second = SocketClient()
    await second.connect(srv.path, EDIT_CAPS)
    second.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 3,
                                                            "text": "# the user rewrote it\n"}})
    await second.update_until(lambda u: u["sessionUpdate"] == "turn" and u["state"] == "ended")
    snapshot = await second.request("toolwire/session/snapshot", {"sessionId": sid})
    call = snapshot["toolCalls"][0]
    assert call["status"] == "errored" and call["error"]["code"] == "editor_disconnected"
    assert second.asks.empty()
    assert (workspace / "greet.py").read_text() == GREET


async def test_a_live_server_is_not_replaced_and_a_shared_folder_is_refused(server, tmp_path):
    srv = await server()
    done = subprocess.run([sys.executable, "-m", "toolwire", "serve", "--socket", str(srv.path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "already listens" in done.stderr and done.stderr.count("\n") == 1
    assert srv.path.exists()  # the live server's socket is kept
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    done = subprocess.run([sys.executable, "-m", "toolwire", "serve", "--socket", str(shared / "s.sock")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "private" in done.stderr


def test_socket_flags_are_checked():
    for args, words in ((["--tcp", "127.0.0.1:0", "--socket", "x"], "together"),
                        (["--idle-exit", "5"], "only with --socket"),
                        (["--socket", "x", "--idle-exit", "0"], "between 0 and 86400")):
        done = subprocess.run([sys.executable, "-m", "toolwire", "serve", *args], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 2 and words in done.stderr, done.stderr


async def test_a_client_that_sends_shutdown_and_leaves_without_exit_stops_the_server(server, workspace):
    srv = await server("--idle-exit", "600")
    client = await SocketClient().connect(srv.path)
    await client.request("shutdown", None)
    await client.close()
    assert await srv.exited() == 0
    assert not srv.path.exists()


def chat_chunk(delta: dict, finish: str | None = None) -> dict:
    """One OpenAI Chat Completions stream chunk (client-fed mode)."""
    return {"id": "chatcmpl-fed", "object": "chat.completion.chunk", "created": 1, "model": "test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def test_a_client_fed_run_waiting_for_an_absent_client_is_cancelled_when_the_grace_period_ends(
        server, workspace):
    srv = await server("--idle-exit", "1")
    client = await SocketClient().connect(srv.path)
    sid = (await client.request("toolwire/session/new", {"cwd": str(workspace), "model": "replay"}))["sessionId"]
    arguments = json.dumps({"path": "greet.py", "old_string": GREET, "new_string": FIXED})
    chunks = [chat_chunk({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                          "function": {"name": "edit_file", "arguments": arguments}}]}),
              chat_chunk({}, finish="tool_calls")]
    await client.request("toolwire/toolCalls/merge", {"sessionId": sid, "streamId": "s", "format": "openai",
                                                      "chunks": chunks, "end": True})
    run = client.send("toolwire/toolCalls/run", {"sessionId": sid, "streamId": "s"})
    await client.ask("toolwire/session/requestPermission")
    await client.close()
    assert not run.done()
    assert await srv.exited() == 0
    assert (workspace / "greet.py").read_text() == GREET
