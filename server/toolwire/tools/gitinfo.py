"""Facts about the repository the git tools need before they act.

The repository state (branch, detached or unborn HEAD, merge or rebase in
progress), revision validation, path arguments, and the parser of
``git status --porcelain=v2 --branch -z``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolwire.tools.base import ToolContext, ToolResult
from toolwire.tools.gitrun import run_git
from toolwire.workspace.documents import unsaved_in_editor
from toolwire.workspace.errors import ToolError
from toolwire.workspace.paths import resolve_path

__all__ = ["RepoState", "repo_state", "verify_rev", "verify_range", "git_paths", "Status", "parse_status", "read_status",
           "status_text", "list_lines", "describe_entry"]

_BAD_REV = re.compile(r"[\x00-\x20\x7f]")
_LIST_CAP = 200


@dataclass(slots=True)
class RepoState:
    """Where HEAD is and what is in progress.

    Attributes:
        toplevel: The work tree's top folder.
        git_dir: The absolute git directory.
        branch: The current branch name (also on an unborn branch), or None when detached.
        head: HEAD's commit hash, or None on an unborn branch.
        merging: A merge is in progress (``MERGE_HEAD`` exists).
        rebasing: A rebase is in progress.
    """

    toplevel: Path
    git_dir: Path
    branch: str | None
    head: str | None
    merging: bool = False
    rebasing: bool = False

    @property
    def detached(self) -> bool:
        """HEAD points at a commit, not a branch."""
        return self.branch is None

    @property
    def unborn(self) -> bool:
        """The current branch has no commit yet."""
        return self.head is None


async def repo_state(ctx: ToolContext) -> RepoState:
    """Read the repository state of ``ctx.root``.

    Raises:
        ToolError: ``not_a_repository`` when the workspace is not in a git work
            tree; ``git_failed`` / ``timeout`` from the runner.
    """
    top = await run_git(
        ctx.root, ["rev-parse", "--show-toplevel", "--absolute-git-dir"], read_only=True, timeout=ctx.git_timeout, check=False
    )
    if top.returncode != 0:
        if "not a git repository" in top.error:
            raise ToolError("not_a_repository", f"the workspace ({ctx.root}) is not inside a git repository")
        raise ToolError("git_failed", f"git rev-parse failed: {top.error}", {"stderr": top.error})
    lines = top.text.splitlines()
    if len(lines) < 2:
        raise ToolError("not_a_repository", "the workspace is not inside a git work tree")
    toplevel, git_dir = Path(lines[0]), Path(lines[1])
    sym = await run_git(ctx.root, ["symbolic-ref", "-q", "HEAD"], read_only=True, timeout=ctx.git_timeout, check=False)
    ref = sym.text.strip()
    branch = ref.removeprefix("refs/heads/") if sym.returncode == 0 else None
    head = await run_git(
        ctx.root, ["rev-parse", "-q", "--verify", "HEAD^{commit}"], read_only=True, timeout=ctx.git_timeout, check=False
    )
    oid = head.text.strip() if head.returncode == 0 else None
    return RepoState(
        toplevel=toplevel,
        git_dir=git_dir,
        branch=branch,
        head=oid,
        merging=(git_dir / "MERGE_HEAD").exists(),
        rebasing=(git_dir / "rebase-merge").exists() or (git_dir / "rebase-apply").exists(),
    )


def require_commits(state: RepoState) -> None:
    """Raise ``unborn_head`` when the current branch has no commit yet."""
    if state.unborn:
        raise ToolError("unborn_head", f"the branch {state.branch or 'HEAD'} has no commits yet")


async def verify_rev(ctx: ToolContext, rev: str) -> str:
    """Check that ``rev`` names a commit and return its full hash.

    Runs ``git rev-parse --verify --end-of-options <rev>^{commit}``.

    Raises:
        ToolError: ``invalid_revision`` for an empty revision, one starting
            with ``-`` or holding whitespace/control characters;
            ``unknown_revision`` when it names no commit.
    """
    if not rev or rev.startswith("-") or _BAD_REV.search(rev):
        raise ToolError("invalid_revision", f"{rev!r} is not a valid revision")
    out = await run_git(
        ctx.root,
        ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
        read_only=True,
        timeout=ctx.git_timeout,
        check=False,
    )
    if out.returncode != 0:
        raise ToolError("unknown_revision", f"{rev} does not name a commit in this repository")
    return out.text.strip()


async def verify_range(ctx: ToolContext, ref: str) -> list[str]:
    """Validate ``A``, ``A..B`` or ``A...B`` (empty sides mean HEAD) into hashes.

    Returns:
        ``[hash]`` for one revision, ``[f"{a}..{b}"]`` or ``[f"{a}...{b}"]`` for a range.

    Raises:
        ToolError: as :func:`verify_rev`, for either side.
    """
    match = re.fullmatch(r"(.*?)(\.\.\.?)(.*)", ref)
    if match is None:
        return [await verify_rev(ctx, ref)]
    left, dots, right = match.groups()
    a = await verify_rev(ctx, left or "HEAD")
    b = await verify_rev(ctx, right or "HEAD")
    return [f"{a}{dots}{b}"]


def git_paths(ctx: ToolContext, paths: list[str]) -> list[str]:
    """Confine path arguments to the workspace and return them relative to it.

    The path need not exist (a deleted file can be staged or restored). The
    lexical path is kept (git tracks symlinks as links).

    Raises:
        ToolError: ``outside_workspace`` / ``invalid_path`` (see
            :func:`toolwire.workspace.paths.resolve_path`).
    """
    return [resolve_path(ctx.root, p).rel for p in paths]


@dataclass(slots=True)
class Status:
    """Parsed ``git status --porcelain=v2 --branch -z``.

    Paths are relative to the repository's top folder. Each entry is
    ``{"path", "status"}`` (one-letter git code: M, A, D, R, C, T, U…);
    renames add ``"from"``.
    """

    branch: str | None = None
    head: str | None = None
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    staged: list[dict[str, str]] = field(default_factory=list)
    unstaged: list[dict[str, str]] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    renamed: list[dict[str, str]] = field(default_factory=list)
    conflicted: list[dict[str, str]] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Nothing staged, unstaged, untracked or conflicted."""
        return not (self.staged or self.unstaged or self.untracked or self.conflicted)

    def to_data(self) -> dict[str, Any]:
        """JSON-ready dict of every field plus ``clean``."""
        return {
            "branch": self.branch,
            "head": self.head,
            "upstream": self.upstream,
            "ahead": self.ahead,
            "behind": self.behind,
            "staged": self.staged,
            "unstaged": self.unstaged,
            "untracked": self.untracked,
            "renamed": self.renamed,
            "conflicted": self.conflicted,
            "clean": self.clean,
        }


def _entry(xy: str, path: str, status: Status, orig: str | None = None) -> None:
    x, y = xy[0], xy[1]
    if x != ".":
        item = {"path": path, "status": x}
        if orig is not None and x in "RC":
            item["from"] = orig
            status.renamed.append({"path": path, "from": orig, "where": "staged"})
        status.staged.append(item)
    if y != ".":
        item = {"path": path, "status": y}
        if orig is not None and y in "RC":
            item["from"] = orig
            status.renamed.append({"path": path, "from": orig, "where": "unstaged"})
        status.unstaged.append(item)


def parse_status(raw: bytes) -> Status:
    """Parse ``git status --porcelain=v2 --branch -z`` output.

    Args:
        raw: git's stdout; NUL-terminated records, paths unquoted.

    Returns:
        A :class:`Status`. ``branch`` is None for a detached HEAD; ``head``
        is None on an unborn branch.
    """
    status = Status()
    records = raw.decode("utf-8", "surrogateescape").split("\x00")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if not rec:
            continue
        kind = rec[0]
        if rec.startswith("# branch.oid "):
            oid = rec.split(" ", 2)[2]
            status.head = None if oid == "(initial)" else oid
        elif rec.startswith("# branch.head "):
            name = rec.split(" ", 2)[2]
            status.branch = None if name == "(detached)" else name
        elif rec.startswith("# branch.upstream "):
            status.upstream = rec.split(" ", 2)[2]
        elif rec.startswith("# branch.ab "):
            _, _, a, b = rec.split(" ")
            status.ahead, status.behind = int(a), -int(b)
        elif kind == "1":
            parts = rec.split(" ", 8)
            _entry(parts[1], parts[8], status)
        elif kind == "2":
            parts = rec.split(" ", 9)
            orig = records[i] if i < len(records) else ""
            i += 1
            _entry(parts[1], parts[9], status, orig)
        elif kind == "u":
            parts = rec.split(" ", 10)
            status.conflicted.append({"path": parts[10], "status": parts[1]})
        elif kind == "?":
            status.untracked.append(rec[2:])
    return status


