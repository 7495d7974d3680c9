"""Where sessions are saved so they survive a restart: the server's own storage.

Layout, under the state folder (:func:`toolwire.agent.checkpoint_store.state_dir`)::

    sessions/<workspace key>/workspace            the workspace folder's absolute path
    sessions/<workspace key>/<session>.meta.json   what a list shows: title, dates, turn count
    sessions/<workspace key>/<session>.json        the whole record: the same, what the session was
                                                    opened with, its conversation, its event log

The workspace key is the checkpoints' (:class:`~toolwire.agent.checkpoint_store.CheckpointStore`):
the first 16 hex digits of the SHA-256 of the resolved workspace path. Folders are ``0700``,
files ``0600``; every file is written atomically (a temporary file, fsynced, then renamed over
the old one). Every string is redacted as log records are (:meth:`Redactor.redact`: registered
secrets, URL credentials, quoted key-like fields, ``Bearer`` credentials) before it is written: a
secret typed in a prompt is stored as ``***``. A file that is unreadable, of another
format or version, or naming another session or folder is skipped with a log line, never raised.

Sessions updated in the last ``sessionRetentionDays`` days are kept, at most :data:`MAX_SESSIONS`
per workspace; the least recently updated go first (:meth:`SessionStore.prune`, after every save).

The event log (:class:`Journal`) holds every event the session logged (:data:`LoggedEvent`), in
order, in a typed JSON form, ``{"type": <class name>, <field>: …}`` (:func:`encode_event`,
:func:`decode_event`), except the streaming noise of tool calls: a call's event is kept once the
call has its id and when something other than its argument text changed since its last kept
event (status, name, kind, path, final arguments, preview, result, error, cancel reason); kept
events carry neither the argument text nor its partial parse (``text`` and ``partial`` null, an
empty ``change``). Replaying the log tells every call as it was told live, without the pieces of
its arguments.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import logging
import os
import secrets
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, get_args

from pydantic import TypeAdapter, ValidationError

from toolwire.agent.checkpoint_store import state_dir
from toolwire.agent.events import AgentEvent, CallSnapshot, LoggedEvent, ToolCallChanged, UserPrompt
from toolwire.redaction import Redactor
from toolwire.streaming.changes import NO_ARGUMENT_CHANGE

__all__ = ["EVENT_LOG", "EventLog", "FORMAT", "Journal", "MAX_SESSIONS", "SavedSession", "SessionStore", "VERSION",
           "decode_event", "encode_event"]

log = logging.getLogger(__name__)

#: The ``format`` and ``version`` of every file written here (a file of another is skipped).
FORMAT: Final = "toolwire-session"
VERSION: Final = 1
#: Sessions kept per workspace; the least recently updated beyond it are removed.
MAX_SESSIONS: Final = 200
#: Events of a session the host keeps in memory (its record of what happened), newest last.
EVENT_LOG: Final = 4096

_TYPES: dict[str, type] = {cls.__name__: cls for cls in (*get_args(AgentEvent), UserPrompt)}
_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def _plain(value: Any) -> Any:
    """``value`` as JSON data: dataclasses and named tuples as objects of their fields, enums as values."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {name: _plain(item) for name, item in zip(value._fields, value, strict=True)}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


def encode_event(event: LoggedEvent) -> dict[str, Any]:
    """The typed JSON form of a logged event (a tool call's without its argument text and partial parse)."""
    if type(event) is ToolCallChanged:
        event = ToolCallChanged(event.call._replace(partial=None, text=None), NO_ARGUMENT_CHANGE)
    return {"type": type(event).__name__, **_plain(event)}


def decode_event(data: Any) -> LoggedEvent:
    """The event :func:`encode_event` gave ``data`` for.

    Raises:
        ValueError: not the form of a known event type.
    """
    name = data.get("type") if isinstance(data, dict) else None
    cls = _TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"not a logged event: {str(name)[:40]!r}")
    adapter = _ADAPTERS.get(name) or _ADAPTERS.setdefault(name, TypeAdapter(cls))
    try:
        return adapter.validate_python({key: value for key, value in data.items() if key != "type"})
    except ValidationError as exc:
        raise ValueError(f"a {name} event that does not validate: {exc.error_count()} errors") from None


def _told(call: CallSnapshot) -> tuple[Any, ...]:
    """What a kept event of a call says besides its argument text (see the module docstring)."""
    return (call.status, call.name, call.kind, call.path, call.arguments, call.preview, call.result, call.error,
            call.cancel_reason)


