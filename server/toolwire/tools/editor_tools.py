"""The editor tools: the editor's problems, workspace symbols, definitions and references.

Offered only when the client declared the matching feature (:func:`editor_tools`):
``get_diagnostics`` ↔ ``diagnostics``, ``search_symbols`` ↔ ``symbols``, ``find_symbol`` ↔
``definition`` or ``references``. They ask the editor through ``ToolContext.editor``
(:mod:`toolwire.tools.editor_intel`), change nothing (no approval by default) and are
cancellable; a client that does not answer within ``editorTimeout`` gives an
``editor_timeout`` error. protocol.md "The editor's intelligence".
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolwire.tools.base import Tool, ToolContext, ToolResult
from toolwire.tools.editor_intel import EditorFeatures, EditorIntel
from toolwire.tools.editor_places import SYMBOL_KINDS, Place, PlaceReader
from toolwire.workspace.errors import ToolError, clip_quote
from toolwire.workspace.names import display_text
from toolwire.workspace.paths import resolve_path
from toolwire.workspace.positions import LineIndex, units

__all__ = ["GetDiagnostics", "SearchSymbols", "FindSymbol", "editor_tools", "all_editor_tools", "MAX_PROBLEMS", "MAX_PLACES",
           "occurrences"]

#: Problems listed by one get_diagnostics call; the rest are counted in a marker.
MAX_PROBLEMS = 100
#: Symbols or locations listed by one call; the rest are counted in a marker.
MAX_PLACES = 100
#: Characters of one problem's message shown.
MESSAGE_LIMIT = 300

SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}


def _editor(ctx: ToolContext) -> EditorIntel:
    if ctx.editor is None:
        raise ToolError("editor_unsupported", "no editor answers such questions in this session; use "
                        "search_files and read_file instead")
    return ctx.editor


class GetDiagnosticsArgs(BaseModel):
    """Arguments of get_diagnostics."""

    model_config = ConfigDict(extra="forbid")
    paths: list[str] | None = Field(None, description=(
        "Files or folders (workspace-relative) whose problems to list; null or left out: every file the editor "
        "has problems for."))


class GetDiagnostics(Tool):
    """The editor's problems (errors, warnings) of some files or of the whole workspace."""

    name: ClassVar[str] = "get_diagnostics"
    description: ClassVar[str] = (
        "List the problems (errors, warnings, hints) the editor's language servers report, errors first, one per "
        "line as 'path:line:col: severity (source code): message'. Give paths (files or folders) to narrow, or "
        "leave it out for every file with problems. The editor usually checks only files open in it, so a closed "
        "file may show none. Use it after editing to see what is broken, and before fixing an error to find its "
        "exact place."
    )
    Args: ClassVar[type[BaseModel]] = GetDiagnosticsArgs
    read_only: ClassVar[bool] = True
    shows_content: ClassVar[bool] = True

    async def run(self, args: GetDiagnosticsArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        editor = _editor(ctx)
        scopes = [resolve_path(ctx.root, path) for path in args.paths or []]
        for wp in scopes:
            if not wp.resolved.exists() and ctx.documents.get(wp.resolved) is None:
                raise ToolError("not_found", f"{clip_quote(wp.rel)} does not exist (nor is it open in the editor)")
        files = [wp for wp in scopes if not wp.resolved.is_dir()]
        ask = None if not scopes or len(files) < len(scopes) else [editor.uri_for(wp.resolved) for wp in files]
        answer = await editor.diagnostics(ask)
        reader = PlaceReader(ctx, editor)
        found: list[tuple[int, Place, dict[str, Any]]] = []
        for uri, diagnostics in answer:
            path = editor.path_of(uri)
            if scopes and (path is None or not any(path == wp.resolved or path.is_relative_to(wp.resolved)
                                                   for wp in scopes)):
                continue
            for diagnostic in diagnostics:
                place = reader.place(uri, diagnostic.get("range", {}).get("start", {}))
                found.append((diagnostic.get("severity") or 1, place, diagnostic))
        found.sort(key=lambda item: (item[0], item[1].outside, item[1].path, item[1].line, item[1].column))
        lines = [_problem_line(severity, place, diagnostic) for severity, place, diagnostic in found[:MAX_PROBLEMS]]
        counts = {name: sum(1 for severity, _, _ in found if SEVERITIES.get(severity, "error") == name)
                  for name in SEVERITIES.values()}
        summary = ", ".join(f"{n} {name}{'s' if n != 1 and name in ('error', 'warning') else ''}"
                            for name, n in counts.items() if n)
        where = "" if not scopes else " in " + ", ".join(wp.rel for wp in scopes)
        if not found:
            content = f"No problems reported{where}."
        else:
            content = _listed(f"{_plural(len(found), 'problem')}{where} ({summary})", lines, len(found), MAX_PROBLEMS,
                              "problems not shown; give paths to narrow")
        unchecked = [wp.rel for wp in files if ctx.documents.get(wp.resolved) is None
                     and not any(place.path == wp.rel for _, place, _ in found)]
        if unchecked:
            content += ("\n" + ", ".join(unchecked) + (" is" if len(unchecked) == 1 else " are") +
                        " not open in the editor: it may not have been checked")
        data = {"problems": [_problem_data(severity, place, d) for severity, place, d in found[:MAX_PROBLEMS]],
                "total": len(found), "counts": counts, "notOpen": unchecked}
        return ToolResult(ok=True, content=content, data=data)


def _code(diagnostic: dict[str, Any]) -> str:
    source = diagnostic.get("source")
    code = diagnostic.get("code")
    parts = [str(part) for part in (source, code) if isinstance(part, (str, int)) and str(part)]
    return f" ({clip_quote(display_text(' '.join(parts)), 60)})" if parts else ""


def _message(diagnostic: dict[str, Any], place: Place) -> str:
    if place.excluded is not None:
        return f"[message not shown: the file is kept from the model (modelExclude {place.excluded!r})]"
    text = " ".join(str(diagnostic.get("message", "")).split())
    return display_text(clip_quote(text, MESSAGE_LIMIT))


def _problem_line(severity: int, place: Place, diagnostic: dict[str, Any]) -> str:
    return f"{place.where()}: {SEVERITIES.get(severity, 'error')}{_code(diagnostic)}: {_message(diagnostic, place)}"


def _problem_data(severity: int, place: Place, diagnostic: dict[str, Any]) -> dict[str, Any]:
    out = {**place.dump(), "severity": SEVERITIES.get(severity, "error"), "message": _message(diagnostic, place)}
    for key in ("source", "code"):
        if isinstance(diagnostic.get(key), (str, int)):
            out[key] = diagnostic[key]
    return out


class SearchSymbolsArgs(BaseModel):
    """Arguments of search_symbols."""

    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1, max_length=200, description=(
        "Part of a symbol's name (functions, classes, methods, variables...); the editor matches it loosely."))


