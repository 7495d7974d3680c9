"""``toolwire acp`` over stdio, driven by the ACP SDK's own client side.

Every message the agent sends is validated against the SDK's schema models
(``acp.schema``) by a stream observer; a message that does not validate fails the test.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.transports import default_environment
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    TextContentBlock,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

DATA = Path(__file__).parent / "data"
CORPUS = DATA / "corpus"
TERMINAL = {"completed", "failed"}

#: Result models of the requests the client sends, to validate the agent's answers.
RESULTS = {
    "initialize": InitializeResponse,
    "session/new": NewSessionResponse,
    "session/load": LoadSessionResponse,
    "session/prompt": PromptResponse,
    "session/set_mode": SetSessionModeResponse,
    "session/set_config_option": SetSessionConfigOptionResponse,
}
#: Params models of the messages the agent sends.
AGENT_MESSAGES = {
    "session/update": SessionNotification,
    "session/request_permission": RequestPermissionRequest,
    "fs/read_text_file": ReadTextFileRequest,
    "fs/write_text_file": WriteTextFileRequest,
}


class RecordingClient:
    """An ACP client: records updates, answers permission requests from a script,
    and holds unsaved buffers that ``fs/read_text_file`` returns."""

    def __init__(self, answers: list[str] | None = None, buffers: dict[str, str] | None = None) -> None:
        self.answers = list(answers or [])
        self.buffers = dict(buffers or {})
        self.updates: list[Any] = []
        self.permissions: list[Any] = []
        self.writes: list[tuple[str, str]] = []
        self.reads: list[str] = []
        self.invalid: list[str] = []
        self._waiters: list[tuple[Any, asyncio.Event]] = []
        self._sent: dict[Any, str] = {}

    # -- the Client interface ---------------------------------------------------
    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any,
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.permissions.append(tool_call)
        self._wake()
        answer = self.answers.pop(0) if self.answers else "allow_once"
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        assert answer in {option.option_id for option in options}
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self._wake()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None,
                             limit: int | None = None, **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        try:
            return ReadTextFileResponse(content=Path(path).read_text())
        except OSError:
            raise RequestError.resource_not_found(path) from None

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    # -- test helpers -----------------------------------------------------------
    def observe(self, event: Any) -> None:
        """Validate every message against the ACP schema (a stream observer)."""
        message = event.message
        outgoing = event.direction.value == "outgoing"
        if outgoing:
            if "method" in message and "id" in message:
                self._sent[message["id"]] = message["method"]
            return
        try:
            if "method" in message and message["method"] in AGENT_MESSAGES:
                AGENT_MESSAGES[message["method"]].model_validate(message.get("params"))
            elif "result" in message and self._sent.get(message.get("id")) in RESULTS:
                if message["result"] is not None:
                    RESULTS[self._sent[message["id"]]].model_validate(message["result"])
        except Exception as exc:  # pydantic ValidationError
            self.invalid.append(f"{message}: {exc}")

    def _wake(self) -> None:
        for predicate, event in list(self._waiters):
            if predicate():
                event.set()

    async def wait_for(self, predicate: Any, timeout: float = 30) -> None:
        event = asyncio.Event()
        self._waiters.append((predicate, event))
        if predicate():
            event.set()
        await asyncio.wait_for(event.wait(), timeout)

    def tool_updates(self) -> dict[str, list[Any]]:
        """Every tool_call / tool_call_update by call id, in order."""
        out: dict[str, list[Any]] = {}
        for update in self.updates:
            if update.session_update in ("tool_call", "tool_call_update"):
                out.setdefault(update.tool_call_id, []).append(update)
        return out

    def final(self, call_id: str) -> dict[str, Any]:
        """The call as the client knows it after every update (later fields win)."""
        merged: dict[str, Any] = {}
        for update in self.tool_updates()[call_id]:
            for key, value in update.model_dump(exclude_none=True).items():
                merged[key] = value
        return merged


def script(tmp: Path, lines: list[dict[str, Any]]) -> Path:
    path = tmp / "script.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "T")
    (root / "a.txt").write_text("hello world\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "init")
    return root


def agent_env() -> dict[str, str]:
    """The environment of a spawned ``toolwire acp``: the SDK's default one (it passes on only a
    few variables) plus the tests' state folder (conftest's ``TOOLWIRE_STATE_DIR``: saved sessions
    and checkpoints stay out of the user's) and this tree's code (``PYTHONPATH``)."""
    env = default_environment()
    env["TOOLWIRE_STATE_DIR"] = os.environ["TOOLWIRE_STATE_DIR"]
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1] / "server")
    return env


async def start(client: RecordingClient, model: str, fs: bool = False, settings: dict | None = None):
    """Spawn ``toolwire acp``; returns the context manager of the SDK's connection."""
    args = ["-m", "toolwire", "acp", "--model", model, "--log-level", "WARNING"]
    if settings:
        args += ["--settings", json.dumps(settings)]
    return spawn_agent_process(client, sys.executable, *args, env=agent_env(), observers=[client.observe])


