"""LSP text positions: the line rule and the three position encodings.

Pure functions over Python strings (offsets are code-point indexes into the
text), used by the LSP layer for every range it reads (``didChange``, code
action and diagnostic ranges) or sends (``workspace/applyEdit``).

Rules, from the LSP 3.17 specification ("Text Documents", "Position"):

* Only ``\\n``, ``\\r\\n`` and ``\\r`` end a line. Form feed, vertical tab,
  ``\\x1c``–``\\x1e``, ``\\x85``, U+2028 and U+2029 are ordinary characters
  (unlike :meth:`str.splitlines`, which pygls' ``TextDocument.lines`` uses).
* ``character`` counts code units of the negotiated encoding: bytes for
  ``utf-8``, UTF-16 code units for ``utf-16`` (a character outside the BMP,
  e.g. an emoji, counts 2), code points for ``utf-32``.
* A ``character`` past the end of its line means the end of the line (before
  its line ending); a ``line`` past the last line means the end of the text.
  Both follow the spec and ``vscode-languageserver-textdocument``, which also
  swaps a range whose end comes before its start.
* A position inside a character (between the bytes of one UTF-8 sequence, or
  between the two halves of a surrogate pair) names no place in the text:
  :class:`PositionError`. So does an offset between the ``\\r`` and the
  ``\\n`` of one line ending.
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_right
from itertools import accumulate, repeat
from operator import add
from typing import Final

from toolwire.workspace.diffing import common_prefix, common_suffix

__all__ = [
    "ENCODINGS",
    "PositionError",
    "Position",
    "LineIndex",
    "units",
    "split_lines",
    "line_count",
    "newline_counts",
    "apply_change",
    "minimal_edit",
    "narrow_edits",
    "changed_lines",
]

#: The position encodings of LSP 3.17, in the server's order of preference.
ENCODINGS: Final = ("utf-8", "utf-16", "utf-32")

_EOL: Final = re.compile(r"\r\n|\r|\n")
_WITH_ENDS: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")

#: ``(line, character)``, both 0-based, ``character`` in units of the encoding.
Position = tuple[int, int]


class PositionError(ValueError):
    """A position or offset that names no place in the text (see the module rules)."""


def _check(encoding: str) -> None:
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown position encoding {encoding!r}; expected one of {', '.join(ENCODINGS)}")


def units(text: str, encoding: str) -> int:
    """Length of ``text`` in code units of ``encoding`` (``utf-8``, ``utf-16`` or ``utf-32``).

    Lone surrogates (JSON may carry them) count as one UTF-16 unit, three UTF-8 bytes.

    Raises:
        ValueError: unknown encoding.
    """
    if encoding == "utf-32":
        return len(text)
    if encoding == "utf-16":
        return len(text.encode("utf-16-le", "surrogatepass")) // 2
    _check(encoding)
    return len(text.encode("utf-8", "surrogatepass"))


def split_lines(text: str, *, keepends: bool = False) -> list[str]:
    """The lines of ``text`` under the LSP rule, without an empty last line after a
    final line ending (so ``"a\nb\n"`` has two lines and ``""`` none).

    Args:
        keepends: Keep each line's ending (``\n``, ``\r\n`` or ``\r``).
    """
    if keepends:
        return _WITH_ENDS.findall(text)
    lines = _EOL.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def line_count(text: str) -> int:
    """Lines an editor shows for ``text``: line endings + 1, 0 for the empty text."""
    return len(_EOL.findall(text)) + 1 if text else 0


def newline_counts(text: str) -> dict[str, int]:
    """How many line endings of each kind ``text`` has: ``{"\r\n": n, "\n": n, "\r": n}``
    (a ``\r\n`` counts once, as CRLF only)."""
    crlf = text.count("\r\n")
    return {"\r\n": crlf, "\n": text.count("\n") - crlf, "\r": text.count("\r") - crlf}


def _index_in_line(line: str, character: int, encoding: str) -> int:
    """Code-point index in ``line`` (no line ending) of ``character`` units; clamped to the end.

    Raises:
        PositionError: ``character`` falls inside a character.
    """
    if encoding == "utf-32":
        return min(character, len(line))
    if encoding == "utf-16":
        data = line.encode("utf-16-le", "surrogatepass")
        cut = data[: 2 * character]
        if len(cut) == len(data):
            return len(line)
        head = cut.decode("utf-16-le", "surrogatepass")
        if head[-1:] != line[len(head) - 1 : len(head)]:  # cut between the halves of a surrogate pair
            raise PositionError(f"character {character} (utf-16) is inside the character {line[len(head) - 1]!r}")
        return len(head)
    _check(encoding)
    data = line.encode("utf-8", "surrogatepass")
    if character >= len(data):
        return len(line)
    try:
        return len(data[:character].decode("utf-8", "surrogatepass"))
    except UnicodeDecodeError as exc:  # the cut ends inside a multi-byte sequence
        inside = len(data[: exc.start].decode("utf-8", "surrogatepass"))
        raise PositionError(f"character {character} (utf-8) is inside the character {line[inside]!r}") from None


class LineIndex:
    """Line starts of a text under the LSP line rule, and position ↔ offset maps.

    Building it is linear in the text; each lookup is a binary search plus
    work linear in one line.

    Attributes:
        text: The text.
        starts: Code-point offset where each line starts (``starts[0] == 0``);
            a text ending with a line ending has an empty last line.
    """

    __slots__ = ("text", "starts")

    def __init__(self, text: str) -> None:
        self.text = text
        # Built by C-level passes (split or findall, len, accumulate): a 10 MB text takes
        # milliseconds, where a Python loop over its line endings took tens of them.
        if "\r" not in text:
            parts = text.split("\n")
            parts.pop()  # the text after the last LF starts the last line
            self.starts = [0, *accumulate(map(add, map(len, parts), repeat(1)))]
            return
        lines = _WITH_ENDS.findall(text)  # each line with its ending; a last one without
        starts = [0, *accumulate(map(len, lines))]
        if lines and lines[-1][-1] not in "\r\n":
            starts.pop()  # the end of a last line without an ending starts no line
        self.starts = starts

    @property
    def line_count(self) -> int:
        """Number of lines (at least 1)."""
        return len(self.starts)

    def line_end(self, line: int) -> int:
        """Offset of the end of ``line``'s content (before its line ending)."""
        if line + 1 < len(self.starts):
            end = self.starts[line + 1] - 1
            if end > self.starts[line] and self.text[end] == "\n" and self.text[end - 1] == "\r":
                end -= 1
            return end
        return len(self.text)

    def line_text(self, line: int) -> str:
        """The content of ``line`` without its line ending."""
        return self.text[self.starts[line] : self.line_end(line)]

    def offset_at(self, position: Position, encoding: str) -> int:
        """Code-point offset of ``position`` (clamped as in the module rules).

        Raises:
            PositionError: negative numbers, or a position inside a character.
            ValueError: unknown encoding.
        """
        line, character = position
        if line < 0 or character < 0:
            raise PositionError(f"position ({line}, {character}) is negative")
        if line >= len(self.starts):
            _check(encoding)
            return len(self.text)
        start = self.starts[line]
        return start + _index_in_line(self.text[start : self.line_end(line)], character, encoding)

    def position_at(self, offset: int, encoding: str) -> Position:
        """The position of code-point ``offset`` (0 ≤ offset ≤ len(text)).

        Raises:
            PositionError: offset out of the text, or between ``\\r`` and ``\\n``.
            ValueError: unknown encoding.
        """
        if not 0 <= offset <= len(self.text):
            raise PositionError(f"offset {offset} is outside a text of {len(self.text)} characters")
        line = bisect_right(self.starts, offset) - 1
        if offset > self.line_end(line):
            raise PositionError(f"offset {offset} is inside the line ending of line {line}")
        return line, units(self.text[self.starts[line] : offset], encoding)

    def end(self, encoding: str) -> Position:
        """The position just past the last character (the end of a whole-buffer range)."""
        return self.position_at(len(self.text), encoding)


def apply_change(text: str, start: Position, end: Position, new_text: str, encoding: str) -> str:
    """``text`` with the range ``start``–``end`` replaced by ``new_text`` (an incremental
    ``didChange`` content change). A range whose end precedes its start is swapped.

    Raises:
        PositionError: a position inside a character (the text is then unknown:
            the caller must treat its copy as out of sync).
    """
    index = LineIndex(text)
    a, b = index.offset_at(start, encoding), index.offset_at(end, encoding)
    if b < a:
        a, b = b, a
    return text[:a] + new_text + text[b:]


def minimal_edit(old: str, new: str) -> tuple[int, int, str]:
    """The smallest single replacement turning ``old`` into ``new``.

    Returns:
        ``(start, end, replacement)``: code-point offsets into ``old`` with
        ``old[:start] + replacement + old[end:] == new``. Neither boundary falls
        between the ``\\r`` and ``\\n`` of a line ending, so both have a position.
    """
    prefix = common_prefix(old, new)  # block-wise memory comparisons: a 10 MB buffer costs milliseconds
    if 0 < prefix < len(old) and old[prefix - 1] == "\r" and old[prefix] == "\n":
        prefix -= 1
    suffix = common_suffix(old, new, min(len(old), len(new)) - prefix)
    end = len(old) - suffix
    if 0 < end < len(old) and old[end - 1] == "\r" and old[end] == "\n":
        end += 1
        suffix -= 1
    return prefix, end, new[prefix : len(new) - suffix]


