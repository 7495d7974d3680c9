"""Reading and atomically writing workspace files on disk.

A write never leaves a half-written file: the new bytes go to a temporary file
in the same folder, are flushed and fsynced, and then replace the target with
:func:`os.replace` (atomic on POSIX within one file system). The replacement
keeps the file's permission bits, its owner and group (when the process may set
them: as root, or when it owns the file and is in the group) and its extended
attributes (POSIX ACLs included) where the file system lets them be copied.
A read-only file (:func:`check_writable`) is never replaced. Right before the replace, the target's bytes are
compared with what the caller read; if something else changed the file in
between, the write is refused as stale. The temporary file is removed on any
failure.

All functions here are synchronous and short; they contain no await point, so
a cancelled task never stops one half-way.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Final

from toolwire.workspace.errors import ToolError

__all__ = [
    "MAX_EDIT_BYTES",
    "MAX_FILE_BYTES",
    "ANY",
    "ABSENT",
    "TEMP_MARKER",
    "WriteListener",
    "read_bytes",
    "atomic_write",
    "check_writable",
    "keep_metadata",
    "is_temp_name",
]

MAX_FILE_BYTES: Final = 2 * 1024 * 1024
"""Largest file ``read_file`` returns whole (without a line range): 2 MiB."""

MAX_EDIT_BYTES: Final = 16 * 1024 * 1024
"""Largest file the file tools edit, ``read_file`` reads in line ranges, or the watcher
checks against Toolwire's own writes: 16 MiB."""

TEMP_MARKER: Final = ".toolwire-"
"""Part of every temporary file name, so watchers can ignore them."""

WriteListener = Callable[[Path, bytes | None], None]
"""Called with ``(resolved path, new bytes or None for a deletion)`` right before a write."""


class _Expectation:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


ANY: Final = _Expectation("ANY")
"""``expected=ANY``: write whatever is on disk now (no staleness check)."""

ABSENT: Final = _Expectation("ABSENT")
"""``expected=ABSENT``: the target must not exist (create without clobbering)."""


def is_temp_name(name: str) -> bool:
    """True for the names of this module's temporary files."""
    return name.startswith(".") and TEMP_MARKER in name and name.endswith(".tmp")


