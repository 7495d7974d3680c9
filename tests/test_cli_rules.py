"""``toolwire run`` names the project rules files the model is given (issue 21, "Project rules"):
``[rules] AGENTS.md (1.2 KB)`` once the session is open, and a line for a nested ``AGENTS.md``
when a call reads it; and the turn's plan as a checklist after each update_plan call. Real
subprocesses, a real server, the replay model."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import write_script

TOOLWIRE = [sys.executable, "-m", "toolwire"]


def run(repo, script, *extra: str) -> subprocess.CompletedProcess:
    args = [*TOOLWIRE, "run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "no", *extra, "go"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return done


def test_run_prints_a_rules_line_per_file(repo, tmp_path):
    (repo / "AGENTS.md").write_text("r" * 1228 + "\n")  # 1229 bytes: 1.2 KB
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").write_text("sub rules\n")
    (repo / "sub" / "a.txt").write_text("a\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "sub/a.txt"}, "id": "r1"}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "sub/a.txt"}, "id": "r2"}]},
        {"text": "done"}])
    out = run(repo, script).stdout
    lines = out.splitlines()
    assert lines[0] == "[rules] AGENTS.md (1.2 KB)"  # before the turn's output
    assert lines.count("[rules] AGENTS.md (1.2 KB)") == 1
    assert lines.count("[rules] sub/AGENTS.md (10 B)") == 1  # once, though the list is sent whole
    assert lines.index("[rules] sub/AGENTS.md (10 B)") < lines.index("[done] read_file r1 sub/a.txt — a")


def test_a_cut_file_says_so_and_none_is_no_line(repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [{"text": "done"}])
    assert "[rules]" not in run(repo, script).stdout
    (repo / "CLAUDE.md").write_text("c" * 40_000)
    assert run(repo, script).stdout.splitlines()[0] == "[rules] CLAUDE.md (39.1 KB, cut to fit 32 KB)"
    off = run(repo, script, "--settings", json.dumps({"projectInstructions": False})).stdout
    assert "[rules]" not in off


def test_run_prints_the_plan_as_a_checklist_each_time_it_changes(repo, tmp_path):
    first = [{"content": "Read hello", "status": "in_progress", "priority": "high"},
             {"content": "Say hi\u202e", "status": "pending", "priority": "low"}]
    second = [{**first[0], "status": "completed"}, {**first[1], "status": "in_progress"}]
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "update_plan", "arguments": {"entries": first}, "id": "p1"}]},
        {"tool_calls": [{"name": "update_plan", "arguments": {"entries": second}, "id": "p2"}]},
        {"text": "done"}])
    lines = run(repo, script).stdout.splitlines()
    at = lines.index("[done] update_plan p1 — Plan updated: 2 steps (1 in progress, 1 pending).")
    assert lines[at + 1:at + 4] == ["[plan] 0 of 2 completed", "    [>] Read hello (high)", "    [ ] Say hi\\u202e"]
    at = lines.index("[done] update_plan p2 — Plan updated: 2 steps (1 completed, 1 in progress).")
    assert lines[at + 1:at + 4] == ["[plan] 1 of 2 completed", "    [x] Read hello (high)", "    [>] Say hi\\u202e"]
