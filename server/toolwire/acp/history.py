"""A session's history as ACP updates, for ``session/load``."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from toolwire.acp import mapping
from toolwire.agent.events import CallSnapshot
from toolwire.workspace.names import display_text
from toolwire.workspace.shown_paths import call_path

#: Result texts that mean the call did not run (see protocol.md, "Results sent back to the model").
_NOT_RUN = ("The user rejected this tool call.", "Canceled by the user.")


def replay_history(messages: list[dict[str, Any]], root: Path,
                   read_only: Callable[[str], bool] = lambda name: False) -> list[Any]:
    """The updates that tell a client the whole conversation again.

    Args:
        messages: The conversation in OpenAI Chat Completions shape (system, user,
            assistant with ``tool_calls``, tool results by ``tool_call_id``), as
            :meth:`Conversation.shown` gives it: a user message's ``userText`` is shown, a
            ``toolImages`` message (the images of tool calls, for the model) is not.
        root: The workspace folder (locations are absolute).
        read_only: Whether the MCP tool of a name is marked ``readOnlyHint`` (the calls' kind,
            :func:`toolwire.acp.mapping.tool_kind`).

    Returns:
        ``user_message_chunk`` and ``agent_message_chunk`` for the texts, a
        ``tool_call`` for each call and a ``tool_call_update`` with its outcome
        (``completed``, or ``failed`` for errors and calls that did not run).
    """
    updates: list[Any] = []
    for message in messages:
        role = message.get("role")
        if role == "user" and message.get("toolImages"):
            continue  # the images of tool calls, shown to the model: not the user's message
        content = message.get("content")
        text = content if isinstance(content, str) else _joined(content)
        shown = display_text(text, keep="\n\t")  # as the live updates show it
        if role == "user" and isinstance(message.get("userText"), str):  # what the user typed, not the notes
            shown = display_text(message["userText"], keep="\n\t")
        if role == "user" and shown:
            updates.append(UserMessageChunk(session_update="user_message_chunk",
                                            content=TextContentBlock(type="text", text=shown)))
        elif role == "assistant":
            if text:
                updates.append(AgentMessageChunk(session_update="agent_message_chunk",
                                                 content=TextContentBlock(type="text", text=shown)))
            for tool_call in message.get("tool_calls") or []:
                function = tool_call.get("function") or {}
                try:
                    arguments = json.loads(function.get("arguments") or "{}")
                except ValueError:
                    arguments = None
                args = arguments if isinstance(arguments, dict) else {}
                path = next((args[k] for k in ("path", "file_path", "filepath", "file") if isinstance(args.get(k), str)),
                            None)
                call = CallSnapshot(name=function.get("name") or "", arguments=args, path=path)
                resolve = functools.partial(call_path, root)
                updates.append(ToolCallStart(
                    session_update="tool_call", tool_call_id=tool_call.get("id") or "",
                    title=mapping.title(call, resolve), kind=mapping.tool_kind(call, read_only), status="pending",
                    raw_input=arguments, locations=mapping.locations(call, resolve)))
        elif role == "tool" and message.get("tool_call_id"):
            failed = text.startswith("Error (") or text.startswith(_NOT_RUN)
            updates.append(ToolCallProgress(
                session_update="tool_call_update", tool_call_id=message["tool_call_id"],
                status="failed" if failed else "completed", content=[mapping.text_content(text)]))
    return updates


def _joined(content: Any) -> str:
    """Text of a content list (``[{"type": "text", "text"}]``), else ``""``."""
    if not isinstance(content, list):
        return ""
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))
