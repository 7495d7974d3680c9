"""git_diff and git_show: patches capped per file and in total, saying what was left out.

The file list comes from ``--numstat -z`` and the text from ``--patch`` with the
same options, so both list the same files in the same order. Both run with
``--relative`` in the workspace folder: a workspace inside a larger repository
sees only its own files, with workspace-relative paths. File names in the
file list are in display form (:mod:`toolwire.workspace.names`), and so are
the names in the patch's header lines (:func:`_quote_headers`); the patch text
is decoded as UTF-8 with U+FFFD for bytes that are not. Binary files and
lockfiles are summarized in one line, and so is a file kept from the model
(``modelExclude``) unless the call was allowed to show it; a long file patch is cut with a marker;
once the total budget is spent the remaining files are only named.
"""

from __future__ import annotations

import os
import posixpath
from typing import Any, ClassVar, Final

from pydantic import BaseModel, ConfigDict, Field

from toolwire.tools.base import ToolContext, ToolResult
from toolwire.tools.gitinfo import GitTool, git_paths, note_unsaved, repo_state, require_commits, verify_range, verify_rev
from toolwire.tools.gitrepo import git
from toolwire.tools.gitrun import git_argv
from toolwire.tools.gitsubject import rev_words
from toolwire.workspace.errors import ToolError
from toolwire.workspace.model_exclude import withheld
from toolwire.workspace.names import display_name, prefixed

__all__ = ["GitDiff", "GitShow", "capped_patch", "LOCKFILES", "PER_FILE_CHARS", "TOTAL_CHARS"]

PER_FILE_CHARS: Final = 12_000
"""Largest patch text shown for one file (characters)."""
TOTAL_CHARS: Final = 48_000
"""Largest patch text shown in total (characters)."""
LOCKFILES: Final = frozenset(
    {
        "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "bun.lock",
        "poetry.lock", "Pipfile.lock", "uv.lock", "pdm.lock", "Cargo.lock", "Gemfile.lock", "composer.lock",
        "go.sum", "flake.lock", "mix.lock", "pubspec.lock", "Podfile.lock", "packages.lock.json",
    }
)  # fmt: skip
_SAFE: Final = ("--no-ext-diff", "--no-textconv", "--no-color", "-M", "--relative")


def _numstat(raw: bytes) -> list[dict[str, Any]]:
    fields = raw.split(b"\x00")

    def name(field: bytes) -> str:
        return display_name(os.fsdecode(field))

    files: list[dict[str, Any]] = []
    i = 0
    while i < len(fields):
        head = fields[i]
        i += 1
        if not head:
            continue
        added, removed, path_bytes = head.split(b"\t", 2)
        item: dict[str, Any] = {}
        if path_bytes == b"":  # rename or copy: the two paths follow
            item["from"], path = name(fields[i]), name(fields[i + 1])
            i += 2
        else:
            path = name(path_bytes)
        binary = added == b"-"
        item.update(
            path=path,
            added=0 if binary else int(added),
            removed=0 if binary else int(removed),
            binary=binary,
            lockfile=posixpath.basename(path) in LOCKFILES,
        )
        files.append(item)
    return files