async def initialize(conn: Any, fs: bool = False) -> Any:
    """``initialize`` as a client that can (fs) or cannot read and write files itself."""
    caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs))
    return await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)


async def open_session(conn: Any, root: Path, fs: bool = False) -> str:
    init = await initialize(conn, fs)
    assert init.agent_capabilities.load_session is True
    session = await conn.new_session(cwd=str(root), mcp_servers=[])
    assert {mode.id for mode in session.modes.available_modes} == {"ask", "accept_edits", "read_only"}
    return session.session_id


def text(prompt: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=prompt)]


async def test_full_turn_read_edit_commit(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [
        {"text": "Reading.", "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"tool_calls": [{"id": "c2", "name": "edit_file",
                         "arguments": {"path": "a.txt", "old_string": "world", "new_string": "there"}}]},
        {"tool_calls": [{"id": "c3", "name": "git_commit", "arguments": {"message": "Greet", "paths": ["a.txt"]}}]},
        {"text": "Done."},
    ])
    client = RecordingClient(answers=["allow_once", "allow_once"])
    async with await start(client, f"replay:{model}") as (conn, _process):
        sid = await open_session(conn, repo)
        response = await conn.prompt(session_id=sid, prompt=text("Greet differently and commit"))
    assert response.stop_reason == "end_turn"
    assert (repo / "a.txt").read_text() == "hello there\n"
    assert git(repo, "log", "-1", "--format=%s").strip() == "Greet"
    assert not client.invalid, client.invalid
    calls = client.tool_updates()
    assert list(calls) == ["c1", "c2", "c3"]
    for call_id, updates in calls.items():
        assert updates[0].session_update == "tool_call"
        assert all(u.session_update == "tool_call_update" for u in updates[1:])
        assert client.final(call_id)["status"] == "completed"
    read, edit, commit = (client.final(c) for c in ("c1", "c2", "c3"))
    assert (read["kind"], edit["kind"], commit["kind"]) == ("read", "edit", "execute")
    assert edit["locations"] == [{"path": str(repo / "a.txt"), "line": 0}]
    diff = [c for c in edit["content"] if c["type"] == "diff"][0]
    assert diff["old_text"] == "hello world" and diff["new_text"] == "hello there"
    # the edit and the commit were asked about, the read was not; each with its exact subject
    assert [p.tool_call_id for p in client.permissions] == ["c2", "c3"]
    whole = client.permissions[0].content[0]  # the whole file before and after
    assert (whole.type, whole.old_text, whole.new_text) == ("diff", "hello world\n", "hello there\n")
    assert "git" in client.permissions[1].content[0].content.text
    texts = "".join(u.content.text for u in client.updates if u.session_update == "agent_message_chunk")
    assert "Reading." in texts and "Done." in texts


