"""Repository states beyond the happy path (issue 10 §3): merges, rebases, cherry-picks,
reverts and am in progress, conflict markers, submodules, worktrees, sparse checkouts,
core.autocrlf. Real git on temporary repositories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitrepos import call, fails, git, init_repo, isolated_git  # noqa: F401 - fixture

MARKERS = "<<<<<<< HEAD\nmain\n=======\nother\n>>>>>>> other\n"


def _diverge(repo: Path) -> None:
    """Branches main and other that both change a.txt."""
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("other\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("main\n")
    git(repo, "commit", "-q", "-am", "main")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


@pytest.mark.parametrize(
    ("start", "op", "code"),
    [
        (["merge", "other"], "merge", "merge_in_progress"),
        (["cherry-pick", "other"], "cherry-pick", "operation_in_progress"),
        (["rebase", "other"], "rebase", "operation_in_progress"),
    ],
)
async def test_conflicted_operation_in_progress(repo: Path, start: list[str], op: str, code: str) -> None:
    _diverge(repo)
    subprocess.run(["git", *start], cwd=repo, capture_output=True)
    status = await call(repo, "git_status")
    assert status.data and status.data["in_progress"] == [op]
    assert status.data["conflicted"] == [{"path": "a.txt", "status": "UU"}]
    assert f"A {op} is in progress" in status.content
    await fails(repo, "git_commit", "merge_conflict" if op != "rebase" else "rebase_in_progress", message="m")
    await fails(repo, "git_branch", code, action="switch", name="other")


async def test_a_commit_never_records_staged_conflict_markers_silently(repo: Path) -> None:
    _diverge(repo)
    subprocess.run(["git", "merge", "other"], cwd=repo, capture_output=True)
    assert "<<<<<<<" in (repo / "a.txt").read_text()
    await call(repo, "git_add", paths=["a.txt"])  # "resolved" with the markers still in
    status = await call(repo, "git_status")
    assert status.data and status.data["conflicted"] == [] and status.data["merge_in_progress"]
    err = await fails(repo, "git_commit", "conflict_markers", message="merge")
    assert err.data and [m["line"] for m in err.data["markers"]] == [1, 3, 5]
    assert "a.txt:1" in err.message
    assert git(repo, "rev-parse", "MERGE_HEAD").strip()  # nothing was committed: still merging
    done = await call(repo, "git_commit", message="merge", allow_conflict_markers=True)
    assert done.data and done.data["concluded"] == "merge"
    assert [m["path"] for m in done.data["conflict_markers"]] == ["a.txt", "a.txt", "a.txt"]
    assert "records conflict markers" in done.content
    assert len(git(repo, "log", "-1", "--format=%P").split()) == 2


async def test_markers_staged_by_the_user_outside_a_merge_are_caught_too(repo: Path) -> None:
    (repo / "a.txt").write_text(MARKERS)
    git(repo, "add", "a.txt")
    await fails(repo, "git_commit", "conflict_markers", message="x")
    (repo / "b.txt").write_text(MARKERS)
    await fails(repo, "git_commit", "conflict_markers", message="x", paths=["b.txt"])
    assert git(repo, "status", "--porcelain") == "M  a.txt\n?? b.txt\n"  # the index is as it was


async def test_resolved_merge_concludes_with_a_commit_and_partial_commit_is_refused(repo: Path) -> None:
    _diverge(repo)
    subprocess.run(["git", "merge", "other"], cwd=repo, capture_output=True)
    (repo / "a.txt").write_text("both\n")
    await call(repo, "git_add", paths=["a.txt"])
    await fails(repo, "git_commit", "merge_in_progress", message="m", paths=["a.txt"])
    done = await call(repo, "git_commit", message="merge")
    assert done.data and done.data["concluded"] == "merge" and "concludes the merge" in done.content
    assert (await call(repo, "git_status")).data["in_progress"] == []  # type: ignore[index]


async def test_cherry_pick_and_revert_conclude_with_a_commit(repo: Path) -> None:
    _diverge(repo)
    subprocess.run(["git", "cherry-pick", "other"], cwd=repo, capture_output=True)
    (repo / "a.txt").write_text("picked\n")
    await call(repo, "git_add", paths=["a.txt"])
    await fails(repo, "git_commit", "operation_in_progress", message="p", paths=["a.txt"])
    done = await call(repo, "git_commit", message="picked")
    assert done.data and done.data["concluded"] == "cherry-pick"
    (repo / "a.txt").write_text("later\n")
    git(repo, "commit", "-q", "-am", "later")
    subprocess.run(["git", "revert", "--no-edit", "HEAD~1"], cwd=repo, capture_output=True)
    assert (await call(repo, "git_status")).data["in_progress"] == ["revert"]  # type: ignore[index]


async def test_am_and_bisect_are_reported(repo: Path) -> None:
    _diverge(repo)
    patch = subprocess.run(["git", "format-patch", "-1", "--stdout", "other"], cwd=repo, capture_output=True).stdout
    subprocess.run(["git", "am"], cwd=repo, input=patch, capture_output=True)
    status = await call(repo, "git_status")
    assert status.data and status.data["in_progress"] == ["am"] and status.data["rebase_in_progress"]
    await fails(repo, "git_commit", "rebase_in_progress", message="x")
    git(repo, "am", "--abort")
    git(repo, "bisect", "start")
    assert (await call(repo, "git_status")).data["in_progress"] == ["bisect"]  # type: ignore[index]


async def test_submodule_changes_are_named_and_paths_inside_are_refused_clearly(tmp_path: Path) -> None:
    lib = init_repo(tmp_path / "lib")
    repo = init_repo(tmp_path / "repo")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vendor/lib")
    git(repo, "commit", "-q", "-m", "submodule")
    sub = repo / "vendor" / "lib"
    (sub / "a.txt").write_text("changed in the submodule\n")
    (sub / "new.txt").write_text("n\n")
    status = await call(repo, "git_status")
    assert status.data and status.data["unstaged"] == [
        {"path": "vendor/lib", "status": "M", "submodule": {"commit": False, "modified": True, "untracked": True}}]
    assert "vendor/lib (submodule: modified content, untracked content)" in status.content
    err = await fails(repo, "git_add", "in_submodule", paths=["vendor/lib/a.txt"])
    assert "submodule" in err.message
    git(sub, "-c", "user.name=a", "-c", "user.email=b", "commit", "-q", "-am", "inside")
    status = await call(repo, "git_status")
    assert status.data and status.data["unstaged"][0]["submodule"]["commit"] is True
    await call(repo, "git_add", paths=["vendor/lib"])
    assert (await call(repo, "git_commit", message="bump lib")).data["files"] == [  # type: ignore[index]
        {"status": "M", "path": "vendor/lib"}]
    inside = await call(sub, "git_status")  # a workspace inside the submodule speaks for the submodule
    assert inside.data and inside.data["ahead"] == 1 and inside.data["untracked"] == ["new.txt"]


async def test_linked_worktree_has_its_own_state(repo: Path, tmp_path: Path) -> None:
    _diverge(repo)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt), "main")
    subprocess.run(["git", "merge", "other"], cwd=wt, capture_output=True)
    in_wt = await call(wt, "git_status")
    assert in_wt.data and in_wt.data["branch"] == "side" and in_wt.data["in_progress"] == ["merge"]
    assert (await call(repo, "git_status")).data["in_progress"] == []  # type: ignore[index]
    (wt / "a.txt").write_text("resolved\n")
    await call(wt, "git_add", paths=["a.txt"])
    done = await call(wt, "git_commit", message="merge in worktree")
    assert done.data and done.data["branch"] == "side" and done.data["concluded"] == "merge"
    err = await fails(wt, "git_branch", "git_failed", action="switch", name="main")
    assert "main" in err.message and "worktree" in err.message


async def test_sparse_checkout(repo: Path) -> None:
    for rel in ("in/x.txt", "out/y.txt"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(f"{rel}\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "two folders")
    git(repo, "sparse-checkout", "set", "in")
    assert not (repo / "out").exists()
    status = await call(repo, "git_status")
    assert status.data and status.data["sparse_checkout"] and status.data["clean"]  # absent files are not "deleted"
    (repo / "out").mkdir()
    (repo / "out" / "y.txt").write_text("new\n")
    await fails(repo, "git_add", "outside_sparse_checkout", paths=["out/y.txt"])


@pytest.mark.parametrize("autocrlf", ["true", "input"])
async def test_autocrlf_edit_shows_only_the_changed_line(repo: Path, autocrlf: str) -> None:
    git(repo, "config", "core.autocrlf", autocrlf)
    (repo / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    git(repo, "add", "crlf.txt")
    git(repo, "commit", "-q", "-m", "crlf")
    if autocrlf == "true":  # a checkout on this setting writes CRLF
        (repo / "crlf.txt").unlink()
        git(repo, "checkout", "--", "crlf.txt")
    assert (await call(repo, "git_status")).data["clean"]  # type: ignore[index]
    await call(repo, "edit_file", path="crlf.txt", old_string="two", new_string="TWO")
    assert (repo / "crlf.txt").read_bytes() == b"one\r\nTWO\r\nthree\r\n"
    diff = await call(repo, "git_diff")
    assert diff.data and diff.data["files"] == [
        {"path": "crlf.txt", "added": 1, "removed": 1, "binary": False, "lockfile": False, "truncated": False,
         "omitted": False}]
    assert "-two\n+TWO\n" in diff.content and "\r" not in diff.content
