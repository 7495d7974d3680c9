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
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import secrets
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

    # ------------------------------------------------------------ contents
    def put(self, data: bytes) -> str:
        """Store ``data`` and return its SHA-256 (hex). Raises OSError when the disk refuses."""
        digest = sha256_hex(data)
        path = self.objects / digest
        if not path.exists():
            self._ensure()
            _atomic_bytes(path, data)
        return digest

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
