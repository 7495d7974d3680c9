"""Path confinement with real files and real symlinks in tmp_path workspaces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolwire.tools.base import ToolError
from toolwire.workspace.paths import resolve_path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a\n")
    (tmp_path / "ws-evil").mkdir()
    (tmp_path / "ws-evil" / "secret.txt").write_text("s\n")
    (tmp_path / "outside.txt").write_text("o\n")
    return root


def _outside(root: Path, path: str) -> None:
    with pytest.raises(ToolError) as err:
        resolve_path(root, path)
    assert err.value.code == "outside_workspace", err.value.message


def test_plain_relative_path(ws: Path) -> None:
    wp = resolve_path(ws, "src/a.py")
    assert wp.rel == "src/a.py"
    assert wp.resolved == ws / "src" / "a.py"
    assert wp.entry == ws / "src" / "a.py"


def test_dotdot_that_stays_inside_is_allowed(ws: Path) -> None:
    assert resolve_path(ws, "src/../src/./a.py").rel == "src/a.py"
    assert resolve_path(ws, "../ws/src/a.py").rel == "src/a.py"


def test_dotdot_escape_refused(ws: Path) -> None:
    _outside(ws, "../outside.txt")
    _outside(ws, "src/../../outside.txt")


def test_sibling_with_common_string_prefix_is_outside(ws: Path) -> None:
    _outside(ws, "../ws-evil/secret.txt")
    _outside(ws, str(ws.parent / "ws-evil" / "secret.txt"))


def test_absolute_paths(ws: Path) -> None:
    assert resolve_path(ws, str(ws / "src" / "a.py")).rel == "src/a.py"
    _outside(ws, "/etc/passwd")


def test_symlinked_folder_pointing_outside(ws: Path) -> None:
    os.symlink(ws.parent / "ws-evil", ws / "evil")
    _outside(ws, "evil/secret.txt")
    _outside(ws, "evil/new-file.txt")


def test_symlinked_file_pointing_outside(ws: Path) -> None:
    os.symlink(ws.parent / "outside.txt", ws / "link.txt")
    _outside(ws, "link.txt")


def test_dangling_link_pointing_outside(ws: Path) -> None:
    os.symlink(ws.parent / "not-yet.txt", ws / "dangling")
    _outside(ws, "dangling")


def test_dangling_link_pointing_inside(ws: Path) -> None:
    os.symlink(ws / "src" / "later.py", ws / "later-link")
    wp = resolve_path(ws, "later-link")
    assert wp.resolved == ws / "src" / "later.py"
    assert wp.entry == ws / "later-link"


def test_link_then_dotdot_is_judged_after_resolution(ws: Path) -> None:
    deep = ws.parent / "elsewhere" / "deep"
    deep.mkdir(parents=True)
    os.symlink(deep, ws / "jump")
    # lexically "jump/../outside.txt" is "outside.txt" inside ws, but it resolves to elsewhere/outside.txt
    _outside(ws, "jump/../x.txt")


def test_symlink_inside_workspace_is_fine(ws: Path) -> None:
    os.symlink(ws / "src", ws / "alias")
    wp = resolve_path(ws, "alias/a.py")
    assert wp.resolved == ws / "src" / "a.py"
    assert wp.rel == "alias/a.py"


def test_root_reached_through_a_symlink(ws: Path, tmp_path: Path) -> None:
    os.symlink(ws, tmp_path / "ws-link")
    wp = resolve_path(tmp_path / "ws-link", "src/a.py")
    assert wp.resolved == ws / "src" / "a.py"


def test_git_folder_refused(ws: Path) -> None:
    (ws / ".git").mkdir()
    _outside(ws, ".git/config")
    _outside(ws, "src/../.git/HEAD")
    _outside(ws, "sub/.git")
    _outside(ws, ".GIT/config")
    os.symlink(ws / ".git", ws / "gitlink")
    _outside(ws, "gitlink/config")
    assert resolve_path(ws, ".git/config", allow_git=True).rel == ".git/config"
    assert resolve_path(ws, ".gitignore").rel == ".gitignore"


def test_invalid_paths(ws: Path) -> None:
    for bad in ("", "a\x00b"):
        with pytest.raises(ToolError) as err:
            resolve_path(ws, bad)
        assert err.value.code == "invalid_path"


def test_symlink_loop(ws: Path) -> None:
    os.symlink(ws / "loop2", ws / "loop1")
    os.symlink(ws / "loop1", ws / "loop2")
    with pytest.raises(ToolError) as err:
        resolve_path(ws, "loop1")
    assert err.value.code == "invalid_path"
