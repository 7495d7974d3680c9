"""git_commit: record the staged changes, or the named paths, and say exactly what went in.

Before anything is recorded:

* a detached HEAD, a rebase or ``git am`` in progress, and unresolved conflicts
  are refused; a merge, cherry-pick or revert in progress is concluded by a
  commit of everything staged (a commit of some paths only is refused, as git
  itself refuses a partial commit then);
* in a workspace that is a sub-folder of the repository, staged changes
  outside that folder are refused (they would go into the commit unseen),
  except when the commit concludes a merge, cherry-pick or revert (then the
  result names them);
* staged text that still holds conflict markers (``<<<<<<<``, ``=======``,
  ``>>>>>>>``, found by ``git diff --cached --check``) is refused unless
  ``allow_conflict_markers`` is set, and then the result names every marker.

Commit identity: when the repository (or the user's config, or the
environment) sets no ``user.name`` / ``user.email``, commits use the fallback
identity ``Toolwire <toolwire@localhost>`` so that a bare machine can commit.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolwire.tools.base import ToolContext, ToolResult
from toolwire.tools.gitinfo import GitTool, Status, git_paths, note_unsaved, read_status
from toolwire.tools.gitrepo import RepoFacts, git, in_progress
from toolwire.tools.gitrun import git_argv
from toolwire.workspace.errors import ToolError
from toolwire.workspace.names import display_name, parse_quoted

__all__ = ["GitCommit", "CommitArgs", "FALLBACK_NAME", "FALLBACK_EMAIL", "conflict_markers"]

FALLBACK_NAME: Final = "Toolwire"
FALLBACK_EMAIL: Final = "toolwire@localhost"
_MARKER_LINE: Final = re.compile(rb"^(.*):(\d+): leftover conflict marker$")


class CommitArgs(BaseModel):
    """Arguments of git_commit."""

    model_config = ConfigDict(extra="forbid")
    message: str = Field(description="The commit message (first line: a short summary). Required, not empty.")
    paths: list[str] | None = Field(
        None,
        description="Commit only these paths (their current content, staged or not). When omitted, "
        "commit what is staged.",
    )
    allow_conflict_markers: bool = Field(
        False,
        description="Commit even though staged text still holds conflict markers (<<<<<<<, =======, >>>>>>>). "
        "Default false: such a commit is refused and the error lists the markers.",
    )

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the commit message must not be empty")
        return value


async def conflict_markers(ctx: ToolContext, facts: RepoFacts, paths: list[str]) -> list[dict[str, Any]]:
    """Conflict markers in the staged text (``git diff --cached --check``, one process).

    Args:
        ctx: The tool context.
        facts: The repository facts (paths are reported workspace-relative).
        paths: Limit the check to these git paths; ``[]`` checks everything staged.

    Returns:
        ``[{"path", "line"}]``, in git's order; empty when there are none.
    """
    tail = ["--", *paths] if paths else []
    out = await git(ctx, ["diff", "--cached", "--check", "--no-ext-diff", "--no-color", *tail],
                    read_only=True, check=False)
    found = []
    for line in out.stdout.split(b"\n"):
        match = _MARKER_LINE.match(line)
        if match is None:
            continue
        name = os.fsdecode(match.group(1))
        name = parse_quoted(name) or name
        found.append({"path": display_name(facts.to_workspace(name)), "line": int(match.group(2))})
    return found


def _identity(facts: RepoFacts) -> list[str]:
    """``-c user.name=…``/``-c user.email=…`` for the settings git has no value for
    (from the cached facts: no process)."""
    have = facts.identity
    config: list[str] = []
    for key, env, fallback in (("user.name", "GIT_AUTHOR_NAME", FALLBACK_NAME),
                               ("user.email", "GIT_AUTHOR_EMAIL", FALLBACK_EMAIL)):  # fmt: skip
        if key not in have and not os.environ.get(env):
            config.append(f"{key}={fallback}")
    return config


async def _read_index(ctx: ToolContext) -> tuple[Path, bytes] | None:
    """The index file's path and bytes (None when there is no index yet)."""
    facts = await ctx.git.facts(ctx.root, ctx.git_timeout)
    path = facts.git_dir / "index"  # GIT_INDEX_FILE is dropped for our runs: this is the index git uses
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


