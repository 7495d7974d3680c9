"""The before/after texts of a pending edit call, for an editor's diff view.

The texts come from the tool's own dry run (:meth:`FileTool.plan`), the code that
builds the approval diff (:func:`toolwire.agent.permissions.build_subject`), on
the file as it is now: for a call waiting for approval that is exactly the
change the approval shows (a call that changes a path is asked about only after
the earlier calls on that path finished). A file kept from the model (``modelExclude``)
is previewed too: the preview goes to the user, as the approval's diff does.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolwire.agent.exclusion import allowed_files, call_exclusions
from toolwire.agent.session import Session
from toolwire.streaming.state import Status, ToolCallState
from toolwire.tools.base import ArgumentsInvalid, validate_arguments
from toolwire.tools.target import FileTool
from toolwire.workspace.errors import ToolError

__all__ = ["Preview", "PreviewError", "preview_call"]


class PreviewError(Exception):
    """The call cannot be previewed: unknown, not pending, not an edit, or its plan fails."""


@dataclass(slots=True, frozen=True)
class Preview:
    """A proposed file change.

    Attributes:
        path: Workspace-relative path of the file (the source path of a rename).
        before: Its text now (``""`` when the call creates it).
        after: Its text after the call (``""`` when the call deletes it).
        new_path: The destination of a rename, else None.
    """

    path: str
    before: str
    after: str
    new_path: str | None = None


async def preview_call(session: Session, call: ToolCallState | None, call_id: str) -> Preview:
    """Dry-run a pending edit call on the file as it is now.

    Args:
        session: The session the call belongs to.
        call: The call (:meth:`toolwire.agent.host.SessionHost.find_call`), or None when unknown.
        call_id: The call's ``toolCallId``.

    Returns:
        The file's text before and after the call.

    Raises:
        PreviewError: the call is unknown, not ``generated`` (pending), not a
            file tool (create_file, edit_file, multi_edit, delete_file,
            rename_file), its arguments are invalid, its plan fails (the
            message is the tool's error), or the file is not text.
    """
    if call is None:
        raise PreviewError(f"unknown tool call {call_id!r} (no running turn or client-fed run has it)")
    if call.status is not Status.GENERATED:
        raise PreviewError(f"tool call {call_id!r} is {call.status.value}, not pending (generated)")
    tool = session.registry.get(call.name)
    if not isinstance(tool, FileTool):
        raise PreviewError(f"tool call {call_id!r} ({call.name}) is not a file edit")
    try:
        args = validate_arguments(tool, call.arguments or {})
        ctx = session.tool_context()
        ctx.allowed_excluded = allowed_files(call_exclusions(tool, args, ctx))  # the user's view, as its question
        change = await tool.plan(args, ctx)
    except ArgumentsInvalid as exc:
        raise PreviewError(f"tool call {call_id!r}: invalid arguments: {exc}") from None
    except ToolError as exc:
        raise PreviewError(f"tool call {call_id!r}: {exc.code}: {exc.message}") from None
    if change.before is None or change.after is None:
        raise PreviewError(f"tool call {call_id!r}: {change.rel} cannot be shown as text (binary, too large or a link)")
    return Preview(path=change.rel, before=change.before, after=change.after, new_path=change.data.get("new_path"))
