"""Settings that change while the server runs, and keeping API keys out of what it writes.

``workspace/didChangeConfiguration`` with ``{"settings": {"toolwire": {...}}}`` (the
shape VS Code's language client sends for ``synchronize.configurationSection``)
updates the server's settings. Each session gets them for its NEXT turn: a session
with a running turn keeps its settings and model until that turn ended (the turn
is never touched, the server never restarted). Session-specific overrides given
to ``toolwire/session/new`` still win over the server's settings.

Secrets may arrive this way (an API key, a ``baseUrl`` with user info or a key in
its query; or in ``initializationOptions``, or from the environment): each is
registered with the process's :class:`toolwire.redaction.Redactor`, which keeps
them out of every log record and every message the server sends.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from toolwire.llm.factory import ModelSpecError, make_model
from toolwire.llm.replay import ReplayScriptError
from toolwire.settings import KEYS, Settings, parse_settings

if TYPE_CHECKING:
    from toolwire.agent.session import Session
    from toolwire.lsp.server import ToolwireServer

__all__ = ["SECTION", "SessionOrigin", "apply_configuration", "merge_settings", "model_key",
           "refresh_session", "section_of", "session_settings"]

log = logging.getLogger(__name__)

#: The configuration section Toolwire's settings live under.
SECTION = "toolwire"


def section_of(settings: Any) -> dict[str, Any] | None:
    """The ``toolwire`` object inside ``didChangeConfiguration`` settings, or None when absent."""
    if isinstance(settings, dict):
        section = settings.get(SECTION)
        if isinstance(section, dict):
            return section
    return None


def merge_settings(current: Settings, sent: dict[str, Any]) -> tuple[Settings, list[str]]:
    """``current`` with the keys of ``sent`` replaced, key by key.

    A key whose value is invalid keeps its current value and is reported (the
    validation rules are :func:`toolwire.settings.parse_settings`'s). Keys that are
    not server settings are ignored (the editor's section also holds client-only
    settings such as ``pythonPath``). ``permissions`` is replaced whole (a client
    sends its whole section).

    Returns:
        The new settings and one sentence per rejected key.
    """
    base = current.model_dump(by_alias=True)
    accepted: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in sent.items():
        if key not in KEYS:
            continue
        _, trouble = parse_settings({**base, **accepted, key: value})
        if trouble:
            problems.extend(f"{p}; keeping the current value" for p in trouble)
        else:
            accepted[key] = value
    settings, _ = parse_settings({**base, **accepted})
    return settings, problems


def session_settings(server: Settings, overrides: dict[str, Any] | None) -> tuple[Settings, list[str]]:
    """A session's settings: the server's with the session's overrides merged over them
    (``permissions`` key by key).

    Returns:
        The settings and the problems of invalid overrides (the caller decides
        whether that is an error).
    """
    if not overrides:
        return server, []
    base = server.model_dump(by_alias=True)
    merged = {**base, **overrides}
    if isinstance(overrides.get("permissions"), dict):  # merged key by key, not replaced
        merged["permissions"] = {**base["permissions"], **overrides["permissions"]}
    return parse_settings(merged)


@dataclass(slots=True)
class SessionOrigin:
    """What a session was opened with, to rebuild its settings when the server's change.

    Attributes:
        model: The ``model`` of ``toolwire/session/new`` (wins over the setting), or None.
        overrides: The ``settings`` of ``toolwire/session/new``.
        model_key: What the session's model object was built from
            (spec, baseUrl, apiKey, replayLog); a new model is built only when it changes.
        stale: The server's settings changed while a turn ran; apply them when it ends.
    """

    model: str | None
    overrides: dict[str, Any] = field(default_factory=dict)
    model_key: tuple[Any, ...] = ()
    stale: bool = False


def model_key(spec: str, settings: Settings) -> tuple[Any, ...]:
    """The settings a model object depends on."""
    return (spec, settings.base_url, settings.api_key, settings.replay_log, settings.connect_timeout, settings.read_timeout)


def warn(server: "ToolwireServer", text: str) -> None:
    """Tell the user (``window/showMessage``, warning) and log it, secrets removed."""
    text = server.redactor.redact(text)
    log.warning("%s", text)
    server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=f"Toolwire: {text}"))


def refresh_session(server: "ToolwireServer", session: "Session") -> None:
    """Give an idle session the server's current settings (its own overrides still win).

    A new model object is built only when the model spec, ``baseUrl``, ``apiKey``
    or ``replayLog`` changed (a replay script keeps its position otherwise); the
    old one is closed. "Allow always" rules the user gave in the session are kept.
    A model that cannot be built is reported and the session keeps its old one.
    """
    origin = server.origins.get(session.id)
    if origin is None:
        return
    origin.stale = False
    settings, problems = session_settings(server.settings, origin.overrides)
    for problem in problems:
        warn(server, f"session {session.id}: {problem}")
    spec = origin.model or settings.model
    key = model_key(spec, settings)
    if key != origin.model_key:
        try:
            model = make_model(spec, base_url=settings.base_url, api_key=settings.api_key,
                               replay_log=Path(settings.replay_log) if settings.replay_log else None, cwd=session.root,
                               connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout)
        except (ModelSpecError, ReplayScriptError) as exc:
            warn(server, f"model: {exc}; session {session.id} keeps {session.model.model_id}")
            settings = settings.model_copy(update={"model": session.settings.model, "base_url": session.settings.base_url,
                                                   "api_key": session.settings.api_key,
                                                   "replay_log": session.settings.replay_log})
        else:
            old, session.model = session.model, model
            origin.model_key = key
            server.close_later(old)
    session.settings = settings
    session.policy.set_overrides(dict(settings.permissions))


async def apply_configuration(server: "ToolwireServer", raw: Any) -> None:
    """``workspace/didChangeConfiguration``: new server settings for every session's next turn.

    Args:
        server: The server.
        raw: The notification's ``settings``. Without a ``toolwire`` object in it,
            the section is asked for with ``workspace/configuration`` when the
            client supports that, else the notification is ignored.
    """
    sent = section_of(raw)
    if sent is None:
        sent = await pull_section(server)
    if sent is None:
        return
    server.redactor.add_settings(sent)
    settings, problems = merge_settings(server.settings, sent)
    for problem in problems:
        warn(server, problem)
    server.settings = settings
    log.info("settings changed: %s", ", ".join(sorted(map(str, sent))) or "none")  # names only, never values
    for session in list(server.sessions.values()):
        if session.turn is None:
            refresh_session(server, session)
        else:
            server.origins[session.id].stale = True  # applied when the running turn ended


async def pull_section(server: "ToolwireServer") -> dict[str, Any] | None:
    """The ``toolwire`` section through ``workspace/configuration``, or None when the
    client cannot answer it."""
    caps = server.client_capabilities
    if not (caps and caps.workspace and caps.workspace.configuration):
        return None
    try:
        answer = await server.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]))
    except Exception as exc:  # noqa: BLE001 - the client could not answer
        log.warning("workspace/configuration failed: %s", server.redactor.redact(str(exc)))
        return None
    value = answer[0] if isinstance(answer, list) and answer else None
    return value if isinstance(value, dict) else None
