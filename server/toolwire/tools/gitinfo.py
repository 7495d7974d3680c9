"""What the git tools check and read before they act.

Revision validation, path arguments (workspace-relative, confined to the
workspace, in the form the tools print them), and the parser of
``git status --porcelain=v2 --branch -z``. The repository facts and state
live in :mod:`toolwire.tools.gitrepo`.

Paths the git tools print are relative to the workspace folder (not to the
repository's top folder) and in :func:`toolwire.workspace.names.display_name`
form: valid Unicode, names that are not UTF-8 or hold control, bidirectional
or invisible characters in git's quoted form; every git tool that takes paths
accepts that form back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolwire.tools.base import Tool, ToolContext, ToolResult
from toolwire.tools.gitrun import count_processes
from toolwire.tools.gitrepo import RepoFacts, RepoState, git, in_progress, repo_state
from toolwire.workspace.documents import unsaved_in_editor
from toolwire.workspace.errors import ToolError, clip_quote
from toolwire.workspace.names import display_name, has_unusual, valid_text
from toolwire.workspace.paths import resolve_path

__all__ = ["GitTool", "RepoState", "repo_state", "verify_rev", "verify_range", "git_paths", "Status", "parse_status", "read_status",
           "status_text", "list_lines", "describe_entry", "require_commits", "note_unsaved"]

_BAD_REV = re.compile(r"[\x00-\x20\x7f]")
_LIST_CAP = 200
_PLAIN_BYTES = bytes(range(0x20, 0x7F)) + b"\x00"


class GitTool(Tool):
    """A tool that runs git: :meth:`run` counts the git processes :meth:`execute`
    starts and reports them as ``data["git_processes"]`` (also in a failure's data)."""

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        """Run :meth:`execute`, counting git processes."""
        with count_processes() as started:
            try:
                result = await self.execute(args, ctx)
            except ToolError as exc:
                exc.data = {**(exc.data or {}), "git_processes": started[0]}
                raise
        result.data = {**(result.data or {}), "git_processes": started[0]}
        return result

    async def execute(self, args: Any, ctx: ToolContext) -> ToolResult:  # pragma: no cover - abstract
        """Do the tool's work. Raise :class:`ToolError` for expected failures."""
        raise NotImplementedError


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
        raise ToolError("invalid_revision", f"{clip_quote(repr(rev))} is not a valid revision")
    out = await git(ctx, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                    read_only=True, check=False, filters=())
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
    """Confine path arguments to the workspace and return them as git takes them.

    Each path is what a git tool printed or what a person would write:
    workspace-relative (``git`` runs in the workspace folder, so git reads it
    relative to that folder even when the workspace is a sub-folder of the
    repository), absolute inside the workspace, or a quoted name
    (``"caf\\351.txt"``). The path need not exist (a deleted file can be
    staged or restored). The lexical path is kept (git tracks symlinks as links).

    Returns:
        The names to pass after ``--`` (``str`` that ``os.fsencode`` turns
        into the file's bytes; ``"."`` for the workspace folder itself).

    Raises:
        ToolError: ``outside_workspace`` / ``invalid_path`` (see
            :func:`toolwire.workspace.paths.resolve_path`).
    """
    return [resolve_path(ctx.root, p).name for p in paths]


@dataclass(slots=True)
class Status:
    """Parsed ``git status --porcelain=v2 --branch -z``.

    Paths are relative to the workspace folder, in display form (see the
    module docstring). Each entry is ``{"path", "status"}`` (one-letter git
    code: M, A, D, R, C, T…); renames and copies add ``"from"``; a submodule
    adds ``"submodule": {"commit", "modified", "untracked"}`` (booleans:
    its checked-out commit moved, it has tracked changes, it has untracked
    files). Conflicts are ``{"path", "status"}`` with git's two-letter code
    (UU, AA, DU…). ``outside_staged`` lists staged changes outside the
    workspace folder (``../x`` paths), when the run covered the whole repository.
    """

    branch: str | None = None
    head: str | None = None
    upstream: str | None = None
    ahead: int = 0
    behind: int = 0
    staged: list[dict[str, Any]] = field(default_factory=list)
    unstaged: list[dict[str, Any]] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    renamed: list[dict[str, str]] = field(default_factory=list)
    conflicted: list[dict[str, str]] = field(default_factory=list)
    outside_staged: list[str] = field(default_factory=list)

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


def _entry(xy: str, sub: str, path: str, status: Status, orig: str | None = None) -> None:
    x, y = xy[0], xy[1]
    for code, where, into in ((x, "staged", status.staged), (y, "unstaged", status.unstaged)):
        if code == ".":
            continue
        item: dict[str, Any] = {"path": path, "status": code}
        if sub[0] == "S":
            item["submodule"] = {"commit": sub[1] == "C", "modified": sub[2] == "M", "untracked": sub[3] == "U"}
        if orig is not None and code in "RC":
            item["from"] = orig
            status.renamed.append({"path": path, "from": orig, "where": where})
        into.append(item)


def parse_status(raw: bytes, facts: RepoFacts | None = None) -> Status:
    """Parse ``git status --porcelain=v2 --branch -z`` output.

    Args:
        raw: git's stdout; NUL-terminated records, paths unquoted and relative
            to the repository's top folder.
        facts: The repository facts; paths are made workspace-relative with
            them. Entries outside the workspace are left out (a staged one is
            named in ``outside_staged``). None keeps repository paths.

    Returns:
        A :class:`Status`. ``branch`` is None for a detached HEAD; ``head``
        is None on an unborn branch. Every string is valid Unicode.
    """
    status = Status()
    text = os.fsdecode(raw)  # one decode; names that are not UTF-8 keep lone surrogates until shown
    # The common case, checked at C speed: printable ASCII only, so no name needs quoting.
    plain = not raw.translate(None, _PLAIN_BYTES) or not has_unusual(text.replace("\x00", ""))
    prefix = facts.prefix if facts is not None else ""
    cut = len(prefix)

    def shown(name: str) -> str:
        return name if plain and not name.startswith('"') else display_name(name)

    def ws(name: str) -> str | None:
        if not name.startswith(prefix):
            return None
        return shown(name[cut:] or ".")

    def rename_from(name: str) -> str:
        return shown(facts.to_workspace(name) if facts is not None else name)

    records = text.split("\x00")
    i = 0
    while i < len(records):
        rec = records[i]
        i += 1
        if not rec:
            continue
        kind = rec[0]
        if kind == "#":
            key, _, value = rec[2:].partition(" ")
            value = valid_text(value)
            if key == "branch.oid":
                status.head = None if value == "(initial)" else value
            elif key == "branch.head":
                status.branch = None if value == "(detached)" else value
            elif key == "branch.upstream":
                status.upstream = value
            elif key == "branch.ab":
                a, b = value.split(" ")
                status.ahead, status.behind = int(a), -int(b)
            continue
        if kind == "1":
            parts = rec.split(" ", 8)
            xy, sub, name, orig = parts[1], parts[2], parts[8], None
        elif kind == "2":
            parts = rec.split(" ", 9)
            xy, sub, name = parts[1], parts[2], parts[9]
            orig = rename_from(records[i]) if i < len(records) else ""
            i += 1
        elif kind == "u":
            parts = rec.split(" ", 10)
            path = ws(parts[10])
            if path is not None:
                status.conflicted.append({"path": path, "status": parts[1]})
            continue
        elif kind == "?":
            path = ws(rec[2:])
            if path is not None:
                status.untracked.append(path)
            continue
        else:
            continue
        path = ws(name)
        if path is None:
            if xy[0] != "." and facts is not None:
                status.outside_staged.append(display_name(facts.to_workspace(name)))
            continue
        _entry(xy, sub, path, status, orig)
    return status


async def read_status(ctx: ToolContext, *, whole_repository: bool = False) -> Status:
    """Run ``git status --porcelain=v2 --branch -z`` (one process) and parse it.

    Args:
        ctx: The tool context.
        whole_repository: Look at the whole repository (to learn about staged
            changes outside the workspace) instead of the workspace folder only.

    Raises:
        ToolError: ``not_a_repository``, ``git_failed``, ``timeout``.
    """
    facts = await ctx.git.facts(ctx.root, ctx.git_timeout)
    limit = ["--", "."] if facts.prefix and not whole_repository else []
    out = await git(ctx, ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal", *limit],
                    read_only=True, check=False)
    if out.returncode != 0:
        if "not a git repository" in out.error:
            raise ToolError("not_a_repository", f"the workspace ({ctx.root}) is not inside a git repository")
        raise ToolError("git_failed", f"git status failed: {out.error}", {"stderr": out.error})
    return parse_status(out.stdout, facts)


def list_lines(title: str, items: list[str]) -> list[str]:
    """``["Title:", "  item", ...]`` (at most 200 items, then a count); empty for no items."""
    if not items:
        return []
    shown = items[:_LIST_CAP]
    more = [f"  ... and {len(items) - _LIST_CAP} more"] if len(items) > _LIST_CAP else []
    return [f"{title}:", *(f"  {i}" for i in shown), *more]


def describe_entry(e: dict[str, Any]) -> str:
    """``"M path"``, ``"R old -> new"`` or ``"M sub (submodule: new commits)"`` for a status entry."""
    text = f"{e['status']} {e['from']} -> {e['path']}" if "from" in e else f"{e['status']} {e['path']}"
    sub = e.get("submodule")
    if sub is not None:
        said = [w for w, on in (("new commits", sub["commit"]), ("modified content", sub["modified"]),
                                ("untracked content", sub["untracked"])) if on]  # fmt: skip
        text += f" (submodule{': ' + ', '.join(said) if said else ''})"
    return text


_OPS_TEXT = {
    "merge": "A merge is in progress: resolve conflicts, stage them, then commit to conclude it.",
    "rebase": "A rebase is in progress: finish (git rebase --continue) or abort it outside the assistant.",
    "am": "git am is in progress: finish or abort it outside the assistant.",
    "cherry-pick": "A cherry-pick is in progress: resolve conflicts, stage them, then commit to conclude it.",
    "revert": "A revert is in progress: resolve conflicts, stage them, then commit to conclude it.",
    "bisect": "A bisect is in progress.",
}


def status_text(status: Status, ops: Sequence[str] = (), prefix: str = "") -> str:
    """A ``git status``-like summary of a parsed status.

    Args:
        status: The parsed status.
        ops: Operations in progress (:attr:`toolwire.tools.gitrepo.InProgress.names`).
        prefix: The workspace's folder in the repository (``""`` at the top).
    """
    if status.branch is None:
        head = f"HEAD detached at {(status.head or '')[:12]}"
    elif status.head is None:
        head = f"On branch {status.branch} (no commits yet)"
    else:
        head = f"On branch {status.branch}"
    if status.upstream:
        head += f" (upstream {status.upstream}: ahead {status.ahead}, behind {status.behind})"
    out = [head]
    if prefix:
        out.append(f"The workspace is the folder {display_name(prefix.rstrip('/'))} of the repository; paths are "
                   "relative to the workspace and changes outside it are not listed.")
    out += [_OPS_TEXT[op] for op in ops if op in _OPS_TEXT]
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
