"""Helpers for tests on real git repositories: run git, call a tool, expect a failure."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from toolwire.tools import default_registry
from toolwire.tools.base import ToolContext, ToolError, ToolResult, validate_arguments
from toolwire.tools.gitrepo import GitCache

REG = default_registry()


def git(root: Path, *args: str | bytes, check: bool = True) -> str:
    """Run git in ``root``; its stdout as text (undecodable bytes replaced)."""
    done = subprocess.run(["git", *args], cwd=root, check=check, capture_output=True)
    return done.stdout.decode("utf-8", "replace")


def init_repo(root: Path) -> Path:
    """A repository at ``root`` on branch main with a committed ``a.txt``."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Dev")
    git(root, "config", "user.email", "dev@example.com")
    (root / "a.txt").write_text("one\n")
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "first")
    return root


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user or system git config."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-global-config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    for var in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(var, raising=False)


async def call(root: Path, tool_name: str, /, cache: GitCache | None = None, **arguments: Any) -> ToolResult:
    """Run one tool on ``root`` (a fresh fact cache unless one is given)."""
    tool = REG.get(tool_name)
    assert tool is not None
    ctx = ToolContext(root, git_timeout=20.0, git=cache or GitCache())
    return await tool.run(validate_arguments(tool, arguments), ctx)


async def fails(root: Path, tool_name: str, code: str, /, **arguments: Any) -> ToolError:
    """Run one tool and expect a :class:`ToolError` with ``code``."""
    with pytest.raises(ToolError) as err:
        await call(root, tool_name, **arguments)
    assert err.value.code == code, err.value.message
    return err.value


def jsonable(value: Any) -> None:
    """Fail when ``value`` holds a string that is not valid Unicode (a lone surrogate)."""
    import json

    json.dumps(value, ensure_ascii=False).encode("utf-8")
