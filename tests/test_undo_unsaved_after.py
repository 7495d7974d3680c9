"""A record whose state after a tool was never saved still undoes that path.

The record is saved before a writing tool runs and again after it; when the second
save fails (a full disk) or the server stops while the tool runs, the saved record
holds the path's state before and none after. ``toolwire undo`` (a later process)
took such a path as unchanged and skipped it silently: it reported only the others,
or "changed nothing". Now it compares the file with its state before: back already,
nothing to do; otherwise ``kept`` (it cannot tell the turn's writing from a user's)
until forced; a redo cannot write it (``not_undoable``). Real ``toolwire run`` and
``toolwire undo``; the saved record edited as the failed save leaves it.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import git
from test_undo_cli import toolwire
from undo_helpers import calls_script, state

from toolwire.agent.checkpoint_store import CheckpointStore

NOT_SAVED = "was not saved (the server stopped, or the checkpoint store failed, while the tool ran)"


def lose_after(repo: Path, rel: str) -> None:
    """Rewrite the workspace's one saved record as if the save after the tool of ``rel`` had failed."""
    (path,) = CheckpointStore(repo.resolve()).turns.glob("*.json")
    record = json.loads(path.read_text())
    record["paths"][rel]["after"] = None
    record["paths"][rel]["afterBuffer"] = None
    path.write_text(json.dumps(record))


def test_a_path_whose_state_after_was_not_saved_is_undone(repo, tmp_path):
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.txt", "old_string": "a", "new_string": "A"}),
        ("create_file", {"path": "b.txt", "content": "b\n"}),
    ])
    ran = toolwire("run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "yes", "go")
    assert ran.returncode == 0, ran.stderr
    lose_after(repo, "b.txt")

    blocked = toolwire("undo", "--workspace", str(repo), "--json")
    result = json.loads(blocked.stdout)
    assert blocked.returncode == 1 and result["status"] == "blocked", result
    assert result["paths"] == [{"path": "b.txt", "outcome": "kept", "reason": (
        f"the state the turn left {NOT_SAVED}; name it in force to restore it")}]
    forced = toolwire("undo", "--workspace", str(repo), "--force", "b.txt", "--json")
    result = json.loads(forced.stdout)
    assert forced.returncode == 0 and result["status"] == "undone", result
    assert {p["path"]: p["outcome"] for p in result["paths"]} == {"a.txt": "restored", "b.txt": "restored"}
    assert state(repo) == before

    redone = toolwire("undo", "--workspace", str(repo), "--redo", "--json")
    result = json.loads(redone.stdout)
    assert redone.returncode == 1 and result["status"] == "blocked", result
    assert result["paths"] == [{"path": "b.txt", "outcome": "not_undoable", "reason": f"the state the turn left {NOT_SAVED}"}]
    assert state(repo) == before


def test_a_path_already_back_is_nothing_to_restore(repo, tmp_path):
    script = calls_script(tmp_path / "s.jsonl", [("edit_file", {"path": "hello.txt", "old_string": "hello",
                                                                  "new_string": "bye"})])
    before = state(repo)
    ran = toolwire("run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "yes", "go")
    assert ran.returncode == 0, ran.stderr
    lose_after(repo, "hello.txt")
    (repo / "hello.txt").write_text("hello\n")  # the tool had not written it yet
    undone = toolwire("undo", "--workspace", str(repo), "--json")
    result = json.loads(undone.stdout)
    assert undone.returncode == 0 and result["status"] == "undone", result
    assert state(repo) == before


def test_an_undo_whose_record_cannot_be_saved_says_so(repo, tmp_path, caplog):
    """The undo itself is done; the record it could not save is logged (it was swallowed
    silently, so a later ``toolwire undo --list`` showed the turn as never undone)."""
    import asyncio
    import logging

    from toolwire.agent.checkpoints import TurnCheckpoint
    from toolwire.agent.undo import Restorer
    from toolwire.tools.base import ToolContext

    script = calls_script(tmp_path / "s.jsonl", [("create_file", {"path": "b.txt", "content": "b\n"})])
    ran = toolwire("run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "yes", "go")
    assert ran.returncode == 0, ran.stderr
    store = CheckpointStore(repo.resolve())
    (raw,) = store.records()
    record = TurnCheckpoint.model_validate(raw)
    store.turns.rename(store.folder / "turns.kept")
    store.turns.write_text("not a folder\n")  # the record cannot be written there
    with caplog.at_level(logging.WARNING, logger="toolwire.agent.undo"):
        result = asyncio.run(Restorer(record, ToolContext(root=repo.resolve()), store).run())
    assert result["status"] == "undone" and not (repo / "b.txt").exists(), result
    [warning] = [r for r in caplog.records if r.name == "toolwire.agent.undo"]
    assert warning.getMessage().startswith(f"cannot save the record of turn {record.turn_id} after its undo: ")
