"""Problems after every edit: the baseline before an edit of an open file, the settling after it.

Right before an edit tool (:data:`EDIT_TOOLS`) changes a file the editor has open, the
scheduler asks :meth:`ProblemWatch.before` for that file's diagnostics (the baseline) and
notes how many ``diagnosticsChanged`` reports named it so far. After the write (the
editor's ``didChange``, or save, for the edit), :meth:`ProblemWatch.after` waits for the
first report naming the file and then :data:`QUIET` seconds with no further report for
it, bounded by the ``diagnosticsWait`` setting; a file no source has reported problems for
in this session is not waited for. It then asks for the file's diagnostics again and
adds to the result what :mod:`toolwire.agent.problems` finds: the new problems near the
changed lines and the count that disappeared (``data.diagnostics``); "problems may not
be final" when the bound was hit. A touched file that is not open is named as not
checked. Nothing is asked, waited for or added when the client declared no
``diagnostics`` (and over ACP or ``toolwire run``, which have no editor link).

The wait runs in the call's own task after its path locks and its parallel slot are
released (the scheduler), so it never holds up the other calls of the turn; the next
edit of the same file waits for it (its baseline must be the settled problems). Times
come from the event loop's clock (anyio). :data:`QUIET` can be set for tests with the
environment variable ``TOOLWIRE_DIAGNOSTICS_QUIET`` (seconds).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from toolwire.agent.problems import LineMap, compare, diagnostics_data, not_checked_text, problems_text
from toolwire.tools.base import Tool, ToolResult
from toolwire.tools.editor_intel import EditorIntel
from toolwire.workspace.errors import ToolError
from toolwire.workspace.model_exclude import ModelExclude
from toolwire.workspace.paths import WorkspacePath, resolve_path
from toolwire.workspace.positions import LineIndex, PositionError

__all__ = ["EDIT_TOOLS", "QUIET", "ProblemWatch", "Baseline", "NotOpen", "quiet_period", "settle"]

log = logging.getLogger(__name__)

#: Tools whose result names the problems they introduced (their ``path`` argument).
#: ``delete_file`` and ``rename_file`` are not checked: the file they leave has no text to compare.
EDIT_TOOLS = frozenset({"edit_file", "multi_edit", "create_file"})

#: Seconds without a further report for the file before its problems count as settled.
QUIET = 0.25


def quiet_period() -> float:
    """:data:`QUIET`, or ``TOOLWIRE_DIAGNOSTICS_QUIET`` (seconds) when set to a number ≥ 0 (tests)."""
    raw = os.environ.get("TOOLWIRE_DIAGNOSTICS_QUIET")
    try:
        value = float(raw) if raw is not None else QUIET
    except ValueError:
        return QUIET
    return value if value >= 0 else QUIET


@dataclass(slots=True)
class NotOpen:
    """The edit touches a file the editor does not have open: it is not checked."""

    rel: str


@dataclass(slots=True)
class Baseline:
    """A file's problems right before an edit."""

    target: WorkspacePath
    uri: str
    text: str
    diagnostics: list[dict[str, Any]]
    reports: int
    seen: bool
    settled: anyio.Event


async def settle(editor: EditorIntel, path: Path, reports: int, bound: float, quiet: float) -> bool:
    """Wait for the first report naming ``path`` after ``reports`` of them, then ``quiet``
    seconds without another, all within ``bound`` seconds (the event loop's clock).

    Returns:
        True when the file's problems settled; False when ``bound`` ran out first.
    """
    feed = editor.feed
    deadline = anyio.current_time() + bound
    if not await feed.wait_changed(path, reports, max(0.0, deadline - anyio.current_time())):
        return False
    while True:
        remaining = deadline - anyio.current_time()
        if remaining < quiet:  # the quiet period would end past the bound: wait the bound out, not settled
            await anyio.sleep(max(0.0, remaining))
            return False
        if not await feed.wait_changed(path, feed.count(path), quiet):
            return True


