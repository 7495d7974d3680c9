"""``toolwire run``: the headless client as a user runs it (a subprocess, real server, real git)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import git, write_script

TOOLWIRE = [sys.executable, "-m", "toolwire"]


def run(workspace: Path, script: Path, *flags: str, prompt: str = "do it") -> subprocess.CompletedProcess:
    return subprocess.run(
        [*TOOLWIRE, "run", "--workspace", str(workspace), "--model", f"replay:{script}", *flags, prompt],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )


def final_calls(lines: list[dict]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for params in lines:
        update = params.get("update", {})
        if update.get("sessionUpdate") == "tool_call":
            out[update["toolCall"]["toolCallId"]] = update["toolCall"]
    return out


EDIT_AND_COMMIT = [
    {"tool_calls": [{"name": "edit_file", "arguments": {"path": "hello.txt", "old_string": "hello", "new_string": "goodbye"}, "id": "e1"}]},
    {"tool_calls": [{"name": "create_file", "arguments": {"path": "docs/new file é.md", "content": "# new\n"}, "id": "c1"}]},
    {"tool_calls": [{"name": "git_commit", "arguments": {"message": "Say goodbye", "paths": ["hello.txt", "docs/new file é.md"]}, "id": "g1"}]},
    {"text": "Committed."},
]


def test_json_output_and_a_real_commit_with_approve_yes(repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", EDIT_AND_COMMIT)
    done = run(repo, script, "--json", "--approve", "yes")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert set(lines[-1]) == {"stopReason", "usage"} and lines[-1]["stopReason"] == "end_turn"
    assert all(set(p) == {"sessionId", "update"} for p in lines[:-1])
    calls = final_calls(lines[:-1])
    assert {cid: c["status"] for cid, c in calls.items()} == {"e1": "done", "c1": "done", "g1": "done"}
    for cid in ("e1", "c1"):  # no editor to ask: an edit's result names no problems, not even "not checked"
        assert "diagnostics" not in calls[cid]["result"]["data"] and "problem" not in calls[cid]["result"]["content"]
    assert (repo / "hello.txt").read_text() == "goodbye\n"
    assert git(repo, "log", "-1", "--format=%s").strip() == "Say goodbye"
    assert git(repo, "show", "--name-only", "--format=", "-z", "HEAD").split("\0")[:2] == ["docs/new file é.md", "hello.txt"]
    assert git(repo, "status", "--porcelain") == ""


def test_approve_no_leaves_the_workspace_unchanged(repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", EDIT_AND_COMMIT)
    before = git(repo, "rev-parse", "HEAD")
    done = run(repo, script, "--json", "--approve", "no")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    calls = final_calls(lines[:-1])
    assert {c["status"] for c in calls.values()} == {"canceled"}
    assert {c["cancelReason"] for c in calls.values()} == {"rejected"}
    assert (repo / "hello.txt").read_text() == "hello\n"
    assert not (repo / "docs").exists()
    assert git(repo, "rev-parse", "HEAD") == before
    assert git(repo, "status", "--porcelain") == ""


def test_human_output_shows_each_status_change(repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r1"}]},
        {"text": "Done."},
    ])
    done = run(repo, script, "--approve", "no")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for status in ("generating", "generated", "calling", "done"):
        assert f"[{status}] read_file r1" in out
    assert out.index("[generating]") < out.index("[calling]") < out.index("[done]")
    assert "Reading." in out and out.rstrip().endswith("stop reason: end_turn")


def test_bad_model_spec_is_a_usage_error(repo, tmp_path):
    done = run(repo, tmp_path / "missing.jsonl", "--json")
    assert done.returncode == 2
    assert "missing.jsonl" in done.stderr


def test_ctrl_c_cancels_the_turn_prints_everything_and_exits_130(repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "slow.txt", "content": "y" * 2000}, "id": "slow"}],
         "chunk_size": 2, "delay": 0.01},
    ])
    proc = subprocess.Popen(
        [*TOOLWIRE, "run", "--workspace", str(repo), "--model", f"replay:{script}", "--json", "--approve", "yes", "go"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        start_new_session=True,  # its own process group, like a job in a terminal
    )
    assert proc.stdout is not None
    lines = []
    for raw in proc.stdout:  # wait for the call to start streaming, then interrupt
        lines.append(json.loads(raw))
        if lines[-1].get("update", {}).get("sessionUpdate") == "tool_call":
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole group
            break
    rest, err = proc.communicate(timeout=30)
    lines += [json.loads(line) for line in rest.splitlines()]
    assert proc.returncode == 130, err
    assert lines[-1]["stopReason"] == "cancelled"
    final = final_calls(lines[:-1])["slow"]
    assert final["status"] == "canceled" and final["cancelReason"] == "turn_cancelled"
    assert not (repo / "slow.txt").exists()


def test_settings_and_a_relative_script_path(repo, tmp_path):
    import os as _os

    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r"}]}, {"text": "ok"}])
    log = tmp_path / "requests.jsonl"
    done = subprocess.run(
        [*TOOLWIRE, "run", "--workspace", str(repo), "--model", "replay:s.jsonl", "--json",
         "--settings", json.dumps({"replayLog": str(log)}), "go"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(requests) == 2 and requests[1]["messages"][-1]["tool_call_id"] == "r"
    bad = run(repo, script, "--settings", "[1]")
    assert bad.returncode == 2 and "JSON object" in bad.stderr