class SearchSymbols(Tool):
    """Workspace symbols whose name matches a query, from the editor's language servers."""

    name: ClassVar[str] = "search_symbols"
    description: ClassVar[str] = (
        "Find where functions, classes, methods and other symbols are declared, by name, through the editor's "
        "language servers. One per line as 'kind name (in container) path:line'. Faster and more exact than "
        "search_files for declarations; then use find_symbol for the definition or the references of a use."
    )
    Args: ClassVar[type[BaseModel]] = SearchSymbolsArgs
    read_only: ClassVar[bool] = True

    async def run(self, args: SearchSymbolsArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        editor = _editor(ctx)
        symbols = await editor.symbols(args.query)
        reader = PlaceReader(ctx, editor)
        rows = []
        kept_from_model = 0
        for symbol in symbols:
            location = symbol["location"]
            place = reader.place(location["uri"], location["range"]["start"])
            if place.excluded is not None:  # a symbol's name is the file's text (a key of .env)
                kept_from_model += 1
                continue
            kind = symbol.get("kind")
            kind_name = SYMBOL_KINDS[kind - 1] if isinstance(kind, int) and 1 <= kind <= len(SYMBOL_KINDS) else "symbol"
            rows.append((place.outside, kind_name, display_text(clip_quote(str(symbol.get("name", "")), 120)),
                         display_text(clip_quote(str(symbol.get("containerName") or ""), 120)), place))
        rows.sort(key=lambda row: row[0])  # the workspace's first, else in the editor's order
        lines = [f"{kind} {name}{f' (in {container})' if container else ''} {place.where(column=False)}"
                 for _, kind, name, container, place in rows[:MAX_PLACES]]
        if not rows:
            content = f"No symbols match {args.query!r}."
        else:
            content = _listed(f"{_plural(len(rows), 'symbol')} match {args.query!r}", lines, len(rows), MAX_PLACES,
                              "symbols not shown; give a longer query")
        if kept_from_model:
            content += (f"\n[{_plural(kept_from_model, 'symbol')} in files kept from the model (modelExclude) "
                        "not shown]")
        data = {"query": args.query, "total": len(rows), "kept_from_model": kept_from_model, "symbols": [
            {"kind": kind, "name": name, "container": container or None, **place.dump()}
            for _, kind, name, container, place in rows[:MAX_PLACES]]}
        return ToolResult(ok=True, content=content, data=data)


class FindSymbolArgs(BaseModel):
    """Arguments of find_symbol."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="File (workspace-relative) where the symbol appears.")
    line: int = Field(ge=1, description="1-based line of that file where the symbol appears.")
    symbol: str = Field(min_length=1, max_length=200, description="The symbol's name as written on that line.")
    occurrence: int = Field(1, ge=1, description=(
        "Which whole-word occurrence of symbol on that line, counted from 1 (when the line has it several times)."))
    find: Literal["definition", "references"] = Field(description=(
        "definition: where the symbol is defined; references: every place that uses it."))


def occurrences(line_text: str, symbol: str) -> list[int]:
    """Code-point offsets in ``line_text`` of each whole-word occurrence of ``symbol``: an
    occurrence does not continue a word (a letter, digit or ``_`` right before a ``symbol``
    that starts with one, or right after one that ends with one)."""
    word = re.compile(r"\w")
    head = word.match(symbol[0]) is not None
    tail = word.match(symbol[-1]) is not None
    out = []
    start = line_text.find(symbol)
    while start != -1:
        end = start + len(symbol)
        if not (head and start > 0 and word.match(line_text[start - 1])) and \
                not (tail and end < len(line_text) and word.match(line_text[end])):
            out.append(start)
        start = line_text.find(symbol, start + 1)
    return out


class FindSymbol(Tool):
    """The definition or the references of a symbol on a given line, from the editor's language servers."""

    name: ClassVar[str] = "find_symbol"
    description: ClassVar[str] = (
        "Go to the definition of a symbol, or find every reference to it, through the editor's language servers "
        "(exact, unlike a text search). Name the file, the 1-based line where the symbol appears and the symbol "
        "itself; when it appears several times on that line, occurrence picks one. Returns one location per line "
        "as 'path:line: text of that line'; library code outside the workspace is named as such."
    )
    Args: ClassVar[type[BaseModel]] = FindSymbolArgs
    read_only: ClassVar[bool] = True
    shows_content: ClassVar[bool] = True

    async def run(self, args: FindSymbolArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        editor = _editor(ctx)
        editor.require(args.find)
        wp = resolve_path(ctx.root, args.path)
        ctx.refuse_excluded(wp)
        text = editor.file_text(wp.resolved)
        if text is None:
            raise ToolError("not_found", f"{clip_quote(wp.rel)} does not exist or cannot be read")
        index = LineIndex(text)
        if args.line > index.line_count:
            raise ToolError("no_such_line", f"{wp.rel} has {index.line_count} lines; line {args.line} does not "
                            "exist", {"lines": index.line_count})
        line_text = index.line_text(args.line - 1)
        found = occurrences(line_text, args.symbol)
        if not found:
            raise ToolError("symbol_not_found", f"{args.symbol!r} is not on line {args.line} of {wp.rel} as a whole "
                            f"word; the line is: {clip_quote(display_text(line_text.strip()), 200)}")
        if args.occurrence > len(found):
            raise ToolError("no_such_occurrence", f"{args.symbol!r} appears {len(found)} time(s) on line {args.line} "
                            f"of {wp.rel} (columns {_columns(found)}); pass occurrence from 1 to {len(found)}",
                            {"columns": [c + 1 for c in found]})
        offset = found[args.occurrence - 1]
        position = (args.line - 1, units(line_text[:offset], editor.encoding))
        uri = editor.uri_for(wp.resolved)
        if args.find == "definition":
            locations = await editor.definition(uri, position)
        else:
            locations = await editor.references(uri, position, False)
        return self._result(args, ctx, editor, wp.rel, found, locations)

    def _result(self, args: FindSymbolArgs, ctx: ToolContext, editor: EditorIntel, rel: str, found: list[int],
                locations: list[dict[str, Any]]) -> ToolResult:
        reader = PlaceReader(ctx, editor)
        places: list[Place] = []
        for location in locations:
            place = reader.place(location["uri"], location["range"]["start"], with_text=True)
            if place not in places:
                places.append(place)
        places.sort(key=lambda p: p.outside)  # the workspace's first, else in the editor's order
        column = found[args.occurrence - 1] + 1
        what = "definition" if args.find == "definition" else "references"
        head = f"{args.symbol} at {rel}:{args.line}:{column}"
        lines = [_location_line(place) for place in places[:MAX_PLACES]]
        if not places:
            content = f"No {what} found for {head}."
        else:
            noun = "definition" if args.find == "definition" else "reference"
            named = _plural(len(places), noun) if args.find == "references" or len(places) > 1 else noun
            content = _listed(f"{named[0].upper()}{named[1:]} of {head}", lines, len(places), MAX_PLACES,
                              "locations not shown")
        if len(found) > 1:
            content += (f"\nused occurrence {args.occurrence} of {len(found)} (columns {_columns(found)}); "
                        "pass occurrence to choose")
        data = {"symbol": args.symbol, "find": args.find, "path": rel, "line": args.line, "column": column,
                "occurrence": args.occurrence, "occurrences": [c + 1 for c in found], "total": len(places),
                "locations": [place.dump() for place in places[:MAX_PLACES]]}
        return ToolResult(ok=True, content=content, data=data)


def _plural(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless n is 1: '1 symbol', '3 symbols'."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _listed(head: str, lines: list[str], total: int, limit: int, more: str) -> str:
    """``head``, a colon, one line a place (the first ``limit`` of ``total``), and a marker
    '[<how many> more <more>]' when there were more."""
    content = f"{head}:\n" + "\n".join(lines)
    return content + (f"\n[{total - limit} more {more}]" if total > limit else "")


def _columns(found: list[int]) -> str:
    return ", ".join(str(c + 1) for c in found)


def _location_line(place: Place) -> str:
    where = place.where(column=False)
    if place.excluded is not None:
        return f"{where}: [kept from the model (modelExclude {place.excluded!r})]"
    return f"{where}: {place.text}" if place.text is not None else where


def editor_tools(features: EditorFeatures | None) -> list[Tool]:
    """The editor tools the client's declared ``features`` can answer, in their fixed order:
    get_diagnostics (diagnostics), search_symbols (symbols), find_symbol (definition or references)."""
    if features is None:
        return []
    out: list[Tool] = []
    if features.diagnostics:
        out.append(GetDiagnostics())
    if features.symbols:
        out.append(SearchSymbols())
    if features.definition or features.references:
        out.append(FindSymbol())
    return out


def all_editor_tools() -> list[Tool]:
    """Every editor tool (for the permission keys and the system prompt's names)."""
    return editor_tools(EditorFeatures(True, True, True, True))

