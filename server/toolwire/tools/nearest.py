"""The nearest match of an ``old_string`` that is not in a file, for the model's retry.

An edit whose ``old_string`` occurs nowhere (not even ignoring whitespace) fails with
``no_match``; the error names the line of the file that comes closest, so the model can read
it and quote it exactly: ``nearest match: line 12: def load(path, *, strict=True):``.

Closest is the longest piece of one of the ``old_string``'s first lines (leading and trailing
white space ignored) that occurs in the text: its longest prefix or its longest suffix. Each
is found by bisection over its length with ``str.find`` (an occurring prefix has every shorter
prefix occurring too), so the cost is a few scans of the text per line probed, in C, whatever
the text's size; fewer lines are probed in a large text.
"""

from __future__ import annotations

from typing import Final

from toolwire.workspace.names import display_text

__all__ = ["nearest_line", "EXCERPT_LIMIT"]

#: Characters of the matched line the hint quotes, at most.
EXCERPT_LIMIT: Final = 60
#: Lines of ``old_string`` probed (in a text over :data:`_LARGE` characters: one).
_PROBED: Final = 5
_LARGE: Final = 1 << 20
#: A piece shorter than this names no line (it would match almost anywhere).
_MIN_PIECE: Final = 4


def _longest(view: str, line: str, *, suffix: bool) -> tuple[int, int]:
    """``(length, offset)`` of the longest prefix (or suffix) of ``line`` found in ``view``."""
    lo, hi, at = 0, len(line), -1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        found = view.find(line[len(line) - mid:] if suffix else line[:mid])
        if found >= 0:
            lo, at = mid, found
        else:
            hi = mid - 1
    return lo, at


def nearest_line(view: str, old: str) -> tuple[int, str] | None:
    """``(line, excerpt)`` of the line of ``view`` (LF line endings) nearest to ``old``: its
    1-based number and its text without leading white space, cut to :data:`EXCERPT_LIMIT`
    characters (``…`` marks a cut), controls and invisible characters escaped. None when no
    piece of at least four characters of ``old``'s first lines occurs in ``view``."""
    lines = [line.strip() for line in old.split("\n") if line.strip()]
    best = (0, -1)
    for line in lines[:1 if len(view) > _LARGE else _PROBED]:
        for suffix in (False, True):
            found = _longest(view, line, suffix=suffix)
            if found[0] > best[0]:
                best = found
    length, offset = best
    if length < _MIN_PIECE:
        return None
    start = view.rfind("\n", 0, offset) + 1
    end = view.find("\n", offset)
    text = view[start:len(view) if end < 0 else end].strip()
    if len(text) > EXCERPT_LIMIT:
        text = text[:EXCERPT_LIMIT] + "…"
    return view.count("\n", 0, offset) + 1, display_text(text)