async def read_status(ctx: ToolContext) -> Status:
    """Run ``git status --porcelain=v2 --branch -z`` and parse it.

    Raises:
        ToolError: ``not_a_repository``, ``git_failed``, ``timeout``.
    """
    out = await run_git(
        ctx.root,
        ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal"],
        read_only=True,
        timeout=ctx.git_timeout,
        check=False,
    )
    if out.returncode != 0:
        if "not a git repository" in out.error:
            raise ToolError("not_a_repository", f"the workspace ({ctx.root}) is not inside a git repository")
        raise ToolError("git_failed", f"git status failed: {out.error}", {"stderr": out.error})
    return parse_status(out.stdout)


def list_lines(title: str, items: list[str]) -> list[str]:
    """``["Title:", "  item", ...]`` (at most 200 items, then a count); empty for no items."""
    if not items:
        return []
    shown = items[:_LIST_CAP]
    more = [f"  ... and {len(items) - _LIST_CAP} more"] if len(items) > _LIST_CAP else []
    return [f"{title}:", *(f"  {i}" for i in shown), *more]


def describe_entry(e: dict[str, str]) -> str:
    """``"M path"`` or ``"R old -> new"`` for a status entry."""
    return f"{e['status']} {e['from']} -> {e['path']}" if "from" in e else f"{e['status']} {e['path']}"


def status_text(status: Status, merging: bool = False) -> str:
    """A ``git status``-like summary of a parsed status."""
    if status.branch is None:
        head = f"HEAD detached at {(status.head or '')[:12]}"
    elif status.head is None:
        head = f"On branch {status.branch} (no commits yet)"
    else:
        head = f"On branch {status.branch}"
    if status.upstream:
        head += f" (upstream {status.upstream}: ahead {status.ahead}, behind {status.behind})"
    out = [head]
    if merging:
        out.append("A merge is in progress.")
    out += list_lines("Conflicted", [f"{e['status']} {e['path']}" for e in status.conflicted])
    out += list_lines("Staged", [describe_entry(e) for e in status.staged])
    out += list_lines("Unstaged", [describe_entry(e) for e in status.unstaged])
    out += list_lines("Untracked", status.untracked)
    if status.clean:
        out.append("Working tree clean.")
    return "\n".join(out)


def note_unsaved(result: ToolResult, ctx: ToolContext, scope: list[str] | None = None) -> ToolResult:
    """Name, in a git tool's result, the files whose editor buffer has unsaved changes.

    git reads the files on disk; edits to open files go to the editor buffer, so
    a diff or a commit may not contain them. The paths go to ``data["unsaved_in_editor"]``
    and a sentence is added to the text the model reads.
    """
    unsaved = unsaved_in_editor(ctx.documents, ctx.root, scope)
    if unsaved:
        result.content += (f"\nNote: {', '.join(unsaved)} {'has' if len(unsaved) == 1 else 'have'} unsaved "
                           "changes in the editor; git sees the files as saved on disk.")
        result.data = {**(result.data or {}), "unsaved_in_editor": unsaved}
    return result
