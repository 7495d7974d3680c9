"""Undo a turn's git actions (commit, branch create-and-switch, staging) over the real server, real git."""

from __future__ import annotations

import pytest

from conftest import client, git  # noqa: F401  (client: the module's server)
from undo_helpers import calls_script, outcomes, redo, run_turn, state, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_undo_a_commit_returns_its_changes_and_the_index(client, repo, tmp_path):
    (repo / "staged.txt").write_text("staged by the user\n")
    git(repo, "add", "staged.txt")  # the user's own staged work, committed by the turn
    before = state(repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "hello.txt", "old_string": "hello", "new_string": "hello, world"}),
        ("git_add", {"paths": ["hello.txt"]}),
        ("git_commit", {"message": "greet the world"}),
    ])
    sid, _ = await run_turn(client, repo, script)
    assert git(repo, "rev-parse", "HEAD").strip() != head
    after = state(repo)
    done = await undo(client, sid)
    assert done["status"] == "undone", done
    assert [g["outcome"] for g in done["git"]] == ["restored", "restored"]
    assert done["git"][0]["action"].startswith("commit ") and done["git"][0]["action"].endswith(" on main")
    assert done["git"][1]["action"] == "index entries of hello.txt"
    assert state(repo) == before  # HEAD, index (the user's staged file still staged) and files
    assert git(repo, "status", "--porcelain") == "A  staged.txt\n"
    assert (await redo(client, sid))["status"] == "redone"
    assert state(repo) == after


async def test_undo_a_commit_with_paths(client, repo, tmp_path):
    (repo / "new.txt").write_text("new\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [("git_commit", {"message": "add", "paths": ["new.txt"]})])
    sid, _ = await run_turn(client, repo, script)
    assert "new.txt" in git(repo, "show", "--name-only", "--format=", "HEAD")
    done = await undo(client, sid)
    assert done["status"] == "undone", done
    assert state(repo) == before


async def test_undo_branch_create_and_switch(client, repo, tmp_path):
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("git_branch", {"action": "create", "name": "feature"}),
        ("create_file", {"path": "feature.txt", "content": "f\n"}),
        ("git_commit", {"message": "feature", "paths": ["feature.txt"]}),
    ])
    sid, _ = await run_turn(client, repo, script)
    assert git(repo, "branch", "--show-current").strip() == "feature"
    done = await undo(client, sid)
    assert done["status"] == "undone", done
    assert [g["action"].split()[0] for g in done["git"]] == ["commit", "index", "create"]
    assert state(repo) == before  # back on main, branch feature gone, file gone
    assert (await redo(client, sid))["status"] == "redone"
    assert git(repo, "branch", "--show-current").strip() == "feature"
    assert (repo / "feature.txt").read_text() == "f\n"
    assert git(repo, "status", "--porcelain") == ""


async def test_undo_staging_and_unstaging(client, repo, tmp_path):
    (repo / "hello.txt").write_text("changed\n")
    (repo / "other.txt").write_text("other\n")
    git(repo, "add", "other.txt")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("git_add", {"paths": ["hello.txt"]}),
        ("git_restore", {"paths": ["other.txt"], "staged": True}),
    ])
    sid, _ = await run_turn(client, repo, script)
    assert git(repo, "status", "--porcelain") == "M  hello.txt\n?? other.txt\n"
    done = await undo(client, sid)
    assert done["status"] == "undone", done
    assert state(repo) == before
    assert git(repo, "status", "--porcelain") == " M hello.txt\nA  other.txt\n"


async def test_undo_git_restore_brings_back_discarded_changes(client, repo, tmp_path):
    (repo / "hello.txt").write_text("precious unstaged work\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [("git_restore", {"paths": ["."]})])
    sid, _ = await run_turn(client, repo, script)
    assert (repo / "hello.txt").read_text() == "hello\n"
    done = await undo(client, sid)
    assert done["status"] == "undone" and outcomes(done) == {"hello.txt": "restored"}, done
    assert state(repo) == before


async def test_head_moved_since_the_commit_is_not_undone(client, repo, tmp_path):
    script = calls_script(tmp_path / "s.jsonl", [
        ("create_file", {"path": "a.txt", "content": "a\n"}),
        ("git_commit", {"message": "a", "paths": ["a.txt"]}),
    ])
    sid, _ = await run_turn(client, repo, script)
    turn_commit = git(repo, "rev-parse", "HEAD").strip()
    (repo / "mine.txt").write_text("mine\n")
    git(repo, "add", "mine.txt")
    git(repo, "commit", "-q", "-m", "the user's commit")
    user_commit = git(repo, "rev-parse", "HEAD").strip()
    moved = state(repo)
    blocked = await undo(client, sid)
    assert blocked["status"] == "blocked", blocked
    assert {g["action"]: g["outcome"] for g in blocked["git"]} == {
        f"commit {turn_commit[:7]} on main": "not_undoable", "index entries of a.txt": "not_undoable"}
    assert outcomes(blocked) == {"a.txt": "not_undoable"}
    assert "Send partial: true to undo the rest." in blocked["message"], blocked
    assert state(repo) == moved
    done = await undo(client, sid, partial=True)
    assert done["status"] == "partial", done
    commit = next(g for g in done["git"] if g["action"].startswith("commit"))
    assert commit["outcome"] == "not_undoable"
    assert "main moved since" in commit["reason"] and turn_commit[:7] in commit["reason"]
    assert git(repo, "rev-parse", "HEAD").strip() == user_commit  # nothing guessed
    assert (repo / "mine.txt").read_text() == "mine\n"
    # the file the turn created and committed stays, as the commit that stays has it
    assert outcomes(done) == {"a.txt": "not_undoable"}
    assert done["paths"][0]["reason"] == f"it is in commit {turn_commit[:7]}, which stays (main moved since)"
    assert (repo / "a.txt").read_text() == "a\n"
    assert git(repo, "status", "--porcelain") == ""


async def test_switched_away_since_the_branch_was_created(client, repo, tmp_path):
    script = calls_script(tmp_path / "s.jsonl", [("git_branch", {"action": "create", "name": "topic"})])
    sid, _ = await run_turn(client, repo, script)
    git(repo, "switch", "-q", "main")
    blocked = await undo(client, sid)
    assert blocked["status"] == "blocked" and blocked["paths"] == [], blocked
    assert [g["action"] for g in blocked["git"]] == ["create and switch to branch topic"]
    done = await undo(client, sid, partial=True)
    assert done["status"] == "partial"
    assert done["git"] == [{"action": "create and switch to branch topic", "outcome": "not_undoable",
                            "reason": "HEAD is now on branch main at " + git(repo, "rev-parse", "--short=7", "HEAD").strip()}]
    assert git(repo, "branch", "--list", "topic").strip() == "topic"
