"""What ``toolwire run`` shows of a list_files or search_files result (README, "toolwire run"):
the first line, how many there are, and under it each note saying what was left out — a
search answering ``[]`` because the only match is in a file kept from the model says so; a
listing cut at ``limit`` says how many more. The rows themselves are not repeated. The real
CLI, a real server, the replay model."""

from __future__ import annotations

from cli_run import run
from conftest import write_script

SCRIPT = [
    {"tool_calls": [
        {"name": "search_files", "arguments": {"query": "TOKEN"}, "id": "s1"},
        {"name": "list_files", "arguments": {"limit": 2}, "id": "l1"},
        {"name": "search_files", "arguments": {"query": "hello"}, "id": "s2"},
        {"name": "list_files", "arguments": {"pattern": "*.txt"}, "id": "l2"},
    ]},
    {"text": "Looked."},
]


def test_notes_of_list_and_search_results_reach_the_terminal(repo, tmp_path):
    (repo / ".env").write_text("TOKEN=kept-from-the-model\n")
    (repo / "a.txt").write_text("hello again\n")
    (repo / "b.txt").write_text("hello there\n")
    done = run(repo, write_script(tmp_path / "s.jsonl", SCRIPT), "--approve", "yes")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("[done] search_files s1 — []")
    assert lines[at + 1] == "    not searched (modelExclude): .env — read_file asks the user"
    at = lines.index("[done] list_files l1 — .env (4 entries)")
    assert lines[at + 1] == "    [2 more not shown; give a pattern (e.g. '*.py') or a subfolder as path, or raise limit]"
    at = lines.index("[done] search_files s2 — a.txt:1: hello again (3 matches in 3 files)")
    assert lines[at + 1] == "    not searched (modelExclude): .env — read_file asks the user"  # in scope
    assert lines[at + 2].startswith("[")  # one line per note, then the next status line
    assert "b.txt:1: hello there" not in done.stdout and "hello.txt:1: hello" not in done.stdout  # rows not repeated
    assert "[done] list_files l2 — a.txt (3 entries)" in lines
    assert "hello.txt" not in done.stdout
    assert "kept-from-the-model" not in done.stdout + done.stderr
