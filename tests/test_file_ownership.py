"""Read-only files are refused and a rewritten file keeps its owner, group, mode and
extended attributes; undo puts the owner back too. Real server over stdio, real files.

CI runs the tests as root, who may write anything: the files here belong to another
user (``nobody``'s ids, 65534) so that losing the owner shows, and "read-only" is the
mode (no write bit at all), which the server refuses even as root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conftest import server_fixture
from undo_helpers import EDITOR_CAPABILITIES, calls_script, make_undo_editor, run_turn, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")

ed = server_fixture("ed", make_undo_editor, EDITOR_CAPABILITIES)

OTHER = 65534  # nobody / nogroup


def needs_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("these tests chown files to another user: run them as root (CI does)")


def owner(path: Path) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


def final_calls(client, sid: str) -> list[dict]:
    return [snaps[-1] for snaps in client.tool_calls(sid).values()]


async def test_an_edit_keeps_owner_group_mode_and_xattrs_and_undo_keeps_the_owner(ed, repo, tmp_path):
    needs_root()
    target = repo / "a.txt"
    target.write_text("one\ntwo\n")
    os.chown(target, OTHER, OTHER)
    os.chmod(target, 0o640)
    os.setxattr(target, "user.origin", b"kept")
    inode = os.stat(target).st_ino
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.txt", "old_string": "two", "new_string": "TWO"})])
    sid, result = await run_turn(ed, repo, script)
    assert [c["status"] for c in final_calls(ed, sid)] == ["done"], final_calls(ed, sid)
    assert target.read_text() == "one\nTWO\n"
    assert os.stat(target).st_ino != inode  # it was replaced (atomic write), not rewritten in place
    assert owner(target) == (OTHER, OTHER, 0o640)
    assert os.getxattr(target, "user.origin") == b"kept"
    done = await undo(ed, sid)
    assert done["status"] == "undone", done
    assert target.read_text() == "one\ntwo\n"
    assert owner(target) == (OTHER, OTHER, 0o640)
    assert os.getxattr(target, "user.origin") == b"kept"


async def test_a_read_only_file_is_refused_and_left_alone(ed, repo, tmp_path):
    needs_root()
    target = repo / "a.txt"
    target.write_text("one\ntwo\n")
    os.chown(target, OTHER, OTHER)
    os.chmod(target, 0o444)
    before = (target.read_bytes(), owner(target), os.stat(target).st_ino)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.txt", "old_string": "two", "new_string": "TWO"}),
        ("create_file", {"path": "a.txt", "content": "overwritten\n", "overwrite": True}),
        ("delete_file", {"path": "a.txt"}),
    ], per_response=3)
    sid, result = await run_turn(ed, repo, script)
    calls = final_calls(ed, sid)
    assert [c["status"] for c in calls] == ["errored"] * 3, calls
    codes = {c["name"]: c["error"]["code"] for c in calls}
    assert codes == {"edit_file": "read_only", "create_file": "read_only", "delete_file": "read_only"}, codes
    edit = next(c for c in calls if c["name"] == "edit_file")
    assert "read-only (mode 0444" in edit["error"]["message"] and "nothing was written" in edit["error"]["message"]
    assert (target.read_bytes(), owner(target), os.stat(target).st_ino) == before
    assert sorted(p.name for p in repo.iterdir()) == [".git", "a.txt", "hello.txt"]  # no temporary file left
