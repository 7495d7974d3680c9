"""Over the real server and the openai SDK against a local endpoint: a repository with a
modified Latin-1 file name (issue 10 §3). git_status's result reaches the model as valid
Unicode in git's quoted form, the name goes back into git_add, and later prompts of the
session keep working; a sub-folder workspace gets workspace-relative paths."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import git
from endpoint import FakeEndpoint, chat_body

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT = 15.0
LATIN1 = os.fsdecode(b"caf\xe9.txt")


async def _session(client: Any, root: Path, endpoint: FakeEndpoint) -> str:
    params = {"cwd": str(root), "model": "openai:test-model",
              "settings": {"baseUrl": endpoint.base_url, "apiKey": "test", "permissions": {"git": "auto"}}}
    return (await client.call("toolwire/session/new", params))["sessionId"]


async def _prompt(client: Any, sid: str, text: str) -> dict[str, Any]:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    return await asyncio.wait_for(client.protocol.send_request_async("toolwire/session/prompt", params), WAIT)


def _tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def _results(client: Any, sid: str) -> dict[str, dict[str, Any]]:
    return {cid: snaps[-1]["result"] for cid, snaps in client.tool_calls(sid).items() if snaps[-1].get("result")}


async def test_a_latin1_name_never_poisons_the_session(client: Any, tmp_path: Path) -> None:
    repo = tmp_path / "ws"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / LATIN1).write_bytes(b"one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    (repo / LATIN1).write_bytes(b"two\n")
    script = [
        (200, chat_body({"tool_calls": [{"name": "git_status", "arguments": {}, "id": "call_status"}]}, 1)),
        (200, chat_body({"tool_calls": [{"name": "git_add", "arguments": {"paths": ['"caf\\351.txt"']},
                                         "id": "call_add"}]}, 2)),
        (200, chat_body({"text": "Staged."}, 3)),
        (200, chat_body({"text": "Still fine."}, 4)),
    ]
    with FakeEndpoint(script) as endpoint:
        sid = await _session(client, repo, endpoint)
        first = await _prompt(client, sid, "stage my change")
        second = await _prompt(client, sid, "and now?")
    assert first["stopReason"] == "end_turn", first
    assert second["stopReason"] == "end_turn", second
    assert len(endpoint.requests) == 4
    for request in endpoint.requests:
        json.dumps(request, ensure_ascii=False).encode("utf-8")  # no lone surrogate ever went out
    status_text = _tool_messages(endpoint.requests[1])[0]
    assert 'M "caf\\351.txt"' in status_text
    results = _results(client, sid)
    assert results["call_status"]["data"]["unstaged"] == [{"path": '"caf\\351.txt"', "status": "M"}]
    assert results["call_add"]["ok"], results["call_add"]
    staged = subprocess.run(["git", "diff", "--cached", "--name-only", "-z"], cwd=repo, capture_output=True, check=True)
    assert staged.stdout == b"caf\xe9.txt\x00"


async def test_a_sub_folder_workspace_over_the_protocol(client: Any, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    app = repo / "packages" / "app"
    app.mkdir(parents=True)
    (repo / "other").mkdir()
    git(repo, "init", "-q", "-b", "main")
    (app / "main.py").write_text("one\n")
    (repo / "other" / "x.py").write_text("x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    (app / "main.py").write_text("two\n")
    (repo / "other" / "x.py").write_text("y\n")
    script = [
        (200, chat_body({"tool_calls": [{"name": "git_status", "arguments": {}, "id": "call_status"}]}, 1)),
        (200, chat_body({"tool_calls": [{"name": "git_add", "arguments": {"paths": ["main.py"]}, "id": "call_add"}]}, 2)),
        (200, chat_body({"tool_calls": [{"name": "git_status", "arguments": {}, "id": "call_again"}]}, 3)),
        (200, chat_body({"text": "Done."}, 4)),
    ]
    with FakeEndpoint(script) as endpoint:
        sid = await _session(client, app, endpoint)
        result = await _prompt(client, sid, "stage")
    assert result["stopReason"] == "end_turn", result
    results = _results(client, sid)
    assert results["call_status"]["data"]["unstaged"] == [{"path": "main.py", "status": "M"}]
    assert "x.py" not in results["call_status"]["content"]
    assert results["call_add"]["ok"], results["call_add"]
    assert results["call_again"]["data"]["staged"] == [{"path": "main.py", "status": "M"}]
    # the facts are cached within the turn (git_add changes only the index and keeps
    # them), so the first git_status pays for them and the second is one process
    assert results["call_status"]["data"]["git_processes"] == 3
    assert results["call_again"]["data"]["git_processes"] == 1
    assert git(repo, "diff", "--cached", "--name-only").split() == ["packages/app/main.py"]
