"""list_files: the entries of one folder, or the files below it that match a glob.

What the editor shows is listed: a file created in the editor but not saved yet is there,
``.git`` never is, files the repository ignores only with ``ignored: true`` (an ignored
folder is named, marked, without its contents), symbolic links are entries and never
followed. The engine (:mod:`toolwire.tools.engine`) lists; this module bounds, sorts and
shows (protocol.md "list_files").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from contextlib import aclosing
from functools import partial
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import anyio

from pydantic import BaseModel, ConfigDict, Field

from toolwire.tools.base import Tool, ToolContext, ToolResult
from toolwire.tools.engine import Engine, find_engine, ignored_among, list_batches
from toolwire.tools.fitting import lines_that_fit, result_budget
from toolwire.workspace.errors import ToolError, clip_quote
from toolwire.workspace.fuzzy import fold, score
from toolwire.workspace.globs import Glob, compile_glob
from toolwire.workspace.names import display_name
from toolwire.workspace.paths import WorkspacePath, is_inside, resolve_path

__all__ = ["ListFiles", "ListFilesArgs", "MAX_LIST_LIMIT", "find_files"]

#: Largest ``limit`` a call may ask for.
MAX_LIST_LIMIT = 5000
#: Candidates kept beyond ``limit`` so that names the git engine gives but that are no
#: regular files (tracked symlinks, tracked files deleted from the disk) can be dropped.
_SLACK = 64

_T = TypeVar("_T")


async def _off_loop(func: Callable[..., _T], *args: Any) -> _T:
    """``func(*args)`` in a worker thread: the file system is never read on the event loop. A
    cancelled call ends at once; the thread's result is dropped."""
    return await anyio.to_thread.run_sync(partial(func, *args), abandon_on_cancel=True)


