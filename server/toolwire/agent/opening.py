"""Opening a session from a folder, a model spec and settings: shared by the front-ends."""

from __future__ import annotations

import os
from pathlib import Path

from toolwire.agent.permissions import PermissionPolicy
from toolwire.agent.session import Session
from toolwire.agent.host_settings import MODEL_ERRORS, model_for
from toolwire.settings import Settings
from toolwire.tools import session_tools
from toolwire.tools.editor_intel import EditorLink
from toolwire.tools.selection import select_tools
from toolwire.workspace.documents import Documents
from toolwire.workspace.paths import GIT_DIR_NAME


class SessionSpecError(ValueError):
    """The folder or the model spec of a new session is unusable.

    Attributes:
        field: The parameter at fault: ``cwd`` or ``model``.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


#: Longest ``cwd`` accepted, in characters (Linux PATH_MAX is 4096 bytes).
MAX_CWD = 4096


def check_cwd(cwd: str | Path) -> Path:
    """The workspace folder ``cwd`` names, checked.

    Returns:
        The folder as given (``~`` expanded; not resolved).

    Raises:
        SessionSpecError: (field ``cwd``) longer than :data:`MAX_CWD`, holding a NUL,
            not absolute, missing, not a folder, not readable and searchable by
            this process, or a git directory or inside one (:func:`git_dir_holding`).
            The message quotes at most 80 characters of ``cwd``.
    """
    text = str(cwd)
    shown = repr(text) if len(text) <= 80 else f"{text[:80]!r}… ({len(text)} characters)"
    if len(text) > MAX_CWD:
        raise SessionSpecError("cwd", f"{shown} is too long (at most {MAX_CWD} characters)")
    if "\0" in text:
        raise SessionSpecError("cwd", f"{shown} contains a NUL character")
    try:
        root = Path(text).expanduser()
    except RuntimeError:  # ``~name`` of no user (or no home folder known)
        raise SessionSpecError("cwd", f"{shown} names the home folder of no known user") from None
    if not root.is_absolute():
        raise SessionSpecError("cwd", f"{shown} is not an absolute path")
    try:
        if not root.is_dir():
            reason = "does not exist" if not root.exists() else "is not a folder"
            raise SessionSpecError("cwd", f"{shown} {reason}")
    except OSError as exc:  # e.g. a component too long, a loop of symbolic links
        raise SessionSpecError("cwd", f"{shown} cannot be used: {exc.strerror or exc}") from None
    if not os.access(root, os.R_OK | os.X_OK):
        raise SessionSpecError("cwd", f"{shown} is not readable by the server")
    gitdir = git_dir_holding(root)
    if gitdir is not None:
        where = "is a git directory" if gitdir == root.resolve() else f"is inside the git directory {str(gitdir)!r}"
        raise SessionSpecError("cwd", f"{shown} {where}: the tools would write git's own files (hooks, config) "
                               "unguarded; open the repository's work tree instead")
    return root


def looks_like_git_dir(folder: Path) -> bool:
    """True when ``folder`` has what git requires of a git directory (``HEAD`` file,
    ``objects/`` and ``refs/`` folders): a repository's ``.git``, a bare repository,
    a submodule's or a linked worktree's git directory."""
    try:
        return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()
    except OSError:
        return False


def git_dir_holding(folder: Path) -> Path | None:
    """The git directory that ``folder`` is, or is inside, else None.

    ``folder`` is resolved (links followed); it and each folder above it count when
    named ``.git`` (any case, like the tools' guard) or when they look like a git directory (:func:`looks_like_git_dir`).
    The ``.git`` guard of the tools (never write under a ``.git`` component of a
    workspace path) does not cover a workspace that is itself such a folder, so a
    session is not opened there (see protocol.md, ``toolwire/session/new``).
    """
    real = folder.resolve()
    for candidate in (real, *real.parents):
        if candidate.name.casefold() == GIT_DIR_NAME or looks_like_git_dir(candidate):
            return candidate
    return None


def open_session(cwd: Path, spec: str | None, settings: Settings, documents: Documents,
                 editor: EditorLink | None = None) -> Session:
    """Build a session on ``cwd`` with the model ``spec`` (default ``settings.model``).

    Args:
        cwd: The workspace folder; must be absolute and an existing folder.
        spec: A model spec (``replay``, ``replay:SCRIPT``, ``openai:MODEL``), or None.
        settings: Settings in force for the session.
        documents: The editor's buffers (the front-end's adapter).
        editor: The front-end's link to the editor's intelligence, or None (ACP, ``toolwire run``):
            the editor tools its client declared are offered after the built-in ones.

    Raises:
        SessionSpecError: ``cwd`` is not an absolute existing folder, or the model
            spec or replay script is invalid.
    """
    root = check_cwd(cwd)
    try:
        model = model_for(spec or settings.model, settings, root)
    except MODEL_ERRORS as exc:
        raise SessionSpecError("model", str(exc)) from None
    tools = select_tools(session_tools(editor.features if editor is not None else None), settings.max_tools)
    return Session(
        root=root.resolve(),
        model=model,
        registry=tools.registry,
        tool_selection=tools,
        policy=PermissionPolicy(dict(settings.permissions)),
        settings=settings,
        documents=documents,
        editor=editor,
    )
