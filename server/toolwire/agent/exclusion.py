"""Files kept from the model (the ``modelExclude`` setting): the user's word, per call.

A call of a tool whose result may carry the text of the files its path arguments name
(``Tool.shows_content``: ``read_file``, ``git_diff``, ``edit_file``, ``multi_edit``), or a
``rename_file`` of such a file (which would let a later read show it unasked), that names
such a file is asked about even where the permission policy or an "allow
always" rule would run it unasked (the scheduler, :mod:`toolwire.agent.scheduler`). The
question names each file and its pattern (the subject's ``excluded``:
``[{"path", "pattern"}]``); allowed, the call runs with those files allowed for that call
only (``ToolContext.allowed_excluded``); "allow always" never covers them: the next call
naming one is asked about again. Rejected, the model reads that the file is kept from it
and why; when no client can be asked, the call ends ``errored`` (``excluded``) without
running. Either way the file is never read.

The tools enforce the same rule themselves (``ToolContext.refuse_excluded``), so a path
that reaches a tool another way (a symbolic link, a folder's diff) is refused or left
out there; this module only decides who is asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from toolwire.tools.base import Tool, ToolContext
from toolwire.workspace.errors import ToolError
from toolwire.workspace.model_exclude import withheld
from toolwire.workspace.paths import resolve_path

__all__ = ["Withheld", "call_exclusions", "allowed_files", "subject_entries", "rejected_note",
           "not_asked_message"]


@dataclass(frozen=True, slots=True)
class Withheld:
    """One excluded file a call names.

    Attributes:
        path: Workspace-relative, in display form (as the tools print it).
        pattern: The ``modelExclude`` pattern that matched, as written in the setting.
        files: The file's absolute paths: the entry as named and the file it resolves to.
    """

    path: str
    pattern: str
    files: frozenset[Path]


def call_exclusions(tool: Tool, args: BaseModel, ctx: ToolContext) -> list[Withheld]:
    """The excluded files among the path arguments of a call, in argument order, each once.

    Paths the tools refuse (outside the workspace, invalid) are left to the tool, which
    reports them; only ``Tool.content_paths`` count (none for a tool that shows no file text).
    """
    paths = tool.content_paths(args)
    if not paths or not ctx.model_exclude:
        return []
    found: dict[Path, Withheld] = {}
    for written in paths:
        try:
            target = resolve_path(ctx.root, written)
        except (ToolError, OSError, ValueError):
            continue
        pattern = ctx.model_exclude.match_target(ctx.root, target)
        if pattern is not None and target.resolved not in found:
            found[target.resolved] = Withheld(target.rel, pattern, frozenset({target.entry, target.resolved}))
    return list(found.values())


def allowed_files(withheld_files: list[Withheld]) -> frozenset[Path]:
    """What ``ToolContext.allowed_excluded`` holds for a call the user allowed."""
    return frozenset().union(*(w.files for w in withheld_files))


def subject_entries(withheld_files: list[Withheld]) -> list[dict[str, Any]]:
    """The subject's ``excluded``: ``[{"path", "pattern"}]``."""
    return [{"path": w.path, "pattern": w.pattern} for w in withheld_files]


def _named(withheld_files: list[Withheld]) -> str:
    return "; ".join(withheld(w.path, w.pattern) for w in withheld_files)


def rejected_note(withheld_files: list[Withheld]) -> str:
    """What the model reads after "The user rejected this tool call." for such a call."""
    return (f"{_named(withheld_files)}: the user did not allow it for this call, and nothing of it was read. "
            "Do without it, or ask the user.")


def not_asked_message(withheld_files: list[Withheld]) -> str:
    """The error (``excluded``) of such a call when no client answers permission requests."""
    return (f"not run, nothing read: {_named(withheld_files)}, and no client answers permission requests to "
            "allow it for this call. Do without it, or tell the user: they can allow it when asked, or take the "
            "pattern out of modelExclude.")
