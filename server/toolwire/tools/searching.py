"""search_files: the lines of the workspace that contain a text or match an expression.

What the editor shows is what is searched: an open buffer whose text differs from the
disk (or whose file is not saved yet) is searched instead of the file. The disk is
searched by the engine :mod:`toolwire.tools.engine` finds (ripgrep, else ``git grep``,
else a walk in a worker thread: :mod:`toolwire.tools.searchengines`); every engine
gives the same results for the cases in tests/test_search_files.py.

Rules (each a test): ``.git/`` never; files ignored by the repository only with
``ignored: true``; hidden files searched; binary files that match named, not shown;
symbolic links not followed; files over :data:`~toolwire.workspace.fs.MAX_FILE_BYTES`
named and counted, not shown; ``modelExclude`` files never searched (named, with the
reason); results bounded by ``limit`` (:mod:`toolwire.tools.searchresult`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolwire.tools.base import Tool, ToolContext, ToolResult
from toolwire.tools.engine import find_engine, ignored_among
from toolwire.tools.fitting import result_budget
from toolwire.tools.searchengines import Search
from toolwire.tools.searchresult import NAMES_SHOWN, Results
from toolwire.tools.searchrun import run_search
from toolwire.workspace.errors import ToolError, clip_quote
from toolwire.workspace.fs import MAX_FILE_BYTES
from toolwire.workspace.paths import resolve_path

__all__ = ["SearchFiles", "SearchFilesArgs", "smart_case_sensitive"]


#: Longest query (characters; 4 bytes each at most stays well under an argument's 128 KiB).
MAX_QUERY = 8192


class SearchFilesArgs(BaseModel):
    """Arguments of search_files."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, description="The text to find (a literal unless regex is true). One line: "
                                                 "it cannot contain a line break.")
    regex: bool = Field(False, description="Treat query as a regular expression (ripgrep / Rust syntax, e.g. "
                                           "'def \\w+\\('). Default false: a literal text.")
    path: str = Field(".", description="Folder (or file) to search, relative to the workspace folder. Default '.'.")
    include: str | None = Field(None, description="Only files whose path relative to `path` matches this glob "
                                                  "('**/*.py' at any depth, '*.py' directly under path, "
                                                  "'{src,test}/**/*.ts'). Optional.")
    case_sensitive: bool | None = Field(None, description="null (default): case-sensitive only when the query "
                                                          "has an upper-case letter.")
    context_lines: int = Field(0, ge=0, le=20, description="Lines shown before and after each match. Default 0.")
    limit: int = Field(100, ge=1, le=1000, description="Most matches returned. Default 100.")
    ignored: bool = Field(False, description="Also search files the repository ignores (.gitignore). Default false.")

    @field_validator("query")
    @classmethod
    def _one_line(cls, value: str) -> str:
        if "\n" in value or "\r" in value:
            raise ValueError("query must be one line (search for one line's text, or use a regex such as 'a.*b')")
        if "\0" in value:  # no process takes it in its arguments; a file holding one is binary, named, not shown
            raise ValueError("query must not hold a NUL character (binary files are named in results, not searched)")
        if len(value) > MAX_QUERY:  # an engine's argument is at most 128 KiB (Linux), or E2BIG
            raise ValueError(f"query is over {MAX_QUERY} characters (search for a shorter part of the line)")
        return value


_ESCAPE = re.compile(r"\\.")


def smart_case_sensitive(query: str, regex: bool) -> bool:
    """Smart case: sensitive only when ``query`` has an upper-case letter. In a regular
    expression, escapes (``\\W``, ``\\S``, ``\\D``) do not count, as in ripgrep."""
    text = _ESCAPE.sub("", query) if regex else query
    return any(ch.isupper() for ch in text)


def _names(paths: list[str]) -> str:
    shown = ", ".join(paths[:NAMES_SHOWN])
    return shown + (f" and {len(paths) - NAMES_SHOWN} more" if len(paths) > NAMES_SHOWN else "")


