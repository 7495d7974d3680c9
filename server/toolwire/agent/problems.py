"""The problems an edit introduced and the ones it fixed (pure).

Given one file's diagnostics right before an edit (the baseline), its text before and
after the edit, and its diagnostics once they settled, :func:`compare` says which
problems are new in or next to the changed lines and how many disappeared. The
baseline is moved by the edit first: a problem on a line the edit did not touch
keeps its columns and its line shifts by the lines the edit added or removed above
it; a problem on a changed line may be anywhere in what replaced that line. Two
problems are the same when their moved ranges, severity, source, code and message
agree; one that only moved elsewhere in the file (same severity, source, code and
message) is neither new nor fixed. So a problem that was already there is never
named again.

Diagnostics are LSP JSON (``Diagnostic``: ``range``, ``severity``, ``source``,
``code``, ``message``); lines count by the LSP rule (CRLF, CR and LF each end a line),
characters in the editor's position encoding (compared as given; shown through
``column``, which converts them).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

from toolwire.workspace.names import display_text
from toolwire.workspace.errors import clip_quote

__all__ = ["Problem", "Comparison", "LineMap", "compare", "problems_text", "not_checked_text",
           "diagnostics_data", "split_lines", "NOT_FINAL", "SEVERITIES", "SHOWN", "KEPT"]

#: LSP ``DiagnosticSeverity`` in words (a diagnostic without one is an error, as LSP says the client decides).
SEVERITIES = {1: "error", 2: "warning", 3: "info", 4: "hint"}

#: New problems named in the text for the model; the rest are counted.
SHOWN = 10

#: New problems kept in ``data.diagnostics.new``.
KEPT = 50

#: Characters of a problem's message shown.
MESSAGE_LIMIT = 300

#: What a result says when the editor had not settled within ``diagnosticsWait``.
NOT_FINAL = "problems may not be final"

#: Lines of the middle part compared line by line; a larger middle counts as one change.
_MATCH_LIMIT = 5000

_LINES = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` by the LSP rule (a text ending with a line break has an empty last line)."""
    return _LINES.split(text)


@dataclass(frozen=True, slots=True)
class Problem:
    """A new problem as the model and the card read it.

    Attributes:
        path: Workspace-relative path.
        line: 1-based line.
        column: 1-based column (characters).
        severity: ``error``, ``warning``, ``info`` or ``hint``.
        source: Who reported it (``ts``, ``json``), or None.
        code: Its code (``2304``, ``no-unused-vars``), or None.
        message: Its message (one line, clipped).
    """

    path: str
    line: int
    column: int
    severity: str
    source: str | None
    code: str | int | None
    message: str

    def text(self) -> str:
        """``path:line:col: severity (source code): message``, as get_diagnostics writes a problem."""
        parts = [str(part) for part in (self.source, self.code) if part not in (None, "")]
        code = f" ({clip_quote(display_text(' '.join(parts)), 60)})" if parts else ""
        return f"{self.path}:{self.line}:{self.column}: {self.severity}{code}: {self.message}"

    def dump(self) -> dict[str, Any]:
        """The problem in ``data.diagnostics.new``: ``path, line, column, severity, source, code, message``."""
        return {"path": self.path, "line": self.line, "column": self.column, "severity": self.severity,
                "source": self.source, "code": self.code, "message": self.message}


@dataclass(slots=True)
class Comparison:
    """What an edit did to a file's problems.

    Attributes:
        new: The new problems in or next to the changed lines, errors first, then by place.
        resolved: How many problems of the baseline are gone.
    """

    new: list[Problem] = field(default_factory=list)
    resolved: int = 0


