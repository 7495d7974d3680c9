"""A git tool that fails before or around git (a refused path, no git at all) ends that call
``errored`` with the tool's own error; its sibling calls and the turn go on.

Through ``toolwire run`` as a user runs it: a subprocess, the real server, real git.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import git, write_script

TOOLWIRE = [sys.executable, "-m", "toolwire"]


def run(workspace: Path, script: Path, env: dict[str, str] | None = None) -> tuple[dict[str, dict], dict]:
    done = subprocess.run(
        [*TOOLWIRE, "run", "--workspace", str(workspace), "--model", f"replay:{script}", "--json", "--approve", "yes",
         "go"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines and "stopReason" in lines[-1], done.stderr
    calls: dict[str, dict] = {}
    for params in lines[:-1]:
        update = params.get("update", {})
        if update.get("sessionUpdate") == "tool_call":
            calls[update["toolCall"]["toolCallId"]] = update["toolCall"]
    return calls, lines[-1]


@pytest.mark.parametrize("tool, arguments", [
    ("git_restore", {"paths": ["../outside.txt"]}),
    ("git_add", {"paths": ["/etc/passwd"]}),
    ("git_commit", {"message": "m", "paths": ["../outside.txt"]}),
    ("git_add", {"paths": ["hello.txt", "~/x"]}),
])
def test_a_refused_git_path_fails_the_call_not_the_turn(repo, tmp_path, tool, arguments):
    head = git(repo, "rev-parse", "HEAD")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": tool, "arguments": arguments, "id": "g1"},
                        {"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r1"}]},
        {"text": "done"}])
    calls, end = run(repo, script)
    assert end["stopReason"] == "end_turn"
    assert calls["r1"]["status"] == "done"
    assert calls["g1"]["status"] == "errored", calls["g1"]
    error = calls["g1"]["error"]
    assert error["code"] in ("outside_workspace", "invalid_path"), error
    assert "internal error" not in error["message"] and "ExceptionGroup" not in error["message"]
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "status", "--porcelain") == ""


def test_without_git_the_git_tools_say_git_is_missing(repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "git_status", "arguments": {}, "id": "s1"}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "hello.txt", "old_string": "hello",
                                                             "new_string": "bye"}, "id": "e1"}]},
        {"tool_calls": [{"name": "git_commit", "arguments": {"message": "m", "paths": ["hello.txt"]}, "id": "c1"},
                        {"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r1"}]},
        {"text": "done"}])
    env = {**os.environ, "PATH": str(tmp_path / "no-git-here")}
    calls, end = run(repo, script, env)
    assert end["stopReason"] == "end_turn"
    assert calls["e1"]["status"] == "done" and calls["r1"]["status"] == "done"
    for cid in ("s1", "c1"):
        assert calls[cid]["status"] == "errored", calls[cid]
        assert calls[cid]["error"]["code"] == "git_missing", calls[cid]["error"]
        assert calls[cid]["error"]["message"] == "git is not installed or not on PATH"
