"""Git tools: git_status, git_log, git_add, git_restore, git_branch.

(git_diff and git_show live in :mod:`toolwire.tools.gitdiff`, git_commit in
:mod:`toolwire.tools.gitcommit`.) Each result has a readable ``content`` and a
structured ``data`` dict with ``git_processes``, the number of git processes
the call started. Destructive commands (reset --hard, clean, push --force) are
not offered. Revisions are validated with ``rev-parse --verify
--end-of-options``; paths always follow ``--``.

Every tool speaks workspace-relative paths and stays inside the workspace
folder, also when that folder is a sub-folder of the repository: git runs in
the workspace folder, status and log are limited to it, and the paths a tool
prints are accepted back by the others (see :mod:`toolwire.tools.gitinfo`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolwire.tools.base import ToolContext, ToolResult
from toolwire.tools.gitcommit import FALLBACK_EMAIL, FALLBACK_NAME, GitCommit
from toolwire.tools.gitinfo import (
    GitTool,
    describe_entry,
    git_paths,
    list_lines,
    note_unsaved,
    read_status,
    repo_state,
    status_text,
    verify_rev,
)
from toolwire.tools.gitrepo import git, in_progress
from toolwire.tools.gitrun import GitOutput, git_argv
from toolwire.tools.gitsubject import rev_words
from toolwire.workspace.errors import ToolError, clip_quote
from toolwire.workspace.names import display_name

__all__ = ["GitStatus", "GitLog", "GitAdd", "GitRestore", "GitCommit", "GitBranch", "FALLBACK_NAME", "FALLBACK_EMAIL"]


def path_failure(out: GitOutput, verb: str) -> ToolError:
    """A clear error for a git command that refused its paths.

    Returns:
        ``in_submodule`` (the path lies inside a submodule: act in it with its own
        workspace), ``outside_sparse_checkout`` (the path is not in the sparse
        checkout), else ``git_failed`` with git's message.
    """
    said = out.error
    if "is in submodule" in said:
        last = said.rstrip("\n").split("\n")[-1]  # LF only: a path may hold U+2028 & co.
        return ToolError("in_submodule", f"cannot {verb} a path inside a submodule ({last}); "
                         "stage the submodule folder itself to record its commit, or open the submodule as its own workspace")
    if "sparse-checkout" in said:
        return ToolError("outside_sparse_checkout", f"cannot {verb}: the path is outside the sparse checkout "
                         "(git sparse-checkout add <folder> brings it in)", {"stderr": said})
    return ToolError("git_failed", f"git {verb} failed: {said or f'exit status {out.returncode}'}", {"stderr": said})


class NoArgs(BaseModel):
    """No arguments."""

    model_config = ConfigDict(extra="forbid")


class GitStatus(GitTool):
    """Branch, upstream and file states of the repository."""

    name: ClassVar[str] = "git_status"
    description: ClassVar[str] = (
        "Show the current branch (or detached HEAD, or a branch with no commits yet), how far it is "
        "ahead/behind its upstream, and which files are staged, unstaged, untracked, renamed or in "
        "conflict, and whether a merge or rebase is in progress. No arguments. Use it to see what changed "
        "before git_diff, git_add or git_commit. git sees files as saved on disk: the result names open "
        "files with unsaved editor changes."
    )
    Args: ClassVar[type[BaseModel]] = NoArgs
    read_only: ClassVar[bool] = True

    def git_argv(self, args: BaseModel) -> list[str]:
        """The git argv, for the permission prompt."""
        return git_argv(["status", "--porcelain=v2", "--branch", "-z"], read_only=True)

    def git_command(self, args: BaseModel) -> list[str]:
        """The command as a person types it (after ``git``), for the permission prompt."""
        return ["status"]

    async def execute(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """One ``git status --porcelain=v2 --branch -z`` (once the facts are cached);
        what is in progress is read from the git directory."""
        status = await read_status(ctx)
        facts = await ctx.git.facts(ctx.root, ctx.git_timeout)
        ops = in_progress(facts.git_dir)
        data = status.to_data() | {
            "detached": status.branch is None,
            "unborn": status.head is None,
            "merge_in_progress": ops.merge,
            "rebase_in_progress": ops.rebase or ops.am,
            "in_progress": ops.names,
            "workspace_prefix": facts.prefix,
            "sparse_checkout": facts.sparse,
        }
        text = status_text(status, ops.names, facts.prefix)
        return note_unsaved(ToolResult(ok=True, content=text, data=data), ctx)


class GitLogArgs(BaseModel):
    """Arguments of git_log."""

    model_config = ConfigDict(extra="forbid")
    max_count: int = Field(20, ge=1, le=200, description="Number of commits to list (1-200). Default 20.")
    ref: str | None = Field(None, description="Start from this commit or branch instead of HEAD. Optional.")
    path: str | None = Field(None, description="Only commits that touch this path. Optional.")


class GitLog(GitTool):
    """List recent commits."""

    name: ClassVar[str] = "git_log"
    description: ClassVar[str] = (
        "List commits, newest first: short hash, date, author and subject, optionally from another ref "
        "and limited to commits touching one path. Use it to find a commit, then git_show to see it."
    )
    Args: ClassVar[type[BaseModel]] = GitLogArgs
    read_only: ClassVar[bool] = True

    def git_argv(self, args: GitLogArgs) -> list[str]:
        """The git argv, for the permission prompt."""
        rev = [args.ref] if args.ref else []
        tail = ["--", args.path] if args.path else []
        return git_argv(["log", f"-n{args.max_count}", *rev, *tail], read_only=True)

    def git_command(self, args: GitLogArgs) -> list[str]:
        """The command as a person types it (after ``git``), for the permission prompt."""
        return ["log", f"-n{args.max_count}", *(rev_words(args.ref) if args.ref else []), *(["--", args.path] if args.path else [])]

    async def execute(self, args: GitLogArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        """``git log`` limited to the workspace folder (or to ``path``)."""
        facts = await ctx.git.facts(ctx.root, ctx.git_timeout)
        start = await verify_rev(ctx, args.ref) if args.ref else "HEAD"
        tail = ["--", *git_paths(ctx, [args.path])] if args.path else (["--", "."] if facts.prefix else [])
        fmt = "%H%x1f%h%x1f%an%x1f%ae%x1f%aI%x1f%P%x1f%s"
        out = await git(ctx, ["log", "-z", "--no-color", f"--format={fmt}", f"-n{args.max_count}", start, *tail],
                        read_only=True, check=False)
        if out.returncode != 0:
            if "does not have any commits" in out.error or "unknown revision" in out.error:
                state = await repo_state(ctx)
                if state.unborn:
                    raise ToolError("unborn_head", f"the branch {state.branch or 'HEAD'} has no commits yet")
            raise ToolError("git_failed", f"git log failed: {out.error}", {"stderr": out.error})
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
            where = f" touch {display_name(git_paths(ctx, [args.path])[0])}" if args.path else ""
            text = f"No commits{where}" + (f" on {args.ref}." if args.ref else ".")
        return ToolResult(ok=True, content=text, data={"commits": commits})


class PathsArgs(BaseModel):
    """Arguments of git_add."""

    model_config = ConfigDict(extra="forbid")
    paths: list[str] = Field(min_length=1, description="Paths to stage, relative to the workspace ('.' for all).")


class GitAdd(GitTool):
    """Stage paths."""

    name: ClassVar[str] = "git_add"
    description: ClassVar[str] = (
        "Stage changes of the given paths (new, modified and deleted files) for the next commit; returns "
        "what is now staged. Only when the user asked for a commit or for staging."
    )
    Args: ClassVar[type[BaseModel]] = PathsArgs

    def git_argv(self, args: PathsArgs) -> list[str]:
        """The git argv, for the permission prompt."""
        return git_argv(["add", "--", *args.paths], read_only=False)

    def git_command(self, args: PathsArgs) -> list[str]:
        """The command as a person types it (after ``git``), for the permission prompt."""
        return ["add", "--", *args.paths]

    async def execute(self, args: PathsArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        """``git add`` then ``git status`` (two processes once the facts are cached)."""
        paths = git_paths(ctx, args.paths)
        out = await git(ctx, ["add", "--", *paths], read_only=False, check=False)
        if out.returncode != 0:
            raise path_failure(out, "add")
        status = await read_status(ctx)
        staged = [describe_entry(e) for e in status.staged]
        shown = [display_name(p) for p in paths]
        return ToolResult(
            ok=True,
            content=f"Staged {', '.join(shown)}.\n" + "\n".join(list_lines("Now staged", staged)),
            data={"paths": shown, "staged": status.staged},
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


class GitRestore(GitTool):
    """Unstage paths, or discard their unstaged changes."""

    name: ClassVar[str] = "git_restore"
    description: ClassVar[str] = (
        "With staged=true, unstage the given paths and keep the working files. With staged=false, discard "
        "the unstaged changes of the given paths (restore them from the index): those changes are lost. "
        "Use it only when the user asks to discard or unstage; to undo one edit of yours, edit the file "
        "back instead."
    )
    Args: ClassVar[type[BaseModel]] = RestoreArgs
    writes_tree: ClassVar[bool] = True

    def git_argv(self, args: RestoreArgs) -> list[str]:
        """The git argv, for the permission prompt."""
        return git_argv(["restore", *(["--staged"] if args.staged else []), "--", *args.paths], read_only=False)

    def git_command(self, args: RestoreArgs) -> list[str]:
        """The command as a person types it (after ``git``), for the permission prompt."""
        return ["restore", *(["--staged"] if args.staged else []), "--", *args.paths]

    async def execute(self, args: RestoreArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        """``git restore`` (plus a HEAD check when unstaging)."""
        paths = git_paths(ctx, args.paths)
        unborn = False
        if args.staged:
            head = await git(ctx, ["rev-parse", "-q", "--verify", "HEAD^{commit}"], read_only=True, check=False,
                             filters=())
            unborn = head.returncode != 0
        if unborn:  # restore --staged needs HEAD; on an unborn branch unstage from the index
            cmd = ["rm", "--cached", "-r", "-q", "--", *paths]
        else:
            cmd = ["restore", *(["--staged"] if args.staged else []), "--", *paths]
        out = await git(ctx, cmd, read_only=False, check=False)
        if out.returncode != 0:
            raise path_failure(out, "restore")
        verb = "Unstaged" if args.staged else "Discarded unstaged changes of"
        shown = [display_name(p) for p in paths]
        result = ToolResult(ok=True, content=f"{verb} {', '.join(shown)}.", data={"paths": shown, "staged": args.staged})
        return note_unsaved(result, ctx, list(args.paths))


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


class GitBranch(GitTool):
    """List, create or switch local branches."""

    name: ClassVar[str] = "git_branch"
    description: ClassVar[str] = (
        "List local branches, create a branch at HEAD and switch to it, or switch to an existing local "
        "branch. Switching never discards changes: git refuses when local changes would be overwritten. "
        "Listing is always fine; create or switch only when the user asks."
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

    def git_command(self, args: BranchArgs) -> list[str]:
        """The command as a person types it (after ``git``), for the permission prompt."""
        if args.action == "list":
            return ["branch", "--list"]
        return ["switch", *(["-c"] if args.action == "create" else []), str(args.name)]

    async def execute(self, args: BranchArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        """List, or check the name and switch."""
        state = await repo_state(ctx)
        if args.action == "list":
            return await self._list(ctx, state.branch, state.head)
        name = str(args.name)
        check = await git(ctx, ["check-ref-format", "--branch", name], read_only=True, check=False, filters=())
        if check.returncode != 0:
            raise ToolError("invalid_branch", f"{clip_quote(repr(name))} is not a valid branch name")
        exists = await git(ctx, ["rev-parse", "-q", "--verify", "--end-of-options", f"refs/heads/{name}"],
                           read_only=True, check=False, filters=())
        if args.action == "create" and exists.returncode == 0:
            raise ToolError("exists", f"branch {name} already exists; use action switch")
        if args.action == "switch" and exists.returncode != 0:
            raise ToolError("not_found", f"there is no local branch {name}; use action create")
        if state.ops.blocking:
            what = " and ".join(state.ops.blocking)
            raise ToolError("merge_in_progress" if state.ops.merge else "operation_in_progress",
                            f"a {what} is in progress; finish or abort it before switching branches",
                            {"in_progress": state.ops.names})
        create = args.action == "create"
        target = ["-c", name] if create else ["--end-of-options", name]  # name never starts with "-"
        await git(ctx, ["switch", "-q", "--no-guess", *target], read_only=False)
        verb = "Created and switched to" if create else "Switched to"
        return ToolResult(ok=True, content=f"{verb} branch {name}", data={"action": args.action, "branch": name, "previous": state.branch})

    async def _list(self, ctx: ToolContext, current: str | None, head: str | None) -> ToolResult:
        out = await git(ctx, ["for-each-ref", "--format=%(refname:short)%00%(objectname:short)%00%(upstream:short)",
                              "refs/heads"], read_only=True, filters=())
        branches = []
        # One LF-ended line per branch (a ref name holds no LF, but may hold U+2028,
        # U+0085 & co., which ``str.splitlines`` would also split on).
        for line in out.text.split("\n"):
            if not line:
                continue
            name, oid, upstream = line.split("\x00")
            branches.append({"name": name, "commit": oid, "upstream": upstream or None, "current": name == current})
        lines = [f"{'*' if b['current'] else ' '} {b['name']} {b['commit']}" for b in branches]
        if current is None:
            lines.insert(0, f"* (HEAD detached at {(head or '')[:12]})")
        elif not any(b["current"] for b in branches):
            lines.insert(0, f"* {current} (no commits yet)")
        data = {"current": current, "detached": current is None, "branches": branches}
        return ToolResult(ok=True, content="\n".join(lines) or "No branches.", data=data)