async def test_reject_is_told_apart_from_failure(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [
        {"tool_calls": [{"id": "e1", "name": "edit_file",
                         "arguments": {"path": "a.txt", "old_string": "world", "new_string": "moon"}},
                        {"id": "e2", "name": "edit_file",
                         "arguments": {"path": "missing.txt", "old_string": "x", "new_string": "y"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(answers=["reject", "allow_once"])
    async with await start(client, f"replay:{model}", settings={"permissions": {"edit_file": "ask"}}) as (conn, _):
        sid = await open_session(conn, repo)
        response = await conn.prompt(session_id=sid, prompt=text("edit"))
    assert response.stop_reason == "end_turn"
    assert (repo / "a.txt").read_text() == "hello world\n"
    rejected, failed = client.final("e1"), client.final("e2")
    assert rejected["status"] == failed["status"] == "failed"
    assert rejected["raw_output"] == {"canceled": True, "cancelReason": "rejected"}
    assert rejected["content"][0]["content"]["text"].startswith("Canceled: rejected by the user")
    assert "error" in failed["raw_output"] and "canceled" not in failed["raw_output"]
    assert failed["content"][0]["content"]["text"].startswith("Error (")
    assert not client.invalid, client.invalid


async def test_cancel_mid_turn_ends_every_call(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [
        {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "a.txt"}},
                        {"id": "w1", "name": "create_file", "arguments": {"path": "new.txt", "content": "x" * 400}}],
         "chunk_size": 8, "delay": 0.05},
        {"text": "never"},
    ])
    client = RecordingClient()
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo)
        prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("go")))
        await client.wait_for(lambda: "w1" in client.tool_updates())
        await conn.cancel(session_id=sid)
        response = await prompt
    assert response.stop_reason == "cancelled"
    assert not (repo / "new.txt").exists()
    for call_id in client.tool_updates():
        assert client.final(call_id)["status"] in TERMINAL, call_id
    assert client.final("w1")["raw_output"]["canceled"] is True
    assert not client.invalid, client.invalid


