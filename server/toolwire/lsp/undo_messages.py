"""Wire models of ``toolwire/session/undoTurn`` and ``redoTurn``: the params and what an
undo or redo did to each path and git action. Method names and the shared ``Wire`` base
are in :mod:`toolwire.lsp.protocol`."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from toolwire.lsp.protocol import Wire


class UndoTurnParams(Wire):
    """``toolwire/session/undoTurn`` / ``redoTurn`` params.

    ``turn_id`` defaults to the last turn with something to undo (for redo: the
    turn undone most recently); ``force`` names workspace-relative paths to
    restore even though they changed since the turn. Every path and git action is
    checked first: when one would be ``kept`` or ``not_undoable`` nothing is
    changed (status ``blocked``), unless ``partial`` (do everything else and report
    the blockers). ``rewind`` (undoTurn only) also drops the turn from the
    conversation the model sees.
    """

    session_id: str = Field(min_length=1)
    turn_id: str | None = Field(None, min_length=1)
    force: list[str] = Field(default_factory=list)
    partial: bool = False
    rewind: bool = False


class UndoPathOutcome(Wire):
    """What an undo or redo did to one path (``diff``: what a ``kept`` path's restore would change)."""

    path: str
    outcome: Literal["restored", "kept", "not_undoable"]
    reason: str | None = None
    diff: str | None = None


class UndoGitOutcome(Wire):
    """What an undo or redo did to one git action of the turn."""

    action: str
    outcome: Literal["restored", "kept", "not_undoable"]
    reason: str | None = None


class NotUndoneCall(Wire):
    """An MCP tool call of the turn that ran: what it did is outside the checkpoints, so no undo puts it back."""

    call_id: str
    tool: str


class UndoTurnResult(Wire):
    """``toolwire/session/undoTurn`` / ``redoTurn`` result (``turn_id`` null: no turn to act on).

    ``status`` ``blocked``: nothing was changed; ``paths`` and ``git`` list only
    the blockers (``kept`` or ``not_undoable``, with reason and diff).
    ``unmatched_force``: the params' ``force`` entries (as sent, duplicates once)
    that name no path and no index entry of the turn; nothing was forced for them.
    ``not_undone`` (undoTurn): the turn's MCP calls that ran, their tool not marked
    ``readOnlyHint``; ``message`` names them too.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    turn_id: str | None
    status: Literal["undone", "redone", "partial", "blocked", "nothing_to_do"]
    message: str
    paths: list[UndoPathOutcome]
    git: list[UndoGitOutcome]
    unmatched_force: list[str] = Field(default_factory=list)
    not_undone: list[NotUndoneCall] = Field(default_factory=list)
