"""The turn's checkpointer as the checks and watches it drives see it.

:class:`toolwire.agent.checkpoints.Checkpointer` takes a turn's checkpoints and uses
two helpers: :func:`toolwire.agent.recordable.unrecordable` (can a call's prior state
be recorded?) and :class:`toolwire.agent.hook_changes.HookWatch` (what a commit's hooks
changed). They read and fill the checkpointer's record through this protocol, so they
do not import the class that imports them.
"""

from __future__ import annotations

from typing import Any, Protocol

from toolwire.agent.checkpoint_records import FileState, PathChange, TurnCheckpoint
from toolwire.agent.checkpoint_store import CheckpointStore
from toolwire.tools.base import Tool, ToolContext

__all__ = ["CheckpointOwner"]


class CheckpointOwner(Protocol):
    """What the helpers use of a turn's checkpointer.

    Attributes:
        record: The turn's record (its ``paths`` say which paths are recorded).
        ctx: The session's tool context (root, open buffers, git timeout).
        store: Where contents and the record are saved.
        limit: Largest file kept (bytes; the ``checkpointMaxBytes`` setting).
    """

    record: TurnCheckpoint
    ctx: ToolContext
    store: CheckpointStore
    limit: int

    async def paths(self, tool: Tool, args: Any) -> list[str]:
        """Workspace-relative paths whose entries ``tool`` may change."""
        ...

    def capture_before(self, rel: str, state: FileState | None = None, *, strict: bool = False,
                       link: bool = True) -> PathChange:
        """The record of ``rel`` before the turn touches it (``state`` when already taken)."""
        ...
