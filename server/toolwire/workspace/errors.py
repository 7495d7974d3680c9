"""The one expected-failure exception of the tools and the workspace layer.

It lives here, at the bottom layer, so that workspace helpers (path
confinement, atomic writes) can raise it without importing the tools package;
:mod:`toolwire.tools.base` re-exports it as ``toolwire.tools.base.ToolError``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ToolError", "tool_error_in"]


class ToolError(Exception):
    """An expected tool failure, reported to the model as the call's result.

    Args:
        code: Stable code, e.g. ``not_found``, ``outside_workspace``,
            ``ambiguous_match``, ``no_match``, ``exists``, ``stale``,
            ``git_failed``, ``timeout``.
        message: A sentence for the model and the user.
        data: Optional structured details (e.g. match line numbers).
    """

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def tool_error_in(exc: BaseException) -> ToolError | None:
    """The :class:`ToolError` to report for ``exc``: itself, or the first one inside an
    exception group whose leaves are all ordinary exceptions (tasks of one task group
    failing alike, e.g. two git reads when git is missing). None otherwise: a group
    holding a cancellation or a bug is not a tool's expected failure.
    """
    if isinstance(exc, ToolError):
        return exc
    if not isinstance(exc, ExceptionGroup):  # a BaseExceptionGroup may carry a cancellation
        return None
    _, rest = exc.split(ToolError)
    if rest is not None:
        return None
    leaf: BaseException = exc
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf if isinstance(leaf, ToolError) else None
