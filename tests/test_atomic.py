"""Atomic writes: same-folder temp file, permission bits kept, staleness, cleanup."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from toolwire.tools.base import ToolError
from toolwire.workspace import fs
from toolwire.workspace.fs import ABSENT, ANY, atomic_write, read_bytes


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if fs.is_temp_name(p.name)]


def test_replaces_content_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_bytes(b"old\n")
    os.chmod(target, 0o751)
    atomic_write(target, b"new\n", expected=b"old\n")
    assert target.read_bytes() == b"new\n"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o751
    assert _leftovers(tmp_path) == []


def test_new_file_honours_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "n.txt", b"x", expected=ABSENT)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "n.txt").st_mode) == 0o640


def test_stale_when_disk_changed(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"two\n")
    with pytest.raises(ToolError) as err:
        atomic_write(target, b"three\n", expected=b"one\n")
    assert err.value.code == "stale"
    assert err.value.message.endswith("file changed since it was read")
    assert target.read_bytes() == b"two\n"
    assert _leftovers(tmp_path) == []


def test_absent_refuses_existing(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"keep")
    with pytest.raises(ToolError) as err:
        atomic_write(target, b"new", expected=ABSENT)
    assert err.value.code == "exists"
    assert target.read_bytes() == b"keep"
    assert _leftovers(tmp_path) == []


def test_failure_mid_write_leaves_target_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"original")

    def broken_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(fs.os, "fsync", broken_fsync)
    with pytest.raises(ToolError) as err:
        atomic_write(target, b"half", expected=b"original")
    assert err.value.code == "io_error"
    assert target.read_bytes() == b"original"
    assert _leftovers(tmp_path) == []


def test_interrupt_mid_write_cleans_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a.txt"
    target.write_bytes(b"original")

    def interrupted(path: Path, data: bytes | None) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, b"new", expected=ANY, listener=interrupted)
    assert target.read_bytes() == b"original"
    assert _leftovers(tmp_path) == []


def test_write_through_symlink_target_keeps_link(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_bytes(b"a")
    os.symlink(real, tmp_path / "link.txt")
    atomic_write(real, b"b", expected=b"a")
    assert os.path.islink(tmp_path / "link.txt")
    assert (tmp_path / "link.txt").read_bytes() == b"b"


def test_listener_sees_write_before_replace(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    seen: list[tuple[Path, bytes | None, bytes]] = []
    atomic_write(target, b"x", expected=ABSENT, listener=lambda p, d: seen.append((p, d, b"")))
    assert seen == [(target, b"x", b"")]


def test_read_bytes_errors(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"a" * 11)
    with pytest.raises(ToolError) as err:
        read_bytes(big, limit=10)
    assert err.value.code == "too_large"
    with pytest.raises(ToolError) as err:
        read_bytes(tmp_path, label="dir")
    assert err.value.code == "is_directory"
    with pytest.raises(ToolError) as err:
        read_bytes(tmp_path / "missing")
    assert err.value.code == "not_found"
