"""A session: one conversation with one model over one workspace folder."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwire.agent.conversation import Conversation
from toolwire.agent.permissions import PermissionPolicy
from toolwire.llm.base import Model
from toolwire.settings import Settings
from toolwire.tools.base import Registry, ToolContext
from toolwire.workspace.documents import Documents, NoOpenDocuments
from toolwire.workspace.locks import PathLocks

if TYPE_CHECKING:
    from toolwire.agent.turn import Turn

#: The system prompt every session starts with.
SYSTEM_PROMPT = (
    "You are a coding assistant working inside the user's editor on the workspace folder. "
    "Use the tools to read, edit and commit files; paths are relative to the workspace root. "
    "Prefer small, exact edits. When a tool fails, read its error and adjust."
)


@dataclass(slots=True)
class Session:
    """State of one conversation.

    Attributes:
        id: The session id given to the client.
        root: The workspace folder (absolute, resolved).
        model: The model that answers this session's requests.
        registry: The tools offered.
        policy: Permission policy, including this session's "allow always" rules.
        settings: Settings in force for the session.
        documents: Open editor buffers.
        conversation: The history sent to the model.
        locks: Per-path locks shared by every turn of the session.
        turn: The running turn, if any (one at a time).
        turns: Number of turns started so far.
        streams: Client-fed streams by stream id (:class:`toolwire.agent.fed.FedStream`).
    """

    root: Path
    model: Model
    registry: Registry
    policy: PermissionPolicy
    settings: Settings
    documents: Documents = field(default_factory=NoOpenDocuments)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    conversation: Conversation = field(default_factory=lambda: Conversation(SYSTEM_PROMPT))
    locks: PathLocks = field(default_factory=PathLocks)
    turn: "Turn | None" = None
    turns: int = 0
    streams: dict[str, Any] = field(default_factory=dict)

    def tool_context(self) -> ToolContext:
        """The context tools of this session run with."""
        return ToolContext(root=self.root, documents=self.documents, git_timeout=self.settings.git_timeout)
