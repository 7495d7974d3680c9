"""update_plan: the model's short task list for the turn.

Read-only: it changes nothing, and its arguments are the whole plan each time (the latest
call of a turn is the turn's plan). The scheduler announces a plan that was accepted as a
:class:`toolwire.agent.events.PlanUpdate` once the call is done, so every front-end shows
the same list (protocol.md, "update_plan"). Bounded: at most :data:`MAX_ENTRIES` entries of
at most :data:`MAX_CONTENT` characters each.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from toolwire.tools.base import Tool, ToolContext, ToolResult

__all__ = ["MAX_CONTENT", "MAX_ENTRIES", "PlanEntry", "PlanStatus", "PlanPriority", "UpdatePlan", "UpdatePlanArgs",
           "plan_entries"]

#: Entries a plan may have.
MAX_ENTRIES = 30
#: Characters an entry's content may have.
MAX_CONTENT = 300

PlanStatus = Literal["pending", "in_progress", "completed"]
PlanPriority = Literal["high", "medium", "low"]


@dataclass(frozen=True, slots=True)
class PlanEntry:
    """One step of a plan: what it is, how far it is, how much it matters."""

    content: str
    status: PlanStatus
    priority: PlanPriority

    def to_wire(self) -> dict[str, str]:
        """``{"content", "status", "priority"}``."""
        return {"content": self.content, "status": self.status, "priority": self.priority}


class EntryArgs(BaseModel):
    """One entry of update_plan's ``entries``."""

    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=MAX_CONTENT,
                         description=f"The step, in a few words (at most {MAX_CONTENT} characters).")
    status: PlanStatus = Field(description="pending, in_progress (the step you are on) or completed.")
    priority: PlanPriority = Field(description="high, medium or low.")


class UpdatePlanArgs(BaseModel):
    """Arguments of update_plan."""

    model_config = ConfigDict(extra="forbid")

    entries: list[EntryArgs] = Field(min_length=1, max_length=MAX_ENTRIES, description=(
        f"The whole plan, in order (1 to {MAX_ENTRIES} steps); it replaces the previous one."))


class UpdatePlan(Tool):
    """Replace the turn's plan with the entries given."""

    name: ClassVar[str] = "update_plan"
    description: ClassVar[str] = (
        "Keep a short plan of the task for the user to follow: give the whole list of steps each time, in order, "
        "each with its status and priority; it replaces the previous plan. Use it for tasks of several steps: make "
        "the plan first, keep exactly one step in_progress, and call it again as each step is completed. Changes "
        "nothing in the workspace."
    )
    Args: ClassVar[type[BaseModel]] = UpdatePlanArgs
    read_only: ClassVar[bool] = True

    async def run(self, args: UpdatePlanArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        entries = [PlanEntry(e.content, e.status, e.priority) for e in args.entries]
        counts = Counter(entry.status for entry in entries)
        parts = [f"{counts[status]} {status.replace('_', ' ')}" for status in ("completed", "in_progress", "pending")
                 if counts[status]]
        steps = f"{len(entries)} step{'' if len(entries) == 1 else 's'}"
        content = f"Plan updated: {steps} ({', '.join(parts)})."
        if counts["in_progress"] > 1:
            content += " Keep one step in_progress."
        return ToolResult(ok=True, content=content, data={"entries": [entry.to_wire() for entry in entries]})


def plan_entries(data: Any) -> tuple[PlanEntry, ...] | None:
    """The plan of an update_plan result's ``data`` (``{"entries": [...]}``), None when it holds none."""
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list):
        return None
    return tuple(PlanEntry(e["content"], e["status"], e["priority"]) for e in data["entries"])
