"""What the server does for sessions besides answering requests: open them, cancel
their calls, apply settings after a turn, and own background tasks.

A mixin of :class:`toolwire.lsp.server.ToolwireServer` (its attributes are set there).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcInvalidParams

# The agent, the wire models and the settings are imported where they are used:
# the server class is built before ``initialize`` is answered (toolwire.lsp.boot).
if TYPE_CHECKING:
    from toolwire.agent.session import Session
    from toolwire.lsp.config import SessionOrigin
    from toolwire.lsp.persist import ClientLink
    from toolwire.lsp.watching import WatchHub
    from toolwire.redaction import Redactor
    from toolwire.settings import Settings

log = logging.getLogger("toolwire.lsp.server")


class SessionHost:
    """Session services of the server (see the attributes of ``ToolwireServer``)."""

    settings: "Settings"
    sessions: dict[str, Session]
    origins: dict[str, SessionOrigin]
    redactor: "Redactor"
    background: set[asyncio.Task]
    watchers: "WatchHub"
    link: "ClientLink"

    def spawn(self, coro: Any) -> asyncio.Task:
        """Run ``coro`` as a task the server owns (kept until done; errors are logged)."""
        task = asyncio.ensure_future(coro)
        self.background.add(task)

        def done(t: asyncio.Task) -> None:
            self.background.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("background task failed: %s", t.exception())

        task.add_done_callback(done)
        return task

    def close_later(self, model: Any) -> None:
        """Close a model that was replaced (its connection pool), in the background."""
        close = getattr(model, "aclose", None)
        if close is not None:
            self.spawn(close())

    async def open_session(self, cwd: str, model_spec: str | None, overrides: dict[str, Any] | None) -> Session:
        """Open a session on the folder ``cwd`` (``toolwire/session/new``, code actions).

        Raises:
            JsonRpcInvalidParams: ``cwd`` is not an existing absolute folder, the
                settings overrides are invalid, or the model spec cannot be built.
        """
        from toolwire.agent.opening import SessionSpecError, open_session
        from toolwire.lsp import protocol as P
        from toolwire.lsp.bridge import LspDocuments
        from toolwire.lsp.config import SessionOrigin, model_key, session_settings

        self.redactor.add_settings(overrides)
        settings, problems = session_settings(self.settings, overrides)
        if problems:
            raise JsonRpcInvalidParams(f"{P.SESSION_NEW}: invalid params: settings: " + "; ".join(problems))
        spec = model_spec or settings.model
        try:
            documents = LspDocuments(self)
            session = open_session(Path(cwd), spec, settings, documents)
        except SessionSpecError as exc:
            raise JsonRpcInvalidParams(f"{P.SESSION_NEW}: invalid params: {exc.field}: {exc}") from None
        documents.session_id = session.id
        self.sessions[session.id] = session
        self.origins[session.id] = SessionOrigin(model_spec, dict(overrides or {}), model_key(spec, settings))
        await self.watchers.attach(session)
        log.info("session %s: %s on %s", session.id, session.model.model_id, session.root)
        return session

    def cancel_call(self, session: Session, call_id: str) -> bool:
        """Cancel one call of the session's turn or client-fed runs (False if unknown or finished)."""
        cancelled = session.turn.cancel_call(call_id) if session.turn is not None else False
        for scheduler in list(session.fed_schedulers):
            cancelled = cancelled or scheduler.cancel_call(call_id)
        return cancelled

    def turn_ended(self, session: Session) -> None:
        """A session's turn ended: settings that changed meanwhile apply now."""
        from toolwire.lsp.config import refresh_session

        origin = self.origins.get(session.id)
        if origin is not None and origin.stale and session.id in self.sessions:
            refresh_session(self, session)
        self.link.poke()  # the idle rule of --socket counts running turns

    def settings_replaced(self) -> None:
        """``self.settings`` was replaced (a reconnecting client's ``initialize``): each
        open session takes them for its next turn; a running turn is never touched."""
        from toolwire.lsp.config import refresh_session

        for session in list(self.sessions.values()):
            if session.turn is None:
                refresh_session(self, session)
            elif session.id in self.origins:
                self.origins[session.id].stale = True

