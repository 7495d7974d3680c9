"""The bounded result of a search: events in, at most ``limit`` matches kept, text out.

:class:`Results` takes the events of :mod:`toolwire.tools.searchparse` for each file,
keeps the first ``limit`` matches (with their context lines), only counts the ones
after (up to :data:`COUNT_CAP` more, then "more than"), and renders what the model
reads and the structured ``data``. Memory is bounded by ``limit``, not by the number
of matches.

Text form, one block per file (files separated by a blank line)::

    src/a.py-2- context line
    src/a.py:3: the matching line
    --
    src/a.py:40: another match, after a gap

``:`` after the line number marks a match, ``-`` a context line (grep's convention).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from toolwire.tools.searchparse import Line

__all__ = ["COUNT_CAP", "LINE_CHARS", "Results", "cut_line"]

#: Matches counted past the limit before the search stops and says "more than".
COUNT_CAP: Final = 10_000
#: Longest line shown (characters); a longer one is cut around its first match.
LINE_CHARS: Final = 300
#: How many characters before the first match a cut line keeps.
_LEAD: Final = 80
#: Files named per note (binary, too large, excluded) before "and N more".
NAMES_SHOWN: Final = 20


def cut_line(text: str, column: int) -> str:
    """``text`` cut to about :data:`LINE_CHARS` characters around ``column``, with markers
    saying what was left out (``…[+1234 characters]``)."""
    if len(text) <= LINE_CHARS:
        return text
    start = max(0, min(column - _LEAD, len(text) - LINE_CHARS))
    end = start + LINE_CHARS
    head = f"[{start} characters]…" if start else ""
    tail = f"…[+{len(text) - end} characters]" if end < len(text) else ""
    return head + text[start:end] + tail


@dataclass(slots=True)
class _File:
    shown: str  # workspace-relative display form
    key: list[str] = field(default_factory=list)  # sort key: the name, folder by folder
    lines: list[Line] = field(default_factory=list)
    matches: int = 0


class Results:
    """Matches grouped by file, bounded.

    Args:
        limit: Most matches kept.
        context: Context lines asked for around each match (the after-context of the
            last kept match is kept too).
    """

    def __init__(self, limit: int, context: int) -> None:
        self.limit = limit
        self.context = context
        self.files: list[_File] = []
        self.kept = 0
        self.total = 0
        self.capped = False  # stopped counting: there are more than ``total``
        self.binary: list[str] = []
        self.too_large: list[str] = []
        self.excluded: list[tuple[str, str]] = []  # (shown path, pattern)
        self._file = _File("")
        self._extra = 0  # matches of the current file past the limit
        self._last = 0  # line number of the current file's last kept match

    @property
    def full(self) -> bool:
        """True once ``limit`` matches are kept (later ones are only counted)."""
        return self.kept + self._file.matches >= self.limit

    @property
    def done(self) -> bool:
        """True when counting stops too (:data:`COUNT_CAP` matches past the limit): the
        caller ends the current file (:meth:`end`) and stops the engine."""
        return self.capped or self.total + self._extra - self.kept >= COUNT_CAP

    def count(self, n: int = 1) -> None:
        """Count ``n`` matches that are not kept."""
        self.total += n
        if self.total - self.kept >= COUNT_CAP:
            self.capped = True

    @property
    def counting(self) -> bool:
        """True when lines of the current file past this point are only counted: the limit
        is reached and no after-context of a kept match is due (a caller may then count
        match lines without parsing them)."""
        entry = self._file
        return self.full and not (entry.matches and self.context)

    def begin(self, shown: str, name: str = "") -> None:
        """Start a file (``shown``: its workspace-relative display form; ``name``: as the
        file system spells it, the sort key)."""
        self._file = _File(shown, (name or shown).split("/"))
        self._extra = 0
        self._last = 0

    def line(self, line: Line) -> None:
        """A line of the current file, in order. Matches past the limit are only counted;
        context lines are kept only around kept matches."""
        entry = self._file
        if line.match:
            if self.kept + entry.matches >= self.limit:
                self._extra += 1
                return
            entry.lines.append(line)
            entry.matches += 1
            self._last = line.number
        elif self.kept + entry.matches < self.limit or (
                entry.matches and self._last < line.number <= self._last + self.context):
            entry.lines.append(line)

    def count_match(self) -> None:
        """A match of the current file past the limit, counted without being parsed."""
        self._extra += 1

    def end(self) -> None:
        """Keep the current file's lines and count its matches."""
        entry = self._file
        if entry.matches:
            self.files.append(entry)
            self.kept += entry.matches
        self.total += entry.matches
        self.count(self._extra)
        self._file = _File("")
        self._extra = 0

    def drop(self) -> int:
        """Forget the current file (binary, too large, shadowed by a buffer); the number
        of matches it had so far."""
        n = self._file.matches + self._extra
        self._file = _File("")
        self._extra = 0
        return n

    def add_file(self, shown: str, lines: list[Line], name: str = "") -> None:
        """:meth:`begin`, :meth:`line` for each of ``lines``, :meth:`end`."""
        self.begin(shown, name)
        for line in lines:
            self.line(line)
        self.end()

    def sort(self) -> None:
        """Order the files by path, folder by folder (when nothing was left out, the
        engine's order does not matter)."""
        if not self.truncated:
            self.files.sort(key=lambda f: f.key)

    def fit(self, budget: int) -> None:
        """Keep only the matches whose lines fit in ``budget`` characters of rendered text
        (at least one), so the model gets whole lines and the count of the rest rather than
        a result cut in the middle; the matches dropped stay counted in :attr:`total`."""
        used = 0
        for index, entry in enumerate(self.files):
            used += 2 if index else 0  # the blank line between files
            keep = 0  # lines of this file that fit, up to a match or its context
            matches = 0
            previous = None
            for n, line in enumerate(entry.lines):
                if self.context and previous is not None and line.number > previous + 1:
                    used += 3
                previous = line.number
                used += len(entry.shown) + len(str(line.number)) + 4 + len(cut_line(line.text, line.column))
                if used > budget and (index or matches):
                    break
                keep = n + 1
                matches += line.match
            if keep < len(entry.lines):
                entry.lines = entry.lines[:keep]
                entry.matches = matches
                del self.files[index + 1 if matches else index:]
                self.kept = sum(f.matches for f in self.files)
                return

    # ---- rendering

    def render(self, notes: list[str]) -> str:
        """The text the model reads: the blocks, then the notes and the narrowing hint."""
        blocks = []
        for entry in self.files:
            rows: list[str] = []
            previous = None
            for line in entry.lines:
                if self.context and previous is not None and line.number > previous + 1:
                    rows.append("--")
                sep = ":" if line.match else "-"
                rows.append(f"{entry.shown}{sep}{line.number}{sep} {cut_line(line.text, line.column)}")
                previous = line.number
            blocks.append("\n".join(rows))
        out = "\n\n".join(blocks) if blocks else "[]"
        tail = list(notes)
        if self.truncated:
            total = f"more than {self.total}" if self.capped else str(self.total)
            tail.insert(0, f"{self.kept} of {total} matches shown. Narrow the search: a folder as path, an "
                           "include glob (e.g. \"**/*.py\"), or a more specific query.")
        return out + ("\n\n" + "\n".join(tail) if tail else "")

    @property
    def truncated(self) -> bool:
        """True when matches were left out."""
        return self.total > self.kept

    def data(self) -> dict[str, Any]:
        """The structured result: ``matches`` (``{"path", "line", "text"}``, lines uncut),
        ``truncated``, ``total`` (a lower bound when ``total_is_lower_bound``), ``files``."""
        matches = [{"path": f.shown, "line": ln.number, "text": ln.text}
                   for f in self.files for ln in f.lines if ln.match]
        return {
            "matches": matches,
            "truncated": self.truncated,
            "total": self.total,
            "total_is_lower_bound": self.capped,
            "files": len(self.files),
            "binary": self.binary,
            "too_large": self.too_large,
            "excluded": [{"path": p, "pattern": pat} for p, pat in self.excluded],
        }
