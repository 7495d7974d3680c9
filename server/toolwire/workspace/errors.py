"""The one expected-failure exception of the tools and the workspace layer.

It lives here, at the bottom layer, so that workspace helpers (path
confinement, atomic writes) can raise it without importing the tools package;
:mod:`toolwire.tools.base` re-exports it as ``toolwire.tools.base.ToolError``.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MESSAGE_LIMIT", "QUOTE_LIMIT", "ToolError", "bounded_message", "clip_quote", "tool_error_in"]

#: Longest tool error message (characters); protocol.md "Errors".
MESSAGE_LIMIT = 1000
#: Longest piece of input an error quotes (characters), about.
QUOTE_LIMIT = 80
#: A run this long without white space is taken as quoted input (a name, a path) and clipped.
_LONG_RUN = re.compile(r"\S{%d,}" % (QUOTE_LIMIT + 40))


def clip_quote(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters with a marker giving its full length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[{len(text)} characters]"


def bounded_message(message: str) -> str:
    """``message`` with every run of 120 or more characters without white space (a
    quoted name or path) cut to :data:`QUOTE_LIMIT`, then cut to :data:`MESSAGE_LIMIT`.

    The rule of protocol.md "Errors" (messages at most 1000 characters, quoting at
    most about 80 characters of input) for every tool error, whatever raised it.
    """
    message = _LONG_RUN.sub(lambda m: clip_quote(m.group()), message)
    if len(message) > MESSAGE_LIMIT:
        message = f"{message[:MESSAGE_LIMIT - 40]}… [{len(message)} characters in all]"
    return message


class ToolError(Exception):
    """An expected tool failure, reported to the model as the call's result.

    Args:
        code: Stable code, e.g. ``not_found``, ``outside_workspace``,
            ``ambiguous_match``, ``no_match``, ``exists``, ``stale``,
            ``git_failed``, ``timeout``.
        message: A sentence for the model and the user; kept bounded
            (:func:`bounded_message`).
        data: Optional structured details (e.g. match line numbers).
    """

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None) -> None:
        message = bounded_message(message)
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