async def test_files_go_through_the_client_with_unsaved_text(repo: Path, tmp_path: Path) -> None:
    path = str(repo / "a.txt")
    model = script(tmp_path, [
        {"tool_calls": [{"id": "r", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"tool_calls": [{"id": "e", "name": "edit_file",
                         "arguments": {"path": "a.txt", "old_string": "unsaved", "new_string": "edited"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(answers=["allow_once"], buffers={path: "an unsaved buffer\n"})
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo, fs=True)
        response = await conn.prompt(session_id=sid, prompt=text("edit the open file"))
    assert response.stop_reason == "end_turn"
    assert client.final("r")["status"] == "completed"
    assert "an unsaved buffer" in client.final("r")["content"][-1]["content"]["text"]
    assert client.writes == [(path, "an edited buffer\n")]
    assert (repo / "a.txt").read_text() == "hello world\n"  # nothing written behind the client's back
    assert not client.invalid, client.invalid


async def test_a_client_buffer_changed_after_the_read_is_stale(repo: Path, tmp_path: Path) -> None:
    path = str(repo / "a.txt")
    model = script(tmp_path, [
        {"tool_calls": [{"id": "e", "name": "edit_file",
                         "arguments": {"path": "a.txt", "old_string": "hello", "new_string": "bye"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(buffers={path: "hello buffer\n"})

    original = client.request_permission

    async def change_then_allow(**kwargs: Any) -> RequestPermissionResponse:
        client.buffers[path] = "hello buffer, typed meanwhile\n"  # the user types while asked
        return await original(**kwargs)

    client.request_permission = change_then_allow  # type: ignore[method-assign]
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo, fs=True)
        await conn.prompt(session_id=sid, prompt=text("edit"))
    assert client.final("e")["status"] == "failed"
    assert client.final("e")["raw_output"]["error"]["code"] == "stale"
    assert client.writes == []
    assert client.buffers[path] == "hello buffer, typed meanwhile\n"


async def test_malformed_messages_do_not_stop_the_agent(repo: Path, tmp_path: Path) -> None:
    client = RecordingClient()
    async with await start(client, "replay") as (conn, process):
        process.stdin.write(b"this is not json\n{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": \"no/such\"}\n[1, 2]\n")
        await process.stdin.drain()
        sid = await open_session(conn, repo)
        response = await conn.prompt(session_id=sid, prompt=text("hello"))
        assert response.stop_reason == "end_turn"
        with pytest.raises(RequestError):
            await conn.prompt(session_id="nope", prompt=text("hello"))
        with pytest.raises(RequestError):
            await conn.new_session(cwd="relative/path", mcp_servers=[])
        assert process.returncode is None


async def test_load_session_replays_history_and_modes_apply(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [
        {"text": "Let me look.", "tool_calls": [{"id": "r", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"text": "It greets."},
        {"tool_calls": [{"id": "e", "name": "edit_file",
                         "arguments": {"path": "a.txt", "old_string": "world", "new_string": "x"}}]},
        {"text": "refused"},
    ])
    client = RecordingClient()
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo)
        start_at = len(client.updates)
        await conn.prompt(session_id=sid, prompt=text("what does a.txt say?"))
        await client.wait_for(lambda: any(u.session_update == "session_info_update" for u in client.updates))
        live = [u for u in client.updates[start_at:]
                if u.session_update not in ("session_info_update", "available_commands_update")]
        before = len(client.updates)
        await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
        replayed = client.updates[before:]
        kinds = [u.session_update for u in replayed]
        assert kinds[0] == "user_message_chunk" and kinds[-1] == "session_info_update"  # the title
        assert replayed[1:-1] == live  # what the live session sent, update by update
        assert [u.status for u in replayed if u.session_update == "tool_call_update"][-1] == "completed"
        # the user's own text, not the workspace overview the first request carried before it
        assert replayed[0].content.text == "what does a.txt say?"
        await conn.set_session_mode(session_id=sid, mode_id="read_only")
        await conn.prompt(session_id=sid, prompt=text("change it"))
    assert client.final("e")["raw_output"] == {"canceled": True, "cancelReason": "policy_denied"}
    assert client.permissions == []
    assert (repo / "a.txt").read_text() == "hello world\n"
    assert not client.invalid, client.invalid


def _corpus_files() -> list[str]:
    expected = json.loads((CORPUS / "expected.json").read_text())
    return sorted(name for name in expected if (CORPUS / name).exists())


@pytest.mark.parametrize("name", _corpus_files())
async def test_corpus_streams_through_acp(name: str, repo: Path, tmp_path: Path) -> None:
    expected = json.loads((CORPUS / "expected.json").read_text())[name]
    model = script(tmp_path, [{"stream": str(CORPUS / name)}, {"text": "end"}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo)
        try:
            response = await conn.prompt(session_id=sid, prompt=text("go"))
            assert response.stop_reason in ("end_turn", "max_tokens")
        except RequestError as exc:  # a provider error event ends the turn in error
            assert exc.data["stopReason"] == "error" and exc.data["message"], exc.data
    assert not client.invalid, client.invalid
    calls = client.tool_updates()
    names = sorted(client.final(call_id)["title"].split()[0] for call_id in calls)
    want = sorted(call["name"] for call in expected["calls"] if call.get("name"))
    assert names == want
    for call_id in calls:
        assert client.final(call_id)["status"] in TERMINAL  # unknown tools fail; nothing is left pending


def test_invalid_settings_exit_2_with_the_reason() -> None:
    for settings, word in (('{"permissions": {"git_commit": "never"}}', "permissions"), ("[1]", "object"),
                           ("{nope", "JSON")):
        done = subprocess.run([sys.executable, "-m", "toolwire", "acp", "--settings", settings],
                              capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
        assert done.returncode == 2, done
        assert word in done.stderr and "Traceback" not in done.stderr
        assert done.stdout == ""  # stdout is the JSON-RPC channel


async def test_a_client_that_refuses_the_write_is_reported_as_refusing_not_stale(repo: Path, tmp_path: Path) -> None:
    path = str(repo / "a.txt")
    model = script(tmp_path, [
        {"tool_calls": [{"id": "e", "name": "edit_file",
                         "arguments": {"path": "a.txt", "old_string": "hello", "new_string": "bye"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(buffers={path: "hello buffer\n"})

    async def refuse(**kwargs: Any) -> Any:
        raise RequestError.invalid_request({"reason": "read-only buffer"})

    client.write_text_file = refuse  # type: ignore[method-assign]
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo, fs=True)
        await conn.prompt(session_id=sid, prompt=text("edit"))
    error = client.final("e")["raw_output"]["error"]
    assert client.final("e")["status"] == "failed"
    assert error["code"] == "editor_refused" and "refused to write a.txt" in error["message"]
    disk = (repo / "a.txt").read_text()
    assert client.buffers[path] == "hello buffer\n" and "bye" not in disk


async def test_a_change_that_cannot_be_undone_is_asked_about_with_why_first(repo: Path, tmp_path: Path) -> None:
    """Under a policy that runs edits unasked, an edit of a file over the checkpoint limit
    is still asked about; the request's content opens with the warning (before the diffs)."""
    model = script(tmp_path, [
        {"tool_calls": [{"id": "e1", "name": "edit_file",
                         "arguments": {"path": "a.txt", "old_string": "world", "new_string": "moon"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(answers=["reject"])
    settings = {"permissions": {"edits": "auto"}, "checkpointMaxBytes": 4}
    async with await start(client, f"replay:{model}", settings=settings) as (conn, _):
        sid = await open_session(conn, repo)
        await conn.prompt(session_id=sid, prompt=text("edit"))
    (asked,) = client.permissions
    first = asked.content[0]
    assert first.type == "content" and first.content.text == (
        "This change cannot be undone: a.txt: 12 bytes is over the 4 bytes checkpoint limit "
        "(the checkpointMaxBytes setting)")
    assert [c.type for c in asked.content[1:]][:1] == ["diff"]  # then the edit as usual
    assert client.final("e1")["raw_output"] == {"canceled": True, "cancelReason": "rejected"}
    assert (repo / "a.txt").read_text() == "hello world\n"
    assert not client.invalid, client.invalid


async def test_a_client_without_permission_requests_gets_not_undoable(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [{"tool_calls": [{"id": "d1", "name": "delete_file", "arguments": {"path": "a.txt"}}]},
                              {"text": "ok"}])
    client = RecordingClient()

    async def no_such_method(**kwargs: Any) -> Any:
        raise RequestError.method_not_found("session/request_permission")

    client.request_permission = no_such_method  # type: ignore[method-assign]
    settings = {"permissions": {"edits": "auto"}, "checkpointMaxBytes": 4}
    async with await start(client, f"replay:{model}", settings=settings) as (conn, _):
        sid = await open_session(conn, repo)
        await conn.prompt(session_id=sid, prompt=text("delete"))
    final = client.final("d1")
    assert final["status"] == "failed"
    assert final["raw_output"]["error"]["code"] == "not_undoable", final
    assert "allowIrreversible: true" in final["raw_output"]["error"]["message"]
    assert (repo / "a.txt").read_text() == "hello world\n"


async def test_an_empty_answer_fails_the_prompt_saying_so_in_the_errors_message(repo: Path, tmp_path: Path) -> None:
    """ACP has no stop reason for a failed turn: the prompt's JSON-RPC error says why in its
    message (what a client shows) and in data; the session takes the next prompt."""
    model = script(tmp_path, [{"text": ""}, {"text": ""}, {"text": "back"}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo)
        with pytest.raises(RequestError) as info:
            await conn.prompt(session_id=sid, prompt=text("go"))
        assert info.value.code == -32603
        assert str(info.value).startswith("Internal error: the model returned an empty answer: no text and no tool call")
        assert info.value.data == {"stopReason": "error", "message": str(info.value).removeprefix("Internal error: ")}
        assert (await conn.prompt(session_id=sid, prompt=text("again"))).stop_reason == "end_turn"