class GitCommit(GitTool):
    """Record a commit of the staged changes, or of the named paths."""

    name: ClassVar[str] = "git_commit"
    description: ClassVar[str] = (
        "Create a commit with the given message, from the staged changes, or, when paths are given, from "
        "exactly those paths (staging them); returns the new commit's hash, subject and files. Only when "
        "the user asks for a commit. Repository hooks run. Refused on a detached HEAD, during a rebase, "
        "with unresolved conflicts, when staged text still holds conflict markers (unless "
        "allow_conflict_markers), and when there is nothing to commit (the error lists unstaged and "
        "untracked files). A commit with no paths concludes a merge, cherry-pick or revert in progress."
    )
    Args: ClassVar[type[BaseModel]] = CommitArgs
    barrier: ClassVar[bool] = True
    writes_tree: ClassVar[bool] = True

    def git_argv(self, args: CommitArgs) -> list[str]:
        """The git argv, for the permission prompt."""
        tail = ["--only", "--", *args.paths] if args.paths else []
        return git_argv(["commit", "-m", args.message, *tail], read_only=False)

    def git_command(self, args: CommitArgs) -> list[str]:
        """The command as a person types it (after ``git``; ``commit -- paths`` is ``--only``)."""
        return ["commit", "-m", args.message, *(["--", *args.paths] if args.paths else [])]

    async def execute(self, args: CommitArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        """Check, commit, and report the commit (four processes once the facts are cached:
        status, the conflict-marker check, commit, diff-tree; one more ``add`` with paths)."""
        facts = await ctx.git.facts(ctx.root, ctx.git_timeout)
        ops = in_progress(facts.git_dir)
        status = await read_status(ctx, whole_repository=True)
        if ops.rebase or ops.am:
            what = "rebase" if ops.rebase else "git am"
            raise ToolError("rebase_in_progress", f"a {what} is in progress; finish or abort it outside the assistant")
        if status.branch is None:
            how = " (git_branch)" if ctx.offers("git_branch") else ""
            raise ToolError("detached_head", f"HEAD is detached; switch to a branch{how} before committing")
        if status.conflicted:
            names = ", ".join(e["path"] for e in status.conflicted)
            raise ToolError("merge_conflict", f"unresolved conflicts in {names}; resolve and stage them first")
        concluding = [op for op in ("merge", "cherry-pick", "revert") if op in ops.names]
        paths = git_paths(ctx, args.paths) if args.paths else []
        if paths and concluding:
            raise ToolError("merge_in_progress" if ops.merge else "operation_in_progress",
                            f"a {concluding[0]} is in progress: commit all staged changes (no paths) to conclude it")
        if status.outside_staged and not paths and not concluding:
            names = ", ".join(status.outside_staged[:20])
            raise ToolError("staged_outside_workspace",
                            f"staged changes outside the workspace folder would go into this commit: {names}; "
                            "unstage them outside the assistant, or pass the paths to commit",
                            {"outside": status.outside_staged})
        index_before = await _read_index(ctx) if paths else None
        try:
            markers = await self._commit(ctx, args, paths, status, bool(concluding), facts)
        except BaseException:
            if index_before is not None:
                # `add` and `commit --only` change the index before hooks run: a failed or
                # cancelled commit leaves it exactly as it was (intent-to-add entries and all).
                _restore_index(*index_before)
            raise
        return note_unsaved(await self._report(ctx, facts, status, markers, concluding), ctx,
                            list(args.paths) if args.paths else None)

    async def _commit(self, ctx: ToolContext, args: CommitArgs, paths: list[str], status: Status,
                      concluding: bool, facts: RepoFacts) -> list[dict[str, Any]]:
        """Stage ``paths`` (if any), check for markers, and commit; returns the markers let through.

        Raises:
            ToolError: ``nothing_to_commit``, ``conflict_markers`` or ``git_failed``.
        """
        if paths:
            await git(ctx, ["add", "--", *paths], read_only=False)
        elif not status.staged and not status.outside_staged and not concluding:
            unstaged = [e["path"] for e in status.unstaged]
            message = "nothing to commit: no staged changes"
            if unstaged or status.untracked:
                message += "; modified but unstaged: " + (", ".join(unstaged) or "none")
                message += "; untracked: " + (", ".join(status.untracked) or "none")
                message += " (stage them with git_add, or pass paths)"
            raise ToolError("nothing_to_commit", message, {"unstaged": status.unstaged, "untracked": status.untracked})
        markers = await conflict_markers(ctx, facts, paths)
        if markers and not args.allow_conflict_markers:
            where = ", ".join(f"{m['path']}:{m['line']}" for m in markers[:20])
            raise ToolError("conflict_markers",
                            f"staged text still holds conflict markers ({where}); resolve them, or set "
                            "allow_conflict_markers if they are meant to be there", {"markers": markers})
        tail = ["--only", "--", *paths] if paths else []
        done = await git(ctx, ["commit", "-q", "-m", args.message, *tail], read_only=False,
                         config=_identity(facts), check=False)
        if done.returncode != 0:
            said = (done.error + done.text).strip()
            if paths and ("nothing to commit" in said or "no changes added" in said):
                shown = ", ".join(display_name(p) for p in paths)
                raise ToolError("nothing_to_commit", f"nothing to commit: {shown} have no changes")
            raise ToolError("git_failed", f"git commit failed: {said or done.returncode}", {"stderr": done.error})
        return markers

    async def _report(self, ctx: ToolContext, facts: RepoFacts, status: Status, markers: list[dict[str, Any]],
                      concluding: list[str]) -> ToolResult:
        """The commit's hash, subject and files (one ``diff-tree``)."""
        out = await git(ctx, ["diff-tree", "--root", "--always", "-r", "-z", "--name-status", "--no-renames",
                              "--format=%H%x00%h%x00%s", "HEAD"], read_only=True)
        header, _, rest = out.stdout.partition(b"\x00\n")
        full, short, subject = header.decode("utf-8", "replace").split("\x00", 2)
        fields = [f for f in rest.split(b"\x00") if f]
        files = []
        for i in range(0, len(fields) - 1, 2):
            name = os.fsdecode(fields[i + 1])
            files.append({"status": fields[i].decode(), "path": display_name(facts.to_workspace(name))})
        content = f"Committed {short} on {status.branch}: {subject} ({len(files)} file(s))"
        if concluding:
            content += f"; this concludes the {concluding[0]}"
        if status.outside_staged and concluding:
            content += f". It also records changes outside the workspace folder: {', '.join(status.outside_staged[:20])}"
        if markers:
            where = ", ".join(f"{m['path']}:{m['line']}" for m in markers[:20])
            content += f". Warning: it records conflict markers, as allowed: {where}"
        data = {"commit": full, "short": short, "branch": status.branch, "subject": subject, "files": files,
                "conflict_markers": markers, "concluded": concluding[0] if concluding else None}
        return ToolResult(ok=True, content=content, data=data)
