"""Permission policy: may a tool call run without asking, after asking, or never?

The policy is pure (no I/O). Defaults: read-only tools (reads, read-only git)
run automatically; file edits ask; mutating git (add, restore, commit, branch
create/switch) asks; ``git_branch`` with ``action="list"`` is automatic.

Overrides map a key to ``auto`` / ``ask`` / ``deny``. The most specific key
wins: ``"<tool>.<action>"`` (``git_branch.list|create|switch``), then the tool
name, then a group (``"edits"`` for every file-changing tool, ``"git"`` for
every mutating git tool, ``"read"`` for read-only tools). ``deny`` from the
configuration wins over session rules.

An MCP tool (:class:`toolwire.mcp.tool.McpTool`) asks by default, whatever its
``readOnlyHint`` (a server's hints are never trusted to skip a question). Its keys,
most specific first: the name it is offered under, ``mcp__<server>__<tool>`` (cleaned,
never cut), ``mcp__<server>`` (every tool of the server), then the group ``other``.
"Allow always" remembers that tool for any arguments, never the whole server.

"Allow always" remembers the whole action: the tool, every path argument
(normalized inside the workspace; ``path``/``new_path`` by position, ``paths``
as a set), every other argument except the text being written (``old_string``,
``new_string``, ``content``, ``edits``, ``message``), and the size of the change:
how many lines it touches. A rule never approves a larger action: another path,
another tool, more paths, a wider flag (``overwrite``, ``replace_all``,
``staged``), or more lines changed all ask again. So "always" for a one-line edit
of ``a.py`` lets later one-line edits of ``a.py`` through, never a rewrite of the
file. Actions whose size is unknown until they run are never remembered: a
``git_commit`` without paths (whatever is staged then), git paths naming a folder,
``create_file`` with ``overwrite`` (the file replaced may have grown), and
``replace_all`` (the number of occurrences is the file's).

:func:`build_subject` says what the user is asked about: the exact diff of an
edit (a dry run of the tool's own plan; a plan that fails is never asked about), the
argv and folder of a git command,
the tool, server, arguments, hints and undo line of an MCP tool, or the arguments of
any other tool.
"""

from __future__ import annotations

import json
import logging
import os
from enum import Enum
from pathlib import Path, PurePath
from typing import Any, Final

from pydantic import BaseModel

from toolwire.mcp.naming import PREFIX, clean, server_key
from toolwire.mcp.tool import McpTool
from toolwire.tools.base import Tool, ToolContext
from toolwire.tools.gitsubject import FILES_LIMIT, command_line, diffstat, touched_files
from toolwire.tools.target import FileTool, diff_stats
from toolwire.workspace.errors import ToolError
from toolwire.workspace.hunks import split_hunks
from toolwire.workspace.names import display_name
from toolwire.workspace.positions import line_count

__all__ = ["Decision", "PermissionPolicy", "build_subject", "plain_subject", "action_key", "policy_keys", "UNDO_LINE"]

log = logging.getLogger(__name__)

_CONTENT_FIELDS: Final = frozenset({"old_string", "new_string", "content", "edits", "message"})
_PATH_FIELDS: Final = ("path", "new_path")
_PATH_LIST_FIELD: Final = "paths"
#: The MCP hints an approval shows (MCP ``ToolAnnotations``).
_HINTS: Final = ("readOnlyHint", "destructiveHint", "openWorldHint")
#: What the approval of an MCP tool not marked read-only says.
UNDO_LINE: Final = "Toolwire cannot undo what this tool does"


class Decision(str, Enum):
    """What the policy decided for one call."""

    AUTO = "auto"
    ASK = "ask"
    DENY = "deny"


def action_key(tool: Tool, args: BaseModel) -> str | None:
    """The per-argument key of a call (``"git_branch.switch"``), or None for tools without actions."""
    action = getattr(args, "action", None)
    return f"{tool.name}.{action}" if isinstance(action, str) else None


def policy_keys(tool: Tool, args: BaseModel) -> list[str]:
    """The ``permissions`` keys that may decide a call, most specific first."""
    if isinstance(tool, McpTool):
        return [tool.name, f"{PREFIX}{clean(tool.server)}__{clean(tool.original)}", server_key(tool.server), "other"]
    return [key for key in (action_key(tool, args), tool.name, _group(tool)) if key is not None]


def _default(tool: Tool, args: BaseModel) -> Decision:
    if tool.read_only:
        return Decision.AUTO
    if tool.name == "git_branch" and getattr(args, "action", None) == "list":
        return Decision.AUTO
    return Decision.ASK


def _group(tool: Tool) -> str:
    if tool.read_only:
        return "read"
    if isinstance(tool, FileTool):
        return "edits"
    return "git" if tool.name.startswith("git_") else "other"


