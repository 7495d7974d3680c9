"""Open buffers win: tools read the editor's text and edit it through ``workspace/applyEdit``."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from conftest import new_session, prompt, write_script
from editor import editor_fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")


editor = editor_fixture("editor")


async def test_edit_goes_to_the_open_buffer_not_the_disk(editor, repo, tmp_path):
    disk = b"x = 1\n"
    (repo / "a.py").write_bytes(disk)
    uri = editor.open(repo / "a.py", "x = 1\ny = 2  # unsaved\n", version=5)
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}, "id": "r"}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old_string": "y = 2", "new_string": "y = 3"}, "id": "e"}]},
        {"text": "ok"},
    ])
    sid = await new_session(editor, repo, script)
    result = await prompt(editor, sid)
    assert result["stopReason"] == "end_turn"
    finals = {cid: snaps[-1] for cid, snaps in editor.tool_calls(sid).items()}
    assert "unsaved" in finals["r"]["result"]["content"]  # the tool saw the buffer
    assert finals["e"]["status"] == "done"
    assert editor.buffers[uri] == ("x = 1\ny = 3  # unsaved\n", 6)
    assert (repo / "a.py").read_bytes() == disk  # the disk is the editor's business


async def test_a_refused_workspace_edit_is_reported_as_refused_and_nothing_is_written(editor, repo, tmp_path):
    (repo / "b.py").write_bytes(b"keep\n")
    uri = editor.open(repo / "b.py", "keep\nedit me\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "b.py", "old_string": "edit me", "new_string": "edited"}, "id": "e"}]},
        {"text": "ok"},
    ])
    sid = await new_session(editor, repo, script)
    editor.refuse_edits = "refused by the test"
    try:
        await prompt(editor, sid)
    finally:
        editor.refuse_edits = None
    final = editor.tool_calls(sid)["e"][-1]
    assert final["status"] == "errored" and final["error"]["code"] == "editor_refused"
    assert "refused by the test" in final["error"]["message"]
    assert editor.buffers[uri] == ("keep\nedit me\n", 1)
    assert (repo / "b.py").read_bytes() == b"keep\n"


async def test_typing_between_approval_and_run_makes_the_approved_edit_stale(editor, repo, tmp_path):
    (repo / "c.py").write_bytes(b"")
    uri = editor.open(repo / "c.py", "alpha\nbeta\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "c.py", "old_string": "beta", "new_string": "gamma"}, "id": "e"}]},
        {"text": "ok"},
    ])
    sid = await new_session(editor, repo, script)

    editor.before_permission = lambda params: editor.type_into(uri, "alpha\nbeta\nuser typed this\n")
    try:
        await prompt(editor, sid)
    finally:
        editor.before_permission = None
    final = editor.tool_calls(sid)["e"][-1]
    assert final["status"] == "errored" and final["error"]["code"] == "stale"
    assert editor.buffers[uri][0] == "alpha\nbeta\nuser typed this\n"  # the user's text is untouched


async def test_external_changes_are_reported_and_named_to_the_model_but_our_writes_are_not(editor, repo, tmp_path):
    import json

    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "ours.txt", "content": "mine\n"}, "id": "c"}]},
        {"text": "created"},
        {"text": "noted"},
    ])
    sid = await new_session(editor, repo, script, replayLog=str(log), permissions={"create_file": "auto"})
    await prompt(editor, sid, "create it")
    (repo / "theirs.txt").write_text("user's file\n")  # an external change
    await editor.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "workspace_change"
                          and "theirs.txt" in p["update"]["paths"])
    reported = [p for u in editor.updates[sid] if u["sessionUpdate"] == "workspace_change" for p in u["paths"]]
    assert "ours.txt" not in reported  # our own write is never reported back
    await prompt(editor, sid, "next")
    last = json.loads(log.read_text().splitlines()[-1])
    user = [m for m in last["messages"] if m["role"] == "user"][-1]["content"]
    assert user.startswith("next") and "theirs.txt" in user and "ours.txt" not in user


async def test_files_the_repository_ignores_are_not_reported(editor, repo, tmp_path):
    from conftest import git

    (repo / ".gitignore").write_text("*.log\nout/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore")
    script = write_script(tmp_path / "s.jsonl", [{"text": "ok"}])
    sid = await new_session(editor, repo, script)
    (repo / "server.log").write_text("noise\n")
    (repo / "out").mkdir()
    (repo / "out" / "gen.txt").write_text("built\n")
    (repo / "real.txt").write_text("user\n")
    await editor.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "workspace_change"
                          and "real.txt" in p["update"]["paths"])
    reported = {p for u in editor.updates[sid] if u["sessionUpdate"] == "workspace_change" for p in u["paths"]}
    assert reported == {"real.txt"}


async def test_git_tools_say_which_files_have_unsaved_editor_changes(editor, repo, tmp_path):
    uri = editor.open(repo / "hello.txt", "hello\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "hello.txt", "old_string": "hello", "new_string": "hi"}, "id": "e"}]},
        {"tool_calls": [{"name": "git_diff", "arguments": {}, "id": "d"}]},
        {"text": "ok"},
    ])
    sid = await new_session(editor, repo, script, permissions={"edit_file": "auto"})
    await prompt(editor, sid)
    assert editor.buffers[uri][0] == "hi\n" and (repo / "hello.txt").read_text() == "hello\n"
    diff = editor.tool_calls(sid)["d"][-1]["result"]
    assert "hello.txt has unsaved changes in the editor" in diff["content"]
    assert diff["data"]["unsaved_in_editor"] == ["hello.txt"]


async def test_a_user_edit_right_after_a_git_restore_is_reported_but_the_restore_is_not(editor, repo, tmp_path):
    (repo / "hello.txt").write_text("local change\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "git_restore", "arguments": {"paths": ["hello.txt"]}, "id": "g"}]},
        {"text": "restored"},
    ])
    sid = await new_session(editor, repo, script, permissions={"git_restore": "auto"})
    await prompt(editor, sid)
    assert (repo / "hello.txt").read_text() == "hello\n"
    (repo / "mine.txt").write_text("typed just now\n")  # inside the quiet window of the restore
    await editor.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "workspace_change"
                          and "mine.txt" in p["update"]["paths"])
    reported = {p for u in editor.updates[sid] if u["sessionUpdate"] == "workspace_change" for p in u["paths"]}
    assert reported == {"mine.txt"}
