"""A tool's text fitted in the session's ``resultLimit`` (``ToolContext.extra["result_limit"]``).

A result longer than the limit is cut in its middle by the agent (:func:`truncate_for_model`,
with a marker giving the full size), losing entries without saying how many; the bounded tools (``list_files``, ``search_files``) keep whole entries
instead, as many as fit, and say how many were left out (the same line as past ``limit``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from toolwire.tools.base import ToolContext

__all__ = ["TRAILER_CHARS", "result_budget", "lines_that_fit", "truncate_for_model"]

#: Room kept for the line that says how many were shown and how to narrow.
TRAILER_CHARS = 200


def result_budget(ctx: ToolContext, notes: Iterable[str] = ()) -> int | None:
    """Characters left for the entries: the session's limit less the ``notes`` lines and the
    trailer; None when the call has no limit (a tool run outside a session)."""
    limit = ctx.extra.get("result_limit")
    if not isinstance(limit, int):
        return None
    return limit - sum(len(note) + 1 for note in notes) - TRAILER_CHARS


def lines_that_fit(lines: Sequence[str], budget: int) -> int:
    """How many of ``lines`` (one per entry, joined by newlines) fit in ``budget`` characters;
    at least one."""
    used = 0
    for count, line in enumerate(lines):
        used += len(line) + (1 if count else 0)
        if used > budget and count:
            return count
    return len(lines)


def truncate_for_model(content: str, limit: int) -> str:
    """Cut a long tool result for the model, with an explicit marker and the full size.

    Args:
        content: The whole result text.
        limit: Maximum characters kept (head and tail halves).

    Returns:
        ``content`` when short enough, else head + marker + tail.
    """
    if len(content) <= limit:
        return content
    half = max(1, (limit - 80) // 2)
    omitted = len(content) - 2 * half
    return (
        content[:half]
        + f"\n[... {omitted} characters omitted; the full result is {len(content)} characters ...]\n"
        + content[-half:]
    )