class ProblemWatch:
    """The problems-after-edit step of one session's edit calls (see the module docstring);
    ``wait`` arguments are the ``diagnosticsWait`` setting."""

    def __init__(self) -> None:
        self._settling: dict[Path, anyio.Event] = {}

    async def before(self, tool: Tool, args: Any, root: Path, documents: Any, editor: EditorIntel | None,
                     wait: float) -> Baseline | NotOpen | None:
        """The baseline of the file an edit call is about to change, :class:`NotOpen`, or None
        (not an edit tool, no diagnostics declared, a path the tool will refuse, no answer)."""
        if tool.name not in EDIT_TOOLS or editor is None or not editor.features.diagnostics:
            return None
        path = getattr(args, "path", None)
        if not isinstance(path, str):
            return None
        try:
            target = resolve_path(root, path)
        except (ToolError, OSError, ValueError):
            return None
        doc = documents.get(target.resolved)
        if doc is None:
            return NotOpen(target.rel)
        earlier = self._settling.get(target.resolved)
        if earlier is not None:  # the previous edit of this file is still settling
            with anyio.move_on_after(wait):
                await earlier.wait()
        uri = editor.uri_for(target.resolved)
        reports = editor.feed.count(target.resolved)
        diagnostics = await self._ask(editor, uri, wait)
        if diagnostics is None:
            return None
        seen = editor.feed.seen(target.resolved) or bool(diagnostics)
        settled = anyio.Event()
        self._settling[target.resolved] = settled
        return Baseline(target, uri, doc.text, diagnostics, reports, seen, settled)

    async def after(self, baseline: Baseline | NotOpen, result: ToolResult, documents: Any,
                    editor: EditorIntel | None, wait: float, exclude: ModelExclude, root: Path,
                    allowed: frozenset[Path] = frozenset()) -> None:
        """Add the edit's problems to ``result`` (a successful edit only); see the module docstring."""
        if isinstance(baseline, NotOpen):
            if result.ok:
                _add(result, not_checked_text(baseline.rel), {"checked": False})
            return
        if not result.ok or editor is None:
            return
        await self._check(baseline, result, documents, editor, wait, exclude, root, allowed)

    def release(self, baseline: Baseline | NotOpen | None) -> None:
        """The call of ``baseline`` is finished: the next edit of its file may take its own."""
        if isinstance(baseline, Baseline):
            baseline.settled.set()
            if self._settling.get(baseline.target.resolved) is baseline.settled:
                del self._settling[baseline.target.resolved]

    async def _check(self, baseline: Baseline, result: ToolResult, documents: Any, editor: EditorIntel,
                     wait: float, exclude: ModelExclude, root: Path, allowed: frozenset[Path]) -> None:
        target = baseline.target
        final = True
        if baseline.seen:
            final = await settle(editor, target.resolved, baseline.reports, wait, quiet_period())
        doc = documents.get(target.resolved)
        if doc is None:  # closed meanwhile: nothing the editor checks any more
            _add(result, not_checked_text(target.rel), {"checked": False})
            return
        after = await self._ask(editor, baseline.uri, max(wait, 1.0))
        if after is None:
            _add(result, f"problems not checked: the editor did not give the problems of {target.rel}",
                 {"checked": False})
            return
        index = LineIndex(doc.text)

        def column(line: int, character: int) -> int:
            try:
                return index.offset_at((line, character), editor.encoding) - index.starts[line] + 1
            except (PositionError, IndexError):
                return character + 1

        hidden = None if target.resolved in allowed else exclude.match_target(root, target)
        comparison = compare(baseline.diagnostics, after, LineMap(baseline.text, doc.text), target.rel,
                             column=column, hide_messages=hidden)
        _add(result, problems_text(comparison, final), diagnostics_data(comparison, final))

    @staticmethod
    async def _ask(editor: EditorIntel, uri: str, wait: float) -> list[dict[str, Any]] | None:
        """The diagnostics of ``uri`` (within ``wait`` and the editor's own bound), None without an answer."""
        try:
            with anyio.fail_after(max(wait, 0.5)):
                items = await editor.diagnostics([uri])
        except (ToolError, TimeoutError) as exc:
            log.info("no diagnostics of %s from the editor: %s", uri, exc)
            return None
        out: list[dict[str, Any]] = []
        for _, diagnostics in items:
            out.extend(d for d in diagnostics if isinstance(d, dict))
        return out


def _add(result: ToolResult, text: str, diagnostics: dict[str, Any]) -> None:
    result.content = f"{result.content}\n{text}"
    result.data = {**(result.data or {}), "diagnostics": diagnostics}
