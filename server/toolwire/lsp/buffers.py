"""The editor's open buffers, kept by the server itself with the LSP line rule.

pygls' own document model splits lines with :meth:`str.splitlines` (so a form
feed or U+2028 starts a new line) and is bypassed: :class:`BufferStore` applies
``didOpen`` / ``didChange`` / ``didClose`` (:class:`DocumentSyncMixin`, mixed into
the server's protocol class) with :mod:`toolwire.workspace.positions` (only ``\\n``,
``\\r\\n``, ``\\r`` end a line) in the negotiated position encoding.

The code-action / diagnostic code uses the same store: :meth:`BufferStore.text_in_range`
gives the text of an LSP range of a buffer, :meth:`BufferStore.offsets` its code-point
offsets, :meth:`BufferStore.range_of` turns offsets back into an LSP range. The tools
see the buffers through :class:`toolwire.lsp.documents.LspDocuments`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method

from toolwire.workspace.positions import ENCODINGS, LineIndex, PositionError, apply_change

if TYPE_CHECKING:
    from pygls.workspace import Workspace

log = logging.getLogger(__name__)

__all__ = ["EditorBuffer", "BufferStore", "DocumentSyncMixin", "negotiated_encoding"]


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


class Negotiated(Protocol):
    """Where the position encoding negotiated in ``initialize`` is kept (a pygls server)."""

    @property
    def workspace(self) -> "Workspace":
        """pygls' workspace (raises ``RuntimeError`` before ``initialize``)."""


def negotiated_encoding(server: Negotiated) -> str:
    """The position encoding pygls negotiated in ``initialize`` (the client's first of
    utf-8/utf-16/utf-32 in ``general.positionEncodings``), utf-16 before that."""
    try:
        encoding = server.workspace.position_encoding or "utf-16"
    except RuntimeError:  # not initialized yet
        return "utf-16"
    return str(getattr(encoding, "value", encoding))  # PositionEncodingKind or str


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
