"""Undo or redo one of a session's turns (:mod:`toolwire.agent.undo`), and tell the model.

The front-ends call :func:`undo_in_session`; it holds the session's path locks while
the turn's paths are put back, queues the note the next model request carries
(:func:`toolwire.agent.undo_report.model_note`) and, for ``rewind``, drops the turn
from the conversation the model sees (:meth:`toolwire.agent.conversation.Conversation.drop_turn`).
"""

from __future__ import annotations

from typing import Any

from toolwire.agent.checkpoint_records import TurnCheckpoint
from toolwire.agent.session import Session
from toolwire.agent.undo import Restorer, refresh
from toolwire.agent.undo_report import model_note

__all__ = ["undo_in_session", "REWOUND"]

#: Added to the result's message when ``rewind`` dropped the turn from the conversation.
REWOUND = " The turn was removed from the conversation the model sees."


async def undo_in_session(session: Session, record: TurnCheckpoint, *, redo: bool = False,
                          force: list[str] | None = None, partial: bool = False, rewind: bool = False) -> dict[str, Any]:
    """Undo (or redo) ``record``'s turn of ``session`` (no turn of the session may be running).

    Args:
        session: The session the turn belongs to.
        record: The turn's checkpoint.
        redo: Re-apply an undone turn instead.
        force: Paths to restore even though they changed since (see :meth:`Restorer.run`).
        partial: Do what can be done even when something is blocked.
        rewind: Undo only: also drop the turn's messages (its user message, the
            assistant's messages, tool calls and results) from the conversation, unless
            the undo is ``blocked``.

    Returns:
        The result of :meth:`Restorer.run` (its ``message`` says when the turn was rewound).
    """
    store = session.checkpoint_store()
    refresh(record, store)
    paths = [str(session.root / c.fs_name) for c in record.changes()]
    async with session.locks.hold(paths, exclusive=bool(record.git)):
        result = await Restorer(record, session.tool_context(), store, session.tree_write).run(
            redo=redo, force=force, partial=partial)
    rewound = rewind and not redo and result["status"] != "blocked" and session.conversation.drop_turn(record.turn_id) > 0
    note = model_note(record, result, redo=redo, rewound=rewound)
    carried = session.carried_notes.pop(record.turn_id, "") if rewound else ""
    if carried:  # its user message told of earlier undos and changes: the next one tells again
        session.history_notes.insert(0, carried)
    if note:
        session.history_notes.append(note)
    if rewound:
        session.rules.forget_turn(record.turn_id)  # its results carried those nested AGENTS.md blocks
        result["message"] += REWOUND
    return result
