"""A change that leaves a file over the checkpoint size limit is undone like any other.

The turn records the prior state of every path (small here), and the state it left
only to tell at undo time that the file is still exactly that. A file the tool made
larger than ``checkpointMaxBytes`` (create_file with a long content, an edit that
grows a file, git_restore bringing back a big file) was recorded ``unknown``: the
call ended ``done`` unasked (its prior state was recordable) and undo then answered
not_undoable. Now its digest is kept without its bytes: undo restores it; redo,
which would need those bytes, is blocked and says why, changing nothing.
The real server over stdio, real git.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git
from test_irreversible import BIG, LIMIT, silent, turn  # noqa: F401 - silent: the module's server fixture
from undo_helpers import calls_script, redo, state, undo

from toolwire.agent.checkpoint_probe import size_text

pytestmark = pytest.mark.asyncio(loop_scope="module")

AUTO = {"edits": "auto", "git": "auto"}

CASES = [
    ("create_file", {"path": "new.txt", "content": BIG}, "new.txt"),
    ("create_file", {"path": "s.txt", "content": BIG, "overwrite": True}, "s.txt"),
    ("edit_file", {"path": "s.txt", "old_string": "small", "new_string": BIG}, "s.txt"),
    ("multi_edit", {"path": "s.txt", "edits": [{"old_string": "small", "new_string": BIG}]}, "s.txt"),
    ("git_restore", {"paths": ["gone.txt"]}, "gone.txt"),
]


@pytest.mark.parametrize(("tool", "args", "path"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
async def test_a_file_left_over_the_limit_is_undone(silent, tmp_path, tool, args, path):  # noqa: F811
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "s.txt").write_text("small\n")
    (root / "gone.txt").write_text(BIG)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    (root / "gone.txt").unlink()  # deleted in the work tree: git_restore brings 2.3 KiB back
    before = state(root)
    script = calls_script(tmp_path / "s.jsonl", [(tool, args)])
    sid, calls = await turn(silent, root, script, permissions=AUTO, checkpointMaxBytes=LIMIT)
    assert calls["c0"]["status"] == "done", calls
    left = state(root)
    assert (root / path).stat().st_size > LIMIT

    done = await undo(silent, sid)
    assert done["status"] == "undone", done
    assert [(p["path"], p["outcome"]) for p in done["paths"]] == [(path, "restored")]
    assert state(root) == before

    again = await redo(silent, sid)
    assert again["status"] == "blocked", again
    size = size_text(len(left["tree"][path][1]))  # 2.3 KiB, or 2.4 with the edit's line
    assert again["paths"] == [{"path": path, "outcome": "not_undoable", "reason": (
        f"its content was not kept: {size} is over the 1 KiB checkpoint limit (the checkpointMaxBytes setting)")}]
    assert state(root) == before and state(root) != left


async def test_a_file_the_turn_left_over_the_limit_and_changed_since_is_kept(silent, tmp_path):  # noqa: F811
    root = tmp_path / "ws"
    root.mkdir()
    script = calls_script(tmp_path / "s.jsonl", [("create_file", {"path": "new.txt", "content": BIG})])
    sid, calls = await turn(silent, root, script, permissions=AUTO, checkpointMaxBytes=LIMIT)
    assert calls["c0"]["status"] == "done", calls
    (root / "new.txt").write_text(BIG + "mine\n")
    blocked = await undo(silent, sid)
    assert blocked["status"] == "blocked" and blocked["paths"][0]["outcome"] == "kept", blocked
    assert (root / "new.txt").read_text() == BIG + "mine\n"
