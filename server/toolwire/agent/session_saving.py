"""What of a hosted session is saved, and how a saved one is brought back (:mod:`toolwire.agent.session_store`
is where the files live).

A session's record holds, besides its listing (:class:`SavedSession`): the model spec and settings
overrides it was opened with (keys that name secrets left out: the key comes from the server's
settings again), the model it used, its conversation (:meth:`Conversation.to_record`), the notes
waiting for its next turn, the tool-call ids it gave out, its turn ids, how each turn ended
(``turnEnds``: stop reason, ``errorCode``, ``notice``; not the message, which may quote a key) and its
event log. Its turn checkpoints stay in the checkpoint store; a loaded session reads them back from
there, so undo and redo work on its turns.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from toolwire.agent.checkpoint_records import TurnCheckpoint
from toolwire.agent.conversation import Conversation
from toolwire.agent.events import LoggedEvent
from toolwire.agent.hosted import Hosted
from toolwire.agent.session_store import Journal, SavedSession, SessionStore, decode_event
from toolwire.redaction import Redactor
from toolwire.secret_names import is_field_name
from toolwire.workspace.names import display_text

__all__ = ["TITLE_CHARS", "Restored", "capture", "delete_saved", "listing", "read_saved", "restore", "save_session",
           "saved_sessions", "title_of", "turn_end", "turn_records", "with_ends"]

log = logging.getLogger(__name__)

#: Longest title, in characters (the first line of the first prompt, cut with "…").
TITLE_CHARS = 80


def title_of(prompt: str) -> str | None:
    """A session's title from its first prompt: the first line that is not blank, runs of
    spaces joined, in display form, at most :data:`TITLE_CHARS` characters; None for a blank prompt."""
    line = next((ln for ln in prompt.splitlines() if ln.strip()), "")
    text = display_text(" ".join(line.split()))
    if not text:
        return None
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1].rstrip() + "…"


def listing(hosted: Hosted, updated: float | None = None) -> SavedSession:
    """What a list shows of ``hosted`` now."""
    journal = hosted.log.journal
    session = hosted.session
    return SavedSession(session.id, str(session.root), journal.title, journal.created,
                        updated if updated is not None else time.time(), session.turns)


def capture(hosted: Hosted) -> dict[str, Any]:
    """Everything of ``hosted``'s record besides its listing (see the module docstring), JSON-ready."""
    session, journal = hosted.session, hosted.log.journal
    events = journal.events()
    turn_ids = [e.get("turn_id") for e in events if e.get("type") == "TurnUpdate" and e.get("state") == "started"]
    overrides = {key: value for key, value in hosted.origin.overrides.items() if not is_field_name(str(key))}
    return {"model": hosted.origin.model, "overrides": overrides, "modelId": session.model.model_id,
            "turnIds": turn_ids, "conversation": session.conversation.to_record(),
            "notes": list(session.history_notes), "callIds": sorted(session.call_ids.given()),
            "turnEnds": [turn_end(record) for record in session.turn_records], "events": events}


def turn_end(record: TurnCheckpoint) -> dict[str, Any]:
    """How the turn of ``record`` ended, as saved: ``{turnId, stopReason, errorCode?, notice?}``."""
    out: dict[str, Any] = {"turnId": record.turn_id, "stopReason": record.stop_reason}
    if record.error_code:
        out["errorCode"] = record.error_code
    if record.notice:
        out["notice"] = record.notice
    return out


