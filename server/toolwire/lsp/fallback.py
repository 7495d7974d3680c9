"""Approval for LSP clients that do not implement ``toolwire/session/requestPermission``.

When the client answers that request with MethodNotFound (any editor without
Toolwire's panel), the server asks with the standard ``window/showMessageRequest``
instead: the message names the tool and shows what it will do (the edit's diff,
the git command line, or the arguments, cut at :data:`MAX_SUBJECT` characters), and
the actions are "Allow once", "Allow always" (for git, quoting the command: "Allow always:
git add -- a.py") and "Reject". No answer (the user
dismissed it) counts as a rejection. A change that cannot be undone opens with
"This change cannot be undone: <reason>". The text is in display form
(:func:`toolwire.workspace.names.display_text`: control, bidirectional and invisible
characters as escapes). A client that knows neither method
(MethodNotFound again) answers no question: the answer is ``unavailable``.
"""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

import anyio
from lsprotocol import types
from pygls.exceptions import JsonRpcMethodNotFound

from toolwire.agent.events import PermissionAnswer
from toolwire.agent.events import IRREVERSIBLE_PREFIX, always_name, excluded_notice, git_summary, offered
from toolwire.rpc.protocol import Peer
from toolwire.workspace.names import display_text

log = logging.getLogger(__name__)

#: Characters of the subject shown in the message.
MAX_SUBJECT = 3000

_ACTIONS = {"Allow once": "allow_once", "Allow always": "allow_always", "Reject": "reject"}


def subject_text(call: dict[str, Any], subject: dict[str, Any]) -> str:
    """The question: ``Toolwire wants to run edit_file on a.py:`` and what it will do."""
    name = call.get("name") or subject.get("tool") or "a tool"
    target = f" on {subject['path']}" if subject.get("path") else ""
    if subject.get("kind") == "edit":
        body = subject.get("diff") or ""
    elif subject.get("kind") == "git":
        files = git_summary(subject)
        body = str(subject.get("command") or " ".join(subject.get("argv") or [])) + f"\n(in {subject.get('cwd')})"
        body += f"\n{files}" if files else ""
    else:
        body = json.dumps(subject.get("arguments"), ensure_ascii=False, indent=1)
    if len(body) > MAX_SUBJECT:
        body = body[:MAX_SUBJECT] + f"\n… ({len(body) - MAX_SUBJECT} more characters)"
    irreversible = subject.get("irreversible")
    warning = f"{IRREVERSIBLE_PREFIX}{irreversible.get('reason')}\n" if isinstance(irreversible, dict) else ""
    kept = excluded_notice(subject)
    warning = f"{kept}\n{warning}" if kept else warning
    # in display form, as toolwire run asks: the diff's added lines are the model's text
    return display_text(f"{warning}Toolwire wants to run {name}{target}:\n{body}", keep="\n\t")


async def ask_with_message_request(client: Peer, call: dict[str, Any], subject: dict[str, Any]) -> PermissionAnswer:
    """Ask through ``window/showMessageRequest``; ``cancelled`` when the client cannot answer.

    Args:
        client: The connection to ask on (the server's protocol object of the moment).
        call: The call's ``toolCall`` brief.
        subject: What the call will do (the permission request's ``subject``).

    Cancellation of the caller withdraws the request (``$/cancelRequest``).
    """
    titles = {always_name(subject, title) if option == "allow_always" else title: option
              for title, option in _ACTIONS.items() if option in offered(subject)}
    params = types.ShowMessageRequestParams(
        type=types.MessageType.Warning, message=subject_text(call, subject),
        actions=[types.MessageActionItem(title=title) for title in titles])
    msg_id = f"ask-{uuid.uuid4().hex[:12]}"
    try:
        answer = await client.send_request_async(types.WINDOW_SHOW_MESSAGE_REQUEST, params, msg_id=msg_id)
    except anyio.get_cancelled_exc_class():  # the call or turn was cancelled: withdraw the question
        client.withdraw(msg_id)
        raise
    except JsonRpcMethodNotFound:  # the client answers no question at all
        log.warning("the client knows neither toolwire/session/requestPermission nor window/showMessageRequest")
        return PermissionAnswer("unavailable")
    except Exception as exc:  # noqa: BLE001 - the client could not answer: not approved
        log.warning("window/showMessageRequest failed: %s", exc)
        return PermissionAnswer("cancelled")
    title = getattr(answer, "title", None) if answer is not None else None
    if isinstance(answer, dict):
        title = answer.get("title")
    option = titles.get(title or "")
    return PermissionAnswer(option) if option else PermissionAnswer("cancelled")  # type: ignore[arg-type]
