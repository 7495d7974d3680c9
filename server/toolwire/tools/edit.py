"""Edit tools: edit_file (one replacement) and multi_edit (several, all or nothing).

Both plan with :func:`toolwire.tools.editing.plan_edit` on the current text
(buffer or disk) and write the result with :func:`write_target`. ``plan``
never writes, so the permission prompt shows the exact diff.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from toolwire.tools.base import ToolContext, ToolResult
from toolwire.tools.editing import EditPlan, Replacement, plan_edit
from toolwire.tools.target import (
    FileChange,
    HUNK_ANSWERS,
    FileTool,
    Target,
    check_creatable,
    load_target,
    result_data,
    still_reads,
    write_target,
)
from toolwire.workspace.errors import clip_quote
from toolwire.workspace.hunks import Hunk, apply_hunks, parse_hunks
from toolwire.workspace.paths import resolve_path
from toolwire.workspace.text import unified_diff

__all__ = ["EditFile", "MultiEdit", "plan_file_edit"]

_OLD = (
    "Exact text to replace, including whitespace and indentation. It must occur exactly once "
    "in the file unless replace_all is true; add surrounding lines to make it unique. An empty "
    "old_string creates a missing file with new_string as its content."
)
_NEW = "The replacement text. Must differ from old_string."
_ALL = "Replace every occurrence of old_string instead of requiring exactly one. Default false."


class EditFileArgs(BaseModel):
    """Arguments of edit_file."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="Path of the file, relative to the workspace folder.")
    old_string: str = Field(description=_OLD)
    new_string: str = Field(description=_NEW)
    replace_all: bool = Field(False, description=_ALL)


class EditSpec(BaseModel):
    """One replacement of multi_edit."""

    model_config = ConfigDict(extra="forbid")
    old_string: str = Field(description=_OLD)
    new_string: str = Field(description=_NEW)
    replace_all: bool = Field(False, description=_ALL)


class MultiEditArgs(BaseModel):
    """Arguments of multi_edit."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description="Path of the file, relative to the workspace folder.")
    edits: list[EditSpec] = Field(
        min_length=1,
        description="Replacements applied in order, each to the result of the previous ones. "
        "If any fails, none is applied.",
    )


async def plan_file_edit(ctx: ToolContext, path: str, edits: list[Replacement]) -> tuple[Target, EditPlan, str]:
    """Dry-run edits on the file's current text (buffer or disk).

    Args:
        ctx: The tool context (root, open buffers).
        path: The path from the arguments.
        edits: Replacements, applied in order.

    Returns:
        ``(target, plan, diff)``: what was read, the planned text, and the
        unified diff from the current text to the planned one. A plan kept in
        ``ctx.plans`` for the same path and edits is returned again while the
        file still reads the same (:func:`~toolwire.tools.target.still_reads`).

    Raises:
        ToolError: path, read or match errors (see :func:`plan_edit`); ``excluded``
            for a file kept from the model that the call was not allowed to touch.
    """
    ctx.refuse_excluded(resolve_path(ctx.root, path))  # a match error would tell what the file holds
    key = _memo_key(path, edits)
    kept = ctx.plans.get(key)
    if kept is not None and still_reads(ctx, kept[0], path):  # the same text: the same plan
        check_creatable(ctx, kept[0])
        return kept
    ctx.plans.drop(key)
    target = load_target(ctx, path)
    plan = plan_edit(target.text, edits, label=clip_quote(target.path.rel))
    check_creatable(ctx, target)
    planned = (target, plan, unified_diff(plan.old_text, plan.new_text, target.path.rel))
    ctx.plans.put(key, planned, len(target.raw or b"") + len(plan.old_text or "") + len(plan.new_text))
    return planned


def _memo_key(path: str, edits: list[Replacement]) -> tuple[object, ...]:
    """The plan memo's key of an edit: the path as written and the replacements."""
    return ("edit", path, tuple(edits))


def _summary(rel: str, plan: EditPlan) -> str:
    if plan.old_text is None:
        return f"Created {rel}"
    n = plan.replacements
    where = ", ".join(str(line) for line in plan.lines[:10]) + (", ..." if len(plan.lines) > 10 else "")
    text = f"Edited {rel}: {n} replacement{'s' if n != 1 else ''} at line{'s' if n != 1 else ''} {where}"
    if plan.fuzzy:
        text += " (matched ignoring whitespace differences; re-indented to the file)"
    return text