def notes(results: Results) -> list[str]:
    """The lines after the matches that say what was not shown, and why."""
    out = []
    if results.binary:
        out.append(f"binary files that match (lines not shown): {_names(results.binary)}")
    if results.too_large:
        out.append(f"files over the {MAX_FILE_BYTES // (1024 * 1024)} MB read limit that match, lines not shown "
                   f"({len(results.too_large)}): {_names(results.too_large)} — read_file reads them in line ranges")
    if results.excluded:
        out.append(f"not searched (modelExclude): {_names([p for p, _ in results.excluded])} — read_file asks "
                   "the user")
    return out


class SearchFiles(Tool):
    """Search the workspace's files for a text or a regular expression."""

    name: ClassVar[str] = "search_files"
    description: ClassVar[str] = (
        "Search file contents in the workspace (unsaved editor text included) for a literal text, or a regular "
        "expression with regex: true. Returns matching lines grouped by file as 'path:line: text' (context lines "
        "as 'path-line- text'), at most `limit`, then how many more; '[]' when nothing matches. Smart case: "
        "case-insensitive unless the query has an upper-case letter. Narrow with path (a folder) and include (a "
        "glob, e.g. '**/*.py'). Use it to find where something is defined or used before reading or editing; use "
        "list_files to find files by name. Skips .git, ignored files (unless ignored: true), binary files and "
        "files kept from the model (named in the result)."
    )
    Args: ClassVar[type[BaseModel]] = SearchFilesArgs
    read_only: ClassVar[bool] = True

    async def run(self, args: SearchFilesArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        wp = resolve_path(ctx.root, args.path)
        if not os.path.exists(wp.resolved) and not _open_below(ctx, wp.resolved):
            raise ToolError("not_found", f"{clip_quote(wp.rel)} does not exist")
        if os.path.exists(wp.resolved) and not (os.path.isdir(wp.resolved) or os.path.isfile(wp.resolved)):
            # a FIFO or a device: rg given one by name reads it and waits for ever
            raise ToolError("not_a_file", f"{clip_quote(wp.rel)} is not a regular file or a folder")
        sensitive = args.case_sensitive if args.case_sensitive is not None else smart_case_sensitive(
            args.query, args.regex)
        search = Search(
            root=Path(os.path.realpath(ctx.root)),
            scope=wp,
            query=args.query,
            regex=args.regex,
            ignore_case=not sensitive,
            include=args.include,
            context=args.context_lines,
            ignored=args.ignored,
        )
        results = Results(args.limit, args.context_lines)
        # The scope itself kept from the model (a path naming .env, or a link to it): an engine given
        # a file by name searches it whatever its globs say, so nothing runs; the file is named.
        pattern = ctx.model_exclude.match_target(ctx.root, wp, is_dir=os.path.isdir(wp.resolved))
        if pattern is not None:
            results.excluded.append((wp.rel, pattern))
            engine = "none"
        elif not args.ignored and await _scope_ignored(ctx, search):
            kind = "/" if os.path.isdir(wp.resolved) else ""
            data = {"query": args.query, "path": wp.rel, "engine": find_engine(ctx.ripgrep).kind, **results.data(),
                    "ignored_path": True}
            return ToolResult(ok=True, content=f"[]\n\n{wp.rel}{kind} is ignored by the repository; set ignored to "
                                               "true to search it", data=data)
        else:
            engine = await run_search(ctx, search, results)
        told = notes(results)
        budget = result_budget(ctx, told)
        if budget is not None:  # whole lines within the session's resultLimit, not a cut in the middle
            results.fit(budget)
        data: dict[str, Any] = {"query": args.query, "path": wp.rel, "engine": engine, **results.data()}
        return ToolResult(ok=True, content=results.render(told), data=data)


async def _scope_ignored(ctx: ToolContext, search: Search) -> bool:
    """True when the ``path`` searched is itself ignored by the repository (or lies in an
    ignored folder): the engines would search what an explicit path holds, so it is asked
    first, as ``list_files`` does."""
    if search.target == ".":
        return False
    target = search.root / search.target
    engine = find_engine(ctx.ripgrep)
    dirs = {target.name} if os.path.isdir(target) else set()
    return bool(await ignored_among(engine, target.parent, [target.name], dirs))


def _open_below(ctx: ToolContext, folder: Path) -> bool:
    """True when an open buffer lies at or below ``folder`` (a file created in the editor, not saved)."""
    return any(doc.path == folder or doc.path.is_relative_to(folder) for doc in ctx.documents.open_documents())
