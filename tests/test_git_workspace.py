"""Git tools in a workspace that is a sub-folder of a larger repository, and the
git processes each tool starts (issue 10 §3, issue 12 goal 5). Real git, real repos."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitrepos import call, fails, git, init_repo, isolated_git  # noqa: F401 - fixture
from toolwire.tools.gitrepo import GitCache


@pytest.fixture
def mono(tmp_path: Path) -> Path:
    """repo/ with packages/app (the workspace), packages/lib and a root file, all committed."""
    repo = init_repo(tmp_path / "repo")
    for rel in ("packages/app/main.py", "packages/app/src/util.py", "packages/lib/lib.py", "README.md"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"{rel}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "tree")
    return repo


def _change_everywhere(repo: Path) -> Path:
    app = repo / "packages" / "app"
    (app / "main.py").write_text("changed\n")
    (app / "src" / "util.py").write_text("changed\n")
    (app / "new file.txt").write_text("new\n")
    (repo / "packages" / "lib" / "lib.py").write_text("changed outside\n")
    (repo / "outside-new.txt").write_text("n\n")
    return app


async def test_status_speaks_workspace_paths_and_add_takes_them_back(mono: Path) -> None:
    app = _change_everywhere(mono)
    status = await call(app, "git_status")
    data = status.data
    assert data is not None
    assert data["unstaged"] == [{"path": "main.py", "status": "M"}, {"path": "src/util.py", "status": "M"}]
    assert data["untracked"] == ["new file.txt"]
    assert data["workspace_prefix"] == "packages/app/"
    assert "lib.py" not in status.content and "outside-new" not in status.content and "packages/" not in status.content.split("\n", 2)[2]
    printed = [e["path"] for e in data["unstaged"]] + data["untracked"]
    added = await call(app, "git_add", paths=printed)
    assert added.data and sorted(e["path"] for e in added.data["staged"]) == ["main.py", "new file.txt", "src/util.py"]
    assert git(mono, "diff", "--cached", "--name-only").split() == [
        "packages/app/main.py", "packages/app/new", "file.txt", "packages/app/src/util.py"]


async def test_diff_log_show_restore_stay_in_the_workspace(mono: Path) -> None:
    app = _change_everywhere(mono)
    diff = await call(app, "git_diff")
    assert diff.data and [f["path"] for f in diff.data["files"]] == ["main.py", "src/util.py"]
    assert "lib.py" not in diff.content and "a/main.py" in diff.content
    git(mono, "commit", "-q", "-am", "all")  # touches lib.py and the app
    (mono / "packages" / "lib" / "lib.py").write_text("lib only\n")
    git(mono, "commit", "-q", "-am", "lib only")
    log = await call(app, "git_log")
    assert log.data and [c["subject"] for c in log.data["commits"]] == ["all", "tree"]
    by_path = await call(app, "git_log", path="src/util.py")
    assert by_path.data and [c["subject"] for c in by_path.data["commits"]] == ["all", "tree"]
    show = await call(app, "git_show", rev="HEAD~1")
    assert show.data and [f["path"] for f in show.data["files"]] == ["main.py", "src/util.py"]
    assert "lib.py" not in show.data["diff"]
    (app / "main.py").write_text("again\n")
    await call(app, "git_restore", paths=["main.py"])
    assert (app / "main.py").read_text() == "changed\n"
    await fails(app, "git_add", "outside_workspace", paths=["../lib/lib.py"])


async def test_commit_refuses_staged_changes_outside_the_workspace(mono: Path) -> None:
    app = _change_everywhere(mono)
    git(mono, "add", "packages/lib/lib.py")
    err = await fails(app, "git_commit", "staged_outside_workspace", message="x")
    assert "../lib/lib.py" in err.message
    done = await call(app, "git_commit", message="only app", paths=["main.py"])
    assert done.data and done.data["files"] == [{"status": "M", "path": "main.py"}]
    assert git(mono, "diff", "--cached", "--name-only").split() == ["packages/lib/lib.py"]


async def test_git_status_starts_one_git_process_once_facts_are_cached(mono: Path) -> None:
    cache = GitCache()
    cold = await call(mono, "git_status", cache=cache)
    warm = await call(mono, "git_status", cache=cache)
    assert cold.data and cold.data["git_processes"] == 3  # rev-parse and config (side by side), then status
    assert warm.data and warm.data["git_processes"] == 1  # status only
    (mono / "a.txt").write_text("x\n")
    assert (await call(mono, "git_add", cache=cache, paths=["a.txt"])).data["git_processes"] == 2  # type: ignore[index]
    assert (await call(mono, "git_diff", cache=cache, staged=True)).data["git_processes"] == 2  # type: ignore[index]
    assert (await call(mono, "git_log", cache=cache)).data["git_processes"] == 1  # type: ignore[index]
    done = await call(mono, "git_commit", cache=cache, message="m")
    assert done.data and done.data["git_processes"] == 4  # status, conflict-marker check, commit, diff-tree
    git(mono, "config", "core.autocrlf", "false")  # the config changed: the facts are read again
    assert (await call(mono, "git_status", cache=cache)).data["git_processes"] == 3  # type: ignore[index]
    cache.clear()
    assert (await call(mono, "git_status", cache=cache)).data["git_processes"] == 3  # type: ignore[index]


async def test_failures_report_their_process_count_too(mono: Path) -> None:
    err = await fails(mono, "git_show", "unknown_revision", rev="no-such-branch")
    assert err.data and err.data["git_processes"] >= 1


async def test_the_session_clears_its_cache_after_tree_writes_and_watcher_reports(mono: Path) -> None:
    from toolwire.agent.session import Session
    from toolwire.agent.permissions import PermissionPolicy
    from toolwire.llm.replay import ReplayModel
    from toolwire.settings import Settings
    from toolwire.tools import default_registry

    session = Session(root=mono, model=ReplayModel(None), registry=default_registry(), policy=PermissionPolicy(),
                      settings=Settings())
    ctx = session.tool_context()
    assert ctx.git is session.git_cache
    await session.git_cache.facts(mono, 10)
    assert session.git_cache._facts
    session.tree_write_started()
    session.tree_write_finished()
    assert not session.git_cache._facts
    await session.git_cache.facts(mono, 10)
    session.note_external_changes([mono / "a.txt"])
    assert not session.git_cache._facts
