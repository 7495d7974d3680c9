"""The tools' view of the editor's open buffers, and edits back to them.

:class:`LspDocuments` is the :class:`~toolwire.workspace.documents.Documents`
the tools use: it finds the buffer of a file (:class:`toolwire.lsp.buffers.BufferStore`)
under whatever URI the editor opened it (symlinks, ``..``, another spelling of the same
file), and edits it with a ``workspace/applyEdit`` whose ranges are computed in the
negotiated encoding on the buffer's own text: versioned when the client declares
``documentChanges``, else plain ``changes`` checked against the ``didChange`` the
editor sends back (:mod:`toolwire.lsp.editor_edits`). It is given the server as the
narrow :class:`Editor`, never more of it.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from lsprotocol import types
from pygls.uris import to_fs_path

from toolwire.lsp.buffers import BufferStore, EditorBuffer
from toolwire.lsp.editor_edits import CHANGE_REPORT_WAIT, build_edit, confirm_unversioned, edit_form
from toolwire.lsp.persist import settle_lost_edit
from toolwire.rpc.errors import ClientGone
from toolwire.workspace.documents import OpenDocument
from toolwire.workspace.errors import ToolError

if TYPE_CHECKING:
    from toolwire.rpc.protocol import Peer

__all__ = ["LspDocuments", "Editor"]


def _designates(uri: str, path: Path) -> bool:
    """True when the file URI ``uri`` names the file at ``path`` (absolute, resolved):
    the same path once links and ``..`` are resolved, or the same file on disk
    (hard links; another spelling on a case-insensitive file system)."""
    fs_path = to_fs_path(uri) if uri.startswith("file:") else None
    if not fs_path:
        return False
    candidate = Path(os.path.realpath(fs_path))
    if candidate == path:
        return True
    try:
        return os.path.samefile(candidate, path)
    except OSError:
        return False


class ClientWait(Protocol):
    """Waits for a client to come back (:class:`toolwire.lsp.persist.ClientLink`)."""

    async def wait_ready(self, session_id: str) -> bool:
        """True once an initialized client is connected; False at once when none can come back."""


class Editor(Protocol):
    """What :class:`LspDocuments` needs of the server: the editor of the moment (a client
    that reconnects over ``--socket`` brings a new connection, buffers and capabilities)."""

    @property
    def buffers(self) -> BufferStore:
        """The editor's open buffers."""

    @property
    def client_capabilities(self) -> types.ClientCapabilities | None:
        """What the connected client declared in ``initialize``."""

    @property
    def protocol(self) -> "Peer":
        """The connection of the moment."""

    @property
    def link(self) -> ClientWait:
        """Whether a client is connected, to wait for the next one."""


