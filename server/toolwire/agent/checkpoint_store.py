"""Where turn checkpoints live: the server's own storage, outside the user's repository.

Layout, under the state folder (``$TOOLWIRE_STATE_DIR``, else
``$XDG_STATE_HOME/toolwire``, else ``~/.local/state/toolwire``)::

    checkpoints/<workspace key>/workspace      the workspace folder's absolute path
    checkpoints/<workspace key>/objects/<sha256>   file contents, content-addressed
    checkpoints/<workspace key>/turns/<session>-<turn>.json   one record per turn

The workspace key is the first 16 hex digits of the SHA-256 of the resolved
workspace path. Contents are stored by their SHA-256, so a file captured before
and after many turns is stored once. Nothing is ever written into the
workspace or its ``.git`` folder (HEAD, index, stash, reflog and object
database are untouched): a checkpoint outlives ``git gc`` and works the same
in folders that are not repositories.

Every write is atomic (temporary file, then rename; not fsynced: a checkpoint
is a convenience taken around every writing tool, and a content torn by a
crash is detected by its digest and reported, never restored). Only the newest
:data:`KEEP_TURNS` records of a workspace are kept; objects no record names any
more are removed with the records that named them.

A file's content taken before a tool writes it may be stored as a hard link to
the file itself (:meth:`CheckpointStore.put_file`: same file system, no other
link, bytes checked after linking), which costs no copy of a large file: the
tools write by renaming a new file over the old one, so the old bytes then
belong to the store alone. Whenever the file was not replaced, the checkpoint
makes the object a copy once the tool is done (:meth:`CheckpointStore.unshare`).
Only a crash between the two leaves an object shared with a workspace file; if
that file is later changed in place, reading the object reports it as damaged
(its digest no longer matches), never as another content.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
import stat
import time
from pathlib import Path
from typing import Final

from toolwire.workspace.digest import sha256_hex

log = logging.getLogger(__name__)

__all__ = ["CheckpointStore", "state_dir", "KEEP_TURNS", "StoreError"]

#: Turn records kept per workspace; older ones (and the contents only they name) are removed.
KEEP_TURNS: Final = 50

#: Contents stored less than this many seconds ago are never pruned (a turn may be taking them).
FRESH_SECONDS: Final = 3600.0


class StoreError(OSError):
    """A stored content is missing or unreadable (the message says which)."""


def state_dir() -> Path:
    """The folder Toolwire keeps its state in (see the module docstring for the order)."""
    explicit = os.environ.get("TOOLWIRE_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "state"
    return base / "toolwire"


def _atomic_bytes(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temp, "wb") as fh:
            fh.write(data)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _kept(path: Path, size: int) -> bool:
    """True when ``path`` is a stored content of ``size`` bytes of its own: a regular file
    with no other link. Anything else under that name (a truncated or damaged copy, one
    still shared with a workspace file after a crash, a folder) is written again, so a
    checkpoint never rests on a content that undo would find damaged."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size == size and st.st_nlink == 1


