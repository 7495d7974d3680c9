"""Which tools one model request offers: the ``maxTools`` budget.

The tools a session could offer come in one fixed order: the built-in tools of
:func:`toolwire.tools.default_registry` first, in the order registered there (reads,
then file edits, then git, read-only before mutating), then tools from elsewhere
(MCP servers, a later issue) appended after them: the caller passes them after the
built-ins to :func:`select_tools` (``agent/opening.py``). The first ``maxTools`` of
that order are offered; the rest are left out: they are not in the request and a
call to one is refused like any unknown tool (the scheduler looks tools up in
the offered registry only). This module is the one place that choice is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolwire.tools.base import Registry, Tool

__all__ = ["MAX_NAMED", "ToolSelection", "select_tools"]

#: Tools left out that the warning's message names; it counts the others.
MAX_NAMED = 20


@dataclass(frozen=True, slots=True)
class ToolSelection:
    """The tools of a session under its ``maxTools`` budget.

    Attributes:
        available: Every tool the session could offer, in order (built-ins first).
        max_tools: The budget the selection was made with.
        registry: The tools offered: the first ``max_tools`` of ``available``.
        left_out: Names of the tools past the budget, in order.
    """

    available: tuple[Tool, ...]
    max_tools: int
    registry: Registry
    left_out: tuple[str, ...]

    @property
    def count(self) -> int:
        """How many tools are offered."""
        return len(self.registry.names())

    def with_budget(self, max_tools: int) -> "ToolSelection":
        """The same tools under another budget (``self`` when it is the same)."""
        return self if max_tools == self.max_tools else select_tools(self.available, max_tools)

    def left_out_message(self) -> str | None:
        """The one warning of a session whose budget leaves tools out, None when nothing is (naming
        the first :data:`MAX_NAMED`: a server may list thousands; the warning's ``names`` has them all)."""
        if not self.left_out:
            return None
        names = ", ".join(self.left_out[:MAX_NAMED])
        if len(self.left_out) > MAX_NAMED:
            names += f" and {len(self.left_out) - MAX_NAMED} more"
        return (f"{len(self.left_out)} of {len(self.available)} tools are not offered to the model (the maxTools "
                f"setting is {self.max_tools}): {names}. Raise maxTools to offer them.")


def select_tools(available: Sequence[Tool], max_tools: int) -> ToolSelection:
    """Offer the first ``max_tools`` of ``available`` (built-ins first, then the rest appended).

    Args:
        available: Every tool the session could offer, in order; a later name equal to an
            earlier one is dropped (the first wins).
        max_tools: The ``maxTools`` setting (at least 1).
    """
    seen: dict[str, Tool] = {}
    for tool in available:
        seen.setdefault(tool.name, tool)
    ordered = tuple(seen.values())
    offered, rest = ordered[:max_tools], ordered[max_tools:]
    return ToolSelection(ordered, max_tools, Registry(list(offered)), tuple(tool.name for tool in rest))
