"""Setup for the tests that run under each list/search engine (rg, git, the walk): git run in
a tree, a test-local home and git config (fixture `isolated`), the global excludes file, and
the `engine` fixture that makes each test run once per engine. Import the fixtures by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitrepos import git  # noqa: F401 (re-exported for the engine tests)
from toolwire.tools.engine import ENGINE_ENV, find_engine

ENGINES = ["rg", "git", "walk"]


def write_global_excludes(home: Path, patterns: str = "*.tmp\n") -> None:
    """core.excludesFile of the test-local GIT_CONFIG_GLOBAL, holding these patterns."""
    (home / "global-ignore").write_text(patterns)
    (home / "gitconfig").write_text(f"[core]\n\texcludesFile = {home / 'global-ignore'}\n")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No user git config, no user home: the global excludes are the test's own. The home."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(ENGINE_ENV, request.param)
    assert find_engine().kind == request.param, "every engine must be there in the tests (rg comes with the test install)"
    return request.param
