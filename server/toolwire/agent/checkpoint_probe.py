"""What a path, an open buffer and the index hold right now, as a checkpoint records them.

The reading side of :mod:`toolwire.agent.checkpoints` (which takes checkpoints around
the tools with these): :func:`probe` for a directory entry (its bytes stored or only
hashed), :func:`buffer_state` for an editor buffer, :func:`index_entries` for git's
index, and the size limit and the :class:`Unrecordable` error of a state that cannot
be kept.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Final

from toolwire.agent.checkpoint_records import BufferState, FileState
from toolwire.agent.checkpoint_store import CheckpointStore
from toolwire.tools.base import ToolContext
from toolwire.tools.gitrun import run_git
from toolwire.workspace.digest import sha256_hex
from toolwire.workspace.errors import ToolError

__all__ = ["MAX_CHECKPOINT_BYTES", "Unrecordable", "size_text", "over_limit", "probe", "left_state", "buffer_state",
           "index_entries"]

#: Largest file (bytes) a checkpoint keeps by default (the ``checkpointMaxBytes`` setting);
#: a larger one is recorded as not undoable.
MAX_CHECKPOINT_BYTES: Final = 64 * 1024 * 1024


class Unrecordable(Exception):
    """The prior state of a path or git action cannot be recorded; ``args[0]`` says why
    (a sentence fragment such as ``big.bin is 70 MiB, over the 64 MiB checkpoint limit``)."""


def size_text(size: int) -> str:
    """A size as people read it: ``512 bytes``, ``3.5 KiB``, ``70 MiB``."""
    if size < 1024:
        return f"{size} bytes"
    unit, value = ("KiB", size / 1024) if size < 1024 * 1024 else ("MiB", size / (1024 * 1024))
    return f"{value:.1f}".rstrip("0").rstrip(".") + f" {unit}"


def over_limit(size: int, limit: int) -> str:
    """Why a file of ``size`` bytes is not kept under a ``limit``-byte checkpoint limit."""
    return f"{size_text(size)} is over the {size_text(limit)} checkpoint limit (the checkpointMaxBytes setting)"


def probe(path: Path, store: CheckpointStore | None = None, linked: list[tuple[str, bytes]] | None = None,
          *, limit: int = MAX_CHECKPOINT_BYTES, strict: bool = False,
          hash_large: bool = False) -> tuple[FileState, bytes | None]:
    """The state of the directory entry ``path`` (symlinks are not followed).

    Args:
        path: Absolute path of the entry.
        store: When given, the content is stored (a checkpoint); otherwise only hashed.
        linked: When given (with ``store``), a file's content may be stored as a hard
            link to it (:meth:`CheckpointStore.put_file`); ``(digest, bytes)`` of such a
            content is appended, for :meth:`CheckpointStore.unshare` once the tool is done.
        limit: Largest file kept (bytes).
        strict: Raise :class:`Unrecordable` for a file over ``limit`` or one that cannot be
            read, instead of returning ``unknown`` (a folder or a device stays ``unknown``:
            the tools refuse those themselves).
        hash_large: A file over ``limit`` is hashed (read in pieces), not stored: a
            ``file`` state whose ``reason`` says its content was not kept, and no bytes.
            Enough to tell later that the file is still exactly this (the state a turn
            left, which undo compares), not to write it back.

    Returns:
        The state, and the bytes of a file (the link target of a symlink), None otherwise.

    Raises:
        OSError: the store refused the content. Unrecordable: see ``strict``.
    """
    def unknown(reason: str) -> tuple[FileState, None]:
        if strict:
            raise Unrecordable(reason)
        return FileState(kind="unknown", reason=reason), None

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return FileState(kind="absent"), None
    except OSError as exc:
        return unknown(f"cannot read it: {exc.strerror or exc}")
    if stat.S_ISLNK(st.st_mode):
        data = os.fsencode(os.readlink(path))
        kind = "symlink"
        mode = None
    elif stat.S_ISREG(st.st_mode):
        if st.st_size > limit:
            if not hash_large:
                return unknown(over_limit(st.st_size, limit))
            try:
                with open(path, "rb") as fh:
                    digest = hashlib.file_digest(fh, "sha256").hexdigest()
            except OSError as exc:
                return unknown(f"cannot read it: {exc.strerror or exc}")
            return FileState(kind="file", digest=digest, mode=stat.S_IMODE(st.st_mode),
                             reason=f"its content was not kept: {over_limit(st.st_size, limit)}"), None
        try:
            data = path.read_bytes()
        except OSError as exc:
            return unknown(f"cannot read it: {exc.strerror or exc}")
        kind, mode = "file", stat.S_IMODE(st.st_mode)
    else:
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        return FileState(kind="unknown", reason=f"it is {what}"), None
    if store is not None and linked is not None and kind == "file":
        digest, was_linked = store.put_file(path, data)
        if was_linked:
            linked.append((digest, data))
    else:
        digest = store.put(data) if store is not None else sha256_hex(data)
    return FileState(kind=kind, digest=digest, mode=mode), data  # type: ignore[arg-type]


def left_state(path: Path, store: CheckpointStore, limit: int = MAX_CHECKPOINT_BYTES) -> FileState:
    """The state a tool left at ``path``, its content stored when it can be (a redo writes
    it back), else recorded by its digest only, with the reason (over ``limit``, or the
    store refused it: a full disk), which is all an undo needs: it compares the file
    with it. ``unknown`` only when the entry cannot be read."""
    try:
        return probe(path, store, limit=limit, hash_large=True)[0]
    except OSError as exc:  # the store refused the content
        state = probe(path, limit=limit, hash_large=True)[0]
        if state.kind in ("file", "symlink") and state.reason is None:
            state.reason = f"its content was not kept: the checkpoint could not be stored ({exc.strerror or exc})"
        return state


def buffer_state(ctx: ToolContext, rel: str, store: CheckpointStore | None = None) -> tuple[BufferState | None, str | None]:
    """The open buffer of ``rel`` (state and text), or ``(None, None)`` when it is not open
    or cannot be used (open under two URIs, out of sync: the tool itself then refuses to
    touch it, so there is no buffer change to record)."""
    try:
        doc = ctx.documents.get(Path(os.path.realpath(ctx.root / rel)))
    except ToolError:
        return None, None
    if doc is None:
        return None, None
    data = doc.text.encode("utf-8", "surrogatepass")
    digest = store.put(data) if store is not None else sha256_hex(data)
    return BufferState(digest=digest, version=doc.version), doc.text


async def index_entries(ctx: ToolContext, paths: list[str]) -> dict[str, str]:
    """Index entries under ``paths`` (workspace-relative pathspecs): path → ``"<mode> <oid> <stage>"``.

    Read-only (``git ls-files -s``, no optional locks): the index is not touched.
    """
    out = await run_git(ctx.root, ["ls-files", "-s", "-z", "--", *paths], read_only=True, timeout=ctx.git_timeout)
    entries = {}
    for record in out.stdout.split(b"\x00"):
        if not record:
            continue
        info, _, name = record.partition(b"\t")
        entries[os.fsdecode(name)] = info.decode("ascii", "replace")
    return entries


