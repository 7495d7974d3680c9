"""Undo a whole turn's file changes over the real server (stdio), on real files in real git repositories."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from conftest import git, server_fixture, write_script
from undo_helpers import EDITOR_CAPABILITIES, calls_script, make_undo_editor, outcomes, redo, run_turn, state, tree, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")

ed = server_fixture("ed", make_undo_editor, EDITOR_CAPABILITIES)


async def test_undo_create_edit_multi_edit_delete_rename_in_one_turn(ed, repo, tmp_path):
    (repo / "edit.txt").write_text("one\ntwo\nthree\n")
    (repo / "multi.txt").write_text("alpha\nbeta\ngamma\n")
    (repo / "gone.txt").write_text("delete me\n")
    (repo / "old.txt").write_text("move me\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("create_file", {"path": "new/deep/made.txt", "content": "fresh\n"}),
        ("edit_file", {"path": "edit.txt", "old_string": "two", "new_string": "TWO"}),
        ("multi_edit", {"path": "multi.txt", "edits": [{"old_string": "alpha", "new_string": "A"},
                                                         {"old_string": "gamma", "new_string": "G"}]}),
        ("delete_file", {"path": "gone.txt"}),
        ("rename_file", {"path": "old.txt", "new_path": "moved/new.txt"}),
    ], per_response=5)
    sid, result = await run_turn(ed, repo, script)
    assert result["stopReason"] == "end_turn"
    assert {c[-1]["status"] for c in ed.tool_calls(sid).values()} == {"done"}
    after = state(repo)
    assert after != before
    turns = [u for u in ed.updates[sid] if u["sessionUpdate"] == "turn"]
    assert {u["turnId"] for u in turns} == {"t1"}
    snap = await ed.call("toolwire/session/snapshot", {"sessionId": sid})
    assert [{k: t[k] for k in ("turnId", "stopReason", "undoable", "undone")} for t in snap["turns"]] == [
        {"turnId": "t1", "stopReason": "end_turn", "undoable": True, "undone": False}]

    done = await undo(ed, sid)
    assert done["turnId"] == "t1" and done["status"] == "undone", done
    assert outcomes(done) == {p: "restored" for p in (
        "new/deep/made.txt", "edit.txt", "multi.txt", "gone.txt", "old.txt", "moved/new.txt")}
    assert done["git"] == []
    assert state(repo) == before  # bytes, modes, folders the turn created, git state
    snap = await ed.call("toolwire/session/snapshot", {"sessionId": sid})
    assert [{k: t[k] for k in ("turnId", "stopReason", "undoable", "undone")} for t in snap["turns"]] == [
        {"turnId": "t1", "stopReason": "end_turn", "undoable": False, "undone": True}]

    again = await undo(ed, sid, turnId="t1")
    assert again["status"] == "nothing_to_do" and again["paths"] == [] and "already undone" in again["message"]
    assert state(repo) == before

    back = await redo(ed, sid)
    assert back["status"] == "redone" and back["turnId"] == "t1", back
    assert state(repo) == after
    assert (await redo(ed, sid, turnId="t1"))["status"] == "nothing_to_do"


async def test_binary_crlf_bom_and_executable_bit_come_back_exactly(ed, repo, tmp_path):
    blob = bytes(range(256)) * 4
    (repo / "image.bin").write_bytes(blob)
    (repo / "win.txt").write_bytes(b"\xef\xbb\xbfline one\r\nline two\r\n")
    (repo / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(repo / "run.sh", 0o755)
    (repo / "tool.sh").write_bytes(b"#!/bin/sh\nexit 0\n")
    os.chmod(repo / "tool.sh", 0o750)
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("delete_file", {"path": "image.bin"}),
        ("edit_file", {"path": "win.txt", "old_string": "line two", "new_string": "line 2\nline 3"}),
        ("edit_file", {"path": "run.sh", "old_string": "echo hi", "new_string": "echo bye"}),
        ("delete_file", {"path": "tool.sh"}),
    ])
    sid, _ = await run_turn(ed, repo, script)
    assert (repo / "win.txt").read_bytes() == b"\xef\xbb\xbfline one\r\nline 2\r\nline 3\r\n"
    assert not (repo / "image.bin").exists()
    done = await undo(ed, sid)
    assert done["status"] == "undone", done
    assert state(repo) == before
    assert os.stat(repo / "tool.sh").st_mode & 0o777 == 0o750


async def test_unsaved_open_buffer_is_restored_through_the_editor(ed, repo, tmp_path):
    (repo / "a.py").write_bytes(b"x = 1\n")
    uri = ed.open(repo / "a.py", "x = 1\ny = 2  # unsaved\n", version=3)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.py", "old_string": "y = 2", "new_string": "y = 3"})])
    sid, _ = await run_turn(ed, repo, script)
    assert ed.buffers[uri] == ("x = 1\ny = 3  # unsaved\n", 4)
    done = await undo(ed, sid)
    assert done["status"] == "undone" and outcomes(done) == {"a.py": "restored"}, done
    assert ed.buffers[uri] == ("x = 1\ny = 2  # unsaved\n", 5)  # a new, versioned edit
    assert (repo / "a.py").read_bytes() == b"x = 1\n"  # the disk was never touched
    # the user types again after the redo: the next undo keeps their text
    assert (await redo(ed, sid))["status"] == "redone"
    assert ed.buffers[uri][0] == "x = 1\ny = 3  # unsaved\n"
    ed.type_into(uri, "x = 1\ny = 3  # unsaved\nz = 9\n")
    kept = await undo(ed, sid)
    assert kept["status"] == "blocked" and outcomes(kept) == {"a.py": "kept"}
    assert "+y = 2  # unsaved" in kept["paths"][0]["diff"] and "-z = 9" in kept["paths"][0]["diff"]
    assert ed.buffers[uri][0] == "x = 1\ny = 3  # unsaved\nz = 9\n"
    forced = await undo(ed, sid, force=["a.py"])
    assert forced["status"] == "undone"
    assert ed.buffers[uri][0] == "x = 1\ny = 2  # unsaved\n"
    ed.close(uri)


async def test_a_file_the_user_edited_afterwards_is_kept_until_forced(ed, repo, tmp_path):
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.txt", "old_string": "a", "new_string": "A"}),
        ("edit_file", {"path": "b.txt", "old_string": "b", "new_string": "B"}),
    ])
    sid, _ = await run_turn(ed, repo, script)
    (repo / "a.txt").write_text("A\nmine\n")  # the user's own edit after the turn
    changed = state(repo)
    blocked = await undo(ed, sid)
    assert blocked["status"] == "blocked" and outcomes(blocked) == {"a.txt": "kept"}, blocked
    assert blocked["paths"][0]["reason"] == "changed since the turn" and "-mine" in blocked["paths"][0]["diff"]
    assert blocked["message"] == (
        "Nothing was undone: 1 change(s) of turn t1 cannot be undone as they are: a.txt (changed since the turn). "
        "Send partial: true to undo the rest, or force for the paths to overwrite.")
    assert state(repo) == changed  # planned first: b.txt was not touched either
    done = await undo(ed, sid, partial=True)
    assert done["status"] == "partial"
    assert outcomes(done) == {"a.txt": "kept", "b.txt": "restored"}
    kept = next(p for p in done["paths"] if p["path"] == "a.txt")
    assert kept["reason"] == "changed since the turn"
    assert "-mine" in kept["diff"] and "+a" in kept["diff"]
    assert "a.txt" in done["message"] and "force" in done["message"]
    assert (repo / "a.txt").read_text() == "A\nmine\n"  # nothing the user did is lost
    assert (repo / "b.txt").read_text() == "b\n"
    snap = await ed.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snap["turns"][0]["undoable"] is True  # a.txt still waits

    again = await undo(ed, sid, turnId="t1")  # b.txt is not undone twice; a.txt still kept
    assert again["status"] == "blocked" and outcomes(again) == {"a.txt": "kept"}
    forced = await undo(ed, sid, turnId="t1", force=["a.txt"])
    assert forced["status"] == "undone" and outcomes(forced) == {"a.txt": "restored"}
    assert (repo / "a.txt").read_text() == "a\n"
    assert (await undo(ed, sid, turnId="t1"))["status"] == "nothing_to_do"


async def test_a_created_file_the_user_deleted_is_simply_gone(ed, repo, tmp_path):
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [("create_file", {"path": "notes/new.md", "content": "x\n"})])
    sid, _ = await run_turn(ed, repo, script)
    (repo / "notes" / "new.md").unlink()
    done = await undo(ed, sid)
    assert done["status"] == "undone" and outcomes(done) == {"notes/new.md": "restored"}
    assert state(repo) == before  # the folder the turn made is gone too


async def test_a_second_session_editing_the_same_file_is_not_overwritten(ed, repo, tmp_path):
    (repo / "shared.txt").write_text("v1\n")
    first = calls_script(tmp_path / "one.jsonl", [("edit_file", {"path": "shared.txt", "old_string": "v1", "new_string": "v2"})])
    second = calls_script(tmp_path / "two.jsonl", [("edit_file", {"path": "shared.txt", "old_string": "v2", "new_string": "v3"})])
    sid1, _ = await run_turn(ed, repo, first)
    sid2, _ = await run_turn(ed, repo, second)
    done = await undo(ed, sid1)
    assert done["status"] == "blocked" and outcomes(done) == {"shared.txt": "kept"}
    assert (repo / "shared.txt").read_text() == "v3\n"
    assert "-v3" in done["paths"][0]["diff"] and "+v1" in done["paths"][0]["diff"]
    # undoing the second session's turn first, then the first one, goes all the way back
    assert (await undo(ed, sid2))["status"] == "undone"
    assert (await undo(ed, sid1))["status"] == "undone"
    assert (repo / "shared.txt").read_text() == "v1\n"


async def test_errors_and_defaults(ed, repo, tmp_path):
    script = calls_script(tmp_path / "s.jsonl", [("read_file", {"path": "hello.txt"})])
    sid, _ = await run_turn(ed, repo, script)
    nothing = await undo(ed, sid)
    assert nothing == {"turnId": None, "status": "nothing_to_do", "paths": [], "git": [], "unmatchedForce": [],
                       "notUndone": [], "message": "There is no turn with changes to undo in this session."}
    assert (await undo(ed, sid, turnId="t1"))["status"] == "nothing_to_do"
    with pytest.raises(Exception, match="turnId"):
        await undo(ed, sid, turnId="t9")
    with pytest.raises(Exception, match="unknown session"):
        await undo(ed, "nope")
    with pytest.raises(Exception, match="force"):
        await ed.call("toolwire/session/undoTurn", {"sessionId": sid, "force": "a.txt"})
    assert tree(repo)["hello.txt"][1] == b"hello\n"
    assert git(repo, "status", "--porcelain") == ""


async def test_no_undo_while_the_session_runs_a_turn(ed, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "x.txt", "content": "x\n"}}]},
        {"text": "done"},
        {"text": "a slow second answer, word by word", "chunk_size": 1, "delay": 0.2},
    ])
    sid, _ = await run_turn(ed, repo, script)
    running = asyncio.ensure_future(ed.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "again"}))
    await ed.wait_for(lambda p: p["sessionId"] == sid and p["update"].get("turnId") == "t2")
    with pytest.raises(Exception, match="a turn is running"):
        await undo(ed, sid)
    ed.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    assert (await running)["stopReason"] == "cancelled"
    assert (await undo(ed, sid))["status"] == "undone"  # t2 changed nothing: t1 is the last to undo
    assert not (repo / "x.txt").exists()


async def test_a_folder_that_is_not_a_repository(ed, tmp_path):
    root = tmp_path / "plain"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_bytes(b"a\r\n")
    (root / "target.txt").write_text("t\n")
    os.symlink("target.txt", root / "link")
    before = state_tree = tree(root)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "sub/a.txt", "old_string": "a", "new_string": "b"}),
        ("delete_file", {"path": "link"}),
        ("create_file", {"path": "c/d.txt", "content": "d\n"}),
        ("git_add", {"paths": ["."]}),  # fails: not a repository; nothing recorded for it
    ])
    sid, _ = await run_turn(ed, root, script)
    assert not os.path.lexists(root / "link") and (root / "c" / "d.txt").exists()
    done = await undo(ed, sid)
    assert done["status"] == "undone" and done["git"] == [], done
    assert tree(root) == before == state_tree
    assert os.readlink(root / "link") == "target.txt"


async def test_a_workspace_in_a_sub_folder_of_the_repository(ed, repo, tmp_path):
    app = repo / "packages" / "app"
    app.mkdir(parents=True)
    (app / "main.py").write_text("x = 1\n")
    (app / "notes.txt").write_text("n\n")
    (repo / "outside.txt").write_text("o\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    (app / "notes.txt").write_text("unstaged work\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "main.py", "old_string": "x = 1", "new_string": "x = 2"}),
        ("git_add", {"paths": ["main.py"]}),
        ("git_commit", {"message": "app change", "paths": ["main.py"]}),
        ("git_restore", {"paths": ["notes.txt"]}),
    ])
    sid, _ = await run_turn(ed, app, script)
    assert (app / "notes.txt").read_text() == "n\n"
    assert git(repo, "log", "-1", "--format=%s").strip() == "app change"
    done = await undo(ed, sid)
    assert done["status"] == "undone", done
    assert outcomes(done) == {"main.py": "restored", "notes.txt": "restored"}
    assert state(repo) == before, done
