"""Unified diffs whose cost follows the change, not the file.

``difflib`` compares every line of both texts; on a 10 MB file a one-line edit
costs hundreds of milliseconds. An edit changes one region of a file and keeps
the rest byte for byte, so :func:`unified_diff` first trims the longest common
prefix and suffix of whole lines (a memory comparison in blocks, no splitting
into lines), then lets ``difflib`` match only the lines between them and writes the hunks
with three lines of context, numbered as in the whole file. Where a change
could be placed in more than one way (a line deleted from a run of equal
lines), it is placed after the common prefix, which may differ from where
``difflib`` over the whole file would put it; either diff applies. Headers are
``git diff`` style (``a/PATH``, ``b/PATH``, ``/dev/null``).
Lines end by the LSP rule (:mod:`toolwire.workspace.positions`): ``\n``, ``\r\n``
or a lone ``\r``, each shown as LF; a form feed, U+2028 and the like are part of
their line (unlike :meth:`str.splitlines`).
"""

from __future__ import annotations

import difflib
from typing import Final

from toolwire.workspace.names import prefixed

__all__ = ["CONTEXT", "common_prefix", "common_suffix", "unified_diff"]

#: Lines of context around each change (``diff -u``'s default).
CONTEXT: Final = 3
_BLOCK: Final = 1 << 16


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b``: compared in blocks (memory
    comparisons in C), then bisected inside the first block that differs."""
    n = min(len(a), len(b))
    i = 0
    while i < n:
        j = min(i + _BLOCK, n)
        if a[i:j] != b[i:j]:
            lo, hi = i, j  # a[:lo] == b[:lo]; they differ before hi
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[lo:mid] == b[lo:mid]:
                    lo = mid
                else:
                    hi = mid
            return lo
        i = j
    return n


def common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the longest common suffix of ``a`` and ``b``, at most ``limit`` (compared
    in blocks like :func:`common_prefix`)."""
    la, lb = len(a), len(b)
    k = 0
    while k < limit:
        step = min(_BLOCK, limit - k)
        if a[la - k - step:la - k] != b[lb - k - step:lb - k]:
            lo, hi = k, k + step  # the last lo characters agree; the last hi do not
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if a[la - mid:la - lo] == b[lb - mid:lb - lo]:
                    lo = mid
                else:
                    hi = mid
            return lo
        k += step
    return limit


def _lf(text: str) -> str:
    """Every line ending (CRLF, lone CR, LF) as one LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def _endings(text: str, i: int, j: int) -> int:
    """Line endings in ``text[i:j]`` (neither bound inside a CRLF): C-level counts."""
    return text.count("\n", i, j) + text.count("\r", i, j) - text.count("\r\n", i, j)


def _is_line_start(text: str, pos: int) -> bool:
    """True when a line starts at ``pos`` (the start, or right after a whole line ending)."""
    if pos == 0:
        return True
    before = text[pos - 1]
    return before == "\n" or (before == "\r" and text[pos:pos + 1] != "\n")


def _line_start(text: str, pos: int) -> int:
    """Start of the line holding offset ``pos`` (a ``pos`` between a CR and its LF is in the
    line that CRLF ends)."""
    while True:
        i = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos))
        if i >= 0 and text[i] == "\r" and i + 1 == pos and text[pos:pos + 1] == "\n":
            pos = i  # the CR of a CRLF split at pos: that CRLF ends the line holding pos
            continue
        return i + 1


def _next_line_start(text: str, pos: int) -> int:
    """Start of the line after the one holding ``pos`` (``len(text)`` after the last one)."""
    lf, cr = text.find("\n", pos), text.find("\r", pos)
    ends = [i for i in (lf, cr) if i >= 0]
    if not ends:
        return len(text)
    i = min(ends)
    if text[i] == "\r" and text[i + 1:i + 2] == "\n":
        i += 1
    return i + 1


def _lines(text: str, at_end: bool) -> list[str]:
    """Lines of LF-only text, each with its LF; a last line without
    one is marked the way ``diff`` marks it when it is the file's end."""
    if not text:
        return []
    lines = [line + "\n" for line in text.split("\n")]
    if text.endswith("\n"):
        lines.pop()
    else:
        lines[-1] = lines[-1][:-1] + ("\n\\ No newline at end of file\n" if at_end else "")
    return lines


