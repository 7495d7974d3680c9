"""Putting one path back on disk for undo and redo (:mod:`toolwire.agent.undo`): comparing
recorded states, the diff a restore would make, and the atomic write itself."""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from toolwire.agent.checkpoint_records import FileState
from toolwire.workspace.fs import TEMP_MARKER, keep_metadata
from toolwire.workspace.text import unified_diff

__all__ = ["same", "text", "describe_change", "write_entry"]


def same(a: FileState, b: FileState) -> bool:
    """True when two recorded states are the same entry (kind, content, and a file's mode bits)."""
    return a.kind == b.kind and a.digest == b.digest and (a.kind != "file" or a.mode == b.mode)


def text(data: bytes | None) -> str | None:
    """``data`` as text (UTF-8, a BOM dropped), or None when absent or not UTF-8."""
    if data is None:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def describe_change(rel: str, now: bytes | None, then: bytes | None, now_mode: int | None = None,
                    then_mode: int | None = None) -> str:
    """The diff from what ``rel`` holds ``now`` to what the undo would make it (``then``).

    Text is shown as a unified diff; binary contents and permission changes as one line each.
    """
    out = ""
    if now is not None and then is not None and now_mode is not None and then_mode is not None and now_mode != then_mode:
        out += f"mode {now_mode:o} -> {then_mode:o}\n"
    if now == then:
        return out
    a, b = text(now), text(then)
    if (now is None or a is not None) and (then is None or b is not None):
        return out + unified_diff(a, b, rel)
    size = lambda d: "absent" if d is None else f"{len(d)} bytes"  # noqa: E731
    return out + f"Binary file {rel} differs ({size(now)} now, {size(then)} after the undo)\n"


def write_entry(entry: Path, state: FileState, data: bytes | None, listener: Callable | None) -> None:
    """Make the directory entry ``entry`` hold ``state`` atomically (``data``: its bytes or link target)."""
    if state.kind == "absent":
        if os.path.lexists(entry):
            if listener is not None:
                listener(entry, None)
            os.unlink(entry)
        return
    assert data is not None
    entry.parent.mkdir(parents=True, exist_ok=True)
    temp = entry.parent / f".{entry.name[:80]}{TEMP_MARKER}{secrets.token_hex(6)}.tmp"
    try:
        if state.kind == "symlink":
            os.symlink(os.fsdecode(data), temp)
        else:
            try:
                now = os.lstat(entry)
            except OSError:
                now = None
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                if now is not None and stat.S_ISREG(now.st_mode):  # owner, group, xattrs of the file replaced
                    keep_metadata(fd, now, entry)
                os.fchmod(fd, state.mode if state.mode is not None else 0o644)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
        if listener is not None:
            listener(entry, data if state.kind == "file" else None)
        os.replace(temp, entry)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise
