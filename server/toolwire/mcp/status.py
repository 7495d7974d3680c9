"""A server's state, as the session, ``toolwire/tools/list`` and the front-ends show it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ServerState", "ServerStatus", "ToolsChanged"]

#: ``starting``: being started (or restarted); ``ready``: its tools are listed;
#: ``failed``: it did not start, or it exited (``error`` says why); ``stopped``: stopped by Toolwire.
ServerState = Literal["starting", "ready", "failed", "stopped"]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server of a session, now.

    Attributes:
        name: The server's name as configured.
        state: See :data:`ServerState`.
        tools: How many tools it lists (after its ``tools`` allowlist), 0 unless ready.
        offered: How many of them the session offers the model (under ``maxTools``); set by the session.
        error: Why it failed (one sentence, secrets removed; its stderr is in the log, not here).
    """

    name: str
    state: ServerState
    tools: int = 0
    offered: int = 0
    error: str | None = None

    def to_wire(self) -> dict[str, Any]:
        """``{"name", "state", "tools", "offered", "error"?}`` (protocol.md, ``toolwire/tools/list``)."""
        out: dict[str, Any] = {"name": self.name, "state": self.state, "tools": self.tools, "offered": self.offered}
        if self.error is not None:
            out["error"] = self.error
        return out


@dataclass(frozen=True, slots=True)
class ToolsChanged:
    """A server's tool list changed (``notifications/tools/list_changed``, or it restarted)."""

    name: str
