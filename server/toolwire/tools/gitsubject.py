"""What the approval of a git call shows a person: the command as they would type it, and the
files the action touches with their line counts.

:func:`command_line` quotes each word for a POSIX shell as a person writes it: bare when it is
plain (``a.py``), in double quotes when it holds spaces and the like (``"Fix x"``), in single
quotes when it holds ``"``, ``$``, a backtick, ``\\`` or ``!``, and in ANSI-C quoting (``$'…'``)
when it holds a line break, a control, bidirectional or invisible character or a byte that is
not UTF-8, each of those as an escape, so the line reads as what runs and pastes into bash as it.

:func:`touched_files` lists what the action changes, workspace-relative and in display form:
``git_add`` the changes of its paths that it stages (tracked files changed in the working tree,
untracked files not ignored); ``git_restore`` the changes it discards (``staged: false``: the
working tree against the index) or unstages (``staged: true``: the index against HEAD);
``git_commit`` what the commit will hold (without paths: the staged changes; with paths: those
paths' working-tree content against HEAD, untracked ones included); ``git_branch`` switch the
tracked files that differ between HEAD and the branch (create changes none). Line counts are git's
(``--numstat``); an untracked file's lines are counted here (read up to a budget).
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any, Final

import anyio

from toolwire.tools.base import ToolContext
from toolwire.tools.gitinfo import git_paths
from toolwire.tools.gitrepo import git
from toolwire.workspace.names import display_name, has_unusual, is_suspicious_char

__all__ = ["command_line", "rev_words", "shell_word", "touched_files", "diffstat", "FILES_LIMIT"]

#: Files a subject lists at most (its ``diffstat`` counts them all).
FILES_LIMIT: Final = 200
#: Bytes of untracked files read to count their lines, in all.
_READ_BUDGET: Final = 16 * 1024 * 1024
_PLAIN: Final = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
_DOUBLE_SPECIAL: Final = re.compile(r"[\"$`\\!]")
_DIFF: Final = ("--no-ext-diff", "--no-textconv", "--no-color", "--no-renames", "--relative", "--numstat", "-z")
_C_ESCAPES: Final = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\", "'": "\\'"}


def _ansi_c(word: str) -> str:
    out = []
    for ch in word:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif "\udc80" <= ch <= "\udcff":  # a byte that is not UTF-8 (surrogateescape)
            out.append(f"\\{ord(ch) - 0xDC00:03o}")
        elif is_suspicious_char(ch) or "\ud800" <= ch <= "\udfff":
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def shell_word(word: str) -> str:
    """``word`` quoted for a POSIX shell as a person would write it (see the module docstring)."""
    if _PLAIN.fullmatch(word):
        return word
    if has_unusual(word):
        return _ansi_c(word)
    if not _DOUBLE_SPECIAL.search(word):
        return f'"{word}"'
    if "'" not in word:
        return f"'{word}'"
    return "'" + word.replace("'", "'\\''") + "'"


def rev_words(rev: str) -> list[str]:
    """A revision as a command's words: one starting with ``-`` (which the tools refuse as they run) after
    ``--end-of-options``, so the command pasted into a shell names a revision too and is never an option
    (``git show --output=x`` would write a file)."""
    return ["--end-of-options", rev] if rev.startswith("-") else [rev]


#: A path git would take as a pattern or pathspec magic without ``--literal-pathspecs`` (the tools run with it).
_PATHSPEC_SPECIAL: Final = re.compile(r"[*?[\\]|^:")


def command_line(words: list[str]) -> str:
    """``git <words>`` as one shell line (``git commit -m "Fix x" -- a.py b.py``); ``git
    --literal-pathspecs …`` when a path after ``--`` would otherwise be a pattern (``[ab].txt`` also
    names ``a.txt``) or magic (``:!x``), so the line does what the tool does."""
    paths = words[words.index("--") + 1:] if "--" in words else []
    literal = ["--literal-pathspecs"] if any(_PATHSPEC_SPECIAL.search(p) for p in paths) else []
    return " ".join(["git", *literal, *(shell_word(w) for w in words)])


def _numstat(raw: bytes) -> list[dict[str, Any]]:
    """``[{path, added, removed, binary?}]`` of ``git diff --numstat -z --no-renames`` output."""
    files = []
    for record in raw.split(b"\x00"):
        if not record:
            continue
        added, removed, path = record.split(b"\t", 2)
        item: dict[str, Any] = {"path": display_name(os.fsdecode(path))}
        if added == b"-":
            item.update(added=0, removed=0, binary=True)
        else:
            item.update(added=int(added), removed=int(removed))
        files.append(item)
    return files


def _count_lines(ctx: ToolContext, name: str, budget: list[int]) -> dict[str, Any]:
    """The entry of an untracked file git would add: its lines (a symbolic link: one, its target)."""
    item: dict[str, Any] = {"path": display_name(name), "added": 0, "removed": 0}
    path = ctx.root / name
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            item["added"] = 1
            return item
        if not stat.S_ISREG(info.st_mode) or info.st_size > budget[0]:
            item["counted"] = False
            return item
        with open(path, "rb") as fh:
            data = fh.read(budget[0] + 1)
    except OSError:
        item["counted"] = False
        return item
    budget[0] -= len(data)
    if b"\x00" in data[:8000]:  # git's test for a binary file
        item["binary"] = True
    elif data:
        item["added"] = data.count(b"\n") + (not data.endswith(b"\n"))
    return item


async def _untracked(ctx: ToolContext, paths: list[str], budget: list[int]) -> list[dict[str, Any]]:
    out = await git(ctx, ["ls-files", "-z", "--others", "--exclude-standard", "--", *paths], read_only=True,
                    filters=())
    names = [os.fsdecode(n) for n in out.stdout.split(b"\x00") if n]
    # reading the files (up to the budget) happens off the event loop
    return await anyio.to_thread.run_sync(lambda: [_count_lines(ctx, name, budget) for name in names])


async def _empty_tree(ctx: ToolContext) -> str:
    out = await git(ctx, ["hash-object", "-t", "tree", os.devnull], read_only=True, filters=())
    return out.text.strip()


async def touched_files(tool: str, args: Any, ctx: ToolContext) -> list[dict[str, Any]]:
    """``[{"path", "added", "removed", "binary"?, "counted"?}]``: what the git action ``tool``
    changes (see the module docstring), in git's order, untracked files after; ``counted: false``
    marks an untracked file whose lines were not counted (not a regular file, or past the
    budget). Empty for tools that change no file.

    Raises:
        ToolError: as the git tools do (``not_a_repository``, ``outside_workspace``, …).
    """
    paths = git_paths(ctx, list(getattr(args, "paths", None) or []))
    budget = [_READ_BUDGET]
    if tool == "git_add":
        stat_out = await git(ctx, ["diff", *_DIFF, "--", *paths], read_only=True)
        return _numstat(stat_out.stdout) + await _untracked(ctx, paths, budget)
    if tool == "git_restore":
        staged = ["--cached"] if getattr(args, "staged", False) else []
        stat_out = await git(ctx, ["diff", *staged, *_DIFF, "--", *paths], read_only=True)
        return _numstat(stat_out.stdout)
    if tool == "git_commit":
        if not paths:
            stat_out = await git(ctx, ["diff", "--cached", *_DIFF], read_only=True)
            return _numstat(stat_out.stdout)
        head = await git(ctx, ["rev-parse", "-q", "--verify", "HEAD^{commit}"], read_only=True, check=False,
                         filters=())
        base = head.text.strip() if head.returncode == 0 else await _empty_tree(ctx)
        stat_out = await git(ctx, ["diff", base, *_DIFF, "--", *paths], read_only=True)
        return _numstat(stat_out.stdout) + await _untracked(ctx, paths, budget)
    if tool == "git_branch" and getattr(args, "action", None) == "switch":
        target = f"refs/heads/{args.name}"
        stat_out = await git(ctx, ["diff", *_DIFF, "HEAD", target, "--"], read_only=True)
        return _numstat(stat_out.stdout)
    return []


def diffstat(files: list[dict[str, Any]]) -> dict[str, int]:
    """``{"files", "added", "removed"}`` over ``files``."""
    return {"files": len(files), "added": sum(f["added"] for f in files),
            "removed": sum(f["removed"] for f in files)}