class ListFilesArgs(BaseModel):
    """Arguments of list_files."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(".", description="Folder to list, relative to the workspace folder. Default: the workspace folder.")
    pattern: str | None = Field(None, description=(
        "Glob of the files to find below path, matched against the path relative to it: * and ? stay within one "
        "name, ** is any number of folders, {a,b} alternates. '*.py' is only directly in path, '**/*.py' at any "
        "depth, 'src/**/test_*.py' below src. Leave out to list the entries of path itself."))
    limit: int = Field(500, ge=1, le=MAX_LIST_LIMIT, description="Most entries to return. Default 500.")
    ignored: bool = Field(False, description=(
        "Also list files the repository ignores (.gitignore and git's other exclude files). Default false."))


def _files_note(more: int, pattern: bool, *, fitted: bool) -> str:
    """The line after a bounded result; ``fitted``: cut to the session's resultLimit, which a
    higher ``limit`` does not lift."""
    how = "a narrower pattern or a subfolder as path" if pattern else "a pattern (e.g. '*.py') or a subfolder as path"
    return f"[{more} more not shown; give {how}{'' if fitted else ', or raise limit'}]"


class ListFiles(Tool):
    """List a folder's entries, or the files below it matching a glob."""

    name: ClassVar[str] = "list_files"
    description: ClassVar[str] = (
        "List files to find your way; use it before reading or editing files you have not seen. Without pattern: "
        "the entries of the folder path (default the workspace), sorted; folders end with / and show how many "
        "entries they hold, an ignored folder shows (ignored). With pattern (a glob such as '**/*.py'): the files "
        "below path whose path relative to path matches, sorted. Paths are workspace-relative; files open in the "
        "editor but not saved are included; .git and ignored files are left out unless ignored is true. At most "
        "limit entries, then a line saying how many more; nothing found is []. To find text in files use "
        "search_files instead."
    )
    Args: ClassVar[type[BaseModel]] = ListFilesArgs
    read_only: ClassVar[bool] = True

    async def run(self, args: ListFilesArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        glob = compile_glob(args.pattern) if args.pattern is not None else None
        wp = resolve_path(ctx.root, args.path)
        base = wp.resolved
        if not base.is_dir():
            if base.exists() or ctx.documents.get(base) is not None:
                raise ToolError("not_a_folder", f"{clip_quote(wp.rel)} is a file; give its folder as path, or read "
                                                "it with read_file")
            raise ToolError("not_found", f"folder {clip_quote(wp.rel)} does not exist")
        engine = find_engine(ctx.ripgrep)
        lead = "" if wp.name in ("", ".") else wp.name + "/"
        data: dict[str, Any] = {"path": wp.rel, "pattern": args.pattern, "engine": engine.kind}
        if not args.ignored and base != ctx.root and await ignored_among(engine, base.parent, [base.name], {base.name}):
            data.update(matches=[], truncated=False, total=0, ignored_path=True)
            return ToolResult(ok=True, content=f"[]\n[{wp.rel}/ is ignored by the repository; set ignored to true "
                                               "to list it]", data=data)
        left_out = 0  # ignored files of the folder, not listed
        if glob is not None:
            matches, lines, total = await _matching_files(engine, ctx, base, lead, glob, args)
        else:
            matches, lines, total, left_out = await _folder_entries(engine, ctx, wp, lead, args)
        budget = result_budget(ctx)
        fitted = budget is not None and lines_that_fit(lines, budget) < len(lines)
        if fitted:  # whole entries within the session's resultLimit, not a cut in the middle
            del lines[lines_that_fit(lines, budget):]
            del matches[len(lines):]
        data.update(matches=matches, truncated=total > len(lines), total=total)
        if not lines and left_out:  # not empty: say what is there and how to list it
            data["ignored_entries"] = left_out
            what = "1 ignored file" if left_out == 1 else f"{left_out} ignored files"
            return ToolResult(ok=True, content=f"[]\n[{what} not shown; set ignored to true to list "
                                               f"{'it' if left_out == 1 else 'them'}]", data=data)
        if not lines:
            return ToolResult(ok=True, content="[]", data=data)
        if total > len(lines):
            lines = [*lines, _files_note(total - len(lines), glob is not None, fitted=fitted)]
        return ToolResult(ok=True, content="\n".join(lines), data=data)


def _unsaved_new(ctx: ToolContext, base: Path) -> list[str]:
    """Paths relative to ``base`` of open buffers below it whose file is not on the disk."""
    out = []
    for doc in ctx.documents.open_documents():
        path = doc.path
        if path == base or not is_inside(path, base) or os.path.lexists(path):
            continue
        rel = path.relative_to(base)
        if not any(part == ".git" for part in rel.parts) and is_inside(path, ctx.root):
            out.append(rel.as_posix())
    return sorted(set(out))


async def _not_ignored(engine: Engine, base: Path, names: list[str]) -> list[str]:
    if not names:
        return names
    dropped = await ignored_among(engine, base, names, set())
    return [name for name in names if name not in dropped]


def _regular(folder: str, rel: str) -> bool:
    """True when ``folder/rel`` is a regular file (not a symlink, not gone): one ``lstat``."""
    try:
        return stat.S_ISREG(os.lstat(folder + rel).st_mode)
    except (OSError, ValueError):
        return False


def _regulars(folder: str, rels: list[str]) -> list[str]:
    return [rel for rel in rels if _regular(folder, rel)]


async def _matching_files(engine: Engine, ctx: ToolContext, base: Path, lead: str, glob: Glob,
                          args: ListFilesArgs) -> tuple[list[dict[str, Any]], list[str], int]:
    """The first ``limit`` matching files in sorted order: structured (the same objects as a
    folder listing's, ``type: "file"``), in display form, and how many match.

    Streams the engine's output: keeps at most a few times ``limit`` names, sorted and cut
    back as batches come (no per-path work but the glob test)."""
    cap = args.limit + _SLACK
    kept: list[str] = []
    total = 0
    async with aclosing(list_batches(engine, base, ignored=args.ignored, glob=glob)) as batches:
        async for batch in batches:
            total += len(batch)
            kept += batch
            if len(kept) > 4 * cap:
                kept.sort()
                del kept[cap:]
    kept.sort()
    del kept[cap:]
    if engine.kind == "git":  # git names tracked symlinks and tracked files gone from the disk
        regular = await _off_loop(_regulars, os.path.join(base, ""), kept)
        total -= len(kept) - len(regular)
        kept = regular
    new = [rel for rel in _unsaved_new(ctx, base) if glob.match(rel)]
    if new and not args.ignored:
        new = await _not_ignored(engine, base, new)
    fresh: set[str] = set()
    if new:
        known = set(kept)
        fresh = {rel for rel in new if rel not in known}
        total += len(fresh)
        kept = sorted([*kept, *fresh])
    lines = [display_name(lead + rel) for rel in kept[: args.limit]]
    matches: list[dict[str, Any]] = [
        {"path": line, "type": "file", **({"unsaved": True} if rel in fresh else {})}
        for rel, line in zip(kept, lines)]
    return matches, lines, total


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return [entry for entry in it if entry.name != ".git"]
    except OSError:
        return []


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _children(base: Path, names: list[str]) -> dict[str, set[str]]:
    """The entry names of each folder ``base/name``."""
    return {name: {e.name for e in _scan(base / name)} for name in names}


def _grandchildren(base: Path, grand: list[str]) -> tuple[list[str], set[str], set[str]]:
    """Of ``grand`` (paths below ``base``): those on the disk, the folders (not symlinks) among
    them, and the children of ``base`` that are repositories of their own (hold a ``.git``)."""
    present = [path for path in grand if os.path.lexists(base / path)]
    repos = {name for name in {path.partition("/")[0] for path in present} if os.path.lexists(base / name / ".git")}
    return present, {path for path in present if (base / path).is_dir() and not (base / path).is_symlink()}, repos


def _link_notes(ctx: ToolContext, base: Path, names: list[str]) -> dict[str, tuple[str, str | None]]:
    return {name: _link_note(ctx, base / name) for name in names}


def _link_note(ctx: ToolContext, path: Path) -> tuple[str, str | None]:
    """How a symlink entry is shown, and its target relative to the workspace (None outside)."""
    if not os.path.exists(path):
        return "(broken symlink)", None
    target = Path(os.path.realpath(path))
    if not is_inside(target, ctx.root):
        return "(symlink to outside the workspace, not followed)", None
    rel = target.relative_to(ctx.root).as_posix()
    shown = display_name(rel + ("/" if target.is_dir() else ""))
    return f"(symlink to {shown})", rel


async def _folder_entries(engine: Engine, ctx: ToolContext, wp: WorkspacePath, lead: str,
                          args: ListFilesArgs) -> tuple[list[dict[str, Any]], list[str], int, int]:
    """The entries of one folder: structured, as lines, how many there are in all, and how
    many ignored files were left out."""
    base = wp.resolved
    entries = {entry.name: entry for entry in await _off_loop(_scan, base)}
    new = _unsaved_new(ctx, base)
    new_files = {rel for rel in new if "/" not in rel}
    new_folders: dict[str, set[str]] = {}
    for rel in new:
        if "/" in rel:
            top, _, rest = rel.partition("/")
            new_folders.setdefault(top, set()).add(rest.partition("/")[0])
    names = sorted(set(entries) | new_files | set(new_folders))
    folders = {n for n in names if (n in entries and _is_dir(entries[n])) or (n not in entries and n in new_folders)}
    ignored = await ignored_among(engine, base, [n for n in names if n in entries], folders)
    everything = len(names)
    if not args.ignored:
        names = [n for n in names if n not in ignored or n in folders]
    total = len(names)
    names = names[: args.limit]
    counted = [name for name in names if name in folders and (args.ignored or name not in ignored)]
    inner = await _off_loop(_children, base, [name for name in counted if name in entries])
    children = {name: sorted(inner.get(name, set()) | new_folders.get(name, set())) for name in counted}
    links = await _off_loop(_link_notes, ctx, base, [n for n in names if n in entries and entries[n].is_symlink()])
    left_out: dict[str, int] = {}  # per folder, the ignored files not counted
    if not args.ignored:
        grand = [f"{name}/{child}" for name, kids in children.items() for child in kids]
        present, dirs, repos = await _off_loop(_grandchildren, base, grand)
        hidden = await ignored_among(engine, base, [p for p in present if p.partition("/")[0] not in repos], dirs)
        for repo in repos:  # a repository inside (a clone, a submodule): its own rules, as listing it shows
            cut = len(repo) + 1
            own = [p[cut:] for p in present if p.partition("/")[0] == repo]
            own_dirs = {d[cut:] for d in dirs if d.partition("/")[0] == repo}
            hidden |= {f"{repo}/{n}" for n in await ignored_among(engine, base / repo, own, own_dirs)}
        for name, kids in children.items():
            children[name] = [k for k in kids if f"{name}/{k}" not in hidden or f"{name}/{k}" in dirs]
            left_out[name] = len(kids) - len(children[name])
    matches: list[dict[str, Any]] = []
    lines: list[str] = []
    for name in names:
        path = lead + name
        entry = entries.get(name)
        item: dict[str, Any] = {}
        if name in links:
            note, target = links[name]
            item = {"path": display_name(path), "type": "symlink", "target": target}
            line = f"{display_name(path)} {note}"
        elif name in folders:
            item = {"path": display_name(path + "/"), "type": "folder"}
            line = display_name(path + "/")
            if name in children:
                count = len(children[name])
                item["entries"] = count
                line += f" ({count} {'entry' if count == 1 else 'entries'})"
                if not count and left_out.get(name):  # say why it looks empty, and that there is more
                    item["ignored_entries"] = left_out[name]
                    line = line[:-1] + f", {left_out[name]} ignored)"
        else:
            item = {"path": display_name(path), "type": "file"}
            line = display_name(path)
        marks = []
        if name in ignored:
            item["ignored"] = True
            marks.append("ignored")
        if entry is None:
            item["unsaved"] = True
            marks.append("not saved yet")
        if marks:
            if line.endswith(")") and name in children:
                line = line[:-1] + ", " + ", ".join(marks) + ")"
            else:
                line += f" ({', '.join(marks)})"
        matches.append(item)
        lines.append(line)
    return matches, lines, total, everything - total


#: Most files of the workspace :func:`find_files` ranks (the rest are not offered).
FIND_SCAN_LIMIT = 100_000


async def find_files(ctx: ToolContext, query: str, limit: int) -> list[dict[str, Any]]:
    """The workspace's files matching ``query`` (:mod:`toolwire.workspace.fuzzy`), best first, at most
    ``limit``, each ``{"path", "open", "excluded"?}`` (``toolwire/workspace/findFiles``; ``excluded``: the ``modelExclude`` pattern of a file kept from the model): the files list_files lists
    (``.git`` and ignored files left out) and the open buffers not saved yet; ``open``: open in the editor.
    An empty query gives the open files first, then the listing's order."""
    root = ctx.root
    engine = find_engine(ctx.ripgrep)
    listed: list[str] = []
    async with aclosing(list_batches(engine, root, ignored=False, glob=None)) as batches:
        async for batch in batches:
            listed += batch
            if len(listed) >= FIND_SCAN_LIMIT:
                break
    listed.sort()
    if engine.kind == "git":
        listed = await _off_loop(_regulars, os.path.join(root, ""), listed)
    new = await _not_ignored(engine, root, _unsaved_new(ctx, root))
    known = set(listed)
    listed += [rel for rel in new if rel not in known]
    opened = {doc.path.relative_to(root).as_posix() for doc in ctx.documents.open_documents()
              if doc.path != root and is_inside(doc.path, root)}
    best = await _off_loop(_ranked, fold(query), listed, opened, limit)  # up to 100 000 paths: not on the loop
    out: list[dict[str, Any]] = []
    for rel in best:
        item: dict[str, Any] = {"path": display_name(rel), "open": rel in opened}
        pattern = _kept(ctx, rel)
        if pattern is not None:
            item["excluded"] = pattern
        out.append(item)
    return out


def _kept(ctx: ToolContext, rel: str) -> str | None:
    """The ``modelExclude`` pattern keeping workspace file ``rel`` from the model (a symbolic link by the file
    it leads to, as the tools match it), or None."""
    if not ctx.model_exclude:
        return None
    try:
        return ctx.model_exclude.match_target(ctx.root, resolve_path(ctx.root, rel))
    except (ToolError, OSError, ValueError):
        return ctx.model_exclude.match(rel)


def _ranked(folded: str, listed: list[str], opened: set[str], limit: int) -> list[str]:
    """The ``limit`` paths of ``listed`` that match ``folded`` best (open files first on a tie)."""
    ranked: list[tuple[float, int, str]] = []
    for order, rel in enumerate(listed):
        points = score(folded, rel)
        if points is not None:
            ranked.append((-(points + (0.5 if rel in opened else 0.0)) if folded else (0 if rel in opened else 1), order, rel))
    ranked.sort()
    return [rel for _, _, rel in ranked[:limit]]