def _norm(root: Path, value: str) -> str | None:
    """Lexically normalized path relative to ``root``; None when it leaves ``root``."""
    p = PurePath(value)
    joined = PurePath(os.path.normpath(p if p.is_absolute() else PurePath(root) / p))
    base = PurePath(os.path.normpath(root))
    if joined != base and not joined.is_relative_to(base):
        return None
    return joined.relative_to(base).as_posix()


def _scope(tool: Tool, args: BaseModel, root: Path) -> tuple[Any, ...] | None:
    """The identity of a call's whole action, or None when a path leaves the workspace (an
    MCP tool's: the tool alone, whatever its arguments)."""
    if isinstance(tool, McpTool):
        return (tool.name, ())
    items: list[tuple[str, Any]] = []
    for name, value in sorted(args.model_dump(mode="json").items()):
        if name in _CONTENT_FIELDS:
            continue
        if name in _PATH_FIELDS and isinstance(value, str):
            norm = _norm(root, value)
            if norm is None:
                return None
            items.append((name, norm))
        elif name == _PATH_LIST_FIELD and isinstance(value, list):
            normed = [_norm(root, str(v)) for v in value]
            if any(n is None for n in normed):
                return None
            items.append((name, frozenset(normed)))
        else:
            items.append((name, json.dumps(value, sort_keys=True)))
    edits = getattr(args, "edits", None)
    if isinstance(edits, list):  # multi_edit: replace_all in any edit widens the action
        items.append(("replace_all", any(getattr(e, "replace_all", False) for e in edits)))
    return (tool.name, tuple(items))


class PermissionPolicy:
    """Decides auto / ask / deny per call; remembers the session's "allow always" answers.

    Args:
        overrides: Key → ``"auto" | "ask" | "deny"``; keys are tool names,
            ``"<tool>.<action>"`` or the groups ``edits``, ``git``, ``read``.
            Unknown values raise ValueError.
    """

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self._overrides = {key: Decision(value) for key, value in (overrides or {}).items()}
        self._always: dict[tuple[str, tuple[Any, ...]], int] = {}

    def set_overrides(self, overrides: dict[str, str]) -> None:
        """Replace the configured overrides (e.g. a session mode changed); the
        session's "allow always" rules are kept. Unknown values raise ValueError."""
        self._overrides = {key: Decision(value) for key, value in overrides.items()}

    def configured(self, tool: Tool, args: BaseModel) -> Decision:
        """The decision from overrides and defaults alone (session rules ignored)."""
        for key in policy_keys(tool, args):
            if key in self._overrides:
                return self._overrides[key]
        return _default(tool, args)

    def decide(self, tool: Tool, args: BaseModel) -> Decision:
        """Decide for one validated call.

        A configured ``deny`` always wins; otherwise a matching "allow always"
        rule gives AUTO; otherwise the configured or default decision.
        """
        configured = self.configured(tool, args)
        if configured is Decision.DENY or configured is Decision.AUTO:
            return configured
        size = change_size(args)
        for (root, scope), approved in self._always.items():
            if size <= approved and _scope(tool, args, Path(root)) == scope:
                return Decision.AUTO
        return configured

    def remember_always(self, tool: Tool, args: BaseModel, root: Path) -> None:
        """Approve this exact action (tool + paths + arguments) for the rest of the session.

        A call with a path outside ``root`` is never remembered.
        """
        if _unbounded(tool, args, root):
            return  # an action whose size cannot be known now is never approved in advance
        scope = _scope(tool, args, root)
        if scope is not None:
            key = (str(root), scope)
            self._always[key] = max(self._always.get(key, 0), change_size(args))

    def forget(self) -> None:
        """Drop every "allow always" rule."""
        self._always.clear()


def _unbounded(tool: Tool, args: BaseModel, root: Path) -> bool:
    """True for actions whose size is unknown until they run: a commit of whatever is
    staged, git paths that name a folder, overwriting a whole existing file, and
    ``replace_all`` (the number of occurrences is the file's, not the call's)."""
    if tool.name == "git_commit" and not getattr(args, "paths", None):
        return True
    if tool.name.startswith("git_"):
        for value in getattr(args, "paths", None) or []:
            if value in (".", "") or value.endswith("/") or (root / value).is_dir():
                return True
    if getattr(args, "overwrite", False) or getattr(args, "replace_all", False):
        return True
    return any(getattr(e, "replace_all", False) for e in getattr(args, "edits", None) or [])


def _lines(text: Any) -> int:
    """Lines as an editor shows them: CRLF, bare CR and LF each end one (LSP rule)."""
    return line_count(text) if isinstance(text, str) else 0


