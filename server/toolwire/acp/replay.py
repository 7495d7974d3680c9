"""A session's history as ACP updates, for ``session/load``: its saved event log told again.

Every event of the session's log (:mod:`toolwire.agent.session_store`) goes through the
translation the live session used (:meth:`AcpSink.translate`, on a sink of its own), so a loaded
session shows the updates the live one sent: each call's ``tool_call`` and ``tool_call_update``
with the same fields (title, kind, status, locations, ``diff`` and text content, raw input and
output), agent and thought chunks, warnings and rules changes. Each prompt becomes one
``user_message_chunk`` per content block the user sent, as sent, a text block's text in display
form like every text shown (a prompt sent as text, over LSP or ``toolwire run``: one text block).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from acp.schema import TextContentBlock, UserMessageChunk
from pydantic import ValidationError

from toolwire.acp.bridge import AcpSink
from toolwire.agent.events import LoggedEvent, UserPrompt
from toolwire.workspace.names import display_text

__all__ = ["prompt_chunks", "replay_updates"]

log = logging.getLogger(__name__)


def replay_updates(events: Iterable[LoggedEvent], root: Path,
                   read_only: Callable[[str], bool] = lambda name: False) -> list[Any]:
    """The updates that tell a client the session's history again, in the order it happened.

    Args:
        events: The session's logged events, oldest first (:meth:`SessionHost.history`).
        root: The workspace folder (locations are absolute).
        read_only: Whether the MCP tool of a name is marked ``readOnlyHint`` (the calls' kind).
    """
    sink = AcpSink(None, "", root, read_only)
    updates: list[Any] = []
    for event in events:
        if isinstance(event, UserPrompt):
            updates.extend(prompt_chunks(event))
        else:
            updates.extend(sink.translate(event))
    return updates


def prompt_chunks(prompt: UserPrompt) -> list[UserMessageChunk]:
    """One ``user_message_chunk`` per block of ``prompt`` as the user sent it, text in display form (a
    block that no longer validates is left out, logged); one text block when it came as text only."""
    if not prompt.blocks:
        block = TextContentBlock(type="text", text=display_text(prompt.text, keep="\n\t"))
        return [UserMessageChunk(session_update="user_message_chunk", content=block)]
    out = []
    for block in prompt.blocks:
        if block.get("type") == "text" and isinstance(block.get("text"), str):  # shown as every text is
            block = {**block, "text": display_text(block["text"], keep="\n\t")}
        try:
            out.append(UserMessageChunk.model_validate({"sessionUpdate": "user_message_chunk", "content": block}))
        except ValidationError as exc:
            log.warning("turn %s: a saved prompt block is left out of the replay: %s", prompt.turn_id,
                        exc.errors()[0].get("msg") if exc.errors() else exc)
    return out