class Journal:
    """What a session's saved record holds besides its live state: its title, when it was
    created, and its event log as kept (see the module docstring).

    Attributes:
        title: From the first prompt (:func:`toolwire.agent.session_saving.title_of`), or None before it.
        created: When the session was created (seconds since the epoch).
        deleted: The session's file was deleted: it is never saved again (a turn that ends after it).
    """

    def __init__(self, created: float | None = None, events: list[dict[str, Any]] | None = None) -> None:
        self.title: str | None = None
        self.created = created if created is not None else time.time()
        self.deleted = False
        self._encoded: list[dict[str, Any]] = list(events or [])
        self._pending: list[LoggedEvent] = []
        self._calls: dict[str, tuple[Any, ...]] = {}  # call id → what its last kept event said

    def add(self, event: LoggedEvent) -> None:
        """Keep ``event`` if the log keeps it (a tool call's only when it says something new)."""
        if type(event) is ToolCallChanged:
            call = event.call
            if not call.id:
                return
            told, last = _told(call), self._calls.get(call.id)
            if last is not None and all(a is b or a == b for a, b in zip(told, last, strict=True)):
                return
            if call.status.terminal:
                self._calls.pop(call.id, None)
            else:
                self._calls[call.id] = told
        self._pending.append(event)

    def history(self) -> list[LoggedEvent]:
        """The kept events, oldest first, as events again (as a loaded session has them: decoded
        from their typed JSON form; one that does not decode is skipped, logged)."""
        out = []
        for data in self.events():
            try:
                out.append(decode_event(data))
            except ValueError as exc:
                log.warning("skipping a logged event: %s", exc)
        return out

    def events(self) -> list[dict[str, Any]]:
        """The kept events in their typed JSON form, oldest first (each encoded once)."""
        if self._pending:
            self._encoded.extend(encode_event(event) for event in self._pending)
            self._pending.clear()
        return self._encoded


class EventLog(deque):
    """A session's log (bounded by :data:`EVENT_LOG`, oldest dropped), whose every appended event
    also goes to the session's :class:`Journal` (what is saved)."""

    def __init__(self, journal: Journal | None = None) -> None:
        super().__init__(maxlen=EVENT_LOG)
        self.journal = journal or Journal()

    def append(self, event: LoggedEvent) -> None:
        super().append(event)
        self.journal.add(event)

    def put_back(self, events: list[LoggedEvent]) -> None:
        """Hold ``events`` (a loaded session's, already in its journal), the newest :data:`EVENT_LOG`."""
        for event in events[-EVENT_LOG:]:
            super().append(event)


@dataclass(slots=True, frozen=True)
class SavedSession:
    """A saved session as a list shows it.

    Attributes:
        session_id: Its id.
        cwd: Its workspace folder (absolute, resolved).
        title: From its first prompt, or None.
        created, updated: When it was created and last saved (seconds since the epoch).
        turns: How many turns it ran.
    """

    session_id: str
    cwd: str
    title: str | None
    created: float
    updated: float
    turns: int

    def to_json(self) -> dict[str, Any]:
        """``{"format", "version", "sessionId", "cwd", "title", "created", "updated", "turns"}``."""
        return {"format": FORMAT, "version": VERSION, "sessionId": self.session_id, "cwd": self.cwd,
                "title": self.title, "created": self.created, "updated": self.updated, "turns": self.turns}

    @classmethod
    def from_json(cls, data: Any) -> SavedSession | None:
        """The listing :meth:`to_json` wrote, or None when ``data`` is not one of this format and version."""
        if not (isinstance(data, dict) and data.get("format") == FORMAT and data.get("version") == VERSION):
            return None
        sid, cwd, title = data.get("sessionId"), data.get("cwd"), data.get("title")
        created, updated, turns = data.get("created"), data.get("updated"), data.get("turns")
        if not (isinstance(sid, str) and isinstance(cwd, str) and (title is None or isinstance(title, str))
                and isinstance(created, (int, float)) and isinstance(updated, (int, float))
                and isinstance(turns, int)):
            return None
        return cls(sid, cwd, title, float(created), float(updated), turns)


