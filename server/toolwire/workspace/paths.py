"""Path confinement: every path a tool touches lies inside the workspace folder.

A path is checked twice, and both checks compare path *components*
(:meth:`pathlib.PurePath.is_relative_to`), never string prefixes, so a sibling
folder ``/ws-evil`` is not inside ``/ws``:

1. as given: joined to the root and normalized lexically (``..`` folded);
2. as finally resolved: every symlink followed, at any component, including a
   dangling link's target.

Edit tools also never touch the repository's ``.git`` folder (or a ``.git``
file of a worktree), wherever it sits in the tree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from toolwire.workspace.errors import ToolError

__all__ = ["WorkspacePath", "resolve_path", "is_inside", "GIT_DIR_NAME"]

GIT_DIR_NAME = ".git"


@dataclass(frozen=True, slots=True)
class WorkspacePath:
    """A checked path.

    Attributes:
        rel: POSIX path relative to the root, for messages and results
            (``"."`` for the root itself). Lexical: a symlink keeps its own name.
        entry: Absolute path of the directory entry itself: the parent folder
            resolved, the last component kept. For a symlink this is the link,
            which is what delete and rename act on.
        resolved: Absolute path with every symlink followed: what reads and
            writes act on, and the key of per-path locks and open buffers.
    """

    rel: str
    entry: Path
    resolved: Path


def is_inside(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or below it, compared component by component."""
    return path == root or path.is_relative_to(root)


def _touches_git(rel_parts: tuple[str, ...]) -> bool:
    return any(part.casefold() == GIT_DIR_NAME for part in rel_parts)


def resolve_path(root: Path, path: str, *, allow_git: bool = False) -> WorkspacePath:
    """Check that ``path`` lies inside ``root`` as given and as resolved.

    Args:
        root: The workspace folder; absolute. It is resolved here, so a root that
            is itself reached through a symlink works; absolute argument paths
            are compared with the resolved root.
        path: The path from the tool arguments, relative to ``root`` or
            absolute. It need not exist (files to create, deleted files).
        allow_git: Let the path lie in a ``.git`` folder (never for edit tools).

    Returns:
        The checked :class:`WorkspacePath`.

    Raises:
        ToolError: ``invalid_path`` for an empty path, a NUL byte or a symlink
            loop; ``outside_workspace`` when the path, lexically or after
            following symlinks, leaves ``root``, or touches ``.git`` while
            ``allow_git`` is False. Nothing is created or changed.
    """
    if not path or "\x00" in path:
        raise ToolError("invalid_path", f"invalid path {path!r}")
    real_root = Path(os.path.realpath(root))
    given = Path(path)
    joined = given if given.is_absolute() else real_root / given  # ".." kept: the OS resolves it after links
    lexical = Path(os.path.normpath(joined))
    if not is_inside(lexical, real_root):
        raise ToolError("outside_workspace", f"{path} is outside the workspace")
    try:
        if joined.is_symlink():
            joined.resolve(strict=False)  # raises RuntimeError on a symlink loop
        resolved = Path(os.path.realpath(joined))
        last = joined.name
        if lexical == real_root or last in ("", ".", ".."):
            entry = resolved
        else:
            entry = Path(os.path.realpath(joined.parent)) / last
    except (OSError, RuntimeError, ValueError) as exc:
        raise ToolError("invalid_path", f"cannot resolve {path}: {exc}") from None
    for candidate in (resolved, entry):
        if not is_inside(candidate, real_root):
            raise ToolError(
                "outside_workspace",
                f"{path} resolves to {candidate}, outside the workspace (through a symlink)",
            )
    rels = [p.relative_to(real_root) for p in (lexical, entry, resolved)]
    if not allow_git and any(_touches_git(rel.parts) for rel in rels):
        raise ToolError("outside_workspace", f"{path} is inside .git, which tools never touch")
    rel = rels[0].as_posix()
    return WorkspacePath(rel=rel, entry=entry, resolved=resolved)
