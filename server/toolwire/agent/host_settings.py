"""A hosted session's settings: what it was opened with, and the one place a model is built.

The server's settings may change while it runs (LSP ``workspace/didChangeConfiguration``,
a reconnecting client's ``initialize``). Each session gets them for its NEXT turn: a
session with a running turn keeps its settings and model until that turn ended.
Overrides given when the session was opened still win over the server's settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwire.llm.base import Model
from toolwire.llm.factory import ModelSpecError, make_model
from toolwire.llm.replay import ReplayScriptError
from toolwire.settings import KEYS, Settings, parse_settings

if TYPE_CHECKING:
    from toolwire.agent.session import Session

__all__ = ["MODEL_ERRORS", "Origin", "merge_settings", "model_for", "model_key", "refreshed", "session_settings"]


def merge_settings(current: Settings, sent: dict[str, Any]) -> tuple[Settings, list[str]]:
    """``current`` with the keys of ``sent`` replaced, key by key.

    A key whose value is invalid keeps its current value and is reported (the
    validation rules are :func:`toolwire.settings.parse_settings`'s). Keys that are
    not server settings are ignored (an editor's section also holds client-only
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


def model_key(spec: str, settings: Settings) -> tuple[Any, ...]:
    """The settings a model object depends on: a new one is built only when they change."""
    return (spec, settings.base_url, settings.api_key, settings.replay_log, settings.connect_timeout,
            settings.read_timeout)


def model_for(spec: str, settings: Settings, cwd: Path) -> Model:
    """Build the model ``spec`` names with ``settings`` (the only place a session's model is built).

    Raises:
        ModelSpecError, ReplayScriptError: the spec or its replay script is unusable.
    """
    return make_model(spec, base_url=settings.base_url, api_key=settings.api_key,
                      replay_log=Path(settings.replay_log) if settings.replay_log else None, cwd=cwd,
                      connect_timeout=settings.connect_timeout, read_timeout=settings.read_timeout)


#: What :func:`model_for` raises for a spec that cannot work.
MODEL_ERRORS = (ModelSpecError, ReplayScriptError)


@dataclass(slots=True)
class Origin:
    """What a session was opened with, to rebuild its settings when the server's change.

    Attributes:
        model: The model spec asked for at opening (wins over the setting), or None.
        overrides: The settings overrides given at opening.
        model_key: What the session's model object was built from (:func:`model_key`).
        stale: The server's settings changed while a turn ran; apply them when it ends.
    """

    model: str | None
    overrides: dict[str, Any] = field(default_factory=dict)
    model_key: tuple[Any, ...] = ()
    stale: bool = False


def refreshed(session: "Session", origin: Origin, server: Settings, warn: Callable[[str], None]) -> Model | None:
    """Give an idle ``session`` the server's settings ``server`` (its own overrides still win).

    A new model is built only when what it depends on changed (a replay script keeps
    its position otherwise). "Allow always" rules given in the session are kept. A
    model that cannot be built is reported with ``warn`` and the session keeps its old one.

    Returns:
        The model the session no longer uses (the caller closes it), or None.
    """
    origin.stale = False
    settings, problems = session_settings(server, origin.overrides)
    for problem in problems:
        warn(f"session {session.id}: {problem}")
    spec = origin.model or settings.model
    key = model_key(spec, settings)
    old = None
    if key != origin.model_key:
        try:
            model = model_for(spec, settings, session.root)
        except MODEL_ERRORS as exc:
            warn(f"model: {exc}; session {session.id} keeps {session.model.model_id}")
            settings = settings.model_copy(update={
                "model": session.settings.model, "base_url": session.settings.base_url,
                "api_key": session.settings.api_key, "replay_log": session.settings.replay_log})
        else:
            old, session.model = session.model, model
            origin.model_key = key
    session.settings = settings
    session.policy.set_overrides(dict(settings.permissions))
    session.budget_tools()
    return old