def _change(ctx: ToolContext, target: Target, plan: EditPlan, diff: str, key: tuple[object, ...]) -> FileChange:
    rel = target.path.rel

    async def apply() -> ToolResult:
        ctx.plans.drop(key)  # written or refused: the file is no longer what was planned on
        answers = ctx.extra.get(HUNK_ANSWERS)
        if answers is not None:
            return await _apply_hunks(ctx, target, plan, diff, answers)
        await write_target(ctx, target, plan.new_text)
        data = result_data(
            rel,
            diff,
            target.source,
            replacements=plan.replacements,
            lines=plan.lines,
            fuzzy=plan.fuzzy,
            created=plan.old_text is None,
        )
        return ToolResult(ok=True, content=_summary(rel, plan), data=data)

    return FileChange(rel=rel, diff=diff, apply=apply, data={"replacements": plan.replacements},
                      before=plan.old_text or "", after=plan.new_text)


async def _apply_hunks(ctx: ToolContext, target: Target, plan: EditPlan, diff: str,
                       answers: list[dict[str, Any]]) -> ToolResult:
    """Write only the hunks of the approved ``diff`` the user accepted, as one edit of the text
    planned on (atomic, refused as ``stale`` when the file moved on); the result says which
    hunks landed and which were rejected, with the user's reasons."""
    rel = target.path.rel
    hunks = parse_hunks(diff)
    accepted = {a["index"] for a in answers if a["accepted"]}
    new_text = apply_hunks(plan.old_text or "", plan.new_text, diff, accepted)
    await write_target(ctx, target, new_text)
    written = unified_diff(plan.old_text, new_text, rel)

    def name(h: Hunk) -> str:
        return f"hunk {h.index + 1} `{h.header}`"

    reasons = {a["index"]: a.get("reason") for a in answers}
    landed = [name(h) for h in hunks if h.index in accepted]
    refused = [name(h) + (f" (reason: {reasons[h.index]})" if reasons.get(h.index) else "")
               for h in hunks if h.index not in accepted]
    content = (f"Edited {rel} in part: the user accepted {len(landed)} of {len(hunks)} hunks of your diff and "
               f"rejected the others; only the accepted ones were written.\nWritten: {', '.join(landed)}.\n"
               f"Rejected (not written): {'; '.join(refused)}.\nHunk headers are your diff's line numbers; "
               f"read {rel} again before editing it.")
    data = result_data(rel, written, target.source, created=False,
                       hunks=[{"index": a["index"], "accepted": a["accepted"],
                               **({"reason": a["reason"]} if a.get("reason") else {})} for a in answers])
    return ToolResult(ok=True, content=content, data=data)


class EditFile(FileTool):
    """Replace one exact piece of text in a file."""

    name: ClassVar[str] = "edit_file"
    description: ClassVar[str] = (
        "Replace old_string with new_string in a text file; returns the lines changed. Use it to change "
        "an existing file: read it first, then quote the text to replace. old_string must match the file "
        "exactly and occur once (or set replace_all); otherwise the error says how many times and on "
        "which lines it occurs: add surrounding lines to make it unique. Line endings, the byte-order "
        "mark, the final newline and indentation style of the file are kept. Edits go to the editor "
        "buffer when the file is open. For several changes to one file, use multi_edit."
    )
    Args: ClassVar[type[BaseModel]] = EditFileArgs
    shows_content: ClassVar[bool] = True
    reviews_hunks: ClassVar[bool] = True

    async def plan(self, args: EditFileArgs, ctx: ToolContext) -> FileChange:  # type: ignore[override]
        edits = [Replacement(args.old_string, args.new_string, args.replace_all)]
        target, plan, diff = await plan_file_edit(ctx, args.path, edits)
        return _change(ctx, target, plan, diff, _memo_key(args.path, edits))


class MultiEdit(FileTool):
    """Several replacements in one file, applied in order, all or nothing."""

    name: ClassVar[str] = "multi_edit"
    description: ClassVar[str] = (
        "Make several replacements in one file in one call; returns the lines changed. Each edit works "
        "like edit_file and applies to the text left by the edits before it. Either every edit applies or "
        "none does; the error names the failing edit. Use it instead of several edit_file calls on the "
        "same file."
    )
    Args: ClassVar[type[BaseModel]] = MultiEditArgs
    shows_content: ClassVar[bool] = True
    reviews_hunks: ClassVar[bool] = True

    async def plan(self, args: MultiEditArgs, ctx: ToolContext) -> FileChange:  # type: ignore[override]
        edits = [Replacement(e.old_string, e.new_string, e.replace_all) for e in args.edits]
        target, plan, diff = await plan_file_edit(ctx, args.path, edits)
        return _change(ctx, target, plan, diff, _memo_key(args.path, edits))
