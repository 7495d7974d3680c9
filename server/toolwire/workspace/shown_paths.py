"""A tool call's path as a front-end shows it, and the file it is.

A path argument is what the model wrote: a name holding a bidirectional control
(``invoice<U+202E>fdp.exe`` reads as "invoiceexe.pdf"), git's quoted form of
such a name (``"invoice\\342\\200\\256fdp.exe"``, the form results and listings
give and every tool accepts back), ``..`` or another spelling of an existing
entry. Two different things come out of it:

* What the user reads (ACP tool-call titles, ``toolwire run``'s status lines and
  approval question): the workspace-relative path the tool resolves, in display
  form (:func:`toolwire.workspace.names.display_name`), exactly as the approval
  subject and the result name it; a path the tools refuse (outside the
  workspace, invalid) is the written text in display form.
* What the editor opens (ACP ``locations[].path``, a ``diff`` content's ``path``): the
  real absolute path of that entry, resolved the way the tool resolves it
  (:func:`toolwire.workspace.paths.resolve_path`), under the session's folder as
  the client named it. A path the tools refuse has none, and so has a name that is
  not UTF-8: no JSON string can carry it (Python writes a lone surrogate escape
  such as ``\\udce9``, which strict parsers such as Rust's serde_json refuse, losing
  the whole message).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from toolwire.workspace.errors import ToolError
from toolwire.workspace.names import display_name, parse_quoted, valid_text
from toolwire.workspace.paths import resolve_path

__all__ = ["CallPath", "call_path", "sendable", "subject_file"]


@dataclass(frozen=True, slots=True)
class CallPath:
    """One path argument of a call.

    Attributes:
        shown: Display form of the workspace-relative path (the subject's ``path``).
        file: Absolute path of the directory entry the tool acts on (a symbolic
            link's own name, its folders resolved), or None when the tools refuse
            the path or it is not valid Unicode (:func:`sendable`).
    """

    shown: str
    file: Path | None


def call_path(root: Path, written: str) -> CallPath:
    """Resolve a path argument as the tools do.

    Args:
        root: The session's workspace folder, as the client gave it.
        written: The argument as the model wrote it.

    Never raises: a front-end calls it on every update it shows.
    """
    try:
        wp = resolve_path(root, written)
    except (ToolError, OSError, ValueError):  # refused, or unreadable: shown as written, no file
        return CallPath(shown=display_name(written), file=None)
    return CallPath(shown=wp.rel, file=sendable(_under(root, wp.entry)))


def sendable(path: Path) -> Path | None:
    """``path`` when a client can be sent it as JSON text (valid Unicode), else None."""
    text = str(path)
    return path if valid_text(text) is text else None


def subject_file(root: Path, shown: str) -> Path | None:
    """The file a permission subject's ``path`` names (display form, relative to the
    workspace): :func:`toolwire.workspace.names.parse_quoted` gives the name back from
    git's quoted form; a name in plain form is itself (display form quotes every name
    that starts with ``"``, so the two cannot be confused). None for a name that is not
    valid Unicode (:func:`sendable`)."""
    return sendable(root / (parse_quoted(shown) or shown))


def _under(root: Path, path: Path) -> Path:
    """``path`` (under the real workspace folder) under ``root`` as the client spells it."""
    real = Path(os.path.realpath(root))
    try:
        return root / path.relative_to(real)
    except ValueError:
        return path