class _Opcodes(difflib.SequenceMatcher):
    """A matcher whose opcodes are given: difflib's hunk grouping over them."""

    def __init__(self, codes: list[tuple[str, int, int, int, int]]) -> None:  # no super(): nothing to match
        self._codes = codes

    def get_opcodes(self) -> list[tuple[str, int, int, int, int]]:
        return self._codes


def _range(start: int, stop: int) -> str:
    """A hunk range as ``diff -u`` writes it (1-based start; the line before when empty)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if length == 0 else start + 1},{length}"


def unified_diff(old: str | None, new: str | None, rel: str, *, new_rel: str | None = None) -> str:
    """A unified diff (``git diff`` style headers) from ``old`` to ``new``.

    Args:
        old: Text before, or None when the file is created.
        new: Text after, or None when the file is deleted.
        rel: Workspace-relative path.
        new_rel: Path after a rename, when it differs.

    Returns:
        The diff text; empty when nothing changed. CRLF and a lone CR are shown as LF. Costs
        time in proportion to the changed region (plus a block-wise comparison
        of the unchanged rest), not to the number of lines in the file.
    """
    target = new_rel or rel
    # git's header form: a quoted name is quoted with its prefix ("a/evil\342\200\256txt.exe"),
    # as git_diff and git_show print it
    a_name = "/dev/null" if old is None else prefixed("a/", rel)
    b_name = "/dev/null" if new is None else prefixed("b/", target)
    a = old or ""
    b = new or ""
    body = ""
    if a != b:
        # Trim whole lines the texts share at the start and at the end, on the texts as they
        # are (line endings of any kind): only the region kept is turned to LF lines.
        first = _line_start(a, common_prefix(a, b))  # the line holding the first difference
        while not (_is_line_start(a, first) and _is_line_start(b, first)):  # "x\ry" / "x\r\ny"
            first = _line_start(a, first - 1)
        suffix = common_suffix(a, b, min(len(a), len(b)) - first)
        cut = len(a) - suffix  # the suffix must start a line in both texts: else the next line start
        while suffix and not (_is_line_start(a, cut) and _is_line_start(b, len(b) - suffix)):
            cut = _next_line_start(a, cut)
            suffix = len(a) - cut
        # Context lines on both sides.
        start = first
        for _ in range(CONTEXT):
            if start == 0:
                break
            start = _line_start(a, start - 1)
        end_a = cut
        for _ in range(CONTEXT):
            if end_a >= len(a):
                break
            end_a = _next_line_start(a, end_a)
        end_b = end_a - len(a) + len(b)
        region_a, region_b = _lf(a[start:end_a]), _lf(b[start:end_b])
    if a != b and region_a != region_b:  # else only the kinds of line endings changed: no diff
        offset = _endings(a, 0, start)  # lines before the region
        la = _lines(region_a, end_a == len(a))
        lb = _lines(region_b, end_b == len(b))
        head = _endings(a, start, first)  # context lines before the changed middle
        tail = _endings(a, cut, end_a) + (end_a == len(a) and suffix > 0 and a[-1] not in "\r\n")
        mid_a, mid_b = la[head:len(la) - tail], lb[head:len(lb) - tail]
        codes = [("equal", 0, head, 0, head)] if head else []
        codes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head)
                  for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False).get_opcodes()]
        if tail:
            codes.append(("equal", len(la) - tail, len(la), len(lb) - tail, len(lb)))
        out = [f"--- {a_name}\n", f"+++ {b_name}\n"]
        for group in _Opcodes(codes).get_grouped_opcodes(CONTEXT):
            out.append(f"@@ -{_range(group[0][1] + offset, group[-1][2] + offset)} "
                       f"+{_range(group[0][3] + offset, group[-1][4] + offset)} @@\n")
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    out.extend(" " + line for line in la[i1:i2])
                    continue
                out.extend("-" + line for line in la[i1:i2])
                out.extend("+" + line for line in lb[j1:j2])
        body = "".join(out)
    if new_rel and new_rel != rel:
        return f"rename from {rel}\nrename to {new_rel}\n" + body
    return body
