"""``/undo`` and ``/redo`` as ACP slash commands (issue 20, "What ACP gains by it").

``available_commands_update`` advertises them after ``session/new`` and ``session/load``;
a prompt ``/undo …`` or ``/redo …`` undoes (redoes) a turn through the session host with
the rules and options of ``toolwire/session/undoTurn``, answered by one agent message and
``end_turn``: no model request, nothing added to the conversation, no turn id. Real
``toolwire acp`` over stdio, the ACP SDK's client side, real git and files.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import RequestPermissionResponse

from conftest import git
from test_acp import RecordingClient, script, start, text
from test_acp import open_session as open_acp_session
from opening import user_text

USAGE_UNDO = "Usage: /undo [TURN_ID] [partial] [rewind] [force PATH …]"
USAGE_REDO = "Usage: /redo [TURN_ID] [partial] [force PATH …]"


class OrderedClient(RecordingClient):
    """Also records what the agent sent, in order: ``("answer", method)`` or ``("update", kind)``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.order: list[tuple[str, str]] = []

    def observe(self, event: Any) -> None:
        super().observe(event)
        message = event.message
        if event.direction.value == "outgoing":
            return
        if message.get("method") == "session/update":
            self.order.append(("update", message["params"]["update"]["sessionUpdate"]))
        elif "id" in message and ("result" in message or "error" in message):
            self.order.append(("answer", self._sent.get(message["id"], "?")))


def edit(call_id: str, path: str, old: str, new: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "edit_file",
                            "arguments": {"path": path, "old_string": old, "new_string": new}}]}


