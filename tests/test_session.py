"""Session bookkeeping of external changes: what is reported to the model and what is Toolwire's own."""

from __future__ import annotations

from pathlib import Path

from toolwire.agent import session as session_module
from toolwire.agent.permissions import PermissionPolicy
from toolwire.agent.session import Session
from toolwire.llm.replay import ReplayModel
from toolwire.settings import Settings
from toolwire.tools import default_registry


def make(root: Path) -> Session:
    return Session(root=root, model=ReplayModel(None), registry=default_registry(),
                   policy=PermissionPolicy({}), settings=Settings())


def test_files_are_noted_once_and_folders_never(tmp_path):
    (tmp_path / "docs").mkdir()
    session = make(tmp_path)
    assert session.note_external_changes([tmp_path / "a.py", tmp_path / "docs", Path("/elsewhere/x")]) == ["a.py"]
    note = session.take_external_note()
    assert "a.py" in note and "docs" not in note
    assert session.take_external_note() == ""  # forgotten once told


def test_a_session_is_quiet_while_a_git_tool_rewrites_the_tree_and_shortly_after(tmp_path, monkeypatch):
    session = make(tmp_path)
    clock = [100.0]
    monkeypatch.setattr(session_module.time, "monotonic", lambda: clock[0])
    assert not session.is_quiet()
    session.tree_write_started()
    assert session.is_quiet()
    session.tree_write_finished()
    clock[0] += session_module.QUIET_AFTER / 2
    assert session.is_quiet()
    clock[0] += session_module.QUIET_AFTER
    assert not session.is_quiet()


def test_only_tools_that_rewrite_the_tree_are_flagged():
    flagged = {tool.name for tool in (default_registry().get(n) for n in default_registry().names()) if tool.writes_tree}
    assert flagged == {"git_restore", "git_commit", "git_branch"}


def test_many_changes_are_summarized(tmp_path):
    session = make(tmp_path)
    session.note_external_changes([tmp_path / f"f{i:02}.py" for i in range(30)])
    note = session.take_external_note()
    assert "f00.py" in note and "and 10 more" in note