def _lines(text: str) -> list[str]:
    """``text`` cut after each LF, the only line end git prints (each piece keeps its
    LF; the last has none when the text does not end with one). Not
    :meth:`str.splitlines`: U+2028, U+0085, \\x1c, \\r… are file content, and a
    file name or a patch line holding one must stay whole."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


def _blocks(patch: str) -> list[str]:
    """The patch cut into one block per file (each starts with ``diff --git`` or ``diff --cc``)."""
    blocks: list[list[str]] = []
    for line in _lines(patch):
        if line.startswith("diff --git ") or line.startswith("diff --cc ") or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    return ["".join(b) for b in blocks if b]


_OLD_SIDE: Final = ("--- ", "rename from ", "copy from ")
_NEW_SIDE: Final = ("+++ ", "rename to ", "copy to ")


def _quote_headers(block: str, item: dict[str, Any]) -> str:
    """``block`` with its header lines naming the file in display form.

    git runs with ``core.quotePath=false`` (UTF-8 names print as they are), so it
    quotes only control characters: a name holding U+202E, U+200B or U+2028 would
    reach the model raw in ``diff --git``, ``---``/``+++`` and ``rename``/``copy``
    lines. For a file whose display name is quoted (:func:`display_name`), those
    lines are written again from the names of ``--numstat -z``, in git's quoted
    form (``diff --git "a/evil\\342\\200\\256txt.exe" "b/…"``); other blocks are
    kept byte for byte. Lines from the first hunk (``@@``) on are file content.
    """
    new = item["path"]
    old = item.get("from", new)
    if not (new.startswith('"') or old.startswith('"')):
        return block
    lines = _lines(block)
    for index, line in enumerate(lines):
        if line.startswith("@@"):
            break
        if line.startswith("diff --git "):
            lines[index] = f"diff --git {prefixed('a/', old)} {prefixed('b/', new)}\n"
        elif line.startswith(("--- ", "+++ ")) and line.rstrip("\n")[4:] != "/dev/null":
            side = ("a/", old) if line.startswith("--- ") else ("b/", new)
            lines[index] = f"{line[:4]}{prefixed(*side)}\n"
        elif line.startswith(_OLD_SIDE[1:] + _NEW_SIDE[1:]):
            head = next(h for h in _OLD_SIDE[1:] + _NEW_SIDE[1:] if line.startswith(h))
            lines[index] = f"{head}{old if head in _OLD_SIDE else new}\n"
    return "".join(lines)


def _cut(block: str, path: str, limit: int) -> tuple[str, bool]:
    if len(block) <= limit:
        return block, False
    lines = _lines(block)
    kept, size = [], 0
    for line in lines:
        if size + len(line) > limit:
            break
        kept.append(line)
        size += len(line)
    note = f"[diff of {path} truncated: {len(kept)} of {len(lines)} lines shown]\n"
    return "".join(kept) + note, True


def _withheld_pattern(ctx: ToolContext, item: dict[str, Any]) -> str | None:
    """The ``modelExclude`` pattern that keeps a file of the diff (either side of a rename)
    from the model in this call, or None."""
    for shown in (item["path"], item.get("from")):
        if shown is None:
            continue
        pattern = ctx.model_exclude.match(shown)
        path = ctx.root / shown
        if pattern is not None and not {path, path.resolve()} & ctx.allowed_excluded:
            return pattern
    return None


async def capped_patch(ctx: ToolContext, args: list[str], pathspec: list[str]) -> tuple[str, dict[str, Any]]:
    """Run ``git <args> --numstat -z`` and ``git <args> --patch`` and cap the patch.

    Args:
        ctx: Tool context.
        args: The command and its options, e.g. ``["diff", "--cached", <hash>]``.
        pathspec: Paths, relative to the workspace, passed after ``--``.

    Returns:
        ``(text, data)``: the capped patch text, and ``{"files": [{path, from?,
        added, removed, binary, lockfile, truncated, omitted, excluded?}], "truncated":
        bool}``; ``excluded`` is the ``modelExclude`` pattern of a file whose patch was
        left out (the file is named, its content never shown).
    """
    tail = ["--", *pathspec]
    stat = await git(ctx, [*args, *_SAFE, "--numstat", "-z", *tail], read_only=True)
    patch = await git(ctx, [*args, *_SAFE, "--patch", *tail], read_only=True)
    files = _numstat(stat.stdout)
    blocks = _blocks(patch.text)
    withheld_any = False
    for item in files:
        pattern = _withheld_pattern(ctx, item)
        if pattern is not None:
            item["excluded"] = pattern
            withheld_any = True
    if len(blocks) != len(files):  # unexpected shape: keep the text, cap it as one piece
        if withheld_any:  # cannot tell which piece is whose: show none rather than a secret
            shown = ", ".join(item["path"] for item in files)
            return (f"[diff not shown: it holds a file kept from the model (modelExclude); files: {shown}]\n",
                    {"files": files, "truncated": True})
        text, cut = _cut(patch.text, "the diff", TOTAL_CHARS)
        return text, {"files": files, "truncated": cut or patch.truncated}
    out: list[str] = []
    used = 0
    omitted: list[str] = []
    any_cut = patch.truncated
    for item, block in zip(files, blocks):
        item["truncated"] = item["omitted"] = False
        label = f"{item['path']} (+{item['added']} -{item['removed']})"
        if used >= TOTAL_CHARS:
            item["omitted"] = True
            omitted.append(label)
            continue
        if "excluded" in item:
            piece = (f"{withheld(item['path'], item['excluded'])}: changed (+{item['added']} -{item['removed']}), "
                     f"diff not shown (a git_diff naming it in paths asks the user)\n")
        elif item["binary"]:
            piece = f"Binary file {item['path']} changed (diff omitted)\n"
        elif item["lockfile"]:
            piece = f"Lockfile {label} changed (diff omitted)\n"
        else:
            piece, item["truncated"] = _cut(_quote_headers(block, item), item["path"],
                                            min(PER_FILE_CHARS, TOTAL_CHARS - used))
        any_cut |= item["truncated"]
        out.append(piece)
        used += len(piece)
    if omitted:
        any_cut = True
        out.append(f"[{len(omitted)} more file(s) omitted, over the diff budget: {', '.join(omitted)}]\n")
    return "".join(out), {"files": files, "truncated": any_cut}


class GitDiffArgs(BaseModel):
    """Arguments of git_diff."""

    model_config = ConfigDict(extra="forbid")
    staged: bool = Field(False, description="Show staged changes (index vs HEAD) instead of unstaged ones.")
    ref: str | None = Field(
        None, description="Compare against this commit (branch, tag, hash), or a range A..B / A...B. Optional."
    )
    paths: list[str] | None = Field(None, description="Limit the diff to these paths (relative to the workspace).")


class GitDiff(GitTool):
    """Show working-tree, staged or commit-range changes."""

    name: ClassVar[str] = "git_diff"
    description: ClassVar[str] = (
        "Show changes as a unified diff: unstaged changes by default, staged ones with staged=true, or "
        "against a commit or range with ref; paths narrows it. Long diffs are cut per file and in total, "
        "binary files, lockfiles and files kept from you by modelExclude are summarized; the output says what "
        "was left out (name such a file in paths to ask the user to show it). Use it to review changes (yours "
        "included) before staging or committing; to read a file use read_file."
    )
    Args: ClassVar[type[BaseModel]] = GitDiffArgs
    read_only: ClassVar[bool] = True
    shows_content: ClassVar[bool] = True

    def git_argv(self, args: GitDiffArgs) -> list[str]:
        """The main git argv, for the permission prompt."""
        cmd = ["diff", *(["--cached"] if args.staged else []), *([args.ref] if args.ref else [])]
        return git_argv([*cmd, *_SAFE, "--", *(args.paths or [])], read_only=True)

    def git_command(self, args: GitDiffArgs) -> list[str]:
        """The command as a person types it (after ``git``), for the permission prompt."""
        cmd = ["diff", *(["--cached"] if args.staged else []), *(rev_words(args.ref) if args.ref else [])]
        return [*cmd, *(["--", *args.paths] if args.paths else [])]

    async def execute(self, args: GitDiffArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        """``--numstat`` and ``--patch`` runs (plus revision checks for ``ref``)."""
        pathspec = git_paths(ctx, args.paths or [])
        cmd = ["diff"]
        if args.staged:
            cmd.append("--cached")
        if args.ref:
            require_commits(await repo_state(ctx))
            cmd += await verify_range(ctx, args.ref)
        text, data = await capped_patch(ctx, cmd, pathspec)
        what = f"against {args.ref}" if args.ref else ("staged" if args.staged else "unstaged")
        if not data["files"]:
            return note_unsaved(ToolResult(ok=True, content=f"No {what} changes.", data=data | {"diff": ""}), ctx,
                                list(args.paths) if args.paths else None)
        total_add = sum(f["added"] for f in data["files"])
        total_del = sum(f["removed"] for f in data["files"])
        head = f"{len(data['files'])} file(s) changed ({what}), +{total_add} -{total_del}\n"
        return note_unsaved(ToolResult(ok=True, content=head + text, data=data | {"diff": text}), ctx,
                            list(args.paths) if args.paths else None)


class GitShowArgs(BaseModel):
    """Arguments of git_show."""

    model_config = ConfigDict(extra="forbid")
    rev: str = Field(description="The commit to show: a hash, branch, tag or expression like HEAD~2.")


class GitShow(GitTool):
    """Show one commit: metadata and its (capped) patch."""

    name: ClassVar[str] = "git_show"
    description: ClassVar[str] = (
        "Show one commit: hash, author, date, full message and its diff (against the first parent for "
        "merges). Long diffs are cut, binary files and lockfiles summarized. Use it on a hash from "
        "git_log; for uncommitted changes use git_diff."
    )
    Args: ClassVar[type[BaseModel]] = GitShowArgs
    read_only: ClassVar[bool] = True

    def git_argv(self, args: GitShowArgs) -> list[str]:
        """The main git argv, for the permission prompt."""
        return git_argv(["show", *_SAFE, "--end-of-options", args.rev], read_only=True)

    def git_command(self, args: GitShowArgs) -> list[str]:
        """The command as a person types it (after ``git``), for the permission prompt."""
        return ["show", *rev_words(args.rev)]

    async def execute(self, args: GitShowArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        """Revision check, metadata, ``--numstat`` and ``--patch`` runs."""
        try:
            oid = await verify_rev(ctx, args.rev)
        except ToolError as exc:
            if exc.code == "unknown_revision":
                require_commits(await repo_state(ctx))
            raise
        fmt = "%H%x00%an%x00%ae%x00%aI%x00%P%x00%B"
        meta = await git(ctx, ["show", "-s", "--no-color", f"--format={fmt}", oid], read_only=True, filters=())
        commit, author, email, date, parents, message = meta.text.split("\x00", 5)
        text, data = await capped_patch(ctx, ["show", "--format=", "--diff-merges=first-parent", oid], [])
        message = message.rstrip("\n")
        data.update(
            commit=commit,
            author=author,
            email=email,
            date=date,
            parents=parents.split(),
            message=message,
            diff=text,
        )
        indented = "\n".join(f"    {line}" if line else "" for line in message.split("\n"))
        head = f"commit {commit}\nAuthor: {author} <{email}>\nDate:   {date}\n\n{indented}\n\n"
        return ToolResult(ok=True, content=head + text, data=data)