def _redacted(data: Any, redactor: Redactor) -> Any:
    """A copy of JSON data with every string (dict keys aside) redacted as a log record is."""
    if isinstance(data, str):
        return redactor.redact(data)
    if isinstance(data, dict):
        return {key: _redacted(value, redactor) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [_redacted(value, redactor) for value in data]
    return data


def workspace_key(root: Path) -> str:
    """The checkpoints' key of a workspace folder (absolute, resolved)."""
    return hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _safe_id(session_id: str) -> bool:
    return 0 < len(session_id) <= 128 and all(c.isascii() and (c.isalnum() or c in "-_") for c in session_id)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``path`` (mode 0600) atomically: a temporary file, fsynced, renamed over it."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


class SessionStore:
    """The saved sessions of one workspace folder.

    Args:
        root: The workspace folder (absolute, resolved).
        base: The state folder (default :func:`state_dir`).

    The folders are created (``0700``) on the first save; reading creates nothing.
    """

    def __init__(self, root: Path, base: Path | None = None) -> None:
        self.root = root
        self.base = base or state_dir()
        self.folder = self.base / "sessions" / workspace_key(root)

    @classmethod
    def every(cls, base: Path | None = None) -> list[SessionStore]:
        """The store of every workspace that has saved sessions (its ``workspace`` file names it)."""
        top = (base or state_dir()) / "sessions"
        stores = []
        for folder in sorted(top.iterdir()) if top.is_dir() else []:
            try:
                root = Path((folder / "workspace").read_text(encoding="utf-8", errors="surrogateescape"))
            except OSError:
                continue
            store = cls(root, base)
            if store.folder == folder:
                stores.append(store)
        return stores

    def _ensure(self) -> None:
        for folder in (self.base, self.base / "sessions", self.folder):
            folder.mkdir(mode=0o700, exist_ok=True)
        self.folder.chmod(0o700)
        marker = self.folder / "workspace"
        if not marker.is_file():
            _write_private(marker, str(self.root).encode("utf-8", "surrogateescape"))

    def save(self, listing: SavedSession, record: dict[str, Any], redactor: Redactor) -> None:
        """Write one session's record (``listing``'s fields and ``record``'s), redacted, then its listing.

        Raises:
            OSError: the disk refused (nothing half-written is left).
            ValueError: the session id is not a plain name.
        """
        if not _safe_id(listing.session_id):
            raise ValueError(f"not a session id that names a file: {listing.session_id[:40]!r}")
        self._ensure()
        meta = _redacted(listing.to_json(), redactor)
        whole = _redacted({**record, **meta}, redactor)
        _write_private(self.folder / f"{listing.session_id}.json",
                       json.dumps(whole, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))
        _write_private(self.folder / f"{listing.session_id}.meta.json",
                       json.dumps(meta, ensure_ascii=False).encode("utf-8", "surrogatepass"))

    def read(self, session_id: str) -> dict[str, Any] | None:
        """The whole record of a saved session, or None (none, or skipped: logged)."""
        if not _safe_id(session_id):
            return None
        path = self.folder / f"{session_id}.json"
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            log.warning("skipping the saved session %s: %s", path, exc)
            return None
        listing = SavedSession.from_json(data)
        if listing is None or listing.session_id != session_id or listing.cwd != str(self.root):
            log.warning("skipping the saved session %s: not a session of this format and folder", path)
            return None
        return data

    def listing(self) -> list[SavedSession]:
        """Every saved session of the workspace, the most recently updated first."""
        out = []
        for path in self.folder.glob("*.meta.json") if self.folder.is_dir() else []:
            try:
                listing = SavedSession.from_json(json.loads(path.read_bytes()))
            except (OSError, ValueError) as exc:
                log.warning("skipping the saved session %s: %s", path, exc)
                continue
            if listing is None or f"{listing.session_id}.meta.json" != path.name or listing.cwd != str(self.root):
                log.warning("skipping the saved session %s: not a session of this format and folder", path)
                continue
            out.append(listing)
        out.sort(key=lambda s: (s.updated, s.session_id), reverse=True)
        return out

    def delete(self, session_id: str) -> bool:
        """Remove a saved session. Returns False when there was none."""
        if not _safe_id(session_id):
            return False
        found = False
        for name in (f"{session_id}.meta.json", f"{session_id}.json"):
            try:
                (self.folder / name).unlink()
                found = True
            except FileNotFoundError:
                pass
        return found

    def prune(self, retention_days: float, keep: int = MAX_SESSIONS) -> int:
        """Remove the sessions not updated in ``retention_days`` days and all but the ``keep``
        most recently updated. Returns how many were removed."""
        cutoff = time.time() - retention_days * 86400
        old = [s for i, s in enumerate(self.listing()) if i >= keep or s.updated < cutoff]
        for saved in old:
            self.delete(saved.session_id)
        return len(old)
