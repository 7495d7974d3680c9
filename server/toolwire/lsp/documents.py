"""The editor's open documents, kept by the server itself, and edits back to them.

pygls' own document model splits lines with :meth:`str.splitlines` (so a form
feed or U+2028 starts a new line) and is bypassed: :class:`BufferStore` applies
``didOpen`` / ``didChange`` / ``didClose`` with :mod:`toolwire.workspace.positions`
(only ``\\n``, ``\\r\\n``, ``\\r`` end a line) in the negotiated position encoding.

:class:`LspDocuments` is the :class:`~toolwire.workspace.documents.Documents`
the tools use: it finds the buffer of a file under whatever URI the editor
opened it (symlinks, ``..``, another spelling of the same file), and edits it with
a ``workspace/applyEdit`` whose ranges are computed in the negotiated encoding on the
buffer's own text: versioned when the client declares ``documentChanges``, else plain
``changes`` checked against the ``didChange`` the editor sends back
(:mod:`toolwire.lsp.editor_edits`).

The code-action / diagnostic code uses the same store: :meth:`BufferStore.text_in_range`
gives the text of an LSP range of a buffer, :meth:`BufferStore.offsets` its code-point
offsets, :meth:`BufferStore.range_of` turns offsets back into an LSP range.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

from toolwire.lsp.editor_edits import CHANGE_REPORT_WAIT, build_edit, confirm_unversioned, edit_form
from toolwire.lsp.persist import settle_lost_edit
from toolwire.rpc.errors import ClientGone
from toolwire.workspace.documents import OpenDocument
from toolwire.workspace.errors import ToolError
from toolwire.workspace.positions import ENCODINGS, LineIndex, PositionError, apply_change

if TYPE_CHECKING:
    from toolwire.lsp.boot import ToolwireServer

log = logging.getLogger(__name__)

__all__ = ["EditorBuffer", "BufferStore", "LspDocuments", "DocumentSyncMixin", "CHANGE_REPORT_WAIT",
           "negotiated_encoding"]


@dataclass(slots=True)
class EditorBuffer:
    """One document the editor has open.

    Attributes:
        uri: The URI exactly as the editor sent it in ``didOpen``.
        text: The server's copy of the buffer.
        version: The version of the last ``didOpen`` / ``didChange``.
        out_of_sync: Why the copy can no longer be trusted (a change whose range
            named no place in the text), or None. Cleared by a whole-document
            change or a new ``didOpen``.
    """

    uri: str
    text: str
    version: int
    out_of_sync: str | None = None


def _position(pos: types.Position) -> tuple[int, int]:
    return pos.line, pos.character


class BufferStore:
    """Open documents by URI, kept with the LSP line rule in the negotiated encoding.

    Args:
        encoding: Returns the negotiated position encoding (``utf-8``,
            ``utf-16`` or ``utf-32``); read on every use, since it is only known
            after ``initialize``.
    """

    def __init__(self, encoding: Callable[[], str]) -> None:
        self._encoding = encoding
        self.buffers: dict[str, EditorBuffer] = {}
        self._moved: dict[str, anyio.Event] = {}
        self._opened: anyio.Event | None = None

    @property
    def encoding(self) -> str:
        """The negotiated position encoding (``utf-16`` when none was negotiated)."""
        raw = self._encoding() or "utf-16"
        value = str(getattr(raw, "value", raw))  # a PositionEncodingKind prints as its name
        return value if value in ENCODINGS else "utf-16"

    def _notify(self, uri: str) -> None:
        event = self._moved.pop(uri, None)
        if event is not None:
            event.set()

    async def wait_moved(self, uri: str, version: int, timeout: float) -> bool:
        """Wait until ``uri`` is past ``version`` (a ``didChange``), closed or reopened.

        Returns:
            True when it moved on; False after ``timeout`` seconds.
        """
        with anyio.move_on_after(timeout):
            while (buf := self.buffers.get(uri)) is not None and buf.version == version:
                event = self._moved.setdefault(uri, anyio.Event())
                await event.wait()
            return True
        return False

    def open(self, uri: str, text: str, version: int) -> None:
        """``textDocument/didOpen``: (re)open a buffer."""
        self.buffers[uri] = EditorBuffer(uri, text, version)
        self._notify(uri)
        opened, self._opened = self._opened, None
        if opened is not None:
            opened.set()

    async def wait_opened(self) -> None:
        """Wait for the next ``didOpen`` (any document)."""
        if self._opened is None:
            self._opened = anyio.Event()
        await self._opened.wait()

    def close(self, uri: str) -> None:
        """``textDocument/didClose``: forget a buffer (unknown URIs are ignored)."""
        self.buffers.pop(uri, None)
        self._notify(uri)

    def change(self, uri: str, version: int, changes: Sequence[Any]) -> None:
        """``textDocument/didChange``: apply content changes in order.

        Args:
            uri: The document.
            version: Its version after the changes.
            changes: ``TextDocumentContentChangePartial`` (a range and text) or
                ``TextDocumentContentChangeWholeDocument`` (text) objects.

        A change whose range names no place in the text (inside a character)
        marks the buffer out of sync; edits to it are then refused until the
        editor sends the whole text again. A change for a URI that is not open
        is logged and ignored.
        """
        buf = self.buffers.get(uri)
        if buf is None:
            log.warning("didChange for %s, which is not open: ignored", uri)
            return
        encoding = self.encoding
        for change in changes:
            rng = getattr(change, "range", None)
            if rng is None:
                buf.text, buf.out_of_sync = change.text, None
                continue
            if buf.out_of_sync is not None:
                continue
            try:
                buf.text = apply_change(buf.text, _position(rng.start), _position(rng.end), change.text, encoding)
            except PositionError as exc:
                buf.out_of_sync = f"a change from the editor did not fit the server's copy ({exc})"
                log.warning("%s: %s", uri, buf.out_of_sync)
        buf.version = version
        self._notify(uri)

    def get(self, uri: str) -> EditorBuffer | None:
        """The buffer open under exactly ``uri``, or None."""
        return self.buffers.get(uri)

    def offsets(self, uri: str, rng: types.Range) -> tuple[int, int]:
        """Code-point offsets ``(start, end)`` in the buffer's text of an LSP range.

        Raises:
            KeyError: ``uri`` is not open.
            PositionError: the range names no place in the text.
        """
        index = LineIndex(self.buffers[uri].text)
        a = index.offset_at(_position(rng.start), self.encoding)
        b = index.offset_at(_position(rng.end), self.encoding)
        return (a, b) if a <= b else (b, a)

    def text_in_range(self, uri: str, rng: types.Range) -> str:
        """The text of an LSP range (e.g. a code action's selection) in the open buffer.

        Raises:
            KeyError: ``uri`` is not open.
            PositionError: the range names no place in the text.
        """
        return self.slice(self.buffers[uri].text, rng)

    def slice(self, text: str, rng: types.Range) -> str:
        """The part of ``text`` an LSP range (negotiated encoding, LSP line rule) names.

        Raises:
            PositionError: the range names no place in the text.
        """
        index = LineIndex(text)
        a = index.offset_at(_position(rng.start), self.encoding)
        b = index.offset_at(_position(rng.end), self.encoding)
        return text[min(a, b) : max(a, b)]

    def range_of(self, text: str, start: int, end: int) -> types.Range:
        """The LSP range, in the negotiated encoding, of code-point offsets of ``text``.

        Raises:
            PositionError: an offset outside the text or inside a ``\\r\\n``.
        """
        index = LineIndex(text)
        (l1, c1), (l2, c2) = index.position_at(start, self.encoding), index.position_at(end, self.encoding)
        return types.Range(start=types.Position(line=l1, character=c1), end=types.Position(line=l2, character=c2))


def negotiated_encoding(server: "ToolwireServer") -> str:
    """The position encoding pygls negotiated in ``initialize`` (the client's first of
    utf-8/utf-16/utf-32 in ``general.positionEncodings``), utf-16 before that."""
    try:
        encoding = server.workspace.position_encoding or "utf-16"
    except RuntimeError:  # not initialized yet
        return "utf-16"
    return str(getattr(encoding, "value", encoding))  # PositionEncodingKind or str


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


class LspDocuments:
    """The tools' view of the editor's open buffers (see the module docstring).

    Attributes:
        session_id: The session these tools belong to (set once it is open; an edit
            that waits for a reconnecting client is counted against it).
    """

    def __init__(self, server: "ToolwireServer") -> None:
        self._server = server
        self.session_id: str | None = None

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


class DocumentSyncMixin(LanguageServerProtocol):
    """Replaces pygls' document sync handlers: ``didOpen`` / ``didChange`` /
    ``didClose`` go to the server's :class:`BufferStore` (``server.buffers``),
    whose text is then copied whole into pygls' ``Workspace`` (so
    ``workspace.get_text_document(uri).source`` is right too; pygls' own
    line and range helpers still break the LSP rule: use :class:`BufferStore`).
    Handlers a server registers for these notifications still run afterwards."""

    def _mirror(self, uri: str, language_id: str | None = None) -> None:
        buf = self._server.buffers.get(uri)
        if buf is None:
            self.workspace.remove_text_document(uri)
            return
        if language_id is None:
            old = self.workspace.text_documents.get(uri)
            language_id = getattr(old, "language_id", None) or ""
        self.workspace.put_text_document(
            types.TextDocumentItem(uri=uri, language_id=language_id, version=buf.version, text=buf.text))

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        doc = params.text_document
        self._server.buffers.open(doc.uri, doc.text, doc.version)
        self._mirror(doc.uri, doc.language_id)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        doc = params.text_document
        self._server.buffers.change(doc.uri, doc.version, params.content_changes)
        self._mirror(doc.uri)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        self._server.buffers.close(params.text_document.uri)
        self._mirror(params.text_document.uri)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None