def read_bytes(path: Path, *, limit: int = MAX_FILE_BYTES, label: str | None = None) -> bytes:
    """Read a whole regular file, refusing folders and files over ``limit`` bytes.

    Args:
        path: Absolute path (already confined to the workspace).
        limit: Largest size accepted, in bytes.
        label: Name used in error messages (defaults to ``path``).

    Raises:
        ToolError: ``not_found``, ``is_directory``, ``not_a_file`` (a device,
            socket or fifo), ``too_large``, or ``io_error``.
    """
    name = label or str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise ToolError("not_found", f"{name} does not exist") from None
    except OSError as exc:
        raise ToolError("io_error", f"cannot read {name}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError("is_directory", f"{name} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError("not_a_file", f"{name} is not a regular file")
    if st.st_size > limit:
        raise ToolError(
            "too_large",
            f"{name} is {st.st_size} bytes, over the {limit}-byte limit of the file tools",
            {"size": st.st_size, "limit": limit},
        )
    try:
        with open(path, "rb") as fh:
            # Sized from the stat (a buffer of ``limit`` would cost a 16 MiB allocation per read);
            # one byte more shows a file that grew past the limit meanwhile.
            data = fh.read(min(st.st_size, limit) + 1)
            if len(data) == st.st_size + 1 and len(data) <= limit:
                data += fh.read(limit + 1 - len(data))
    except OSError as exc:
        raise ToolError("io_error", f"cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ToolError("too_large", f"{name} grew over the {limit}-byte limit while being read")
    return data


def _current(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ToolError("is_directory", f"{path} is a directory, not a file") from None


def _check_expected(path: Path, expected: bytes | _Expectation, label: str) -> None:
    if expected is ANY:
        return
    current = _current(path)
    if expected is ABSENT:
        if current is not None or path.exists():
            raise ToolError("exists", f"{label} already exists")
    elif current != expected:
        raise ToolError("stale", f"{label}: file changed since it was read")


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_writable(path: Path, st: os.stat_result | None = None, *, label: str | None = None) -> None:
    """Refuse to change a read-only regular file (the rule an editor follows).

    A file is read-only when it has no write permission bit at all (``chmod a-w``,
    e.g. mode 0444: read-only even for root, who could otherwise write anything),
    or when the user the server runs as may not write it (:func:`os.access`
    ``W_OK``: owner, group and other bits, ACLs, a read-only mount).

    Args:
        path: Absolute path of an existing file.
        st: Its ``os.stat`` result, when already taken.
        label: Name used in the error (defaults to ``path``).

    Raises:
        ToolError: ``read_only`` with ``{"mode": "0444"}`` (octal permission bits).
    """
    if st is None:
        try:
            st = os.stat(path)
        except OSError:
            return  # absent or unreadable: the write itself reports it
    if not stat.S_ISREG(st.st_mode):
        return
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o222 and os.access(path, os.W_OK):
        return
    why = "has no write permission" if not mode & 0o222 else "is not writable by the user the server runs as"
    raise ToolError("read_only", f"{label or path} is read-only (mode {mode:04o}: it {why}); nothing was written. "
                    "Make it writable first if it should change (e.g. chmod u+w)", {"mode": f"{mode:04o}"})


def keep_metadata(fd: int, st: os.stat_result, source: Path | None = None) -> None:
    """Give the new file open as ``fd`` the owner, group, permission bits and extended
    attributes of the file it replaces (``st``, ``source``), as far as allowed.

    Owner and group are set when the process may (root; or its own file and a group
    it is in); a refusal is ignored (the new file keeps the process's ids). Extended
    attributes of ``source`` (``user.*``, POSIX ACLs as ``system.posix_acl_access``,
    ``security.*`` as root) are copied one by one; any the file system or the
    process's rights refuse are skipped. The mode is set last (``chown`` clears the
    set-user-ID and set-group-ID bits).
    """
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except OSError:
            try:  # at least the group, when the process is in it
                os.fchown(fd, -1, st.st_gid)
            except OSError:
                pass
    if source is not None and hasattr(os, "listxattr"):
        try:
            names = os.listxattr(source)
        except OSError:
            names = []
        for attr in names:
            try:
                os.setxattr(fd, attr, os.getxattr(source, attr))
            except OSError:
                pass
    os.fchmod(fd, stat.S_IMODE(st.st_mode))


def atomic_write(
    path: Path,
    data: bytes,
    *,
    expected: bytes | _Expectation = ANY,
    label: str | None = None,
    listener: WriteListener | None = None,
) -> None:
    """Replace ``path`` with ``data`` atomically.

    Args:
        path: Absolute, resolved target path; its folder must exist.
        data: The complete new content.
        expected: The bytes the caller read (the write is refused if the file
            now differs), :data:`ABSENT` (the file must not exist), or
            :data:`ANY`.
        label: Name used in error messages (defaults to ``path``).
        listener: Told about the write just before the target changes (the
            file watcher uses it to ignore the server's own writes).

    Raises:
        ToolError: ``stale`` when the file changed since it was read,
            ``exists`` when ``expected`` is ABSENT and the file exists,
            ``read_only`` (:func:`check_writable`),
            ``is_directory``, or ``io_error`` on any OS failure. In every case
            the target is untouched and no temporary file is left behind.
    """
    name = label or str(path)
    folder = path.parent
    try:
        old: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise ToolError("io_error", f"cannot write {name}: {exc.strerror or exc}") from None
    if old is not None:
        check_writable(path, old, label=name)
    temp = folder / f".{path.name[:80]}{TEMP_MARKER}{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        raise ToolError("io_error", f"cannot write {name}: {exc.strerror or exc}") from None
    try:
        try:
            if old is not None:
                keep_metadata(fd, old, path)
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        _check_expected(path, expected, name)
        if listener is not None:
            listener(path, data)
        if expected is ABSENT:
            try:
                os.link(temp, path)  # fails if the target appeared meanwhile: no clobbering
            except FileExistsError:
                raise ToolError("exists", f"{name} already exists") from None
            except OSError:  # no hard links on this file system: checked above, replace
                os.replace(temp, path)
            else:
                os.unlink(temp)
        else:
            os.replace(temp, path)
    except ToolError:
        _unlink_quietly(temp)
        raise
    except OSError as exc:
        _unlink_quietly(temp)
        raise ToolError("io_error", f"cannot write {name}: {exc.strerror or exc}") from None
    except BaseException:
        _unlink_quietly(temp)
        raise
    _fsync_dir(folder)


def _unlink_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