class LineMap:
    """Where the lines of a text went in its edited text.

    ``hunks`` are the changed parts ``(i1, i2, j1, j2)``: lines ``i1..i2-1`` of the old
    text became lines ``j1..j2-1`` of the new one (0-based, half-open); every other
    line moved by the lines added or removed above it.
    """

    def __init__(self, before: str, after: str) -> None:
        a, b = split_lines(before), split_lines(after)
        head = 0
        while head < len(a) and head < len(b) and a[head] == b[head]:
            head += 1
        tail = 0
        while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
            tail += 1
        mid_a, mid_b = a[head:len(a) - tail], b[head:len(b) - tail]
        self.hunks: list[tuple[int, int, int, int]] = []
        if not mid_a and not mid_b:
            return
        if len(mid_a) > _MATCH_LIMIT or len(mid_b) > _MATCH_LIMIT:
            self.hunks = [(head, len(a) - tail, head, len(b) - tail)]
            return
        matcher = SequenceMatcher(None, mid_a, mid_b, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                self.hunks.append((i1 + head, i2 + head, j1 + head, j2 + head))

    def moved(self, line: int) -> int | None:
        """The new line of old ``line`` when the edit did not change it; None when it did."""
        shift = 0
        for i1, i2, j1, j2 in self.hunks:
            if line < i1:
                break
            if line < i2:
                return None
            shift = j2 - i2
        return line + shift

    def hunk_of(self, line: int) -> tuple[int, int, int, int] | None:
        """The changed part holding old ``line`` (a deletion's part holds the line after it too: None there)."""
        for hunk in self.hunks:
            if hunk[0] <= line < hunk[1]:
                return hunk
        return None

    def near(self, first: int, last: int) -> bool:
        """True when new lines ``first..last`` are in or next to a changed part."""
        return any(first <= j2 and last >= j1 - 1 for _, _, j1, j2 in self.hunks)


def _start(diagnostic: dict[str, Any]) -> tuple[int, int]:
    return _position(diagnostic, "start")


def _end(diagnostic: dict[str, Any]) -> tuple[int, int]:
    return _position(diagnostic, "end")


def _position(diagnostic: dict[str, Any], key: str) -> tuple[int, int]:
    rng = diagnostic.get("range")
    pos = rng.get(key) if isinstance(rng, dict) else None
    if not isinstance(pos, dict):
        return 0, 0
    line, character = pos.get("line"), pos.get("character")
    return (line if isinstance(line, int) and line >= 0 else 0,
            character if isinstance(character, int) and character >= 0 else 0)


def _severity(diagnostic: dict[str, Any]) -> int:
    value = diagnostic.get("severity")
    return value if value in SEVERITIES else 1


def _key(diagnostic: dict[str, Any]) -> tuple[Any, ...]:
    code = diagnostic.get("code")
    if isinstance(code, dict):  # some servers send {"value", "target"} (VS Code's object form)
        code = code.get("value")
    return _severity(diagnostic), diagnostic.get("source"), code, str(diagnostic.get("message", ""))


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]], lines: LineMap, path: str,
            column: Callable[[int, int], int] | None = None, hide_messages: str | None = None) -> Comparison:
    """The problems the edit introduced near its lines, and how many it made disappear.

    Args:
        before: The file's diagnostics right before the edit.
        after: Its diagnostics after the edit, settled.
        lines: How the edit moved the lines (:class:`LineMap` of the text before and after).
        path: The workspace-relative path shown.
        column: ``(line, character)`` (0-based, the editor's encoding, in the new text) →
            1-based column in characters; by default ``character + 1``.
        hide_messages: A ``modelExclude`` pattern keeping the file from the model: messages
            are not shown (they may quote the file).
    """
    pending = list(range(len(after)))
    keys = [_key(d) for d in after]
    starts = [_start(d) for d in after]
    ends = [_end(d) for d in after]
    unmatched_before: list[int] = []

    def take(predicate: Callable[[int], bool]) -> bool:
        for n, index in enumerate(pending):
            if predicate(index):
                del pending[n]
                return True
        return False

    floating: list[tuple[int, tuple[int, int, int, int]]] = []
    for b, diagnostic in enumerate(before):  # first those on lines the edit left alone: exact moved range
        key = _key(diagnostic)
        (sl, sc), (el, ec) = _start(diagnostic), _end(diagnostic)
        start = lines.moved(sl)
        if start is None:
            hunk = lines.hunk_of(sl)
            floating.append((b, hunk if hunk is not None else (sl, sl + 1, sl, sl + 1)))
            continue
        end = lines.moved(el)
        if not take(lambda a: keys[a] == key and starts[a] == (start, sc) and (end is None or ends[a] == (end, ec))):
            unmatched_before.append(b)
    for b, (_, _, j1, j2) in floating:  # then those on changed lines: anywhere in what replaced them
        key = _key(before[b])
        if not take(lambda a: keys[a] == key and j1 - 1 <= starts[a][0] <= j2):
            unmatched_before.append(b)
    resolved = 0
    for b in unmatched_before:  # a problem that only moved elsewhere is neither new nor fixed
        key = _key(before[b])
        if not take(lambda a: keys[a] == key):
            resolved += 1
    new = []
    for a in pending:
        if not lines.near(starts[a][0], max(starts[a][0], ends[a][0])):
            continue
        line, character = starts[a]
        severity, source, code, message = keys[a]
        if hide_messages is not None:
            message = f"[message not shown: the file is kept from the model (modelExclude {hide_messages!r})]"
        else:
            message = display_text(clip_quote(" ".join(message.split()), MESSAGE_LIMIT))
        shown_column = column(line, character) if column is not None else character + 1
        new.append(Problem(path, line + 1, shown_column, SEVERITIES[severity],
                           source if isinstance(source, str) else None,
                           code if isinstance(code, (str, int)) and not isinstance(code, bool) else None, message))
    new.sort(key=lambda p: (list(SEVERITIES.values()).index(p.severity), p.line, p.column))
    return Comparison(new, resolved)


def problems_text(comparison: Comparison, final: bool = True) -> str:
    """The line(s) added to an edit's result: ``2 new problems: …``, ``1 problem fixed``,
    ``no new problems``; ``problems may not be final`` when the editor had not settled."""
    count, new = comparison.resolved, comparison.new
    fixed = f"{count} problem{'s' if count != 1 else ''} fixed"
    if new:
        head = f"{len(new)} new problem{'s' if len(new) != 1 else ''}"
        if count:
            head += f" ({fixed})"
        listed = [p.text() for p in new[:SHOWN]]
        if len(new) > SHOWN:
            listed.append(f"... and {len(new) - SHOWN} more")
        text = head + ":\n" + "\n".join(listed)
    else:
        text = "no new problems" + (f"; {fixed}" if count else "")
    if not final:
        text += f"\n({NOT_FINAL}: the editor was still checking when diagnosticsWait ran out)"
    return text


def not_checked_text(path: str) -> str:
    """What a result says for a touched file the editor does not have open."""
    return f"problems not checked: {path} is not open in the editor"


def diagnostics_data(comparison: Comparison, final: bool) -> dict[str, Any]:
    """``data.diagnostics`` of a checked edit: ``{"checked": true, "new", "resolved", "final"}``."""
    return {"checked": True, "new": [p.dump() for p in comparison.new[:KEPT]], "resolved": comparison.resolved,
            "final": final}
