"""Adapters from the agent's interfaces to the editor over LSP.

* :class:`LspSink` — agent events → ``toolwire/session/update`` notifications, in order.
* :class:`LspApprover` — permission requests → ``toolwire/session/requestPermission``;
  a cancelled ask is withdrawn with ``$/cancelRequest``.

Both reach the client through whichever connection the server has at the moment
(clients come and go over ``--socket``): they are given the server as the narrow
:class:`UpdateChannel` and :class:`ApprovalChannel`, never more of it.

Open buffers and edits through ``workspace/applyEdit`` live in :mod:`toolwire.lsp.documents`.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from pydantic import ValidationError
from pygls.exceptions import JsonRpcMethodNotFound

from toolwire.agent.events import (AgentEvent, CallSnapshot, HunkAnswer, PermissionAnswer, ToolCallChanged, TurnUpdate, UsageUpdate,
                                   always_name, offered)
from toolwire.lsp.call_wire import snapshot_form
from toolwire.lsp.protocol import (
    PERMISSION_OPTIONS,
    REQUEST_PERMISSION,
    SESSION_UPDATE,
    RequestPermissionResult,
    update_payload,
)
from toolwire.lsp.fallback import ask_with_message_request
from toolwire.rpc.errors import ClientGone
from toolwire.rpc.protocol import Peer

if TYPE_CHECKING:
    from toolwire.lsp.progress import LongTools
    from toolwire.redaction import Redactor

log = logging.getLogger(__name__)


class UpdateChannel(Protocol):
    """What :class:`LspSink` needs of the server."""

    @property
    def protocol(self) -> Peer:
        """The connection of the moment (replaced when a client reconnects)."""

    @property
    def redactor(self) -> "Redactor":
        """Keeps the secrets the server was given out of what it sends."""


class ClientWait(Protocol):
    """Waits for a client to come back (:class:`toolwire.lsp.persist.ClientLink`)."""

    async def wait_ready(self, session_id: str) -> bool:
        """True once an initialized client is connected; False at once when none can come back."""


class ApprovalChannel(Protocol):
    """What :class:`LspApprover` needs of the server.

    Attributes:
        permission_fallback: The client does not know ``toolwire/session/requestPermission``:
            ask with ``window/showMessageRequest`` (set here on the first MethodNotFound).
        pending_permissions: Per session id, the open requests' params by request id
            (``toolwire/session/snapshot`` lists them).
    """

    permission_fallback: bool
    pending_permissions: dict[str, dict[str, dict[str, Any]]]

    @property
    def protocol(self) -> Peer:
        """The connection of the moment (replaced when a client reconnects)."""

    @property
    def link(self) -> ClientWait:
        """Whether a client is connected, to wait for the next one."""

class LspSink:
    """Sends each agent event of one session as a ``toolwire/session/update`` notification.

    Args:
        server: The server, as far as sending updates goes.
        session_id: The session the updates belong to.
        stream_id: For client-fed streams, added to each notification as ``streamId``.
        long_tools: Given tool-call updates, to report long-running tools as work-done progress.
    """

    def __init__(self, server: UpdateChannel, session_id: str, stream_id: str | None = None,
                 long_tools: "LongTools | None" = None) -> None:
        self._server = server
        self._long_tools = long_tools
        self._params: dict[str, Any] = {"sessionId": session_id}
        if stream_id is not None:
            self._params["streamId"] = stream_id

    def emit(self, event: AgentEvent) -> None:
        """Send one update (notifications keep the order of the calls). The usage update after
        each model request is not sent (the LSP wire has the turn's usage once, at its end)."""
        if type(event) is UsageUpdate and event.context_used is not None:
            return
        update = update_payload(event)
        if type(event) is TurnUpdate and event.message:  # model errors may quote a key
            update["message"] = self._server.redactor.redact(event.message)
        self._server.protocol.notify(SESSION_UPDATE, {**self._params, "update": update})
        if self._long_tools is not None and type(event) is ToolCallChanged:
            self._long_tools.seen(event.call)


class LspApprover:
    """Asks the client through ``toolwire/session/requestPermission``; a client that
    does not know that method is asked with ``window/showMessageRequest`` from then on
    (:mod:`toolwire.lsp.fallback`). When the client disconnects before answering
    (``--socket``), the same request is sent to the next client once it is ready."""

    def __init__(self, server: ApprovalChannel, session_id: str) -> None:
        self._server = server
        self._session_id = session_id

    async def request_permission(self, snapshot: CallSnapshot, subject: dict[str, Any]) -> PermissionAnswer:
        """Ask and wait (``toolCall`` is the call's full snapshot). Returns ``cancelled`` when
        the client errs or answers nonsense.

        Cancellation of the caller sends ``$/cancelRequest`` for the pending request.
        """
        call = snapshot_form(snapshot)
        if self._server.permission_fallback:
            return await ask_with_message_request(self._server.protocol, call, subject)
        msg_id = f"perm-{uuid.uuid4().hex[:12]}"
        params = {
            "sessionId": self._session_id,
            "toolCall": call,
            "subject": subject,
            "options": [{**option.dump(), "name": always_name(subject, option.name)} if option.option_id == "allow_always"
                        else option.dump() for option in PERMISSION_OPTIONS if option.option_id in offered(subject)],
        }
        open_requests = self._server.pending_permissions.setdefault(self._session_id, {})
        open_requests[msg_id] = params  # shown by toolwire/session/snapshot until answered
        try:
            while True:
                protocol = self._server.protocol
                try:
                    raw = await protocol.send_request_async(REQUEST_PERMISSION, params, msg_id=msg_id)
                    break
                except ClientGone:  # --socket: ask the next client, with the same id
                    if not await self._server.link.wait_ready(self._session_id):
                        return PermissionAnswer("unavailable")  # no client will come to answer
                    log.info("permission request %s sent again to the reconnected client", msg_id)
        except anyio.get_cancelled_exc_class():
            self._server.protocol.withdraw(msg_id)
            raise
        except JsonRpcMethodNotFound:  # an LSP client without Toolwire's panel
            open_requests.pop(msg_id, None)
            self._server.permission_fallback = True
            return await ask_with_message_request(self._server.protocol, call, subject)
        except Exception as exc:  # the client answered with an error
            log.warning("permission request failed: %s", exc)
            return PermissionAnswer("cancelled")
        finally:
            open_requests.pop(msg_id, None)
        try:
            outcome = RequestPermissionResult.model_validate(raw).outcome
        except ValidationError as exc:
            log.warning("malformed permission answer %r: %s", raw, exc)
            return PermissionAnswer("cancelled")
        if outcome.outcome == "cancelled":
            return PermissionAnswer("cancelled")
        option = {"allow_once": "allow_once", "allow_always": "allow_always", "reject": "reject"}.get(
            outcome.option_id or "", "reject"
        )
        if outcome.hunks is None:
            return PermissionAnswer(option, outcome.reason)  # type: ignore[arg-type]
        hunks = hunk_answers(subject, option, outcome.hunks)
        if hunks is None:
            log.warning("malformed per-hunk permission answer %r", raw)
            return PermissionAnswer("cancelled")
        return PermissionAnswer(option, outcome.reason, hunks)  # type: ignore[arg-type]


def hunk_answers(subject: dict[str, Any], option: str, answers: list[Any]) -> tuple[HunkAnswer, ...] | None:
    """The per-hunk answer checked against the subject, or None when it is malformed: the
    subject has no ``hunks``, the option is not an allow, an index is not one of the
    subject's, a hunk is answered twice or not at all."""
    hunks = subject.get("hunks")
    if not isinstance(hunks, list) or not hunks or option not in ("allow_once", "allow_always"):
        return None
    indexes = [a.index for a in answers]
    if sorted(indexes) != list(range(len(hunks))):
        return None
    return tuple(HunkAnswer(a.index, a.accepted, a.reason or None) for a in sorted(answers, key=lambda a: a.index))
