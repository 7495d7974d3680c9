"""``toolwire run`` and changes that cannot be undone (issue 19, section 1): ``--approve yes``
rejects them, the question on a terminal opens with why, ``allowIrreversible`` lets the
policy run them. A subprocess as a user runs it, a real server, real files and git."""

from __future__ import annotations

import json
import os
from pathlib import Path

from cli_run import final_calls, on_a_terminal, read_question, run
from conftest import git, write_script

from toolwire.agent.checkpoint_store import CheckpointStore

AUTO = {"permissions": {"edits": "auto", "git": "auto"}}
BIG = 70 * 1024 * 1024
WHY_BIG = "This change cannot be undone: big.bin: 70 MiB is over the 64 MiB checkpoint limit (the checkpointMaxBytes setting)"


def big_file(root: Path) -> Path:
    with open(root / "big.bin", "wb") as fh:
        fh.truncate(BIG)  # sparse: 70 MB that take no disk
    return root / "big.bin"


DELETE_BIG = [{"tool_calls": [{"name": "delete_file", "arguments": {"path": "big.bin"}, "id": "d1"}]}, {"text": "Done."}]


def test_approve_yes_rejects_a_70_mb_delete_even_under_an_auto_policy(repo, tmp_path):
    big = big_file(repo)
    done = run(repo, write_script(tmp_path / "s.jsonl", DELETE_BIG), "--json", "--approve", "yes", "--settings", json.dumps(AUTO))
    assert done.returncode == 0, done.stderr
    call = final_calls(done.stdout)["d1"]
    assert (call["status"], call["cancelReason"]) == ("canceled", "rejected"), call
    assert f"delete_file rejected: {WHY_BIG} (--approve yes never allows such a change" in done.stderr, done.stderr
    assert big.stat().st_size == BIG


def test_approve_yes_runs_it_with_allow_irreversible(repo, tmp_path):
    big = big_file(repo)
    settings = {**AUTO, "allowIrreversible": True}
    done = run(repo, write_script(tmp_path / "s.jsonl", DELETE_BIG), "--json", "--approve", "yes", "--settings", json.dumps(settings))
    assert done.returncode == 0, done.stderr
    assert final_calls(done.stdout)["d1"]["status"] == "done"
    assert not big.exists()


def test_approve_yes_rejects_a_commit_when_the_store_cannot_be_written(repo, tmp_path):
    (repo / "hello.txt").write_text("changed\n")
    head = git(repo, "rev-parse", "HEAD")
    folder = CheckpointStore(repo.resolve()).folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("a file where the checkpoint folder goes\n")
    try:
        script = write_script(tmp_path / "s.jsonl", [
            {"tool_calls": [{"name": "git_commit", "arguments": {"message": "m", "paths": ["hello.txt"]}, "id": "g1"}]},
            {"text": "Done."}])
        done = run(repo, script, "--json", "--approve", "yes")
    finally:
        folder.unlink()
    call = final_calls(done.stdout)["g1"]
    assert call["cancelReason"] == "rejected", call
    assert "git_commit rejected: This change cannot be undone: the checkpoint store cannot be written (" in done.stderr
    assert git(repo, "rev-parse", "HEAD") == head


def test_the_question_on_a_terminal_opens_with_why(repo, tmp_path):
    big_file(repo)
    with on_a_terminal(repo, write_script(tmp_path / "s.jsonl", DELETE_BIG)) as (proc, master):
        question = read_question(proc)
        assert question[0] == WHY_BIG, question
        assert question[1] == "Allow delete_file? big.bin"
        os.write(master, b"n\n")
        assert proc.wait(timeout=60) == 0
    assert (repo / "big.bin").stat().st_size == BIG
