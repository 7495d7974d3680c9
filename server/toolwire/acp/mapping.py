"""Toolwire's tool calls, stop reasons and permission options in ACP's terms.

Pure functions from the agent's typed tool-call snapshots
(:class:`toolwire.agent.events.CallSnapshot`) to the ACP SDK's schema models. The rules, each documented in
protocol.md ("Agent Client Protocol front-end"):

* Status: ``generating``/``generated`` → ``pending``, ``calling`` →
  ``in_progress``, ``done`` → ``completed``, ``errored`` and ``canceled`` →
  ``failed``. ACP v1 has no cancelled status (schema ``ToolCallStatus``), so a
  canceled call says so in its content (``Canceled: …``) and in ``rawOutput``
  (``{"canceled": true, "cancelReason": …}``), while a failure carries
  ``{"error": {"code", "message"}}``.
* Kind: from the tool (``read_file`` → ``read``, edits → ``edit``, …), ``other``
  for provider-executed calls and unknown tools, and for MCP tools (``read`` for one its server
  marks ``readOnlyHint``).
* Locations: the real file's absolute path and, once known, the first changed line.
* Content: edits carry ACP ``diff`` content built from the unified diff's hunks; an MCP
  tool's images are ``image`` content after its text.
* Paths (:mod:`toolwire.workspace.shown_paths`): titles show them in display form, as
  the approval subject does; locations and diff contents carry the real file's
  absolute path. Other text shown to the user (tool names, result and error text,
  the subject's text) is in display form too
  (:func:`toolwire.workspace.names.display_text`); ``rawInput``/``rawOutput`` and a
  diff's old and new text stay exact.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    ImageContentBlock,
    PermissionOption,
    TextContentBlock,
    ToolCallLocation,
)

from toolwire.agent.events import (IRREVERSIBLE_PREFIX, CallSnapshot, always_name, excluded_notice, git_summary,
                                   mcp_hints_notice)
from toolwire.mcp.naming import PREFIX as MCP_PREFIX
from toolwire.workspace.names import display_name, display_text
from toolwire.workspace.shown_paths import CallPath, subject_file

#: Resolves a path argument as the tools do (:func:`toolwire.workspace.shown_paths.call_path` on the session's folder).
Resolver = Callable[[str], CallPath]

#: Toolwire status → ACP ``ToolCallStatus``.
STATUS = {
    "generating": "pending",
    "generated": "pending",
    "calling": "in_progress",
    "done": "completed",
    "errored": "failed",
    "canceled": "failed",
}

#: Tool name → ACP ``ToolKind``.
KIND = {
    "read_file": "read",
    "list_files": "search",
    "search_files": "search",
    "create_file": "edit",
    "edit_file": "edit",
    "multi_edit": "edit",
    "delete_file": "delete",
    "rename_file": "move",
    "git_status": "read",
    "git_diff": "read",
    "git_log": "search",
    "git_show": "read",
    "git_add": "execute",
    "git_restore": "execute",
    "git_commit": "execute",
    "git_branch": "execute",
    "update_plan": "think",  # its plan is sent as a ``plan`` update too
    # the editor tools: never offered over ACP (its clients have no toolwire/editor/* methods); kinds kept
    "get_diagnostics": "read",
    "search_symbols": "search",
    "find_symbol": "search",
}

#: Toolwire stop reasons ACP has too (schema ``StopReason``); the others are mapped
#: in :func:`stop_reason`.
STOP_REASONS = {"end_turn", "max_tokens", "max_turn_requests", "cancelled"}

#: Cancel reasons in words, for the content of a canceled call.
CANCEL_WORDS = {
    "rejected": "rejected by the user",
    "turn_cancelled": "the turn was cancelled",
    "call_cancelled": "the call was cancelled",
    "policy_denied": "denied by the permission policy",
    "timeout": "timed out",
    "shutdown": "the agent is shutting down",
}

#: ACP permission options offered for every request, mapped to Toolwire's answers.
PERMISSION_OPTIONS = [
    PermissionOption(option_id="allow_once", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="allow_always", name="Allow always (this session)", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]

def permission_options(subject: dict[str, Any], ids: tuple[str, ...]) -> list[PermissionOption]:
    """The options of a question about ``subject`` (those of ``ids``), ``allow_always`` quoting a
    git command (``Allow always (this session): git add -- a.py``)."""
    return [option.model_copy(update={"name": always_name(subject, option.name)})
            if option.option_id == "allow_always" else option
            for option in PERMISSION_OPTIONS if option.option_id in ids]


#: Characters of a tool result shown as content (the model still gets its own limit).
CONTENT_LIMIT = 20_000

_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def stop_reason(toolwire_reason: str) -> str:
    """ACP's stop reason for a Toolwire one.

    ``repeated_tool_failure`` ends the turn normally (``end_turn``; the message is
    sent as agent text first). ``error`` has no ACP stop reason: the front-end
    answers the prompt with a JSON-RPC error instead.
    """
    return toolwire_reason if toolwire_reason in STOP_REASONS else "end_turn"


def tool_kind(call: CallSnapshot, read_only: Callable[[str], bool] = lambda name: False) -> str:
    """ACP ``ToolKind`` of a call (``other`` for provider-executed and unknown tools, and for an
    MCP tool unless ``read_only`` says its server marks it ``readOnlyHint``: then ``read``)."""
    if call.kind != "function":
        return "other"
    if call.name.startswith(MCP_PREFIX):
        return "read" if read_only(call.name) else "other"
    return KIND.get(call.name, "other")


def title(call: CallSnapshot, resolve: Resolver) -> str:
    """A one-line title: the tool name and its path, e.g. ``edit_file src/a.py``.

    The path is the one the tool resolves, in display form (``edit_file
    "invoice\\342\\200\\256fdp.exe"``, as the approval subject shows it); the
    tool name is in display form too (a model may name any tool). While the
    arguments stream, the bounded preview stands for them.
    """
    name = display_text(call.name or "tool call")
    final = call.arguments
    args = final or call.preview or {}
    path = call.path
    if call.name == "rename_file" and isinstance(args, dict) and isinstance(args.get("new_path"), str):
        # a path still streaming is shown as written so far (display form), resolved once complete
        source = path or args.get("path")
        shown = "" if not isinstance(source, str) or not source else \
            resolve(source).shown if path or final else display_name(source)
        target = resolve(args["new_path"]).shown if final else display_name(args["new_path"])
        return f"{name} {shown} → {target}"
    if path:
        return f"{name} {resolve(path).shown}"
    if call.kind != "function":
        return f"{name} (run by the provider)"
    return name


def first_changed_line(diff: str) -> int | None:
    """The 0-based line of the first change in a unified diff (new side), or None."""
    for line in diff.split("\n"):  # a diff line ends with LF only; U+2028 & co. are content
        match = _HUNK.match(line)
        if match:
            return max(0, int(match.group(2)) - 1)
    return None


def locations(call: CallSnapshot, resolve: Resolver, diff: str | None = None) -> list[ToolCallLocation]:
    """The files a call touches: its path, the real file's absolute path, with the first
    changed line when known; none for a path the tools refuse."""
    path = call.path
    file = resolve(path).file if path else None
    if file is None:
        return []
    line = first_changed_line(diff) if diff else None
    return [ToolCallLocation(path=str(file), line=line)]


def diff_content(path: Path, diff: str) -> FileEditToolCallContent | None:
    """ACP ``diff`` content from a unified diff: old and new text of its hunks
    (context lines on both sides), or None when the diff has no hunk."""
    old: list[str] = []
    new: list[str] = []
    seen = False
    for line in diff.split("\n"):  # a diff line ends with LF only; U+2028 & co. are content
        if line.startswith("@@"):
            if seen:
                old.append("…")
                new.append("…")
            seen = True
            continue
        if not seen or line.startswith("\\"):
            continue
        tag, text = line[:1], line[1:]
        if tag in (" ", "-"):
            old.append(text)
        if tag in (" ", "+"):
            new.append(text)
    if not seen:
        return None
    created = any(line.startswith("--- /dev/null") for line in diff.split("\n")[:3])
    return FileEditToolCallContent(type="diff", path=str(path), old_text=None if created else "\n".join(old),
                                   new_text="\n".join(new))


def text_content(text: str) -> ContentToolCallContent:
    """ACP ``content`` holding one text block (cut at :data:`CONTENT_LIMIT` characters), in
    display form: line breaks and tabs kept, every other control, bidirectional or
    invisible character shown as an escape."""
    if len(text) > CONTENT_LIMIT:
        text = text[:CONTENT_LIMIT] + f"\n… [{len(text) - CONTENT_LIMIT} more characters]"
    return ContentToolCallContent(type="content",
                                  content=TextContentBlock(type="text", text=display_text(text, keep="\n\t")))


def outcome(call: CallSnapshot, resolve: Resolver) -> tuple[list[Any], Any]:
    """``(content, rawOutput)`` of a call that reached a terminal status.

    * ``done``: the result text, plus a diff for edits; raw output ``{"ok": true, "data"}``.
    * ``errored``: ``Error (code): message``; raw output ``{"error": {...}}``.
    * ``canceled``: ``Canceled: <why>`` (and the user's reason); raw output
      ``{"canceled": true, "cancelReason", "reason"?}`` — never confused with a failure.
    """
    status = call.status.value
    result = call.result or {}
    if status == "canceled":
        reason = call.cancel_reason.value if call.cancel_reason is not None else "call_cancelled"
        words = CANCEL_WORDS.get(reason, reason)
        user_reason = result.get("reason") if isinstance(result, dict) else None
        text = f"Canceled: {words}" + (f" ({user_reason})" if user_reason else "")
        raw: dict[str, Any] = {"canceled": True, "cancelReason": reason}
        if user_reason:
            raw["reason"] = user_reason
        return [text_content(text)], raw
    if status == "errored":
        error = call.error.to_wire() if call.error is not None else {"code": "tool_failed", "message": "failed"}
        return [text_content(f"Error ({error.get('code')}): {error.get('message')}")], {"error": error}
    content: list[Any] = []
    data = result.get("data") if isinstance(result, dict) else None
    diff = data.get("diff") if isinstance(data, dict) else None
    file = resolve(call.path).file if call.path else None
    if isinstance(diff, str) and file is not None:
        block = diff_content(file, diff)
        if block is not None:
            content.append(block)
    text = result.get("content") if isinstance(result, dict) else None
    if isinstance(text, str) and text:
        content.append(text_content(text))
    content.extend(image_contents(data))
    return content, {"ok": True, "data": data}


#: The image types a call's content shows (those an MCP result's card data carries bytes of).
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


def image_contents(data: Any) -> list[ContentToolCallContent]:
    """ACP ``image`` content for each image an MCP tool returned (``data.content`` blocks of type
    ``image`` that carry their base64 ``data``, of :data:`IMAGE_TYPES`), in order."""
    blocks = data.get("content") if isinstance(data, dict) else None
    out: list[ContentToolCallContent] = []
    for block in blocks if isinstance(blocks, list) else []:
        if (isinstance(block, dict) and block.get("type") == "image" and block.get("mimeType") in IMAGE_TYPES
                and isinstance(block.get("data"), str)):
            out.append(ContentToolCallContent(type="content", content=ImageContentBlock(
                type="image", data=block["data"], mime_type=block["mimeType"])))
    return out


def result_diff(call: CallSnapshot) -> str | None:
    """The unified diff in a call's result data, if any."""
    result = call.result or {}
    data = result.get("data") if isinstance(result, dict) else None
    diff = data.get("diff") if isinstance(data, dict) else None
    return diff if isinstance(diff, str) else None


def subject_content(subject: dict[str, Any], root: Path) -> list[Any]:
    """The content shown with a permission request: the exact diff of an edit, the git
    command line, or the arguments (for an MCP tool after the line naming its server and the
    line of its hints).

    The subject's ``path`` is in display form; the diff names the file it stands for
    (:func:`toolwire.workspace.shown_paths.subject_file`)."""
    kind = subject.get("kind")
    if kind == "edit" and isinstance(subject.get("diff"), str) and subject.get("path"):
        file = subject_file(root, subject["path"])
        block = diff_content(file, subject["diff"]) if file is not None else None
        out: list[Any] = [block] if block is not None else []
        out.append(text_content(subject["diff"] or "(no change)"))
        return out
    if kind == "git":
        command = subject.get("command") or " ".join(_quote(a) for a in subject.get("argv") or [])
        files = git_summary(subject)
        return [text_content(f"$ {command}\n(in {subject.get('cwd')})" + (f"\n{files}" if files else ""))]
    arguments = json.dumps(subject.get("arguments", subject), ensure_ascii=False, indent=2)
    if kind == "mcp":
        hints = mcp_hints_notice(subject)
        origin = f"{subject.get('tool')}: {subject.get('serverTool')} from the MCP server {subject.get('server')}"
        return [text_content("\n".join([origin, *([hints] if hints else []), arguments]))]
    return [text_content(arguments)]


def with_warning(subject: dict[str, Any], content: list[Any]) -> list[Any]:
    """``content`` opened by "This change cannot be undone: <reason>" when the subject is
    marked irreversible (protocol.md, "Permission"), by "Toolwire cannot undo what this tool
    does" for an MCP tool not marked read-only (the subject's ``undo``), and by "Kept from the
    model (modelExclude): <path> (pattern '<pattern>')…" when it names files kept from the
    model; else as it is."""
    irreversible = subject.get("irreversible")
    if isinstance(irreversible, dict):
        content = [text_content(f"{IRREVERSIBLE_PREFIX}{irreversible.get('reason')}"), *content]
    if subject.get("kind") == "mcp" and isinstance(subject.get("undo"), str):
        content = [text_content(subject["undo"]), *content]
    kept = excluded_notice(subject)
    return [text_content(kept), *content] if kept else content


def _quote(arg: str) -> str:
    return shlex.quote(str(arg))
