"""Pure edit planning: find ``old_string`` in a text and splice in ``new_string``.

Used by the edit tools to make a change and by the permission layer to show
the exact diff an edit will make, before it runs (same code, dry run).

Rules (each has a test):

* The search runs on an LF view of the text (every line ending of the LSP
  rule, CRLF, bare CR or LF, is one LF): text the model sends with LF
  matches a CRLF or CR file, and every line break the replacement inserts takes the
  file's dominant line ending. Bytes outside the replaced span are kept as
  they are (mixed endings, tabs, the final newline or its absence).
* ``old_string`` must occur exactly once, counting overlapping occurrences,
  unless ``replace_all`` (then non-overlapping occurrences, left to right).
* When there is no exact occurrence, a whitespace-tolerant match is tried,
  line by line: first ignoring trailing whitespace, then ignoring indentation.
  It applies only when it is unique; the replacement is then re-indented to the
  file's indentation (tabs or spaces, and depth).
* An ``old_string`` found nowhere fails with ``no_match`` naming the nearest line
  (:mod:`toolwire.tools.nearest`).
* An empty ``old_string`` creates a missing file and is refused on an existing
  one; ``old_string == new_string`` is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from toolwire.tools.nearest import nearest_line
from toolwire.workspace.errors import ToolError
from toolwire.workspace.text import NewlineView, dominant_newline

__all__ = ["Replacement", "EditPlan", "plan_edit", "apply_replacement"]

_TAB = 4


@dataclass(frozen=True, slots=True)
class Replacement:
    """One requested change: ``old_string`` → ``new_string``."""

    old_string: str
    new_string: str
    replace_all: bool = False


@dataclass(slots=True)
class EditPlan:
    """The outcome of planning edits on a text.

    Attributes:
        old_text: The text before (None when the file does not exist yet).
        new_text: The text after.
        replacements: Occurrences replaced, over all edits.
        lines: 1-based line (in the text the edit saw) of each replacement.
        fuzzy: True when some edit used the whitespace-tolerant match.
    """

    old_text: str | None
    new_text: str
    replacements: int = 0
    lines: list[int] = field(default_factory=list)
    fuzzy: bool = False


def _lf(s: str) -> str:
    """Every line ending (CRLF, bare CR, LF) as LF: the model's text in the view's terms."""
    return s.replace("\r\n", "\n").replace("\r", "\n")


def _overlapping(view: str, needle: str) -> list[int]:
    found = []
    start = 0
    while (i := view.find(needle, start)) != -1:
        found.append(i)
        start = i + 1
    return found


def _non_overlapping(view: str, needle: str) -> list[int]:
    found = []
    start = 0
    while (i := view.find(needle, start)) != -1:
        found.append(i)
        start = i + len(needle)
    return found


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _width(ws: str, tab: int) -> int:
    return len(ws.expandtabs(tab))


def _indent_map(model_lines: list[str], file_lines: list[str]) -> Callable[[int], int]:
    """Map model indentation widths to file widths, learned from the matched lines.

    With two or more distinct indentation depths in the match, fit
    ``file = a * model + b`` (so a 2-space model text maps onto a 4-space or tab
    file); otherwise, or when the pairs do not fit one line, shift by the
    difference of the first non-blank lines.
    """
    pairs = [
        (_width(_indent(m), _TAB), _width(_indent(f), _TAB))
        for m, f in zip(model_lines, file_lines)
        if m.strip() and f.strip()
    ]
    m0, f0 = pairs[0]
    lo, hi = min(pairs), max(pairs)
    if hi[0] != lo[0]:
        a = (hi[1] - lo[1]) / (hi[0] - lo[0])
        b = lo[1] - a * lo[0]
        if a > 0 and all(abs(a * m + b - f) < 1e-9 for m, f in pairs):
            return lambda w: max(0, round(a * w + b))
    return lambda w: max(0, w + f0 - m0)


def _reindent(new: str, model_lines: list[str], file_lines: list[str]) -> str:
    """Re-indent ``new`` from the model's indentation to the file's (depth, tabs or spaces)."""
    if all(_indent(m) == _indent(f) for m, f in zip(model_lines, file_lines) if m.strip()):
        return new
    to_file = _indent_map(model_lines, file_lines)
    uses_tabs = any(_indent(f).startswith("\t") for f in file_lines if f.strip())
    out = []
    for line in new.split("\n"):
        ws = _indent(line)
        body = line[len(ws) :]
        if not body:
            out.append(line)
            continue
        width = to_file(_width(ws, _TAB))
        lead = "\t" * (width // _TAB) + " " * (width % _TAB) if uses_tabs else " " * width
        out.append(lead + body)
    return "\n".join(out)


_LEVELS: tuple[Callable[[str], str], ...] = (str.rstrip, str.strip)


def _fuzzy(view: str, old: str, new: str, label: str) -> tuple[int, int, str] | None:
    """Unique whitespace-tolerant line-block match: ``(start, end, replacement)`` in view offsets."""
    old_lines = old.split("\n")
    trailing = old.endswith("\n")
    if trailing:
        old_lines.pop()
    if not any(line.strip() for line in old_lines):
        return None
    file_lines = view.split("\n")
    offsets = [0]
    for line in file_lines:
        offsets.append(offsets[-1] + len(line) + 1)
    n = len(old_lines)
    for norm in _LEVELS:
        wanted = [norm(line) for line in old_lines]
        normed = [norm(line) for line in file_lines]
        hits = [i for i in range(len(file_lines) - n + 1) if normed[i : i + n] == wanted]
        if len(hits) > 1:
            lines = ", ".join(str(i + 1) for i in hits)
            raise ToolError(
                "ambiguous_match",
                f"old_string was not found exactly in {label}, and matches {len(hits)} places when "
                f"whitespace is ignored (lines {lines}); copy the text exactly, with more context",
                {"count": len(hits), "lines": [i + 1 for i in hits]},
            )
        if len(hits) == 1:
            first = hits[0]
            start = offsets[first]
            end = offsets[first + n] - 1  # end of the last matched line, before its LF
            if trailing and end < len(view):
                end += 1
            replacement = _reindent(new, old_lines, file_lines[first : first + n])
            return start, end, replacement
    return None


def apply_replacement(text: str, edit: Replacement, *, label: str) -> tuple[str, list[int], bool]:
    """Apply one replacement to ``text``.

    Args:
        text: Current text, line endings as in the file.
        edit: The change.
        label: The path, for messages.

    Returns:
        ``(new_text, lines, fuzzy)``: the text after, the 1-based line of each
        replacement, and whether the whitespace-tolerant match was used.

    Raises:
        ToolError: ``empty_old_string``, ``no_change``, ``no_match`` or
            ``ambiguous_match`` (data: ``count``, ``lines``).
    """
    old, new = _lf(edit.old_string), _lf(edit.new_string)
    if not old:
        raise ToolError("empty_old_string", f"old_string is empty but {label} already exists; quote the text to replace")
    if old == new:
        raise ToolError("no_change", "old_string and new_string are identical; nothing to change")
    if "\r" in text:  # (an LF-only text is its own view: nothing to build)
        exact = _exact_without_view(text, old, new, edit.replace_all, label)
        if exact is not None:
            return exact
    nv = NewlineView(text)
    view = nv.view
    hits = _overlapping(view, old)
    fuzzy = False
    if not hits:
        found = _fuzzy(view, old, new, label)
        if found is None:
            raise _no_match(view, old, label)
        start, end, new = found
        spans = [(start, end)]
        fuzzy = True
    elif len(hits) > 1 and not edit.replace_all:
        _ambiguous(label, [nv.line_of(i) for i in hits])
    else:
        starts = _non_overlapping(view, old) if edit.replace_all else hits
        spans = [(i, i + len(old)) for i in starts]
    inserted = new.replace("\n", dominant_newline(text)) if "\n" in new else new
    text_spans = [(nv.to_text(start), nv.to_text(end)) for start, end in spans]
    return _splice(text, text_spans, inserted), [nv.line_of(s) for s, _ in spans], fuzzy


def _crlf_only(text: str) -> bool:
    """True when every line ending of ``text`` is CRLF (no bare CR, no bare LF): three counts in C."""
    pairs = text.count("\r\n")
    return pairs == text.count("\n") and pairs == text.count("\r")


def _lines_at(text: str, offsets: list[int]) -> list[int]:
    """1-based lines of ``text`` at ascending ``offsets`` (none inside a CRLF) under the LSP
    rule (CRLF, bare CR and LF each end a line), counted in one pass through the text."""
    lines, line, pos = [], 1, 0
    for offset in offsets:
        line += text.count("\n", pos, offset) + text.count("\r", pos, offset) - text.count("\r\n", pos, offset)
        lines.append(line)
        pos = offset
    return lines


def _exact_without_view(text: str, old: str, new: str, replace_all: bool,
                        label: str) -> tuple[str, list[int], bool] | None:
    """:func:`apply_replacement`'s exact match found in the text itself, where that
    finds exactly the view's matches, sparing the LF view and its offset map (on a
    10 MB file with CR line endings, tens of ms):

    * ``old`` without a line break (the usual one-line edit): a match cannot span a
      line ending, so it is the same characters in the text as in the view;
    * a text whose line endings are all CRLF: ``old`` (LF only) occurs in the view
      exactly where ``old`` with CRLF line breaks occurs in the text, one to one and
      in the same order (a CRLF in the needle can only match a whole CRLF).

    Returns None otherwise, or when there is no exact occurrence (the general path
    then tries the whitespace-tolerant match).
    """
    if "\n" in old:
        if not _crlf_only(text):
            return None
        needle = old.replace("\n", "\r\n")
    else:
        needle = old
    hits = _overlapping(text, needle)
    if not hits:
        return None
    if len(hits) > 1 and not replace_all:
        _ambiguous(label, _lines_at(text, hits))
    starts = _non_overlapping(text, needle) if replace_all else hits
    inserted = new.replace("\n", dominant_newline(text)) if "\n" in new else new
    return (_splice(text, [(i, i + len(needle)) for i in starts], inserted),
            _lines_at(text, starts), False)


def _no_match(view: str, old: str, label: str) -> ToolError:
    """``no_match``, naming the nearest line when one comes close (:mod:`toolwire.tools.nearest`;
    data ``nearest: {line, text}``)."""
    near = nearest_line(view, old)
    if near is None:
        return ToolError("no_match", f"old_string was not found in {label}; read the file again and copy the text exactly")
    line, text = near
    return ToolError("no_match", f"old_string was not found in {label}; nearest match: line {line}: {text} "
                     f"(read the file again around line {line} and copy the text exactly)",
                     {"nearest": {"line": line, "text": text}})


def _ambiguous(label: str, lines: list[int]) -> None:
    raise ToolError(
        "ambiguous_match",
        f"old_string occurs {len(lines)} times in {label} (lines {', '.join(map(str, lines))}); "
        "include more surrounding text to make it unique, or set replace_all",
        {"count": len(lines), "lines": lines},
    )


def _splice(text: str, spans: list[tuple[int, int]], inserted: str) -> str:
    """``text`` with each ``(start, end)`` span (ascending, not overlapping) replaced by ``inserted``."""
    pieces = []
    pos = 0
    for start, end in spans:
        pieces += [text[pos:start], inserted]
        pos = end
    pieces.append(text[pos:])
    return "".join(pieces)


def plan_edit(text: str | None, edits: Sequence[Replacement], *, label: str) -> EditPlan:
    """Apply ``edits`` in order to the evolving text, all or nothing (pure).

    Args:
        text: The current text (BOM removed, line endings as in the file), or
            None when the file does not exist; then the first edit must have an
            empty ``old_string`` and its ``new_string`` becomes the content.
        edits: At least one replacement.
        label: The path, for messages.

    Returns:
        The :class:`EditPlan`; nothing is written here.

    Raises:
        ToolError: ``not_found`` (missing file, non-empty first old_string),
            or any error of :func:`apply_replacement`, with ``edit N:``
            prefixed when there are several edits (``data["edit"]`` = N, 1-based).
    """
    if not edits:
        raise ToolError("invalid_arguments", "no edits given")
    plan = EditPlan(old_text=text, new_text=text or "")
    several = len(edits) > 1
    for number, edit in enumerate(edits, 1):
        try:
            if plan.old_text is None and number == 1:
                if edit.old_string:
                    raise ToolError("not_found", f"{label} does not exist (use an empty old_string to create it)")
                plan.new_text = edit.new_string
                plan.replacements += 1
                plan.lines.append(1)
                continue
            plan.new_text, lines, fuzzy = apply_replacement(plan.new_text, edit, label=label)
        except ToolError as exc:
            if not several:
                raise
            data = dict(exc.data or {}, edit=number)
            raise ToolError(exc.code, f"edit {number} of {len(edits)}: {exc.message}; no edit was applied", data) from None
        plan.replacements += len(lines)
        plan.lines += lines
        plan.fuzzy |= fuzzy
    return plan