def change_size(args: BaseModel) -> int:
    """How many lines a call's written text touches: the larger of ``old_string``
    and ``new_string`` (summed over ``edits``), or the lines of ``content``; 0 for
    calls that write no text (delete, rename, git)."""
    edits = getattr(args, "edits", None)
    if isinstance(edits, list):
        return sum(max(_lines(getattr(e, "old_string", "")), _lines(getattr(e, "new_string", ""))) for e in edits)
    old, new = getattr(args, "old_string", None), getattr(args, "new_string", None)
    if old is not None or new is not None:
        return max(_lines(old), _lines(new))
    return _lines(getattr(args, "content", None))


def _arguments(args: BaseModel) -> dict[str, Any]:
    return args.model_dump(mode="json")


async def build_subject(tool: Tool, args: BaseModel, ctx: ToolContext) -> dict[str, Any]:
    """What to show the user when asking about a call.

    Returns:
        ``{"kind": "edit", "tool", "path", "diff", "diffstat"}`` (plus ``new_path`` for a
        rename, and ``hunks`` ``[{"index", "header", "diff"}]`` for ``edit_file`` and ``multi_edit``,
        which the user may accept one by one) for file tools, the diff being a dry run of the tool's own plan on the
        current text and ``diffstat`` its ``{"added", "removed"}`` lines;
        ``{"kind": "git", "tool", "argv", "command", "cwd", "files", "diffstat"}`` for git tools
        (:func:`_git_subject`); ``{"kind": "mcp", "tool",
        "server", "serverTool", "arguments", "hints", "undo"?}`` for MCP tools (``hints``:
        those the server gives of ``readOnlyHint``, ``destructiveHint`` and
        ``openWorldHint``; ``undo``: :data:`UNDO_LINE` unless ``readOnlyHint`` is true);
        ``{"kind": "tool", "tool", "arguments"}`` otherwise.

    Raises:
        ToolError: a file tool's plan failed (``no_match``, ``not_found``, ``exists``, …):
            there is nothing the user could approve (the scheduler ends the call ``errored``).
            Any other exception of the plan propagates too; nothing else raises.
    """
    if isinstance(tool, McpTool):
        return _mcp_subject(tool, args)
    if isinstance(tool, FileTool):
        change = await tool.plan(args, ctx)
        added, removed = diff_stats(change.diff)
        subject: dict[str, Any] = {"kind": "edit", "tool": tool.name, "path": change.rel, "diff": change.diff,
                                   "diffstat": {"added": added, "removed": removed}}
        if "new_path" in change.data:
            subject["new_path"] = change.data["new_path"]
        if tool.reviews_hunks and (hunks := split_hunks(change.diff)):
            subject["hunks"] = hunks
        return subject
    try:
        if callable(getattr(tool, "git_argv", None)):
            return await _git_subject(tool, args, ctx)
    except Exception:  # noqa: BLE001 - a subject must always be produced
        log.exception("the approval subject of %s fell back to its arguments", tool.name)
    return plain_subject(tool, args)


async def _git_subject(tool: Any, args: BaseModel, ctx: ToolContext) -> dict[str, Any]:
    """``{"kind": "git", "tool", "argv", "command", "cwd", "files"?, "diffstat"?}``: the hardened argv
    that runs, the command as a person types it, and what it changes (left out when git cannot
    tell: not a repository, a path refused; the call then fails as it runs)."""
    # Each argument as it reads: control, bidi and invisible characters and bytes that
    # are not UTF-8 in git's quoted form, so the prompt never shows a misleading path.
    shown = [display_name(a) for a in tool.git_argv(args)]
    subject = {"kind": "git", "tool": tool.name, "argv": shown, "command": command_line(tool.git_command(args)),
               "cwd": display_name(str(ctx.root))}
    if tool.read_only:
        return subject
    try:
        files = await touched_files(tool.name, args, ctx)
    except ToolError:
        return subject
    subject["files"] = files[:FILES_LIMIT]
    subject["diffstat"] = diffstat(files)
    return subject


def plain_subject(tool: Tool, args: BaseModel) -> dict[str, Any]:
    """``{"kind": "tool", "tool", "arguments"}``: a call shown by its arguments. Never raises."""
    try:
        arguments = _arguments(args)
    except Exception:  # noqa: BLE001
        arguments = {}
    return {"kind": "tool", "tool": tool.name, "arguments": arguments}


def _mcp_subject(tool: McpTool, args: BaseModel) -> dict[str, Any]:
    """The approval of an MCP call: what runs where, the server's hints, and that it cannot be undone."""
    hints = {key: value for key in _HINTS if (value := tool.hint(key)) is not None}
    subject: dict[str, Any] = {"kind": "mcp", "tool": tool.name, "server": tool.server, "serverTool": tool.original,
                               "arguments": getattr(args, "arguments", {}), "hints": hints}
    if hints.get("readOnlyHint") is not True:
        subject["undo"] = UNDO_LINE
    return subject
