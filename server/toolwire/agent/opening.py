"""Opening a session from a folder, a model spec and settings: shared by the front-ends."""

from __future__ import annotations

from pathlib import Path

from toolwire.agent.permissions import PermissionPolicy
from toolwire.agent.session import Session
from toolwire.llm.factory import ModelSpecError, make_model
from toolwire.llm.replay import ReplayScriptError
from toolwire.settings import Settings
from toolwire.tools import default_registry
from toolwire.workspace.documents import Documents


class SessionSpecError(ValueError):
    """The folder or the model spec of a new session is unusable.

    Attributes:
        field: The parameter at fault: ``cwd`` or ``model``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def open_session(cwd: Path, spec: str | None, settings: Settings, documents: Documents) -> Session:
    """Build a session on ``cwd`` with the model ``spec`` (default ``settings.model``).

    Args:
        cwd: The workspace folder; must be absolute and an existing folder.
        spec: A model spec (``replay``, ``replay:SCRIPT``, ``openai:MODEL``), or None.
        settings: Settings in force for the session.
        documents: The editor's buffers (the front-end's adapter).

    Raises:
        SessionSpecError: ``cwd`` is not an absolute existing folder, or the model
            spec or replay script is invalid.
    """
    root = Path(cwd).expanduser()
    if not root.is_absolute() or not root.is_dir():
        raise SessionSpecError("cwd", f"{str(cwd)[:200]!r} is not an existing absolute folder")
    try:
        model = make_model(
            spec or settings.model,
            base_url=settings.base_url,
            api_key=settings.api_key,
            replay_log=Path(settings.replay_log) if settings.replay_log else None,
            cwd=root,
        )
    except (ModelSpecError, ReplayScriptError) as exc:
        raise SessionSpecError("model", str(exc)) from None
    return Session(
        root=root.resolve(),
        model=model,
        registry=default_registry(),
        policy=PermissionPolicy(dict(settings.permissions)),
        settings=settings,
        documents=documents,
    )
