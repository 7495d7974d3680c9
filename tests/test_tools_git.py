"""Git tools against real repositories in tmp_path, with the git binary."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolwire.tools import default_registry
from toolwire.tools.base import ToolContext, ToolError, ToolResult, validate_arguments
from toolwire.tools.gitinfo import parse_status
from toolwire.tools.gitrun import run_git

REG = default_registry()


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or system git config: the fallback identity is exercised."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    return root


async def call(root: Path, tool_name: str, /, timeout: float = 20.0, **arguments: Any) -> ToolResult:
    tool = REG.get(tool_name)
    assert tool is not None
    return await tool.run(validate_arguments(tool, arguments), ToolContext(root, git_timeout=timeout))


async def fails(root: Path, tool_name: str, code: str, /, **arguments: Any) -> ToolError:
    with pytest.raises(ToolError) as err:
        await call(root, tool_name, **arguments)
    assert err.value.code == code, err.value.message
    return err.value


async def test_status_reports_every_kind(repo: Path) -> None:
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    (repo / "a.txt").write_text("changed\n")
    (repo / "new file ä.txt").write_text("n\n")
    result = await call(repo, "git_status")
    data = result.data
    assert data is not None
    assert data["branch"] == "main" and not data["detached"] and not data["unborn"]
    assert data["staged"] == [{"path": "b.txt", "status": "A"}]
    assert data["unstaged"] == [{"path": "a.txt", "status": "M"}]
    assert data["untracked"] == ["new file ä.txt"]
    assert "Untracked:\n  new file ä.txt" in result.content


async def test_status_staged_rename(repo: Path) -> None:
    git(repo, "mv", "a.txt", "b c.txt")
    data = (await call(repo, "git_status")).data
    assert data and data["renamed"] == [{"path": "b c.txt", "from": "a.txt", "where": "staged"}]
    assert data["staged"] == [{"path": "b c.txt", "status": "R", "from": "a.txt"}]


async def test_status_rename_and_conflict_parsing() -> None:
    raw = (
        b"# branch.oid abc\x00# branch.head feature\x00# branch.upstream origin/feature\x00# branch.ab +2 -3\x00"
        b"2 R. N... 100644 100644 100644 h1 h2 R100 new name.txt\x00old name.txt\x00"
        b"u UU N... 100644 100644 100644 100644 h1 h2 h3 both.txt\x00? un tracked\x00"
    )
    status = parse_status(raw)
    assert (status.branch, status.upstream, status.ahead, status.behind) == ("feature", "origin/feature", 2, 3)
    assert status.staged == [{"path": "new name.txt", "status": "R", "from": "old name.txt"}]
    assert status.renamed == [{"path": "new name.txt", "from": "old name.txt", "where": "staged"}]
    assert status.conflicted == [{"path": "both.txt", "status": "UU"}]
    assert status.untracked == ["un tracked"]


async def test_status_detached_and_unborn(repo: Path, tmp_path: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    data = (await call(repo, "git_status")).data
    assert data and data["detached"] and data["branch"] is None
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "trunk")
    result = await call(fresh, "git_status")
    assert result.data and result.data["unborn"] and result.data["branch"] == "trunk"
    assert result.content.startswith("On branch trunk (no commits yet)")
    await fails(fresh, "git_log", "unborn_head")


async def test_not_a_repository(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (tmp_path / "ceiling").mkdir()
    os.environ["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    try:
        for name in ("git_status", "git_log", "git_diff"):
            await fails(plain, name, "not_a_repository")
    finally:
        del os.environ["GIT_CEILING_DIRECTORIES"]


async def test_diff_unstaged_staged_and_ref(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    result = await call(repo, "git_diff")
    assert "-one\n+two\n" in result.content
    assert result.data and result.data["files"][0]["path"] == "a.txt"
    assert (await call(repo, "git_diff", staged=True)).content == "No staged changes."
    git(repo, "commit", "-q", "-am", "second")
    by_ref = await call(repo, "git_diff", ref="HEAD~1")
    assert "-one\n+two\n" in by_ref.content
    by_range = await call(repo, "git_diff", ref="HEAD~1..HEAD", paths=["a.txt"])
    assert "-one\n+two\n" in by_range.content


async def test_diff_summarizes_binary_and_lockfiles_and_caps(repo: Path) -> None:
    (repo / "img.png").write_bytes(b"\x89PNG\x00\x01\x02")
    (repo / "package-lock.json").write_text("{\n" + "".join(f'  "k{i}": {i},\n' for i in range(50)) + "}\n")
    (repo / "big.txt").write_text("".join(f"line {i}\n" for i in range(5000)))
    git(repo, "add", ".")
    result = await call(repo, "git_diff", staged=True)
    assert "Binary file img.png changed (diff omitted)" in result.content
    assert "Lockfile package-lock.json (+52 -0) changed (diff omitted)" in result.content
    assert "[diff of big.txt truncated:" in result.content
    assert result.data and result.data["truncated"] is True
    assert len(result.content) < 60_000


async def test_diff_ignores_repository_external_diff_and_textconv(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\necho EVIL\n")
    script.chmod(0o755)
    git(repo, "config", "diff.external", str(script))
    git(repo, "config", "diff.evil.textconv", str(script))
    (repo / ".gitattributes").write_text("*.txt diff=evil\n")
    (repo / "a.txt").write_text("two\n")
    result = await call(repo, "git_diff")
    assert "EVIL" not in result.content and "+two" in result.content
    assert not marker.exists()


async def test_revisions_are_validated(repo: Path) -> None:
    await fails(repo, "git_diff", "invalid_revision", ref="--output=/tmp/x")
    await fails(repo, "git_show", "invalid_revision", rev="-p")
    await fails(repo, "git_show", "unknown_revision", rev="nope")
    await fails(repo, "git_log", "unknown_revision", ref="nope")


async def test_log_and_show(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    git(repo, "commit", "-q", "-am", "second\n\nbody line")
    log = await call(repo, "git_log", max_count=5)
    assert log.data and [c["subject"] for c in log.data["commits"]] == ["second", "first"]
    only = await call(repo, "git_log", max_count=1, path="a.txt")
    assert only.data and len(only.data["commits"]) == 1
    show = await call(repo, "git_show", rev="HEAD")
    assert show.data and show.data["message"] == "second\n\nbody line" and show.data["author"] == "Dev"
    assert "    body line" in show.content and "+two" in show.content


async def test_add_restore_and_commit_with_fallback_identity(repo: Path) -> None:
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    (repo / "dir with space").mkdir()
    (repo / "dir with space" / "ünï.txt").write_text("x\n")
    added = await call(repo, "git_add", paths=["dir with space/ünï.txt"])
    assert added.data and added.data["staged"] == [{"path": "dir with space/ünï.txt", "status": "A"}]
    result = await call(repo, "git_commit", message="add file")
    assert result.data is not None
    assert result.data["files"] == [{"status": "A", "path": "dir with space/ünï.txt"}]
    assert git(repo, "log", "-1", "--format=%an <%ae>").strip() == "Toolwire <toolwire@localhost>"
    assert result.data["commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert result.content.startswith(f"Committed {result.data['short']} on main: add file")


async def test_commit_uses_repo_identity_when_configured(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    await call(repo, "git_commit", message="msg", paths=["a.txt"])
    assert git(repo, "log", "-1", "--format=%an").strip() == "Dev"


async def test_commit_only_named_paths(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    (repo / "b.txt").write_text("b\n")
    git(repo, "add", "b.txt")
    (repo / "c.txt").write_text("c\n")
    await call(repo, "git_commit", message="only c", paths=["c.txt"])
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["c.txt"]
    assert "A  b.txt" in git(repo, "status", "--short")


async def test_nothing_to_commit_lists_unstaged(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    (repo / "u.txt").write_text("u\n")
    err = await fails(repo, "git_commit", "nothing_to_commit", message="x")
    assert "modified but unstaged: a.txt" in err.message and "untracked: u.txt" in err.message
    with pytest.raises(Exception):
        validate_arguments(REG.get("git_commit"), {"message": "   "})  # type: ignore[arg-type]


async def test_commit_refused_on_detached_head(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach")
    (repo / "a.txt").write_text("two\n")
    git(repo, "add", "a.txt")
    err = await fails(repo, "git_commit", "detached_head", message="x")
    assert err.message == "HEAD is detached; switch to a branch (git_branch) before committing"
    # a session whose requests do not offer git_branch (a small maxTools): the text does not name it
    tool = REG.get("git_commit")
    assert tool is not None
    offered = frozenset(REG.names()) - {"git_branch"}
    with pytest.raises(ToolError) as left_out:
        await tool.run(validate_arguments(tool, {"message": "x"}), ToolContext(repo, extra={"offered": offered}))
    assert left_out.value.message == "HEAD is detached; switch to a branch before committing"


async def test_merge_in_progress(repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "a.txt").write_text("other\n")
    git(repo, "commit", "-q", "-am", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "a.txt").write_text("main\n")
    git(repo, "commit", "-q", "-am", "main")
    subprocess.run(["git", "merge", "other"], cwd=repo, capture_output=True)
    status = await call(repo, "git_status")
    assert status.data and status.data["merge_in_progress"] and status.data["conflicted"][0]["path"] == "a.txt"
    await fails(repo, "git_commit", "merge_conflict", message="m")
    await fails(repo, "git_branch", "merge_in_progress", action="switch", name="other")


async def test_branch_list_create_switch(repo: Path) -> None:
    created = await call(repo, "git_branch", action="create", name="feature/x")
    assert created.content == "Created and switched to branch feature/x"
    assert git(repo, "branch", "--show-current").strip() == "feature/x"
    await fails(repo, "git_branch", "exists", action="create", name="feature/x")
    await fails(repo, "git_branch", "not_found", action="switch", name="nope")
    await fails(repo, "git_branch", "invalid_branch", action="create", name="bad..name")
    await call(repo, "git_branch", action="switch", name="main")
    listed = await call(repo, "git_branch", action="list")
    assert listed.data and [b["name"] for b in listed.data["branches"]] == ["feature/x", "main"]
    assert "* main" in listed.content
    with pytest.raises(Exception):
        validate_arguments(REG.get("git_branch"), {"action": "switch", "name": "-f"})  # type: ignore[arg-type]


async def test_restore_staged_and_worktree(repo: Path) -> None:
    (repo / "a.txt").write_text("two\n")
    git(repo, "add", "a.txt")
    await call(repo, "git_restore", paths=["a.txt"], staged=True)
    assert git(repo, "status", "--short") == " M a.txt\n"
    await call(repo, "git_restore", paths=["a.txt"])
    assert (repo / "a.txt").read_text() == "one\n"
    await fails(repo, "git_add", "outside_workspace", paths=["../x"])


def test_flags_and_no_destructive_tools() -> None:
    flags = {n: (REG.get(n).read_only, REG.get(n).barrier) for n in REG.names() if n.startswith("git_")}  # type: ignore[union-attr]
    assert flags["git_status"] == flags["git_diff"] == flags["git_log"] == flags["git_show"] == (True, False)
    assert flags["git_commit"] == (False, True) and flags["git_branch"] == (False, True)
    assert flags["git_add"] == flags["git_restore"] == (False, False)
    assert not {"git_reset", "git_clean", "git_push"} & set(REG.names())


def _hook(repo: Path, fifo: Path) -> None:
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nexec 3>'{fifo}'\necho $$ >&3\nexec sleep 60\n")
    hook.chmod(0o755)


async def _read_until_eof(fd: int) -> bytes:
    data = b""
    while True:
        await anyio.wait_readable(fd)
        chunk = os.read(fd, 4096)
        if not chunk:
            return data
        data += chunk


async def test_cancel_during_slow_hook_kills_the_process_group(repo: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "hook.fifo"
    os.mkfifo(fifo)
    _hook(repo, fifo)
    (repo / "a.txt").write_text("two\n")
    git(repo, "add", "a.txt")
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        scope = anyio.CancelScope()

        async def commit() -> None:
            with scope:
                await call(repo, "git_commit", message="slow")

        with anyio.fail_after(15):
            async with anyio.create_task_group() as tg:
                tg.start_soon(commit)
                await anyio.wait_readable(fd)  # the hook is running
                scope.cancel()
            # the hook (now `sleep`) held the fifo open: EOF means every writer died
            await _read_until_eof(fd)
    finally:
        os.close(fd)
    assert git(repo, "log", "--format=%s") == "first\n"


async def test_timeout_kills_slow_git(repo: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "hook.fifo"
    os.mkfifo(fifo)
    _hook(repo, fifo)
    (repo / "a.txt").write_text("two\n")
    git(repo, "add", "a.txt")
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with anyio.fail_after(15):
            with pytest.raises(ToolError) as err:
                await call(repo, "git_commit", timeout=0.5, message="slow")
            assert err.value.code == "timeout"
            await _read_until_eof(fd)
    finally:
        os.close(fd)


async def test_runner_uses_argv_and_safe_environment(repo: Path) -> None:
    out = await run_git(repo, ["var", "GIT_PAGER"], read_only=True, timeout=10)
    assert out.argv[:2] == ["git", "--no-pager"] and "core.hooksPath=/dev/null" in out.argv
    assert out.text.strip() == "cat"
    editor = await run_git(repo, ["var", "GIT_EDITOR"], read_only=False, timeout=10)
    assert editor.text.strip() == "true" and "core.hooksPath=/dev/null" not in editor.argv


async def test_first_commit_on_unborn_branch(tmp_path: Path) -> None:
    root = tmp_path / "new"
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    (root / "x.txt").write_text("x\n")
    (root / "y.txt").write_text("y\n")
    await call(root, "git_add", paths=["."])
    await call(root, "git_restore", paths=["y.txt"], staged=True)  # no HEAD yet: unstaged from the index
    assert git(root, "status", "--short") == "A  x.txt\n?? y.txt\n"
    staged = await call(root, "git_diff", staged=True)
    assert "+x" in staged.content
    await fails(root, "git_show", "unborn_head", rev="HEAD")
    result = await call(root, "git_commit", message="root commit")
    assert result.data and result.data["branch"] == "trunk" and result.data["files"] == [{"status": "A", "path": "x.txt"}]
    created = await call(root, "git_branch", action="create", name="next")
    assert created.data and created.data["previous"] == "trunk"


def hostile_script(tmp_path: Path, name: str, tail: str = "") -> tuple[Path, Path]:
    """A program that leaves a marker file when it runs; returns (program, marker)."""
    marker = tmp_path / f"{name}-ran"
    program = tmp_path / f"{name}.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\n{tail}")
    program.chmod(0o755)
    return program, marker


async def test_read_only_git_never_runs_a_configured_filter(repo: Path, tmp_path: Path) -> None:
    """A repository's ``filter.<x>.clean`` would run during ``git status``/``git diff``
    on a touched file; read-only tools blank every configured filter first."""
    program, marker = hostile_script(tmp_path, "clean", "cat\n")
    (repo / ".gitattributes").write_text("*.txt filter=evil.drv\n")
    git(repo, "add", ".gitattributes")
    git(repo, "commit", "-qm", "attributes")
    git(repo, "config", "filter.evil.drv.clean", str(program))
    git(repo, "config", "diff.noprefix", "true")
    os.utime(repo / "a.txt", (1, 1))  # stat info changed: git would re-clean the file
    (repo / "a.txt").write_text("one more\n")
    for name, args in (("git_status", {}), ("git_diff", {}), ("git_diff", {"ref": "HEAD"})):
        assert (await call(repo, name, **args)).ok
        assert not marker.exists(), f"{name} {args} ran the repository's filter"
    assert "--- a/a.txt" in (await call(repo, "git_diff")).content  # diff.noprefix is pinned off


async def test_read_only_git_never_runs_a_configured_gpg_program(repo: Path, tmp_path: Path) -> None:
    program, marker = hostile_script(tmp_path, "gpg", "exit 1\n")
    # a commit that carries a signature, so showing it would call the gpg program
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    body = (f"tree {tree}\nauthor t <t@t> 1 +0000\ncommitter t <t@t> 1 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n")
    signed = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=repo, input=body,
                            capture_output=True, text=True, check=True).stdout.strip()
    git(repo, "update-ref", "HEAD", signed)
    git(repo, "config", "log.showSignature", "true")
    git(repo, "config", "gpg.program", str(program))
    for name, args in (("git_log", {}), ("git_show", {"rev": "HEAD"}), ("git_status", {})):
        assert (await call(repo, name, **args)).ok
    assert not marker.exists()


async def test_a_failed_commit_of_paths_leaves_the_index_as_it_was(repo: Path, tmp_path: Path) -> None:
    (repo / "a.txt").write_text("two\n")  # modified, not staged
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho refused by hook >&2\nexit 1\n")
    hook.chmod(0o755)
    before = git(repo, "status", "--porcelain")
    error = await fails(repo, "git_commit", "git_failed", message="m", paths=["a.txt"])
    assert "refused by hook" in error.message
    assert git(repo, "status", "--porcelain") == before == " M a.txt\n"  # still unstaged


async def test_a_failed_commit_keeps_intent_to_add_entries(repo: Path) -> None:
    (repo / "new.txt").write_text("new\n")
    git(repo, "add", "-N", "new.txt")
    (repo / "a.txt").write_text("two\n")
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    before = git(repo, "status", "--porcelain")
    await fails(repo, "git_commit", "git_failed", message="m", paths=["a.txt"])
    assert git(repo, "status", "--porcelain") == before and " A new.txt" in before