class Restored:
    """A saved record read back (:func:`restore` applies it).

    Attributes:
        listing: Its listing.
        model, overrides: What the session was opened with.
        conversation: Its history.
        events: Its event log, decoded (an event that does not decode is skipped, logged).
        turn_ends: How its turns ended (:func:`turn_end`), oldest first.
    """

    def __init__(self, record: dict[str, Any]) -> None:
        found = SavedSession.from_json(record)
        if found is None:
            raise ValueError("not a saved session")
        self.listing = found
        model, overrides = record.get("model"), record.get("overrides")
        self.model = model if isinstance(model, str) else None
        self.overrides = overrides if isinstance(overrides, dict) else {}
        conversation = record.get("conversation")
        if not isinstance(conversation, dict):
            raise ValueError("a saved session without its conversation")
        self.conversation = Conversation.from_record(conversation)
        notes, call_ids = record.get("notes"), record.get("callIds")
        self.notes = [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []
        self.call_ids = [c for c in call_ids if isinstance(c, str)] if isinstance(call_ids, list) else []
        ends = record.get("turnEnds")
        self.turn_ends = [e for e in ends if isinstance(e, dict) and isinstance(e.get("turnId"), str)] \
            if isinstance(ends, list) else []
        raw_events = record.get("events")
        self.raw_events: list[dict[str, Any]] = []
        self.events: list[LoggedEvent] = []
        for raw in raw_events if isinstance(raw_events, list) else []:
            try:
                self.events.append(decode_event(raw))
            except ValueError as exc:
                log.warning("session %s: skipping a saved event: %s", found.session_id, exc)
                continue
            self.raw_events.append(raw)


def restore(hosted: Hosted, saved: Restored) -> None:
    """Give the freshly opened ``hosted`` (opened with the saved id) the saved state: its title,
    dates and event log, its conversation (the system prompt composed again), turn count,
    notes, tool-call ids and the turn checkpoints the checkpoint store holds for it."""
    session = hosted.session
    journal = Journal(saved.listing.created, saved.raw_events)
    journal.title = saved.listing.title
    hosted.log.journal = journal
    hosted.log.put_back(saved.events)
    session.conversation = saved.conversation
    session.compose_prompt()
    session.turns = saved.listing.turns
    session.history_notes = saved.notes
    session.call_ids.reserve(saved.call_ids)
    session.turn_records = with_ends(turn_records(session.checkpoint_store().records(), session.id),
                                     saved.turn_ends, session.id, str(session.root))


def with_ends(records: list[TurnCheckpoint], ends: list[dict[str, Any]], session_id: str,
              root: str) -> list[TurnCheckpoint]:
    """Every saved turn, in the saved order: its checkpoint (or an empty one for a turn that changed
    nothing) with how it ended; checkpoints of turns not in ``ends`` (a record saved before
    ``turnEnds``) after them."""
    by_id = {r.turn_id: r for r in records}
    out = []
    for end in ends:
        record = by_id.pop(end["turnId"], None) or TurnCheckpoint(session_id=session_id, turn_id=end["turnId"], root=root)
        text = {key: value if isinstance(value, str) and value else None
                for key, value in (("stop", end.get("stopReason")), ("code", end.get("errorCode")),
                                   ("notice", end.get("notice")))}
        record.stop_reason = record.stop_reason or text["stop"]
        record.error_code, record.notice = text["code"], text["notice"]
        out.append(record)
    return out + [r for r in records if r.turn_id in by_id]


def turn_records(records: list[dict[str, Any]], session_id: str) -> list[TurnCheckpoint]:
    """The checkpoints of ``session_id``'s turns among ``records`` (oldest first); unreadable ones skipped."""
    out = []
    for raw in records:
        if raw.get("sessionId") != session_id:
            continue
        try:
            out.append(TurnCheckpoint.model_validate(raw))
        except ValueError as exc:
            log.warning("session %s: skipping a checkpoint that does not validate: %s", session_id, exc)
    return out


def saved_sessions(cwd: Path | None, retention_days: float) -> list[SavedSession]:
    """The saved sessions of the folder ``cwd`` (resolved), or of every folder (None), updated in the
    last ``retention_days`` days, the most recently updated first."""
    stores = [SessionStore(cwd)] if cwd is not None else SessionStore.every()
    cutoff = time.time() - retention_days * 86400
    found = [s for store in stores for s in store.listing() if s.updated >= cutoff]
    return sorted(found, key=lambda s: (s.updated, s.session_id), reverse=True)


def save_session(hosted: Hosted, redactor: Redactor, retention_days: float) -> None:
    """Save ``hosted`` (once it ran a turn, unless it was deleted) and prune its folder's saved
    sessions; a disk that refuses is logged, never raised."""
    session = hosted.session
    if session.turns == 0 or hosted.log.journal.deleted:
        return
    store = SessionStore(session.root)
    try:
        store.save(listing(hosted), capture(hosted), redactor)
        store.prune(retention_days)
    except (OSError, ValueError) as exc:
        log.warning("session %s: cannot save it (%s)", session.id, getattr(exc, "strerror", None) or exc)


def read_saved(session_id: str, root: Path) -> Restored | None:
    """The saved session ``session_id`` of the folder ``root`` (resolved), or None (none, or its file skipped: logged)."""
    record = SessionStore(root).read(session_id)
    if record is None:
        return None
    try:
        return Restored(record)
    except ValueError as exc:
        log.warning("skipping the saved session %s: %s", session_id, exc)
        return None


def delete_saved(session_id: str, root: Path | None) -> bool:
    """Remove the saved session ``session_id`` of the folder ``root`` (of whichever folder has it: None).
    Returns False when none was saved."""
    stores = [SessionStore(root)] if root is not None else SessionStore.every()
    return any([store.delete(session_id) for store in stores])
