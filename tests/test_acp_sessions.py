"""Sessions that survive a restart, over ACP (issue 24, "Sessions that survive a restart").

Real ``toolwire acp`` processes over stdio driven by the ACP SDK's client side, every message
validated against the SDK's schema; each agent gets a state folder of the test's own
(``TOOLWIRE_STATE_DIR``) and this tree's code (``PYTHONPATH``: the SDK's default environment
drops both). A session is loaded by a second agent process after the first exited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, spawn_agent_process
from acp.schema import (
    EmbeddedResourceContentBlock,
    ListSessionsResponse,
    ResumeSessionResponse,
    TextContentBlock,
    TextResourceContents,
)
from acp.transports import default_environment

from test_acp import RESULTS, RecordingClient, initialize, script

SERVER = Path(__file__).resolve().parents[1] / "server"
RESULTS.setdefault("session/list", ListSessionsResponse)
RESULTS.setdefault("session/resume", ResumeSessionResponse)
#: The updates a live turn sends that a load must send again, field by field.
TOLD = ("tool_call", "tool_call_update", "agent_message_chunk", "agent_thought_chunk", "plan")
DELETE = "toolwire/session/delete"


def agent(client: RecordingClient, state: Path, model: str, settings: dict | None = None):
    """``toolwire acp`` with its state in ``state``, running this tree's code."""
    env = {**default_environment(), "TOOLWIRE_STATE_DIR": str(state), "PYTHONPATH": str(SERVER)}
    args = ["-m", "toolwire", "acp", "--model", model, "--log-level", "WARNING"]
    if settings:
        args += ["--settings", json.dumps(settings)]
    return spawn_agent_process(client, sys.executable, *args, env=env, observers=[client.observe])


def told(updates: list[Any]) -> list[dict[str, Any]]:
    return [u.model_dump(mode="json", by_alias=True, exclude_none=True) for u in updates if u.session_update in TOLD]


