"""Undo and redo plan before they act (issue 19): every path and git action is checked
first; when one would be ``kept`` or ``not_undoable`` nothing is changed (status
``blocked``) unless ``partial``. The real server over stdio, real files and git."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from conftest import client, git  # noqa: F401 - client: the module's server fixture
from undo_helpers import calls_script, outcomes, redo, run_turn, state, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_redo_is_planned_too(client, repo, tmp_path):  # noqa: F811
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.txt", "old_string": "a", "new_string": "A"}),
        ("edit_file", {"path": "b.txt", "old_string": "b", "new_string": "B"}),
        ("git_commit", {"message": "turn", "paths": ["a.txt", "b.txt"]}),
    ])
    sid, _ = await run_turn(client, repo, script)
    after = state(repo)
    assert (await undo(client, sid))["status"] == "undone"
    (repo / "b.txt").write_text("b\nmine\n")  # the user's edit after the undo
    changed = state(repo)
    blocked = await redo(client, sid)
    assert blocked["status"] == "blocked" and outcomes(blocked) == {"b.txt": "kept"} and blocked["git"] == [], blocked
    assert blocked["message"].startswith("Nothing was redone: 1 change(s) of turn t1 cannot be redone as they are: b.txt")
    assert "Send partial: true to redo the rest" in blocked["message"]
    assert state(repo) == changed  # the commit was not made again, a.txt not touched
    part = await redo(client, sid, partial=True)
    assert part["status"] == "partial" and outcomes(part) == {"a.txt": "restored", "b.txt": "kept"}, part
    assert [g["outcome"] for g in part["git"]] == ["restored", "restored"]  # index entries, commit
    assert (repo / "b.txt").read_text() == "b\nmine\n"
    forced = await redo(client, sid, force=["b.txt"])
    assert forced["status"] == "redone", forced
    assert state(repo) == after


async def test_a_blocked_git_action_blocks_the_files_too(client, repo, tmp_path):  # noqa: F811
    """HEAD moved on another branch since the turn's branch switch: nothing is undone,
    not even the file the turn created, until partial."""
    git(repo, "branch", "topic")
    script = calls_script(tmp_path / "s.jsonl", [
        ("create_file", {"path": "new.txt", "content": "n\n"}),
        ("git_branch", {"action": "switch", "name": "topic"}),
    ])
    sid, _ = await run_turn(client, repo, script)
    git(repo, "switch", "-q", "main")
    moved = state(repo)
    blocked = await undo(client, sid)
    assert blocked["status"] == "blocked" and blocked["paths"] == [], blocked
    assert [(g["action"], g["outcome"]) for g in blocked["git"]] == [("switch from main to branch topic", "not_undoable")]
    assert "HEAD is now on branch main" in blocked["git"][0]["reason"]
    assert blocked["message"].endswith("Send partial: true to undo the rest.")
    assert state(repo) == moved and (repo / "new.txt").exists()
    part = await undo(client, sid, partial=True)
    assert part["status"] == "partial" and outcomes(part) == {"new.txt": "restored"}, part
    assert not (repo / "new.txt").exists()


async def test_redo_takes_no_rewind(client, repo, tmp_path):  # noqa: F811
    script = calls_script(tmp_path / "s.jsonl", [("create_file", {"path": "x.txt", "content": "x\n"})])
    sid, _ = await run_turn(client, repo, script)
    assert (await undo(client, sid))["status"] == "undone"
    with pytest.raises(JsonRpcInvalidParams, match="rewind"):
        await redo(client, sid, rewind=True)
    assert not (repo / "x.txt").exists()


async def test_a_damaged_checkpoint_blocks_the_undo_before_anything_is_written(client, repo, tmp_path):  # noqa: F811
    """Found beyond the issue's inputs: a checkpoint content missing or damaged in the store
    (pruned, disk trouble) made the undo restore the files before it and fail on that one."""
    from toolwire.agent.checkpoint_store import CheckpointStore
    from toolwire.workspace.digest import sha256_hex

    (repo / "a.txt").write_text("a\n")
    (repo / "z.txt").write_text("z before\n")
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.txt", "old_string": "a", "new_string": "A"}),
        ("edit_file", {"path": "z.txt", "old_string": "before", "new_string": "after"}),
    ])
    sid, _ = await run_turn(client, repo, script)
    (CheckpointStore(repo).objects / sha256_hex(b"z before\n")).write_bytes(b"damaged")
    changed = state(repo)
    blocked = await undo(client, sid)
    assert blocked["status"] == "blocked" and outcomes(blocked) == {"z.txt": "not_undoable"}, blocked
    assert "is damaged" in blocked["paths"][0]["reason"]
    assert state(repo) == changed  # a.txt (sorted first) was not restored either
    part = await undo(client, sid, partial=True)
    assert outcomes(part) == {"a.txt": "restored", "z.txt": "not_undoable"}, part
    assert (repo / "a.txt").read_text() == "a\n" and (repo / "z.txt").read_text() == "z after\n"
