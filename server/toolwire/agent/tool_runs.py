"""One approved tool run and what comes of it, for the scheduler (:mod:`toolwire.agent.scheduler`):
the tool between its checkpoints (:func:`checkpointed`; an MCP tool outside them, its call noted in
the turn's record), under its timeout with every failure a result (:func:`invoke`), the opt-in
tool-call log (:func:`log_call`), and the tool message the model receives for a finished call
(:func:`model_result_text`)."""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import anyio

from toolwire.agent.checkpoint_records import McpCall
from toolwire.agent.checkpoints import Checkpointer
from toolwire.agent.conversation import MISSING_RESULT
from toolwire.agent.images import image_input
from toolwire.agent.session import Session
from toolwire.mcp.tool import CALL_TIMEOUT, IMAGE_INPUT, McpTool
from toolwire.streaming.state import CancelReason, Status, ToolCallState
from toolwire.tools.base import Tool, ToolError, ToolResult
from toolwire.tools.fitting import truncate_for_model
from toolwire.tools.target import EDITOR_WAIT, HUNK_ANSWERS
from toolwire.workspace.errors import tool_error_in

__all__ = ["checkpointed", "invoke", "log_call", "model_result_text"]

log = logging.getLogger(__name__)

_CANCEL_TEXT = {
    CancelReason.REJECTED: "The user rejected this tool call.",
    CancelReason.TURN_CANCELLED: "Canceled by the user: the turn was stopped before this call finished.",
    CancelReason.CALL_CANCELLED: "Canceled by the user.",
    CancelReason.POLICY_DENIED: "Denied by the permission policy: this tool may not run here.",
    CancelReason.TIMEOUT: "Canceled: the tool call timed out.",
    CancelReason.SHUTDOWN: "Canceled: the server stopped.",
}


def model_result_text(call: ToolCallState, limit: int) -> str:
    """The tool message the model receives for ``call`` (exactly one per call).

    Args:
        call: A call in a terminal status.
        limit: Maximum characters (see :func:`truncate_for_model`).
    """
    if call.status is Status.CANCELED:
        text = _CANCEL_TEXT.get(call.cancel_reason or CancelReason.CALL_CANCELLED, "Canceled.")
        reason = (call.result or {}).get("reason") if isinstance(call.result, dict) else None
        if reason:
            text += f" Reason: {reason}"
        note = (call.result or {}).get("withheld") if isinstance(call.result, dict) else None
        if note:
            text += f" {note}"
        return text
    result = call.result if isinstance(call.result, dict) else None
    if result is not None and "content" in result:
        text = truncate_for_model(str(result["content"]), limit)
        rules = result.get("instructions")  # project rules: bounded on their own, never cut here
        return f"{text}\n\n{rules}" if rules else text
    if call.error is not None:
        return f"Error ({call.error.code}): {call.error.message}"
    return MISSING_RESULT


async def checkpointed(session: Session, checkpointer: Checkpointer | None, tool: Tool, args: Any, strict: bool = True,
                       allowed: frozenset[Path] = frozenset(), call_id: str | None = None,
                       hunks: list[dict[str, Any]] | None = None) -> ToolResult:
    """Run the tool; a writing tool of a turn runs between its checkpoints
    (:mod:`toolwire.agent.checkpoints`), the second one shielded from cancellation.
    ``strict``: a prior state that cannot be recorded stops the call before the tool
    runs (``not_undoable``, raised to the scheduler's ``_run_one``). ``allowed``: the excluded files
    the user allowed this call to show (:mod:`toolwire.agent.exclusion`). An MCP tool's call
    (``call_id``) takes no checkpoint: what its server does is outside them (:func:`_mcp_call`).
    ``hunks``: the user's answer per hunk of an edit they accepted in part (:data:`HUNK_ANSWERS`)."""
    if isinstance(tool, McpTool):
        return await _mcp_call(session, checkpointer, tool, args, call_id)
    if checkpointer is None or tool.read_only:
        return await invoke(session, tool, args, allowed, hunks)
    step = await checkpointer.before(tool, args, strict=strict)
    result: ToolResult | None = None
    try:
        result = await invoke(session, tool, args, allowed, hunks)
        return result
    finally:
        with anyio.CancelScope(shield=True):
            await checkpointer.after(step, result)


async def _mcp_call(session: Session, checkpointer: Checkpointer | None, tool: McpTool, args: Any,
                    call_id: str | None) -> ToolResult:
    """Run an MCP tool's call (:func:`invoke`); in a turn, one whose tool is not marked
    ``readOnlyHint`` is noted in the turn's record before it is sent (an undo names it as not
    undone) and forgotten again when it never reached its server (``mcp_server_unavailable``)."""
    noted = None
    if checkpointer is not None and call_id is not None and (tool.annotations or {}).get("readOnlyHint") is not True:
        noted = McpCall(call_id=call_id, tool=tool.name)
        checkpointer.record.mcp_calls.append(noted)
        checkpointer.save()
    result = await invoke(session, tool, args)
    if noted is not None and result.error_code == "mcp_server_unavailable":
        checkpointer.record.mcp_calls.remove(noted)
        checkpointer.save()
    return result


async def invoke(session: Session, tool: Tool, args: Any, allowed: frozenset[Path] = frozenset(),
                 hunks: list[dict[str, Any]] | None = None) -> ToolResult:
    """Run the tool under its timeout (``tool_timeout``; an MCP tool's ``mcp_call_timeout``, and
    the ``image_input`` setting as it applies now in its context: :func:`toolwire.agent.images.image_input`); every failure becomes a result."""
    settings = session.settings
    ctx = session.tool_context()
    ctx.allowed_excluded = allowed
    if hunks is not None:
        ctx.extra[HUNK_ANSWERS] = hunks
    timeout = settings.tool_timeout
    if isinstance(tool, McpTool):
        timeout = settings.mcp_call_timeout
        ctx.extra |= {CALL_TIMEOUT: timeout, IMAGE_INPUT: image_input(session)}
    try:
        with anyio.fail_after(timeout):
            return await tool.run(args, ctx)
    except ToolError as exc:
        return ToolResult.failure(exc.code, exc.message, exc.data)
    except TimeoutError:
        message = f"{tool.name} did not finish within {timeout:g} s"
        if isinstance(tool, McpTool):
            message += " (the mcpCallTimeout setting); the server was told to cancel the call"
        if unanswered := ctx.extra.get(EDITOR_WAIT):
            message += (f": the editor never answered the edit of {unanswered} (workspace/applyEdit); the request "
                        "was withdrawn but the editor may still apply it, so read the file before changing it again")
        return ToolResult.failure("timeout", message)
    except Exception as exc:  # a tool bug must not escape the loop
        error = tool_error_in(exc)  # a tool's task group failing with tool errors
        if error is not None:
            return ToolResult.failure(error.code, error.message, error.data)
        log.exception("tool %s failed", tool.name)
        return ToolResult.failure("tool_failed", f"{type(exc).__name__}: {exc}")


def log_call(session: Session, call: ToolCallState, tool: Tool, started: float) -> None:
    """Append to the opt-in tool-call log (``Settings.tool_call_log``)."""
    path = session.settings.tool_call_log
    if not path:
        return
    entry = {
        "callId": call.id,
        "tool": tool.name,
        "argumentsSha256": hashlib.sha256(json.dumps(call.arguments, sort_keys=True).encode()).hexdigest(),
        "outcome": call.status.value,
        "durationMs": int((time.monotonic() - started) * 1000),
    }
    try:
        with Path(path).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry) + "\n")
    except OSError as exc:
        log.warning("cannot write the tool-call log %s: %s", path, exc)
