"""Git tools: git_status, git_log, git_add, git_restore, git_commit, git_branch.

(git_diff and git_show live in :mod:`toolwire.tools.gitdiff`.) Each result has
a readable ``content`` and a structured ``data`` dict. Destructive commands
(reset --hard, clean, push --force) are not offered. Revisions are validated
with ``rev-parse --verify --end-of-options``; paths always follow ``--``.

Commit identity: when the repository (or the user's config, or the
environment) sets no ``user.name`` / ``user.email``, commits use the fallback
identity ``Toolwire <toolwire@localhost>`` so that a bare machine can commit.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Final, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolwire.tools.base import Tool, ToolContext, ToolResult
from toolwire.tools.gitinfo import (
    note_unsaved,
    describe_entry,
    git_paths,
    list_lines,
    read_status,
    repo_state,
    require_commits,
    status_text,
    verify_rev,
)
from toolwire.tools.gitrun import git_argv, run_git
from toolwire.workspace.errors import ToolError

__all__ = ["GitStatus", "GitLog", "GitAdd", "GitRestore", "GitCommit", "GitBranch", "FALLBACK_NAME", "FALLBACK_EMAIL"]

FALLBACK_NAME: Final = "Toolwire"
FALLBACK_EMAIL: Final = "toolwire@localhost"
class NoArgs(BaseModel):
    """No arguments."""

    model_config = ConfigDict(extra="forbid")


class GitStatus(Tool):
    """Branch, upstream and file states of the repository."""

    name: ClassVar[str] = "git_status"
    description: ClassVar[str] = (
        "Show the current branch (or detached HEAD, or a branch with no commits yet), how far it is "
        "ahead/behind its upstream, and which files are staged, unstaged, untracked, renamed or in conflict."
    )
    Args: ClassVar[type[BaseModel]] = NoArgs
    read_only: ClassVar[bool] = True

    def git_argv(self, args: BaseModel) -> list[str]:
        """The git argv, for the permission prompt."""
        return git_argv(["status", "--porcelain=v2", "--branch", "-z"], read_only=True)

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        state = await repo_state(ctx)
        status = await read_status(ctx)
        data = status.to_data() | {
            "detached": state.detached,
            "unborn": state.unborn,
            "merge_in_progress": state.merging,
            "rebase_in_progress": state.rebasing,
        }
        return note_unsaved(ToolResult(ok=True, content=status_text(status, state.merging), data=data), ctx)


class GitLogArgs(BaseModel):
    """Arguments of git_log."""

    model_config = ConfigDict(extra="forbid")
    max_count: int = Field(20, ge=1, le=200, description="Number of commits to list (1-200). Default 20.")
    ref: str | None = Field(None, description="Start from this commit or branch instead of HEAD. Optional.")
    path: str | None = Field(None, description="Only commits that touch this path. Optional.")


class GitLog(Tool):
    """List recent commits."""

    name: ClassVar[str] = "git_log"
    description: ClassVar[str] = (
        "List commits, newest first: short hash, date, author and subject, optionally from another "
        "ref and limited to commits touching one path."
    )
    Args: ClassVar[type[BaseModel]] = GitLogArgs
    read_only: ClassVar[bool] = True

    def git_argv(self, args: GitLogArgs) -> list[str]:
        """The git argv, for the permission prompt."""
        rev = [args.ref] if args.ref else []
        tail = ["--", args.path] if args.path else []
        return git_argv(["log", f"-n{args.max_count}", *rev, *tail], read_only=True)

    async def run(self, args: GitLogArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        state = await repo_state(ctx)
        require_commits(state)
        start = await verify_rev(ctx, args.ref) if args.ref else state.head
        tail = ["--", *git_paths(ctx, [args.path])] if args.path else []
        fmt = "%H%x1f%h%x1f%an%x1f%ae%x1f%aI%x1f%P%x1f%s"
        out = await run_git(
            ctx.root,
            ["log", "-z", "--no-color", f"--format={fmt}", f"-n{args.max_count}", str(start), *tail],
            read_only=True,
            timeout=ctx.git_timeout,
        )
        commits: list[dict[str, Any]] = []
        for rec in out.text.split("\x00"):
            if not rec.strip():
                continue
            full, short, author, email, date, parents, subject = rec.strip("\n").split("\x1f", 6)
            commits.append(
                {"hash": full, "short": short, "author": author, "email": email, "date": date,
                 "parents": parents.split(), "subject": subject}
            )  # fmt: skip
        text = "\n".join(f"{c['short']} {c['date'][:10]} {c['author']}: {c['subject']}" for c in commits)
        if not text:
            where = f" touch {args.path}" if args.path else ""
            text = f"No commits{where}" + (f" on {args.ref}." if args.ref else ".")
        return ToolResult(ok=True, content=text, data={"commits": commits})


class PathsArgs(BaseModel):
    """Arguments of git_add."""

    model_config = ConfigDict(extra="forbid")
    paths: list[str] = Field(min_length=1, description="Paths to stage, relative to the workspace ('.' for all).")


class GitAdd(Tool):
    """Stage paths."""

    name: ClassVar[str] = "git_add"
    description: ClassVar[str] = "Stage changes of the given paths (new, modified and deleted files) for the next commit."
    Args: ClassVar[type[BaseModel]] = PathsArgs

    def git_argv(self, args: PathsArgs) -> list[str]:
        """The git argv, for the permission prompt."""
        return git_argv(["add", "--", *args.paths], read_only=False)

    async def run(self, args: PathsArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        await repo_state(ctx)
        paths = git_paths(ctx, args.paths)
        await run_git(ctx.root, ["add", "--", *paths], read_only=False, timeout=ctx.git_timeout)
        status = await read_status(ctx)
        staged = [describe_entry(e) for e in status.staged]
        return ToolResult(
            ok=True,
            content=f"Staged {', '.join(paths)}.\n" + "\n".join(list_lines("Now staged", staged)),
            data={"paths": paths, "staged": status.staged},
        )


class RestoreArgs(BaseModel):
    """Arguments of git_restore."""

    model_config = ConfigDict(extra="forbid")
    paths: list[str] = Field(min_length=1, description="Paths to restore, relative to the workspace.")
    staged: bool = Field(
        False,
        description="Unstage the paths (the working files stay as they are). When false, the working "
        "files are restored from the index, discarding their unstaged changes.",
    )


class GitRestore(Tool):
    """Unstage paths, or discard their unstaged changes."""

    name: ClassVar[str] = "git_restore"
    description: ClassVar[str] = (
        "With staged=true, unstage the given paths and keep the working files. With staged=false, "
        "discard the unstaged changes of the given paths (restore them from the index)."
    )
    Args: ClassVar[type[BaseModel]] = RestoreArgs
    writes_tree: ClassVar[bool] = True

    def git_argv(self, args: RestoreArgs) -> list[str]:
        """The git argv, for the permission prompt."""
        return git_argv(["restore", *(["--staged"] if args.staged else []), "--", *args.paths], read_only=False)

    async def run(self, args: RestoreArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        state = await repo_state(ctx)
        paths = git_paths(ctx, args.paths)
        if args.staged and state.unborn:  # restore --staged needs HEAD; on an unborn branch unstage from the index
            cmd = ["rm", "--cached", "-r", "-q", "--", *paths]
        else:
            cmd = ["restore", *(["--staged"] if args.staged else []), "--", *paths]
        await run_git(ctx.root, cmd, read_only=False, timeout=ctx.git_timeout)
        verb = "Unstaged" if args.staged else "Discarded unstaged changes of"
        result = ToolResult(ok=True, content=f"{verb} {', '.join(paths)}.", data={"paths": paths, "staged": args.staged})
        return note_unsaved(result, ctx, list(args.paths))


class CommitArgs(BaseModel):
    """Arguments of git_commit."""

    model_config = ConfigDict(extra="forbid")
    message: str = Field(description="The commit message (first line: a short summary). Required, not empty.")
    paths: list[str] | None = Field(
        None,
        description="Commit only these paths (their current content, staged or not). When omitted, "
        "commit what is staged.",
    )

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the commit message must not be empty")
        return value


async def _identity(ctx: ToolContext) -> list[str]:
    """``-c user.name=…``/``-c user.email=…`` for the settings git has no value for."""
    config: list[str] = []
    for key, env, fallback in (
        ("user.name", "GIT_AUTHOR_NAME", FALLBACK_NAME),
        ("user.email", "GIT_AUTHOR_EMAIL", FALLBACK_EMAIL),
    ):
        got = await run_git(ctx.root, ["config", "--get", key], read_only=True, timeout=ctx.git_timeout, check=False)
        if got.returncode != 0 and not os.environ.get(env):
            config.append(f"{key}={fallback}")
    return config


async def _read_index(ctx: ToolContext) -> tuple[Path, bytes] | None:
    """The index file's path and bytes (None when there is no index yet)."""
    where = await run_git(ctx.root, ["rev-parse", "--git-path", "index"], read_only=True, timeout=ctx.git_timeout)
    path = ctx.root / where.text.strip()
    try:
        return path, path.read_bytes()
    except FileNotFoundError:
        return None


