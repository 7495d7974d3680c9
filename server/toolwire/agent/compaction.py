"""Compacting a session's history on request (ACP ``/compact``, LSP ``toolwire/session/compact``).

Not a turn: no model request, nothing added to the conversation. Every tool result older
than the last turn is replaced by the note the context-fitting rule leaves
(:meth:`toolwire.agent.conversation.Conversation.compact`), whatever the history's size, and
the nested project rules those results carried are given again when a later call reaches
their folders, as after that rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from toolwire.agent.request_rules import CHARS_PER_TOKEN
from toolwire.agent.session import Session

__all__ = ["Compaction", "compact_session"]


@dataclass(frozen=True, slots=True)
class Compaction:
    """What compacting did: ``results`` replaced by the note, about ``tokens`` freed."""

    results: int
    tokens: int

    @property
    def message(self) -> str:
        """``compacted 3 results, about 1200 tokens freed``."""
        return f"compacted {self.results} result{'' if self.results == 1 else 's'}, about {self.tokens} tokens freed"

    def to_wire(self) -> dict[str, Any]:
        """``{"compacted", "tokensFreed", "message"}``."""
        return {"compacted": self.results, "tokensFreed": self.tokens, "message": self.message}


def compact_session(session: Session) -> Compaction:
    """Compact ``session``'s history (the caller holds its turn slot or checked it is free)."""
    conversation = session.conversation
    freed = conversation.compact()
    session.rules.forget_calls(conversation.last_dropped)
    return Compaction(len(conversation.last_dropped), math.ceil(freed / CHARS_PER_TOKEN))