def narrow_edits(old: str, new: str) -> list[tuple[int, int, str]]:
    """The replacements, each as small as it can be, that turn ``old`` into ``new``.

    The region :func:`minimal_edit` finds is compared line by line (the LSP line rule,
    ``difflib`` over its lines only); each run of differing lines becomes one
    replacement narrowed to the characters that differ. Text between two changes is
    not part of any replacement, so an edit sent without a document version (plain
    ``WorkspaceEdit.changes``) rewrites nothing but what it changes.

    Returns:
        ``[(start, end, replacement)]``: code-point offsets into ``old``, sorted, not
        overlapping, none between the ``\\r`` and ``\\n`` of a line ending; applying
        them all gives ``new``. Empty when the texts are equal.
    """
    return _off_the_last_line(old, _narrow(old, new))


def _narrow(old: str, new: str) -> list[tuple[int, int, str]]:
    """:func:`narrow_edits` before :func:`_off_the_last_line`."""
    start, end, replacement = minimal_edit(old, new)
    if start == end and not replacement:
        return []
    first = _line_start(old, start)
    stop = _line_after(old, end)
    stop_new = stop - len(old) + len(new)
    a = _WITH_ENDS.findall(old[first:stop])
    b = _WITH_ENDS.findall(new[first:stop_new])
    if len(a) <= 1 and len(b) <= 1:
        return [(start, end, replacement)]
    a_at = list(accumulate(map(len, a), initial=first))  # where each line starts, and the end
    b_at = list(accumulate(map(len, b), initial=first))
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        s, e, r = minimal_edit(old[a_at[i1]:a_at[i2]], new[b_at[j1]:b_at[j2]])
        out.append((a_at[i1] + s, a_at[i1] + e, r))
    return out


def _off_the_last_line(old: str, edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Move a last edit that reaches the empty line after a final line ending (``"a\\n"`` has
    one: line 1) onto the line before, where the same change can be written: Neovim applies
    a range that starts on that line by appending whole lines (one empty line too many)."""
    if not edits or edits[-1][1] != len(old):
        return edits
    start, end, replacement = edits[-1]
    eol = "\r\n" if old.endswith("\r\n") else old[-1:] if old[-1:] in ("\n", "\r") else ""
    k = len(eol)
    floor = edits[-2][1] + 1 if len(edits) > 1 else 0  # stays apart from the edit before
    if not k or start - k < floor or old[max(start - k - 1, 0):start - k + 1] == "\r\n":
        return edits
    moved = old[start - k:start] + replacement
    if not moved.endswith(eol):
        return edits
    return [*edits[:-1], (start - k, end - k, moved[:len(moved) - k])]


def _line_start(text: str, offset: int) -> int:
    """Start of the line holding ``offset`` (not between a ``\\r`` and its ``\\n``)."""
    return max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1


def _line_after(text: str, offset: int) -> int:
    """Start of the line after the one holding ``offset`` (past its ending), or the end."""
    match = _EOL.search(text, offset)
    return match.end() if match else len(text)


def changed_lines(meant: str, actual: str) -> list[tuple[int, int]]:
    """The lines of ``actual`` that differ from ``meant``, as 1-based inclusive ranges.

    A run of lines ``meant`` has and ``actual`` lacks is named by the line of
    ``actual`` where it is missing.
    """
    index = LineIndex(actual)
    out: list[tuple[int, int]] = []
    shift = 0
    for start, end, replacement in _narrow(meant, actual):
        a = start + shift
        b = a + len(replacement)
        shift += len(replacement) - (end - start)
        first = bisect_right(index.starts, a)
        last = bisect_right(index.starts, b - 1) if b > a else first
        if out and out[-1][1] >= first - 1:
            out[-1] = (out[-1][0], max(out[-1][1], last))
        else:
            out.append((first, last))
    return out