class LspDocuments:
    """The tools' view of the editor's open buffers (see the module docstring).

    Args:
        server: The server, as far as the editor's buffers go.

    Attributes:
        session_id: The session these tools belong to (set once it is open; an edit
            that waits for a reconnecting client is counted against it).
    """

    def __init__(self, server: Editor) -> None:
        self._server = server
        self.session_id: str | None = None

    async def wait_for_client(self) -> bool:
        """Wait until an initialized client is connected (``--socket``; an edit of this
        session is counted as waiting). False at once when clients cannot come back."""
        return await self._server.link.wait_ready(self.session_id or "")

    async def wait_opened(self) -> None:
        """Wait for the editor's next ``didOpen`` (any document)."""
        await self._server.buffers.wait_opened()

    @property
    def _store(self) -> BufferStore:
        return self._server.buffers

    def matches(self, path: Path) -> list[EditorBuffer]:
        """The buffers that designate ``path`` (absolute, resolved), whatever their URI."""
        return self._matches(path)

    def _matches(self, path: Path) -> list[EditorBuffer]:
        return [buf for uri, buf in list(self._store.buffers.items()) if _designates(uri, path)]

    def get(self, path: Path) -> OpenDocument | None:
        """The open buffer of ``path`` (absolute, resolved), under the URI the editor used.

        Raises:
            ToolError: ``open_twice`` when the editor has the file open under
                several URIs (their buffers may differ); ``out_of_sync`` when the
                server's copy of the buffer cannot be trusted.
        """
        found = self._matches(path)
        if not found:
            return None
        if len(found) > 1:
            uris = ", ".join(sorted(buf.uri for buf in found))
            raise ToolError("open_twice", f"{path.name} is open in the editor under {len(found)} names ({uris}); "
                            "close all but one so the change goes to the buffer you see",
                            {"uris": sorted(buf.uri for buf in found)})
        buf = found[0]
        if buf.out_of_sync is not None:
            raise ToolError("out_of_sync", f"{path.name} is open in the editor, but {buf.out_of_sync}; ask the user "
                            "to close and reopen the file so the server gets its text again, then read it")
        return OpenDocument(path=path, text=buf.text, version=buf.version, uri=buf.uri)

    def open_documents(self) -> list[OpenDocument]:
        """Every buffer the editor has open as a file (paths with links resolved)."""
        out = []
        for uri, buf in list(self._store.buffers.items()):
            fs_path = to_fs_path(uri) if uri.startswith("file:") else None
            if fs_path:
                out.append(OpenDocument(path=Path(os.path.realpath(fs_path)), text=buf.text,
                                        version=buf.version, uri=uri))
        return out

    async def replace(self, doc: OpenDocument, new_text: str) -> bool:
        """Change the buffer from ``doc.text`` to ``new_text`` with one ``workspace/applyEdit``
        sent to the URI the editor opened (:mod:`toolwire.lsp.editor_edits`): versioned
        (one smallest range on ``doc.version``) for a client that declares
        ``documentChanges``, else plain ``changes`` (the narrowest ranges) whose result is
        checked against the editor's ``didChange``.

        Waiting for the answer is cancellable: a cancelled call or a tool timeout
        withdraws the request with ``$/cancelRequest`` (the editor may still apply it).

        Returns:
            True when applied (after the editor's ``didChange`` arrived, or
            :data:`CHANGE_REPORT_WAIT` seconds), or when there is nothing to change;
            False when the buffer moved on since ``doc`` was read (stale: nothing is sent).

        Raises:
            ToolError: ``editor_unsupported`` (the client lacks ``workspace.applyEdit``;
                nothing is sent), ``editor_refused`` (``applied: false``, with the
                editor's ``failureReason``, or an error answer);
                ``editor_disconnected`` (the client left before answering and the
                edit's fate could not be settled, see :func:`~toolwire.lsp.persist.settle_lost_edit`);
                ``stale`` with ``data.applied`` (an unversioned edit landed on text the
                user changed meanwhile: it stays in the buffer), ``out_of_sync``
                (:func:`~toolwire.lsp.editor_edits.confirm_unversioned`).
        """
        form = edit_form(self._server.client_capabilities)
        if form is None:
            raise ToolError("editor_unsupported",
                            f"{doc.path.name} is open in the editor, but the client did not declare "
                            "workspace.applyEdit, so the server cannot change the open buffer; nothing was "
                            "written (close the file in the editor to let the tool write it on disk)",
                            {"missing": ["workspace.applyEdit"]})
        uri = doc.uri
        buf = self._store.get(uri) if uri else None
        if buf is None or buf.version != doc.version or buf.text != doc.text or buf.out_of_sync:
            return False
        if new_text == doc.text:
            return True  # nothing to change: nothing is sent
        edit = build_edit(self._store, doc, new_text, form)
        params = types.ApplyWorkspaceEditParams(edit=edit, label="Toolwire edit")
        protocol = self._server.protocol
        msg_id = f"edit-{uuid.uuid4().hex[:12]}"
        try:
            raw = await protocol.send_request_async(types.WORKSPACE_APPLY_EDIT, params, msg_id=msg_id)
        except anyio.get_cancelled_exc_class():
            protocol.withdraw(msg_id)
            raise
        except ClientGone:  # no answer will come: settle it with the next client's buffer
            return await settle_lost_edit(self, doc, new_text)
        except Exception as exc:  # the client answered with an error
            raise ToolError("editor_refused", f"the editor refused the edit of {doc.path.name}: {exc}; "
                            "nothing was written") from None
        applied, reason = _answer(raw)
        if not applied:
            why = f": {reason}" if reason else " (it gave no reason)"
            raise ToolError("editor_refused", f"the editor refused the edit of {doc.path.name}{why}; "
                            "nothing was written", {"failureReason": reason})
        if form == "changes":  # applied to whatever the buffer held: check what it holds now
            await confirm_unversioned(self._store, doc, new_text)
            return True
        # The editor reports the change with didChange; wait for it (briefly) so the
        # next tool that reads this buffer sees the edited text, not the old one.
        await self._store.wait_moved(uri, doc.version, CHANGE_REPORT_WAIT)
        return True


def _answer(raw: Any) -> tuple[bool, str | None]:
    """``(applied, failureReason)`` of an ``ApplyWorkspaceEditResult`` (object or plain dict)."""
    if isinstance(raw, dict):
        applied, reason = raw.get("applied"), raw.get("failureReason")
    else:
        applied, reason = getattr(raw, "applied", None), getattr(raw, "failure_reason", None)
    return applied is True, reason if isinstance(reason, str) else None
