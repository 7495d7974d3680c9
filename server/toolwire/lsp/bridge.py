"""Adapters from the agent's interfaces to the editor over LSP.

* :class:`LspSink` — agent events → ``toolwire/session/update`` notifications, in order.
* :class:`LspApprover` — permission requests → ``toolwire/session/requestPermission``;
  a cancelled ask is withdrawn with ``$/cancelRequest``.
* :class:`LspDocuments` — open buffers from LSP document sync; edits through
  ``workspace/applyEdit`` with the document's version.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from lsprotocol import types
from pydantic import ValidationError
from pygls.exceptions import JsonRpcMethodNotFound
from pygls.uris import from_fs_path, to_fs_path

from toolwire.agent.events import AgentEvent, PermissionAnswer, ToolCallUpdate, TurnUpdate
from toolwire.lsp.protocol import (
    PERMISSION_OPTIONS,
    REQUEST_PERMISSION,
    SESSION_UPDATE,
    RequestPermissionResult,
    update_payload,
)
from toolwire.lsp.fallback import ask_with_message_request
from toolwire.workspace.documents import OpenDocument

if TYPE_CHECKING:
    from toolwire.lsp.progress import LongTools
    from toolwire.lsp.server import ToolwireServer

log = logging.getLogger(__name__)

#: Seconds to wait for the editor's answer to ``workspace/applyEdit``.
APPLY_EDIT_TIMEOUT = 30.0


class LspSink:
    """Sends each agent event of one session as a ``toolwire/session/update`` notification.

    Args:
        server: The server.
        session_id: The session the updates belong to.
        stream_id: For client-fed streams, added to each notification as ``streamId``.
        long_tools: Given tool-call updates, to report long-running tools as work-done progress.
    """

    def __init__(self, server: "ToolwireServer", session_id: str, stream_id: str | None = None,
                 long_tools: "LongTools | None" = None) -> None:
        self._server = server
        self._long_tools = long_tools
        self._params: dict[str, Any] = {"sessionId": session_id}
        if stream_id is not None:
            self._params["streamId"] = stream_id

    def emit(self, event: AgentEvent) -> None:
        """Send one update (notifications keep the order of the calls)."""
        update = update_payload(event)
        if type(event) is TurnUpdate and event.message:  # model errors may quote a key
            update["message"] = self._server.redactor.redact(event.message)
        self._server.protocol.notify(SESSION_UPDATE, {**self._params, "update": update})
        if self._long_tools is not None and type(event) is ToolCallUpdate:
            self._long_tools.seen(event.call)


class LspApprover:
    """Asks the client through ``toolwire/session/requestPermission``; a client that
    does not know that method is asked with ``window/showMessageRequest`` from then on
    (:mod:`toolwire.lsp.fallback`)."""

    def __init__(self, server: "ToolwireServer", session_id: str) -> None:
        self._server = server
        self._session_id = session_id

    async def request_permission(self, call: dict[str, Any], subject: dict[str, Any]) -> PermissionAnswer:
        """Ask and wait. Returns ``cancelled`` when the client errs or answers nonsense.

        Cancellation of the caller sends ``$/cancelRequest`` for the pending request.
        """
        if self._server.permission_fallback:
            return await ask_with_message_request(self._server, call, subject)
        msg_id = f"perm-{uuid.uuid4().hex[:12]}"
        params = {
            "sessionId": self._session_id,
            "toolCall": call,
            "subject": subject,
            "options": [option.dump() for option in PERMISSION_OPTIONS],
        }
        protocol = self._server.protocol
        open_requests = self._server.pending_permissions.setdefault(self._session_id, {})
        open_requests[msg_id] = params  # shown by toolwire/session/snapshot until answered
        try:
            future = protocol.send_request_async(REQUEST_PERMISSION, params, msg_id=msg_id)
            raw = await future
        except anyio.get_cancelled_exc_class():
            # typed params: pygls cannot serialize a plain dict for this LSP method
            protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            protocol._request_futures.pop(msg_id, None)
            raise
        except JsonRpcMethodNotFound:  # an LSP client without Toolwire's panel
            open_requests.pop(msg_id, None)
            self._server.permission_fallback = True
            return await ask_with_message_request(self._server, call, subject)
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
        return PermissionAnswer(option, outcome.reason)  # type: ignore[arg-type]


class LspDocuments:
    """Open buffers as the editor has them (LSP text document sync)."""

    def __init__(self, server: "ToolwireServer") -> None:
        self._server = server

    def get(self, path: Path) -> OpenDocument | None:
        """The open buffer of ``path`` (absolute, resolved), or None."""
        uri = from_fs_path(str(path))
        docs = self._server.workspace.text_documents
        doc = docs.get(uri) if uri else None
        if doc is None:
            for candidate_uri, candidate in docs.items():
                fs_path = to_fs_path(candidate_uri)
                if fs_path and Path(fs_path).resolve() == path:
                    doc = candidate
                    break
        if doc is None:
            return None
        return OpenDocument(path=path, text=doc.source, version=doc.version or 0)

    def open_documents(self) -> list[OpenDocument]:
        """Every buffer the editor has open (document sync), by resolved path."""
        out = []
        for uri, doc in list(self._server.workspace.text_documents.items()):
            fs_path = to_fs_path(uri)
            if fs_path:
                out.append(OpenDocument(path=Path(fs_path).resolve(), text=doc.source, version=doc.version or 0))
        return out

    async def replace(self, doc: OpenDocument, new_text: str) -> bool:
        """Replace the whole buffer with a versioned ``workspace/applyEdit``."""
        current = self.get(doc.path)
        if current is None or current.version != doc.version:
            return False
        uri = from_fs_path(str(doc.path))
        lines = doc.text.split("\n")
        end = types.Position(line=len(lines) - 1, character=_utf16_len(lines[-1]))
        edit = types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=doc.version),
                    edits=[types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end),
                                          new_text=new_text)],
                )
            ]
        )
        # Once sent, the edit is the editor's to apply: wait for its answer even if
        # the call is cancelled meanwhile, so the call's status says what happened.
        with anyio.CancelScope(shield=True):
            try:
                with anyio.fail_after(APPLY_EDIT_TIMEOUT):
                    result = await self._server.workspace_apply_edit_async(
                        types.ApplyWorkspaceEditParams(edit=edit, label="Toolwire edit")
                    )
            except Exception as exc:
                log.warning("workspace/applyEdit failed: %s", exc)
                return False
        return bool(getattr(result, "applied", False))


def _utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (LSP's default position encoding)."""
    return len(text.encode("utf-16-le")) // 2