def thinking_stream(tmp: Path) -> Path:
    """A recorded OpenAI-compatible stream: reasoning, then text."""
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return json.dumps({"id": "x", "object": "chat.completion.chunk", "model": "m",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n"
    path = tmp / "think.jsonl"
    path.write_text(chunk({"role": "assistant", "reasoning_content": "Checking "}) + chunk({"reasoning_content": "the edit."})
                    + chunk({"content": "Done: "}) + chunk({"content": "bye world."}) + chunk({}, "stop"))
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"], ["config", "user.name", "T"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    (root / "a.txt").write_text("hello world\n")
    subprocess.run(["git", "add", "a.txt"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "init"], cwd=root, check=True)
    return root


async def test_a_session_loaded_after_a_restart_shows_what_it_showed_live(repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    thinking_stream(tmp_path)
    first = script(tmp_path, [
        {"tool_calls": [{"id": "p1", "name": "update_plan", "arguments": {"entries": [
            {"content": "Edit a.txt", "status": "in_progress", "priority": "high"}]}}]},
        {"tool_calls": [{"id": "c1", "name": "edit_file",
                         "arguments": {"path": "a.txt", "old_string": "hello", "new_string": "bye"}}]},
        {"tool_calls": [{"id": "c2", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"stream": "think.jsonl"},
    ])
    blocks = [TextContentBlock(type="text", text="Change hello to bye\nin a.txt"),
              EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
                  uri=(repo / "a.txt").as_uri(), text="hello world\n", mime_type="text/plain"))]
    live_client = RecordingClient(answers=["allow_once"])
    async with agent(live_client, state, f"replay:{first}") as (conn, _process):
        await initialize(conn)
        sid = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
        response = await conn.prompt(session_id=sid, prompt=blocks)
        assert response.stop_reason == "end_turn"
        await live_client.wait_for(lambda: any(u.session_update == "session_info_update" and u.title
                                               for u in live_client.updates))
    live = told(live_client.updates)
    assert {u["sessionUpdate"] for u in live} == set(TOLD)  # calls, their outcomes, the plan, thoughts and text
    assert any(c.get("type") == "diff" for u in live for c in u.get("content", []))
    assert (repo / "a.txt").read_text() == "bye world\n"
    (title_update,) = [u for u in live_client.updates if u.session_update == "session_info_update" and u.title]
    assert title_update.title == "Change hello to bye"

    log = tmp_path / "requests.jsonl"
    second = script(tmp_path, [{"text": "Still here."}])
    client = RecordingClient()
    async with agent(client, state, f"replay:{second}", {"replayLog": str(log)}) as (conn, _process):
        init = await initialize(conn)
        caps = init.agent_capabilities.session_capabilities
        assert caps.list is not None and caps.close is not None and caps.resume is not None and caps.fork is None
        (listed,) = (await conn.list_sessions(cwd=str(repo))).sessions
        assert (listed.session_id, listed.cwd, listed.title) == (sid, str(repo.resolve()), "Change hello to bye")
        assert datetime.fromisoformat(listed.updated_at.replace("Z", "+00:00")).tzinfo is not None
        assert listed.field_meta["toolwire"]["turns"] == 1
        assert sid in [s.session_id for s in (await conn.list_sessions()).sessions]  # every folder

        await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
        replayed = list(client.updates)
        assert told(replayed) == live  # field by field: ids, titles, kinds, statuses, locations, content, raw in/out
        user = [u.content.model_dump(mode="json", by_alias=True, exclude_none=True) for u in replayed
                if u.session_update == "user_message_chunk"]
        assert user == [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in blocks]
        assert replayed[0].session_update == "user_message_chunk"
        assert [u.title for u in replayed if u.session_update == "session_info_update" and u.title] == [title_update.title]

        # it goes on: the model gets the saved conversation, undo reads the first turn's checkpoint
        assert (await conn.prompt(session_id=sid, prompt=[TextContentBlock(type="text", text="next")])).stop_reason == "end_turn"
        (request,) = [json.loads(line) for line in log.read_text().splitlines()]
        contents = [m.get("content") for m in request["messages"]]
        assert any(isinstance(c, str) and "Change hello to bye\nin a.txt" in c for c in contents)
        assert [m["tool_call_id"] for m in request["messages"] if m["role"] == "tool"] == ["p1", "c1", "c2"]
        await conn.prompt(session_id=sid, prompt=[TextContentBlock(type="text", text="/undo t1")])
        assert (repo / "a.txt").read_text() == "hello world\n"

        await conn.close_session(session_id=sid)
        with pytest.raises(RequestError):
            await conn.prompt(session_id=sid, prompt=[TextContentBlock(type="text", text="closed?")])
        (listed,) = (await conn.list_sessions(cwd=str(repo))).sessions  # close keeps the file
        assert listed.field_meta["toolwire"]["turns"] == 2
        resumed = await conn.resume_session(cwd=str(repo), session_id=sid, mcp_servers=[])
        assert resumed.modes.current_mode_id == "ask"
        assert await conn.ext_method(DELETE, {"sessionId": sid}) == {"deleted": True}
        assert await conn.ext_method(DELETE, {"sessionId": sid}) == {"deleted": False}
        assert (await conn.list_sessions(cwd=str(repo))).sessions == []
        with pytest.raises(RequestError) as missing:
            await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
        assert missing.value.code == -32002
    assert client.invalid == [] and live_client.invalid == []


async def test_a_session_of_toolwire_run_is_listed_and_loaded_over_acp(repo: Path, tmp_path: Path) -> None:
    state = tmp_path / "state"
    steps = script(tmp_path, [{"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
                              {"text": "It says hello."}])
    env = {**os.environ, "TOOLWIRE_STATE_DIR": str(state), "PYTHONPATH": str(SERVER)}
    ran = subprocess.run([sys.executable, "-m", "toolwire", "run", "--workspace", str(repo), "--model", f"replay:{steps}",
                          "What does a.txt say?"], capture_output=True, text=True, timeout=60, env=env,
                         stdin=subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    client = RecordingClient()
    async with agent(client, state, "replay") as (conn, _process):
        await initialize(conn)
        (listed,) = (await conn.list_sessions(cwd=str(repo))).sessions
        assert listed.title == "What does a.txt say?"
        await conn.load_session(cwd=str(repo), session_id=listed.session_id, mcp_servers=[])
        kinds = [u.session_update for u in client.updates]
        assert kinds[0] == "user_message_chunk" and client.updates[0].content.text == "What does a.txt say?"
        assert client.final("r1")["status"] == "completed" and client.final("r1")["kind"] == "read"
        assert client.final("r1")["raw_input"] == {"path": "a.txt"}
        assert "".join(u.content.text for u in client.updates if u.session_update == "agent_message_chunk") == \
            "It says hello."
    assert client.invalid == []