def requests(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def chunks_since(client: RecordingClient, start_at: int) -> list[Any]:
    return [u for u in client.updates[start_at:] if u.session_update == "agent_message_chunk"]


async def open_session(conn: Any, root: Path, client: RecordingClient | None = None) -> str:
    """``session/new``, then (with ``client``) wait for its ``available_commands_update``
    (sent after the answer), so that later updates are the prompts' own."""
    sid = await open_acp_session(conn, root)
    if client is not None:
        await client.wait_for(lambda: any(u.session_update == "available_commands_update" for u in client.updates))
    return sid


async def command(conn: Any, client: RecordingClient, sid: str, line: str) -> tuple[str, dict[str, Any]]:
    """Send ``line`` as a prompt; the one agent message it got and the undo result in its ``_meta``."""
    before = len(client.updates)
    response = await conn.prompt(session_id=sid, prompt=text(line))
    assert response.stop_reason == "end_turn" and response.usage is None
    (chunk,) = [u for u in client.updates[before:]]  # one update: the agent message, nothing else
    assert chunk.session_update == "agent_message_chunk"
    return chunk.content.text, chunk.field_meta["toolwire"]["undoResult"]


async def test_undo_redo_and_compact_are_advertised_after_new_and_load(repo: Path) -> None:
    client = OrderedClient()
    async with await start(client, "replay") as (conn, _):
        sid = await open_session(conn, repo, client)
        await client.wait_for(lambda: any(u.session_update == "available_commands_update" for u in client.updates))
        await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
        await client.wait_for(lambda: sum(u.session_update == "available_commands_update"
                                          for u in client.updates) == 2)
    adverts = [u for u in client.updates if u.session_update == "available_commands_update"]
    for advert in adverts:
        commands = {c.name: c for c in advert.available_commands}
        assert list(commands) == ["undo", "redo", "compact", "continue"]
        assert commands["compact"].description.startswith("Replace every tool result older than the last turn")
        assert commands["compact"].input.root.hint == "(no arguments)"
        assert commands["continue"].description.startswith("Continue the last turn where it stopped at the model-request")
        assert commands["undo"].description.startswith("Undo the last turn's changes to files and git")
        assert commands["redo"].description.startswith("Redo the turn undone most recently")
        assert commands["undo"].input.root.hint == "[turn id, e.g. t3] [partial] [rewind] [force PATH …]"
        assert commands["redo"].input.root.hint == "[turn id, e.g. t3] [partial] [force PATH …]"
    # each after the answer that makes the session known to the client
    new_at = client.order.index(("answer", "session/new"))
    load_at = client.order.index(("answer", "session/load"))
    adverts_at = [i for i, item in enumerate(client.order) if item == ("update", "available_commands_update")]
    assert adverts_at[0] > new_at and adverts_at[1] > load_at
    assert not client.invalid, client.invalid


async def test_undo_then_redo_the_last_turn_without_a_model_request(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    model = script(tmp_path, [edit("e1", "hello.txt", "hello", "bye"), {"text": "Edited."},
                              {"text": "Second turn."}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}", settings={"replayLog": str(log)}) as (conn, _):
        sid = await open_session(conn, repo, client)
        await conn.prompt(session_id=sid, prompt=text("edit hello"))
        assert (repo / "hello.txt").read_text() == "bye\n"
        sent = len(requests(log))

        said, result = await command(conn, client, sid, "/undo")
        assert (repo / "hello.txt").read_text() == "hello\n"
        assert result["turnId"] == "t1" and result["status"] == "undone"
        assert said == f"{result['message']}\n\n- hello.txt: restored"
        assert said.startswith("Undid turn t1")

        said, result = await command(conn, client, sid, "  /redo  ")
        assert (repo / "hello.txt").read_text() == "bye\n"
        assert result["turnId"] == "t1" and result["status"] == "redone"
        assert said == f"{result['message']}\n\n- hello.txt: restored"
        assert len(requests(log)) == sent  # neither reached the model

        await conn.prompt(session_id=sid, prompt=text("next"))
        said, result = await command(conn, client, sid, "/undo t2")  # the commands took no turn id
        assert result["status"] == "nothing_to_do" and result["turnId"] == "t2", result
    last = requests(log)[-1]["messages"]
    users = [m["content"] for m in last if m["role"] == "user"]
    assert user_text(users[0]) == "edit hello" and users[1].startswith("next\n\n[Turn t1 was undone by the user")
    assert "[Turn t1 was redone by the user" in users[1]
    assert not any("/undo" in str(m.get("content")) or "/redo" in str(m.get("content")) for m in last)
    assert not client.invalid, client.invalid


async def test_nothing_to_do(repo: Path, tmp_path: Path) -> None:
    client = RecordingClient()
    async with await start(client, "replay") as (conn, _):
        sid = await open_session(conn, repo, client)
        said, result = await command(conn, client, sid, "/undo")
        assert said == "There is no turn with changes to undo in this session."
        assert result == {"turnId": None, "status": "nothing_to_do", "message": said, "paths": [], "git": [],
                          "unmatchedForce": [], "notUndone": []}
        said, result = await command(conn, client, sid, "/redo")
        assert said == "There is no undone turn to redo in this session." and result["status"] == "nothing_to_do"
        await conn.prompt(session_id=sid, prompt=text("just talk"))  # a turn that changed nothing
        said, _ = await command(conn, client, sid, "/undo")
        assert said == "There is no turn with changes to undo in this session."


async def test_undo_a_named_turn(repo: Path, tmp_path: Path) -> None:
    (repo / "two.txt").write_text("two\n")
    (repo / "three.txt").write_text("three\n")
    model = script(tmp_path, [edit("e1", "hello.txt", "hello", "HELLO"), {"text": "1"},
                              edit("e2", "two.txt", "two", "TWO"), {"text": "2"},
                              edit("e3", "three.txt", "three", "THREE"), {"text": "3"}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo, client)
        for prompt in ("one", "two", "three"):
            await conn.prompt(session_id=sid, prompt=text(prompt))
        said, result = await command(conn, client, sid, "/undo t2")
        assert result["turnId"] == "t2" and said.startswith("Undid turn t2")
        assert said.endswith("\n\n- two.txt: restored")
        assert [(repo / n).read_text() for n in ("hello.txt", "two.txt", "three.txt")] == ["HELLO\n", "two\n",
                                                                                          "THREE\n"]
        said, result = await command(conn, client, sid, "/undo")  # the last turn with something to undo: t3
        assert result["turnId"] == "t3" and (repo / "three.txt").read_text() == "three\n"
        said, result = await command(conn, client, sid, "/redo t2")
        assert result["turnId"] == "t2" and (repo / "two.txt").read_text() == "TWO\n"
        with pytest.raises(RequestError) as info:
            await conn.prompt(session_id=sid, prompt=text("/undo t9"))
        assert info.value.code == -32602
        assert info.value.data == {"prompt": "/undo: no turn 't9' in this session"}


async def test_blocked_then_partial_then_force(repo: Path, tmp_path: Path) -> None:
    (repo / "my file.txt").write_text("spaced\n")
    model = script(tmp_path, [
        {"tool_calls": [{"id": "e1", "name": "edit_file",
                         "arguments": {"path": "hello.txt", "old_string": "hello", "new_string": "bye"}},
                        {"id": "e2", "name": "edit_file",
                         "arguments": {"path": "my file.txt", "old_string": "spaced", "new_string": "edited"}},
                        {"id": "c1", "name": "create_file", "arguments": {"path": "new.txt", "content": "new\n"}}]},
        {"text": "ok"}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo, client)
        await conn.prompt(session_id=sid, prompt=text("edit"))
        (repo / "hello.txt").write_text("bye, and the user's line\n")
        (repo / "my file.txt").write_text("edited by the user\n")

        said, result = await command(conn, client, sid, "/undo")
        assert result["status"] == "blocked" and (repo / "new.txt").exists()
        assert said.startswith("Nothing was undone: 2 change(s) of turn t1 cannot be undone as they are")
        assert said.endswith("\n\n- hello.txt: kept (changed since the turn)\n"
                             "- my file.txt: kept (changed since the turn)"), said

        said, result = await command(conn, client, sid, "/undo partial")
        assert result["status"] == "partial" and not (repo / "new.txt").exists()
        assert "- new.txt: restored" in said and "- hello.txt: kept (changed since the turn)" in said
        assert (repo / "hello.txt").read_text() == "bye, and the user's line\n"

        said, result = await command(conn, client, sid, '/undo t1 force hello.txt "my file.txt" nope.txt')
        assert (repo / "hello.txt").read_text() == "hello\n" and (repo / "my file.txt").read_text() == "spaced\n"
        assert result["unmatchedForce"] == ["nope.txt"]
        assert "- hello.txt: restored" in said and "- my file.txt: restored" in said


async def test_undo_rewind_drops_the_turn_from_the_conversation(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    model = script(tmp_path, [edit("e1", "hello.txt", "hello", "bye"), {"text": "Edited."}, {"text": "later"}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}", settings={"replayLog": str(log)}) as (conn, _):
        sid = await open_session(conn, repo, client)
        await conn.prompt(session_id=sid, prompt=text("edit hello"))
        said, result = await command(conn, client, sid, "/undo rewind")
        assert said.split("\n\n")[0].endswith("The turn was removed from the conversation the model sees.")
        await conn.prompt(session_id=sid, prompt=text("next"))
    users = [m["content"] for m in requests(log)[-1]["messages"] if m["role"] == "user"]
    # the turn that carried the overview is gone: the next one carries a fresh one
    assert len(users) == 1 and users[0].startswith("[Workspace overview")
    assert user_text(users[0]).startswith("next\n\n[Turn t1 was undone by the user")


@pytest.mark.parametrize(("line", "message"), [
    ("/undo foo", f"/undo: unknown argument 'foo'. {USAGE_UNDO}"),
    ("/undo t1 t2", f"/undo: a second turn id 't2' (after 't1'); give one. {USAGE_UNDO}"),
    ("/redo rewind", f"/redo: rewind: only /undo takes it. {USAGE_REDO}"),
    ("/undo force", f"/undo: force: name the paths to overwrite after it. {USAGE_UNDO}"),
    ('/undo force "a b', f"/undo: the quoted path '\"a b' has no closing quote. {USAGE_UNDO}"),
    ("/redo partial\u202e", f"/redo: unknown argument 'partial\\u202e'. {USAGE_REDO}"),
])
async def test_a_bad_argument_is_invalid_params_naming_it(repo: Path, tmp_path: Path, line: str,
                                                         message: str) -> None:
    log = tmp_path / "requests.jsonl"
    model = script(tmp_path, [edit("e1", "hello.txt", "hello", "bye"), {"text": "Edited."}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}", settings={"replayLog": str(log)}) as (conn, _):
        sid = await open_session(conn, repo, client)
        await conn.prompt(session_id=sid, prompt=text("edit hello"))
        sent, updates = len(requests(log)), len(client.updates)
        with pytest.raises(RequestError) as info:
            await conn.prompt(session_id=sid, prompt=text(line))
        assert info.value.code == -32602 and info.value.data == {"prompt": message}
        assert len(requests(log)) == sent and chunks_since(client, updates) == []
    assert (repo / "hello.txt").read_text() == "bye\n"  # nothing was undone


async def test_a_prompt_that_only_looks_like_a_command_is_a_turn(repo: Path, tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    model = script(tmp_path, [{"text": "a"}, {"text": "b"}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}", settings={"replayLog": str(log)}) as (conn, _):
        sid = await open_session(conn, repo, client)
        for line in ("/undone work", "please /undo"):
            await conn.prompt(session_id=sid, prompt=text(line))
    assert [user_text(r["messages"][-1]["content"]) for r in requests(log)] == ["/undone work", "please /undo"]


async def test_undo_while_a_turn_runs_gets_the_hosts_refusal(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [edit("e1", "hello.txt", "hello", "bye"), {"text": "Edited."},
                              edit("e2", "hello.txt", "bye", "again"), {"text": "never"}])
    asked = asyncio.Event()
    release = asyncio.Event()
    client = RecordingClient()
    original = client.request_permission

    async def hold(**kwargs: Any) -> RequestPermissionResponse:
        asked.set()
        await release.wait()
        return await original(**kwargs)

    client.request_permission = hold  # type: ignore[method-assign]
    settings = {"permissions": {"edit_file": "ask"}}
    async with await start(client, f"replay:{model}", settings=settings) as (conn, _):
        sid = await open_session(conn, repo, client)
        release.set()
        await conn.prompt(session_id=sid, prompt=text("first"))
        asked.clear()
        release.clear()
        running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("second")))
        await asyncio.wait_for(asked.wait(), 30)
        for line in ("/undo", "/redo", "/undo t1 partial"):
            with pytest.raises(RequestError) as info:
                await conn.prompt(session_id=sid, prompt=text(line))
            assert info.value.code == -32600
            assert info.value.data == {"sessionId": "a turn is running in this session; cancel it or wait for it to end"}
        await conn.cancel(session_id=sid)
        release.set()
        assert (await running).stop_reason == "cancelled"
        assert (repo / "hello.txt").read_text() == "bye\n"  # the refused undo changed nothing
        said, result = await command(conn, client, sid, "/undo")  # the slot is free again
        assert result["status"] == "undone" and (repo / "hello.txt").read_text() == "hello\n"
    assert git(repo, "status", "--porcelain") == ""


async def test_undo_puts_the_clients_buffer_back_through_the_client(repo: Path, tmp_path: Path) -> None:
    """With files through the client, the turn's edit went to the client's buffer; the undo
    restores that buffer with ``fs/write_text_file`` and leaves the disk alone."""
    path = str(repo / "hello.txt")
    model = script(tmp_path, [edit("e1", "hello.txt", "unsaved", "edited"), {"text": "Edited."}])
    client = RecordingClient(buffers={path: "hello unsaved\n"})
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_acp_session(conn, repo, fs=True)
        await client.wait_for(lambda: any(u.session_update == "available_commands_update" for u in client.updates))
        await conn.prompt(session_id=sid, prompt=text("edit"))
        said, result = await command(conn, client, sid, "/undo")
        assert result["status"] == "undone" and said.endswith("\n\n- hello.txt: restored")
        said, result = await command(conn, client, sid, "/redo")
        assert result["status"] == "redone"
    assert client.writes == [(path, "hello edited\n"), (path, "hello unsaved\n"), (path, "hello edited\n")]
    assert (repo / "hello.txt").read_text() == "hello\n"


async def test_a_turn_or_another_undo_is_refused_while_an_undo_runs(repo: Path, tmp_path: Path) -> None:
    """An undo holds the session's turn slot until it is done: while it waits for the
    client to write a buffer back, a prompt, another ``/undo`` and a ``/redo`` are refused
    with the host's message (no model request, nothing changed), and afterwards the slot is free."""
    path = str(repo / "hello.txt")
    model = script(tmp_path, [edit("e1", "hello.txt", "unsaved", "edited"), {"text": "Edited."},
                              {"text": "Later."}])
    client = RecordingClient(buffers={path: "hello unsaved\n"})
    writing, release = asyncio.Event(), asyncio.Event()
    original = client.write_text_file

    async def hold(**kwargs: Any) -> Any:
        if client.writes:  # the turn's edit went through; the undo's write waits
            writing.set()
            await release.wait()
        return await original(**kwargs)

    client.write_text_file = hold  # type: ignore[method-assign]
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_acp_session(conn, repo, fs=True)
        await client.wait_for(lambda: any(u.session_update == "available_commands_update" for u in client.updates))
        await conn.prompt(session_id=sid, prompt=text("edit"))
        undo = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("/undo")))
        await asyncio.wait_for(writing.wait(), 30)
        for line in ("go on", "/undo", "/redo"):
            with pytest.raises(RequestError) as info:
                await conn.prompt(session_id=sid, prompt=text(line))
            assert info.value.code == -32600
            assert info.value.data == {"sessionId": "an undo or redo is running in this session; wait for it to end"}
        release.set()
        assert (await undo).stop_reason == "end_turn"
        assert client.writes == [(path, "hello edited\n"), (path, "hello unsaved\n")]
        response = await conn.prompt(session_id=sid, prompt=text("go on"))  # the slot is free again
        assert response.stop_reason == "end_turn"