class CheckpointStore:
    """The checkpoint storage of one workspace folder.

    Args:
        root: The workspace folder (absolute, resolved).
        base: The state folder (default :func:`state_dir`).

    Folders are created on the first write, so reading a workspace that never
    had a checkpoint creates nothing.
    """

    def __init__(self, root: Path, base: Path | None = None) -> None:
        self.root = root
        key = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        self.folder = (base or state_dir()) / "checkpoints" / key
        self.objects = self.folder / "objects"
        self.turns = self.folder / "turns"

    def _ensure(self) -> None:
        if not self.turns.is_dir():
            self.objects.mkdir(parents=True, exist_ok=True)
            self.turns.mkdir(parents=True, exist_ok=True)
            (self.folder / "workspace").write_text(str(self.root), encoding="utf-8", errors="surrogateescape")

    def unwritable(self) -> str | None:
        """Why contents and records cannot be written here now, or None when they can.

        Creates the folders if needed and writes (then removes) one small file in each,
        so a read-only folder, a full disk or a path component that is a regular file
        (which stops root too) is found before a tool changes anything.
        """
        try:
            self._ensure()
            for folder in (self.objects, self.turns):
                probe = folder / f".probe-{secrets.token_hex(4)}"
                _atomic_bytes(probe, b"probe")
                probe.unlink()
        except OSError as exc:
            return f"the checkpoint store cannot be written ({exc.strerror or exc}: {exc.filename or self.folder})"
        return None

    # ------------------------------------------------------------ contents
    def put(self, data: bytes) -> str:
        """Store ``data`` and return its SHA-256 (hex). Raises OSError when the disk refuses."""
        digest = sha256_hex(data)
        path = self.objects / digest
        if not _kept(path, len(data)):
            self._ensure()
            _atomic_bytes(path, data)
        return digest

    def put_file(self, path: Path, data: bytes) -> tuple[str, bool]:
        """Store the content of the regular file ``path``, whose bytes ``data`` were just
        read, preferably as a hard link to it (no copy of a large file).

        The link is made only when the file has no other link, is on the store's file
        system and, once linked, holds exactly ``data`` (read back and compared);
        otherwise ``data`` is copied as by :meth:`put`. A linked content shares its
        bytes with the workspace file until that file is replaced (atomic writes
        rename a new file over it) or deleted: the caller must call
        :meth:`unshare` once the tool is done, which copies it if it is still shared.

        Returns:
            ``(digest, linked)``. Raises OSError when the disk refuses a copy.
        """
        digest = sha256_hex(data)
        dest = self.objects / digest
        if _kept(dest, len(data)):
            return digest, False
        self._ensure()
        temp = self.objects / f".{digest}.{secrets.token_hex(4)}.tmp"
        try:
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_size != len(data):
                raise OSError("not linkable")
            os.link(path, temp, follow_symlinks=False)
            with open(temp, "rb") as fh:
                same = fh.read(len(data) + 1) == data  # it may have changed since it was read
            if not same:
                raise OSError("changed")
            os.replace(temp, dest)
        except OSError:  # another file system, no hard links, changed, shared: a copy
            temp.unlink(missing_ok=True)
            return self.put(data), False
        return digest, True

    def unshare(self, digest: str, data: bytes) -> None:
        """Make the stored content ``digest`` (``data``, stored by :meth:`put_file`) a file
        of its own if it still shares its bytes with another link (the workspace file was
        not replaced). Raises OSError when the disk refuses the copy."""
        path = self.objects / digest
        try:
            shared = os.stat(path).st_nlink > 1
        except FileNotFoundError:
            shared = True
        if shared:
            _atomic_bytes(path, data)

    def get(self, digest: str) -> bytes:
        """The stored content named ``digest``.

        Raises:
            StoreError: it is missing or does not match its name (the storage was damaged).
        """
        try:
            data = (self.objects / digest).read_bytes()
        except OSError as exc:
            raise StoreError(f"the checkpoint content {digest[:12]} is missing ({exc.strerror or exc})") from None
        if sha256_hex(data) != digest:
            raise StoreError(f"the checkpoint content {digest[:12]} is damaged")
        return data

    # ------------------------------------------------------------- records
    def _record_path(self, session_id: str, turn_id: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in f"{session_id}-{turn_id}")
        return self.turns / f"{safe}.json"

    def save(self, session_id: str, turn_id: str, record: dict) -> None:
        """Write one turn's record (a JSON object), replacing the previous version."""
        self._ensure()
        _atomic_bytes(self._record_path(session_id, turn_id), json.dumps(record, sort_keys=True).encode())

    def load(self, session_id: str, turn_id: str) -> dict | None:
        """One turn's record, or None when there is none (or it is unreadable)."""
        try:
            return json.loads(self._record_path(session_id, turn_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def records(self) -> list[dict]:
        """Every readable record of the workspace, oldest first (by their ``started`` time)."""
        out = []
        for path in sorted(self.turns.glob("*.json")) if self.turns.is_dir() else []:
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                log.warning("skipping unreadable checkpoint %s: %s", path, exc)
                continue
            if isinstance(record, dict):
                out.append(record)
        out.sort(key=lambda r: (r.get("started", 0), r.get("turnId", "")))
        return out

    def prune(self, keep: int = KEEP_TURNS) -> int:
        """Remove all but the newest ``keep`` records and the contents no kept record names.

        Returns:
            The number of records removed.
        """
        records = self.records()
        if len(records) <= keep:
            return 0
        old, kept = records[:-keep], records[-keep:]
        for record in old:
            self._record_path(str(record.get("sessionId")), str(record.get("turnId"))).unlink(missing_ok=True)
        named = {d for record in kept for d in digests(record)}
        fresh = time.time() - FRESH_SECONDS  # a turn running now may have stored contents not saved in a record yet
        for path in self.objects.iterdir():
            try:
                if path.name not in named and not path.name.startswith(".") and path.stat().st_mtime < fresh:
                    path.unlink()
            except OSError:
                pass
        return len(old)


def digests(record: dict) -> set[str]:
    """Every content digest a record (``TurnCheckpoint`` JSON) names."""
    out: set[str] = set()
    for change in (record.get("paths") or {}).values():
        for key in ("before", "after", "beforeBuffer", "afterBuffer"):
            state = change.get(key) or {}
            if state.get("digest"):
                out.add(state["digest"])
    return out
