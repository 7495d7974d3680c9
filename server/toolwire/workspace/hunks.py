"""Per-hunk review: split an edit's unified diff into hunks, and apply a chosen subset.

:func:`split_hunks` gives each ``@@`` hunk of a diff made by
:func:`toolwire.workspace.diffing.unified_diff` as ``{"index", "header", "diff"}``
(index from 0 in diff order, the header line without its LF, the hunk's lines after it).
:func:`apply_hunks` makes the text that results from the old text with only the
accepted hunks applied: the lines of each accepted hunk's new range are taken from the
planned text as they are (line endings, a missing final newline), every other line
from the old text, so a partial edit keeps the file's bytes outside the hunks it takes.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["Hunk", "parse_hunks", "split_hunks", "apply_hunks"]

_HEADER: Final = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


@dataclass(frozen=True, slots=True)
class Hunk:
    """One hunk: its header, its lines, and its ranges as 0-based line starts and counts."""

    index: int
    header: str
    diff: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int

    def wire(self) -> dict[str, Any]:
        """``{"index", "header", "diff"}`` as an edit subject carries it."""
        return {"index": self.index, "header": self.header, "diff": self.diff}


def _start(start: str, count: int) -> int:
    """A range's 0-based first line (``diff -u`` writes the line before an empty range)."""
    return int(start) if count == 0 else int(start) - 1


def parse_hunks(diff: str) -> list[Hunk]:
    """The hunks of a unified diff, in order; [] for a diff without any (empty, a bare rename)."""
    hunks: list[Hunk] = []
    header: re.Match[str] | None = None
    body: list[str] = []

    def close() -> None:
        if header is None:
            return
        old_count = int(header.group(2)) if header.group(2) is not None else 1
        new_count = int(header.group(4)) if header.group(4) is not None else 1
        hunks.append(Hunk(len(hunks), header.string.rstrip("\n"), "".join(body),
                          _start(header.group(1), old_count), old_count,
                          _start(header.group(3), new_count), new_count))

    for line in diff.split("\n"):  # a diff's lines end with LF; U+2028 & co. are content
        match = _HEADER.match(line)
        if match is not None:
            close()
            header, body = match, []
        elif header is not None and line:
            body.append(line + "\n")
    close()
    return hunks


def split_hunks(diff: str) -> list[dict[str, Any]]:
    """``[{"index", "header", "diff"}]``: the hunks of ``diff`` as an edit subject carries them."""
    return [hunk.wire() for hunk in parse_hunks(diff)]


def _lines(text: str) -> list[str]:
    """Lines with their endings by the LSP rule (CRLF, lone CR, LF)."""
    return _LINE.findall(text)


def apply_hunks(old: str, new: str, diff: str, accepted: Collection[int]) -> str:
    """The text ``old`` becomes with only the hunks of ``diff`` (the diff from ``old`` to
    ``new``) whose index is in ``accepted``; ``new`` when all are, ``old`` when none is."""
    hunks = parse_hunks(diff)
    if all(h.index in accepted for h in hunks):
        return new
    a, b = _lines(old), _lines(new)
    out: list[str] = []
    at = 0  # next line of ``old`` not yet copied
    for hunk in hunks:
        if hunk.index not in accepted:
            continue
        out.extend(a[at:hunk.old_start])
        out.extend(b[hunk.new_start:hunk.new_start + hunk.new_count])
        at = hunk.old_start + hunk.old_count
    out.extend(a[at:])
    return "".join(out)
