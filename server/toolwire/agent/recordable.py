"""Can a call's prior state be recorded? The check made before a writing tool is approved.

Undo rests on the turn's checkpoint (:mod:`toolwire.agent.checkpoints`). A change
whose prior state the turn cannot record cannot be undone, so the user must hear it
before approving, never at undo time: the scheduler runs this check before the
permission policy answers, and a call it names a reason for is asked about (its
subject carries ``"irreversible": {"reason": …}``) even where the policy or an
"allow always" rule would run it without asking (unless ``allowIrreversible``).

Reasons, each a sentence fragment shown after "This change cannot be undone: ":

* the checkpoint store cannot be written (a read-only or full disk, a path
  component that is a file): for every writing tool and git action, since the
  record and the contents live there;
* a path the call changes, and the turn has not recorded yet, is a file over the
  size limit (the ``checkpointMaxBytes`` setting) or cannot be read;
* a ``git_commit`` in a repository with commit hooks, which may rewrite any file:
  a file git does not hold (untracked, or changed and not staged) that the
  checkpoint could not store (:func:`toolwire.agent.hook_changes.hook_risk`);
* another git action in a repository with a hook git runs for it, which is not
  watched (``post-checkout`` for ``git_branch``, ``post-index-change``, …:
  :data:`toolwire.agent.hook_changes.UNWATCHED_HOOKS`).

Paths the tool itself refuses (outside the workspace, a folder, a device) are no
reason: the tool fails and changes nothing. The check reads only metadata and opens
files without reading them; the checkpoint proper is taken when the tool runs, and a
store that fails in between stops the call there (``not_undoable``, nothing changed).
"""

from __future__ import annotations

import os
import stat
from typing import Any

from toolwire.agent.checkpoint_owner import CheckpointOwner
from toolwire.agent.checkpoint_probe import over_limit
from toolwire.agent.events import IRREVERSIBLE_PREFIX  # how every question about an irreversible change opens
from toolwire.agent.hook_changes import hook_risk, unwatched_hook_risk
from toolwire.tools.base import Tool
from toolwire.workspace.errors import ToolError
from toolwire.workspace.names import display_name

__all__ = ["unrecordable", "file_reason", "not_asked_message", "IRREVERSIBLE_PREFIX"]


def file_reason(path: os.PathLike[str] | str, limit: int) -> str | None:
    """Why the file at ``path`` cannot be kept in a checkpoint (over ``limit`` bytes,
    unreadable), or None (kept; absent; a symlink, kept as its target; a folder or a
    device, which the tools refuse)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    if not stat.S_ISREG(st.st_mode):
        return None
    if st.st_size > limit:
        return over_limit(st.st_size, limit)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    os.close(fd)
    return None


async def unrecordable(checkpointer: CheckpointOwner, tool: Tool, args: Any) -> str | None:
    """The reason the change ``tool`` will make cannot be recorded now, or None.

    Args:
        checkpointer: The turn's checkpointer (its record says which paths are recorded).
        tool: A tool that is not read-only.
        args: Its validated arguments.
    """
    if tool.name == "git_branch" and getattr(args, "action", None) == "list":
        return None  # changes nothing
    problem = checkpointer.store.unwritable()
    if problem is not None:
        return problem
    try:
        paths = await checkpointer.paths(tool, args)
    except (ToolError, OSError, ValueError):  # the tool refuses such paths itself
        return None
    for rel in paths:
        if rel in checkpointer.record.paths:
            continue
        reason = file_reason(checkpointer.ctx.root / rel, checkpointer.limit)
        if reason is not None:
            return f"{display_name(rel)}: {reason}"
    if not tool.name.startswith("git_"):
        return None
    try:
        if tool.name == "git_commit":  # its hooks may rewrite files it does not name
            return await hook_risk(checkpointer.ctx, checkpointer.limit)
        return await unwatched_hook_risk(checkpointer.ctx, tool.name)  # git_branch: post-checkout…
    except (ToolError, OSError):  # git fails: the tool fails the same way, or stops at its checkpoint
        return None


def not_asked_message(reason: str) -> str:
    """The error of an irreversible call no client could be asked about (``not_undoable``)."""
    return (f"not run, nothing changed: this change cannot be undone and no client answers permission requests "
            f"to confirm it. Why: {reason}. Tell the user: the setting allowIrreversible: true lets the permission "
            "policy run such calls without asking.")
