"""The settling of problems after an edit (toolwire.agent.problem_watch.settle), in process, on
the diagnostics feed the client's ``diagnosticsChanged`` fills; no timing assertions."""

from __future__ import annotations

from pathlib import Path

import anyio

from toolwire.agent.problem_watch import QUIET, quiet_period, settle
from toolwire.tools.editor_intel import DiagnosticsFeed

FILE = Path("/ws/a.ts")


class Editor:
    def __init__(self) -> None:
        self.feed = DiagnosticsFeed()


def test_no_report_runs_out_the_bound() -> None:
    editor = Editor()
    assert anyio.run(settle, editor, FILE, 0, 0.05, 0.0) is False


def test_a_report_of_another_file_does_not_count() -> None:
    editor = Editor()
    editor.feed.changed([Path("/ws/b.ts")])
    assert anyio.run(settle, editor, FILE, 0, 0.05, 0.0) is False


def test_a_report_after_the_baseline_settles_once_quiet() -> None:
    editor = Editor()
    editor.feed.changed([FILE])  # before the baseline: noted as 1
    editor.feed.changed([FILE])  # the edit's
    assert anyio.run(settle, editor, FILE, 1, 30.0, 0.0) is True


def test_a_quiet_period_longer_than_the_bound_is_not_final() -> None:
    editor = Editor()
    editor.feed.changed([FILE])
    assert anyio.run(settle, editor, FILE, 0, 0.05, 3600.0) is False


def test_the_quiet_period_is_250_ms_unless_the_environment_sets_it(monkeypatch) -> None:
    monkeypatch.delenv("TOOLWIRE_DIAGNOSTICS_QUIET", raising=False)
    assert QUIET == 0.25 and quiet_period() == 0.25
    monkeypatch.setenv("TOOLWIRE_DIAGNOSTICS_QUIET", "0")
    assert quiet_period() == 0.0
    monkeypatch.setenv("TOOLWIRE_DIAGNOSTICS_QUIET", "soon")
    assert quiet_period() == 0.25
