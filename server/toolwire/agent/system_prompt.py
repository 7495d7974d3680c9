"""The base system prompt: what the model is told before any turn.

Written for the model, following the tool-use discipline of issue 21: what the
workspace is, that paths are workspace-relative, look before editing, small exact
edits, tool errors are data to read and fix, nothing committed unless asked, no
shell. A sentence that names tools names only the tools the request offers
(:func:`base_prompt` takes their names), so the prompt never points the model
at a tool it cannot call; a sentence whose tools are all missing keeps its
advice without them.

Other parts compose the whole prompt from this text: the project rules
(``AGENTS.md``) are appended at turn start as a block of their own, after a
blank line. The text depends only on the offered tool names, so it is the same
from turn to turn (prompt caches stay valid).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

#: Every tool name the prompt can mention (``tests/test_system_prompt.py`` checks
#: that each is a tool a session can have: :func:`toolwire.tools.every_tool`).
PROMPT_TOOLS = ("list_files", "search_files", "read_file", "edit_file", "multi_edit", "create_file",
                "git_status", "git_diff", "get_diagnostics", "search_symbols", "find_symbol", "update_plan")


def _named(offered: set[str], *pairs: tuple[str, str]) -> list[str]:
    """``"tool what"`` phrases of the ``(tool, what)`` pairs whose tool is offered."""
    return [f"{name} {what}" for name, what in pairs if name in offered]


def _join(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _look(offered: set[str]) -> str:
    tools = _named(offered, ("list_files", "shows a folder or finds files by name"),
                   ("search_files", "finds text in files"), ("read_file", "reads a file"))
    how = f": {_join(tools)}" if tools else ""
    return (f"- Look before you edit{how}. Do not guess paths or contents; read the part of a file "
            "you change first.")


def _edit(offered: set[str]) -> str:
    small = [name for name in ("edit_file", "multi_edit") if name in offered]
    line = "- Prefer small, exact edits"
    if small:
        line += f" ({' or '.join(small)})"
    line += " over rewriting a whole file"
    if "create_file" in offered:
        line += "; create_file is for new files"
    return line + ". Keep to what the task needs."


def _editor(offered: set[str]) -> list[str]:
    """The editor tools' line (they are offered only when the client can answer them), or none."""
    tools = _named(offered, ("get_diagnostics", "lists the problems they report, errors first"),
                   ("search_symbols", "finds declarations by name"),
                   ("find_symbol", "gives a symbol's definition or references"))
    if not tools:
        return []
    exact = " (exact, unlike a text search)" if {"search_symbols", "find_symbol"} & offered else ""
    return [f"- The editor's language servers help: {_join(tools)}{exact}."]


def _plan(offered: set[str]) -> list[str]:
    """The plan's line when update_plan is offered, else none (without the tool there is no advice to give)."""
    if "update_plan" not in offered:
        return []
    return ["- For a task of several steps, keep a plan with update_plan: make it first, keep one step in "
            "progress, update it as you go."]


def _errors() -> str:
    return ("- A tool that fails returns its error as the call's result: read it, fix the call and try "
            "again; do not repeat a call unchanged. A call the user denies is their answer: do not retry "
            "it; ask or take another way.")


def _git(offered: set[str]) -> str:
    check = [name for name in ("git_status", "git_diff") if name in offered]
    see = f" {' and '.join(check)} show what changed." if check else ""
    return ("- Nothing is committed unless the user asks: do not stage, commit, switch branches or "
            f"discard changes on your own.{see}")


def base_prompt(tool_names: Iterable[str]) -> str:
    """The base system prompt for a request that offers the tools ``tool_names``.

    Args:
        tool_names: Names of the tools the request offers (after any filtering).

    Returns:
        The prompt text (no trailing newline); the same for the same set of names.
    """
    offered = set(tool_names)
    return "\n".join([
        "You are a coding agent working for the user on one workspace folder, usually a git repository. "
        "Files open in the user's editor are read and edited there, unsaved changes included.",
        "",
        "- Paths are relative to the workspace root, with / between folders (src/app.py); nothing "
        "outside the workspace can be reached.",
        _look(offered),
        _edit(offered),
        *_editor(offered),
        *_plan(offered),
        _errors(),
        _git(offered),
        "- You cannot run commands: there is no shell, so no builds, tests or installs. Say what the "
        "user should run instead.",
        "- When you are done, say briefly what you changed and what is left.",
    ])


def offered_names(definitions: list[dict[str, Any]]) -> list[str]:
    """The tool names of OpenAI-style tool definitions (what a request carries)."""
    return [d["function"]["name"] for d in definitions if isinstance(d.get("function"), dict)]


#: The base prompt when every tool it can name is offered.
SYSTEM_PROMPT = base_prompt(PROMPT_TOOLS)
