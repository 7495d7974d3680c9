"""Checkpoints outlive the server: ``toolwire run`` (a real server that exits) then ``toolwire undo``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import git
from undo_helpers import calls_script, state


def toolwire(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "toolwire", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, cwd=cwd, timeout=120)


def test_undo_after_the_server_exited(repo, tmp_path):
    (repo / "a.txt").write_text("a\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.txt", "old_string": "a", "new_string": "A"}),
        ("create_file", {"path": "b.txt", "content": "b\n"}),
        ("git_commit", {"message": "turn", "paths": ["a.txt", "b.txt"]}),
    ])
    ran = toolwire("run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "yes", "go")
    assert ran.returncode == 0, ran.stderr
    after = state(repo)
    assert after != before

    listed = toolwire("undo", "--workspace", str(repo), "--list")
    assert listed.returncode == 0 and " t1 " in listed.stdout and "undoable" in listed.stdout

    (repo / "b.txt").write_text("b\nmine\n")  # the user's edit after the turn: kept
    changed = state(repo)
    blocked = toolwire("undo", "--workspace", str(repo), "--json")
    result = json.loads(blocked.stdout)
    assert blocked.returncode == 1 and result["status"] == "blocked", result
    assert {p["path"]: p["outcome"] for p in result["paths"]} == {"b.txt": "kept"} and result["git"] == []
    assert "-mine" in result["paths"][0]["diff"]
    assert blocked.stderr == "toolwire undo: nothing was changed; --partial restores the rest, --force PATH overwrites PATH\n"
    assert state(repo) == changed  # bytes, modes, HEAD, refs, index: nothing was changed
    shown = toolwire("undo", "--workspace", str(repo))
    assert shown.returncode == 1 and "Nothing was undone" in shown.stdout and "kept: b.txt" in shown.stdout
    assert state(repo) == changed

    first = toolwire("undo", "--workspace", str(repo), "--partial", "--json")
    result = json.loads(first.stdout)
    assert first.returncode == 1 and result["status"] == "partial", result
    assert {p["path"]: p["outcome"] for p in result["paths"]} == {"a.txt": "restored", "b.txt": "kept"}
    assert (repo / "b.txt").read_text() == "b\nmine\n"

    forced = toolwire("undo", "--workspace", str(repo), "--turn", "t1", "--force", "b.txt")
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "restored: b.txt" in forced.stdout
    assert state(repo) == before

    again = toolwire("undo", "--workspace", str(repo), "--turn", "t1", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["status"] == "nothing_to_do"

    redone = toolwire("undo", "--workspace", str(repo), "--redo", "--json")
    assert redone.returncode == 0 and json.loads(redone.stdout)["status"] == "redone", redone.stdout
    assert state(repo) == after
    assert git(repo, "log", "-1", "--format=%s").strip() == "turn"


def test_undo_usage_errors(repo, tmp_path):
    missing = toolwire("undo", "--workspace", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "not a folder" in missing.stderr
    unknown = toolwire("undo", "--workspace", str(repo), "--turn", "t7")
    assert unknown.returncode == 2 and "no saved turn t7" in unknown.stderr
    nothing = toolwire("undo", "--workspace", str(repo), "--json")
    assert nothing.returncode == 0 and json.loads(nothing.stdout)["status"] == "nothing_to_do"