def _restore_index(path: Path, data: bytes) -> None:
    """Put the index back as it was, atomically (a temporary file, then rename)."""
    temp = path.with_name(f".{path.name}.toolwire-restore")
    try:
        temp.write_bytes(data)
        os.replace(temp, path)
    except OSError:
        temp.unlink(missing_ok=True)


class GitCommit(Tool):
    """Record a commit of the staged changes, or of the named paths."""

    name: ClassVar[str] = "git_commit"
    description: ClassVar[str] = (
        "Create a commit with the given message, from the staged changes, or, when paths are given, "
        "from exactly those paths (staging them). Repository hooks run. Refused on a detached HEAD "
        "and when there is nothing to commit (the error lists unstaged and untracked files)."
    )
    Args: ClassVar[type[BaseModel]] = CommitArgs
    barrier: ClassVar[bool] = True
    writes_tree: ClassVar[bool] = True

    def git_argv(self, args: CommitArgs) -> list[str]:
        """The git argv, for the permission prompt."""
        tail = ["--only", "--", *args.paths] if args.paths else []
        return git_argv(["commit", "-m", args.message, *tail], read_only=False)

    async def run(self, args: CommitArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        state = await repo_state(ctx)
        if state.detached:
            raise ToolError("detached_head", "HEAD is detached; switch to a branch (git_branch) before committing")
        if state.rebasing:
            raise ToolError("rebase_in_progress", "a rebase is in progress; finish or abort it outside the assistant")
        status = await read_status(ctx)
        if status.conflicted:
            names = ", ".join(e["path"] for e in status.conflicted)
            raise ToolError("merge_conflict", f"unresolved conflicts in {names}; resolve and stage them first")
        paths = git_paths(ctx, args.paths) if args.paths else []
        if paths and state.merging:
            raise ToolError("merge_in_progress", "a merge is in progress: commit all staged changes (no paths) to conclude it")
        index_before: tuple[Path, bytes] | None = None
        if paths:
            # `add` and `commit --only` change the index before hooks run: keep its
            # bytes, so a failed or cancelled commit leaves it exactly as it was
            # (intent-to-add entries and all).
            index_before = await _read_index(ctx)
        try:
            done = await self._commit(ctx, args, paths, state, status)
        except BaseException:
            if index_before is not None:
                _restore_index(*index_before)
            raise
        info = await run_git(
            ctx.root,
            ["show", "-s", "--no-color", "--format=%H%x00%h%x00%s", "HEAD"],
            read_only=True,
            timeout=ctx.git_timeout,
        )
        full, short, subject = info.text.rstrip("\n").split("\x00", 2)
        names = await run_git(
            ctx.root,
            ["diff-tree", "--root", "--no-commit-id", "-r", "-z", "--name-status", "--no-renames", "HEAD"],
            read_only=True,
            timeout=ctx.git_timeout,
        )
        fields = [f for f in names.text.split("\x00") if f]
        files = [{"status": fields[i], "path": fields[i + 1]} for i in range(0, len(fields) - 1, 2)]
        content = f"Committed {short} on {state.branch}: {subject} ({len(files)} file(s))"
        data = {"commit": full, "short": short, "branch": state.branch, "subject": subject, "files": files}
        return note_unsaved(ToolResult(ok=True, content=content, data=data), ctx, list(args.paths) if args.paths else None)

    async def _commit(self, ctx: ToolContext, args: CommitArgs, paths: list[str], state: Any, status: Any) -> Any:
        """Stage ``paths`` (if any) and commit; returns the commit run.

        Raises:
            ToolError: ``nothing_to_commit`` or ``git_failed``.
        """
        if paths:
            await run_git(ctx.root, ["add", "--", *paths], read_only=False, timeout=ctx.git_timeout)
            status = await read_status(ctx)
        if not paths and not status.staged and not state.merging:
            unstaged = [e["path"] for e in status.unstaged]
            message = "nothing to commit: no staged changes"
            if unstaged or status.untracked:
                message += "; modified but unstaged: " + (", ".join(unstaged) or "none")
                message += "; untracked: " + (", ".join(status.untracked) or "none")
                message += " (stage them with git_add, or pass paths)"
            raise ToolError("nothing_to_commit", message, {"unstaged": status.unstaged, "untracked": status.untracked})
        tail = ["--only", "--", *paths] if paths else []
        config = await _identity(ctx)
        done = await run_git(
            ctx.root,
            ["commit", "-q", "-m", args.message, *tail],
            read_only=False,
            timeout=ctx.git_timeout,
            config=config,
            check=False,
        )
        if done.returncode != 0:
            said = (done.error + done.text).strip()
            if paths and ("nothing to commit" in said or "no changes added" in said):
                raise ToolError("nothing_to_commit", f"nothing to commit: {', '.join(paths)} have no changes")
            raise ToolError("git_failed", f"git commit failed: {said or done.returncode}", {"stderr": done.error})
        return done


class BranchArgs(BaseModel):
    """Arguments of git_branch."""

    model_config = ConfigDict(extra="forbid")
    action: Literal["list", "create", "switch"] = Field(
        description="list: show local branches. create: create a branch at HEAD and switch to it. "
        "switch: switch to an existing local branch."
    )
    name: str | None = Field(None, description="Branch name, required for create and switch.")

    @model_validator(mode="after")
    def _name_needed(self) -> "BranchArgs":
        if self.action != "list" and not self.name:
            raise ValueError(f"name is required for action {self.action}")
        if self.name is not None and (self.name.startswith("-") or not self.name.strip()):
            raise ValueError("invalid branch name")
        return self


class GitBranch(Tool):
    """List, create or switch local branches."""

    name: ClassVar[str] = "git_branch"
    description: ClassVar[str] = (
        "List local branches, create a branch at HEAD and switch to it, or switch to an existing "
        "local branch. Switching never discards changes: git refuses when local changes would be overwritten."
    )
    Args: ClassVar[type[BaseModel]] = BranchArgs
    barrier: ClassVar[bool] = True
    writes_tree: ClassVar[bool] = True

    def git_argv(self, args: BranchArgs) -> list[str]:
        """The git argv, for the permission prompt."""
        if args.action == "list":
            return git_argv(["for-each-ref", "refs/heads"], read_only=True)
        target = ["-c", str(args.name)] if args.action == "create" else ["--end-of-options", str(args.name)]
        return git_argv(["switch", "--no-guess", *target], read_only=False)

    async def run(self, args: BranchArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        state = await repo_state(ctx)
        if args.action == "list":
            return await self._list(ctx, state.branch, state.head)
        name = str(args.name)
        check = await run_git(
            ctx.root, ["check-ref-format", "--branch", name], read_only=True, timeout=ctx.git_timeout, check=False
        )
        if check.returncode != 0:
            raise ToolError("invalid_branch", f"{name!r} is not a valid branch name")
        exists = await run_git(
            ctx.root,
            ["rev-parse", "-q", "--verify", "--end-of-options", f"refs/heads/{name}"],
            read_only=True,
            timeout=ctx.git_timeout,
            check=False,
        )
        if args.action == "create" and exists.returncode == 0:
            raise ToolError("exists", f"branch {name} already exists; use action switch")
        if args.action == "switch" and exists.returncode != 0:
            raise ToolError("not_found", f"there is no local branch {name}; use action create")
        if state.merging or state.rebasing:
            raise ToolError("merge_in_progress", "a merge or rebase is in progress; finish it before switching branches")
        create = args.action == "create"
        target = ["-c", name] if create else ["--end-of-options", name]  # name never starts with "-"
        await run_git(ctx.root, ["switch", "-q", "--no-guess", *target], read_only=False, timeout=ctx.git_timeout)
        verb = "Created and switched to" if create else "Switched to"
        return ToolResult(ok=True, content=f"{verb} branch {name}", data={"action": args.action, "branch": name, "previous": state.branch})

    async def _list(self, ctx: ToolContext, current: str | None, head: str | None) -> ToolResult:
        out = await run_git(
            ctx.root,
            ["for-each-ref", "--format=%(refname:short)%00%(objectname:short)%00%(upstream:short)", "refs/heads"],
            read_only=True,
            timeout=ctx.git_timeout,
        )
        branches = []
        for line in out.text.splitlines():
            name, oid, upstream = line.split("\x00")
            branches.append({"name": name, "commit": oid, "upstream": upstream or None, "current": name == current})
        lines = [f"{'*' if b['current'] else ' '} {b['name']} {b['commit']}" for b in branches]
        if current is None:
            lines.insert(0, f"* (HEAD detached at {(head or '')[:12]})")
        elif not any(b["current"] for b in branches):
            lines.insert(0, f"* {current} (no commits yet)")
        data = {"current": current, "detached": current is None, "branches": branches}
        return ToolResult(ok=True, content="\n".join(lines) or "No branches.", data=data)
