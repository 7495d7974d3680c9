"""What the search engines print, read as one closed set of events.

``search_files`` runs ripgrep (``rg --json``), ``git grep`` (``-z --column -n``) or a
Python walk; each is read here into the same three events, per file and in order:
:class:`Begin`, :class:`Line` (a match or a context line) and :class:`End`
(which says whether the engine found the file binary). Paths stay as the engine
spells them relative to the folder it ran in (``os.fsdecode`` form: lone surrogates
for bytes that are not UTF-8); the caller makes them workspace-relative.

Formats:

* ripgrep's JSON Lines (https://docs.rs/grep-printer/latest/grep_printer/struct.JSON.html):
  ``begin``/``match``/``context``/``end``/``summary`` objects; a path or line that is
  not UTF-8 comes as ``{"bytes": base64}`` instead of ``{"text": ...}``; ``submatches[].start``
  is a byte offset into the line; ``end.binary_offset`` is set when the file held a NUL
  (with ``--binary`` the file is still searched, so a match says "binary file matches").
* ``git grep -z --column -n`` (git-grep(1)): a match is ``path NUL line NUL column NUL
  text``, a context line ``path NUL line NUL text`` (no column), ``--`` separates hunks,
  and a binary file that matches is ``Binary file <path> matches``; the column is the
  1-based byte offset of the first match.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from toolwire.workspace.names import valid_text

__all__ = ["Begin", "Line", "End", "Event", "RgParser", "GitGrepParser", "PyMatcher", "strip_eol"]


@dataclass(slots=True, frozen=True)
class Begin:
    """The engine starts reporting ``path``."""

    path: str


@dataclass(slots=True, frozen=True)
class Line:
    """One line of a file: a match, or a context line around one.

    Attributes:
        number: 1-based line number.
        text: The line without its line end.
        match: True for a matching line, False for context.
        column: Character offset of the first match in ``text`` (0 for context lines).
    """

    number: int
    text: str
    match: bool
    column: int = 0


@dataclass(slots=True, frozen=True)
class End:
    """The engine is done with ``path``; ``binary`` when it found a NUL byte in it."""

    path: str
    binary: bool = False


Event = Begin | Line | End


def strip_eol(text: str) -> str:
    """``text`` without one trailing ``\\n`` or ``\\r\\n``."""
    if text.endswith("\n"):
        text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
    return text


def _char_offset(text: str, byte_offset: int) -> int:
    """The character index of UTF-8 ``byte_offset`` in ``text`` (cheap for ASCII)."""
    if text.isascii():
        return byte_offset
    return len(text.encode("utf-8", "surrogateescape")[:byte_offset].decode("utf-8", "ignore"))


def _line(number: int, text: str, match: bool, column: int = 0) -> Line:
    """A :class:`Line` without the UTF-8 byte order mark a file's first line may start with
    (engines given ``-E none`` keep it; read_file and the walk drop it)."""
    if number == 1 and text.startswith("\ufeff"):
        return Line(1, text[1:], match, max(0, column - 1))
    return Line(number, text, match, column)


def _rg_text(obj: dict) -> str:
    if "text" in obj:
        return obj["text"]
    return base64.b64decode(obj["bytes"]).decode("utf-8", "replace")


def _rg_path(obj: dict) -> str:
    if "text" in obj:
        return obj["text"]
    return os.fsdecode(base64.b64decode(obj["bytes"]))


class RgParser:
    """Reads ``rg --json`` output one line at a time (as
    :func:`toolwire.tools.engine.stream_batches` decodes it)."""

    __slots__ = ()

    def feed(self, raw: str) -> Iterator[Event]:
        """The events of one output line (none for ``summary`` and blank lines)."""
        if not raw.strip():
            return
        obj = json.loads(raw)
        kind = obj.get("type")
        data = obj.get("data") or {}
        if kind in ("match", "context"):
            text = strip_eol(_rg_text(data["lines"]))
            column = 0
            if kind == "match" and data.get("submatches"):
                column = _char_offset(text, data["submatches"][0]["start"])
            yield _line(data["line_number"] or 0, text, kind == "match", column)
        elif kind == "begin":
            yield Begin(_rg_path(data["path"]))
        elif kind == "end":
            yield End(_rg_path(data["path"]), data.get("binary_offset") is not None)



_BINARY = re.compile(r"^Binary file (.*) matches$", re.S)


class GitGrepParser:
    """Reads ``git grep -z --column -n`` output one line (line end removed) at a time; text
    as :func:`toolwire.tools.engine.stream_batches` decodes it (``surrogateescape``).

    git prints no begin or end of a file: they are made up when the path changes and
    at :meth:`close`.
    """

    __slots__ = ("_path", "_pending")

    def __init__(self) -> None:
        self._path: str | None = None
        self._pending: str | None = None  # the start of a path holding a line break

    def _switch(self, path: str | None) -> Iterator[Event]:
        if path == self._path:
            return
        if self._path is not None:
            yield End(self._path)
        self._path = path
        if path is not None:
            yield Begin(path)

    def feed(self, raw: str) -> Iterator[Event]:
        """The events of one output line (a path holding a line break comes in two or more:
        the first parts are kept and joined to the rest)."""
        if self._pending is not None:
            raw, self._pending = self._pending + "\n" + raw, None
        if raw == "--" or not raw:
            return
        parts = raw.split("\0", 3)
        if len(parts) < 3:
            binary = _BINARY.match(raw)
            if binary is not None:
                path = binary.group(1)
                yield from self._switch(None)
                yield Begin(path)
                yield End(path, binary=True)
            elif len(raw) < 4096:
                self._pending = raw
            return
        path = parts[0]
        yield from self._switch(path)
        if len(parts) == 4 and parts[2].isdigit():
            text = valid_text(parts[3].removesuffix("\r"))
            yield _line(int(parts[1]), text, True, _char_offset(text, int(parts[2]) - 1))
        else:
            text = valid_text("\0".join(parts[2:]).removesuffix("\r"))
            yield _line(int(parts[1]), text, False)

    def close(self) -> Iterator[Event]:
        """The :class:`End` of the last file."""
        yield from self._switch(None)


class PyMatcher:
    """The query as a Python regular expression, for text no engine process reads
    (the walk fallback; open buffers when the engine is not ripgrep).

    Lines are split on ``\\n`` (a ``\\r`` before it is dropped), as ripgrep and git do.

    Args:
        query: The text or expression searched.
        regex: ``query`` is a regular expression (Python :mod:`re` syntax, close to
            ripgrep's for the common cases); otherwise a literal.
        ignore_case: Match regardless of case.

    Raises:
        re.error: an invalid expression.
    """

    __slots__ = ("_pattern", "_literal", "_ignore_case", "_whole")

    def __init__(self, query: str, *, regex: bool, ignore_case: bool) -> None:
        self._literal = None if regex or ignore_case else query
        flags = re.IGNORECASE if ignore_case else 0
        self._pattern = re.compile(query if regex else re.escape(query), flags)
        self._ignore_case = ignore_case
        # A literal without a line break matches a line exactly when it is found in the
        # whole text: one scan decides for most files (bench/search_files.py, walk engine)
        self._whole = None if regex or "\n" in query else self._pattern

    def lines(self, text: str, context: int) -> Iterator[Line]:
        """The matching lines of ``text`` and ``context`` lines around each, in order."""
        if self._literal is not None and self._literal not in text and "\n" not in self._literal:
            return
        if self._whole is not None and self._whole.search(text) is None:
            return
        rows = text.split("\n")
        if rows and rows[-1] == "":
            rows.pop()
        last_shown = 0  # number of the last line yielded
        pending_after = 0
        search = self._pattern.search
        for i, row in enumerate(rows, 1):
            if row.endswith("\r"):
                row = row[:-1]
            found = search(row)
            if found is not None:
                for n in range(max(last_shown + 1, i - context), i):
                    yield Line(n, strip_eol(rows[n - 1] + "\n"), False)
                yield Line(i, row, True, found.start())
                last_shown, pending_after = i, context
            elif pending_after:
                yield Line(i, row, False)
                last_shown, pending_after = i, pending_after - 1
