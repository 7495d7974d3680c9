"""Places the editor names, shown to the model: ``path:line:col`` of a position in an LSP
range, ``path:line: text`` of a ``Location``, symbol kinds in words.

The editor's positions count in the link's position encoding; the model reads lines and
columns 1-based, columns in characters (code points) as it reads the text. Workspace
files are named by their workspace-relative path; a place outside the workspace
(library code) is named as such, with its absolute path; a URI that names no local file
by the URI itself. The text of a file is read once per answer (:class:`PlaceReader`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolwire.tools.base import ToolContext
from toolwire.tools.editor_intel import EditorIntel
from toolwire.workspace.errors import clip_quote
from toolwire.workspace.names import display_name, display_text
from toolwire.workspace.paths import WorkspacePath, is_inside
from toolwire.workspace.positions import LineIndex, PositionError

__all__ = ["Place", "PlaceReader", "SYMBOL_KINDS", "OUTSIDE", "LINE_TEXT_LIMIT"]

#: LSP ``SymbolKind`` (1-based) in words.
SYMBOL_KINDS = ("file", "module", "namespace", "package", "class", "method", "property", "field", "constructor",
                "enum", "interface", "function", "variable", "constant", "string", "number", "boolean", "array",
                "object", "key", "null", "enum member", "struct", "event", "operator", "type parameter")

#: How a place outside the workspace is named, before its absolute path.
OUTSIDE = "outside the workspace: "

#: Characters of a line's text shown after a location.
LINE_TEXT_LIMIT = 200


@dataclass(frozen=True, slots=True)
class Place:
    """One position the editor named, as the model reads it.

    Attributes:
        path: Workspace-relative path (display form); the absolute path when ``outside``;
            the URI when it names no local file.
        line: 1-based line.
        column: 1-based column in characters (code points) when the file's text was
            read; else the editor's own character + 1.
        outside: The place is not in the workspace.
        text: The line's text (stripped, clipped), None when unread or kept from the model.
        excluded: The ``modelExclude`` pattern that keeps the file from the model, or None.
    """

    path: str
    line: int
    column: int
    outside: bool = False
    text: str | None = None
    excluded: str | None = None

    def where(self, *, column: bool = True) -> str:
        """``path:line:col`` (``path:line`` without ``column``), outside places named as such."""
        spot = f"{self.path}:{self.line}" + (f":{self.column}" if column else "")
        return OUTSIDE + spot if self.outside else spot

    def dump(self) -> dict[str, Any]:
        """The place for a result's ``data``."""
        out: dict[str, Any] = {"path": self.path, "line": self.line, "column": self.column}
        if self.outside:
            out["outside"] = True
        if self.text is not None:
            out["text"] = self.text
        if self.excluded is not None:
            out["excluded"] = self.excluded
        return out


class PlaceReader:
    """Turns the editor's ``(uri, position)`` into :class:`Place` objects for one answer.

    Args:
        ctx: The running call's context (root, ``modelExclude``); ``ctx.editor`` must be set.
    """

    def __init__(self, ctx: ToolContext, editor: EditorIntel) -> None:
        self._ctx = ctx
        self._editor = editor
        self._texts: dict[Path, LineIndex | None] = {}

    def index(self, path: Path) -> LineIndex | None:
        """The file's text, indexed (read once per answer), or None when unreadable."""
        if path not in self._texts:
            text = self._editor.file_text(path)
            self._texts[path] = LineIndex(text) if text is not None else None
        return self._texts[path]

    def place(self, uri: str, position: Any, *, with_text: bool = False) -> Place:
        """The place of an LSP ``Position`` object (``{"line", "character"}``) of ``uri``."""
        line = _int(position, "line")
        character = _int(position, "character")
        path = self._editor.path_of(uri)
        if path is None:
            return Place(clip_quote(uri, 200), line + 1, character + 1, outside=True)
        root = self._ctx.root
        outside = not is_inside(path, root)
        shown = str(path) if outside else display_name(path.relative_to(root).as_posix())
        excluded = None
        if not outside:
            rel = path.relative_to(root).as_posix()
            target = WorkspacePath(rel=rel, entry=path, resolved=path, name=rel)
            excluded = self._ctx.excluded(target)
        column, text = character + 1, None
        index = self.index(path)
        if index is not None and line < index.line_count:
            content = index.line_text(line)
            try:
                column = index.offset_at((line, character), self._editor.encoding) - index.starts[line] + 1
            except PositionError:
                pass
            if with_text and excluded is None:
                text = display_text(clip_quote(content.strip(), LINE_TEXT_LIMIT))
        return Place(shown, line + 1, column, outside, text, excluded)


def _int(obj: Any, key: str) -> int:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, int) and value >= 0 else 0
