"""The LSP front-end's :class:`~toolwire.tools.editor_intel.EditorLink`: the editor's
problems, symbols, definitions and references asked with ``toolwire/editor/*`` requests.

The client declares what it answers in ``initialize``
(``capabilities.experimental.toolwireEditor``, :func:`declared_features`); other LSP
clients declare nothing and their sessions get no editor tools. URIs go out as the
editor opened the document (an open buffer's URI, found through symbolic links and other
spellings by :class:`toolwire.lsp.documents.LspDocuments`), else under the editor's
workspace folder; positions in the negotiated encoding. Answers are read item by item:
an item that does not fit LSP's type is dropped (logged), a ``WorkspaceSymbol`` without
a range too. The ``toolwire/editor/diagnosticsChanged`` notification feeds
:class:`~toolwire.tools.editor_intel.DiagnosticsFeed` (:func:`diagnostics_changed`).
protocol.md "The editor's intelligence".
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from pydantic import BaseModel, ValidationError
from pygls.exceptions import JsonRpcMethodNotFound
from pygls.uris import to_fs_path

from toolwire.lsp import editor_messages as E
from toolwire.rpc.errors import ClientGone
from toolwire.tools.editor_intel import DiagnosticsFeed, EditorFeatures, FileDiagnostics
from toolwire.workspace.errors import ToolError
from toolwire.workspace.fs import read_bytes

if TYPE_CHECKING:
    from lsprotocol import types

    from toolwire.lsp.buffers import BufferStore
    from toolwire.lsp.documents import LspDocuments
    from toolwire.rpc.protocol import Peer

log = logging.getLogger(__name__)

__all__ = ["LspEditorLink", "declared_features", "diagnostics_changed", "file_path", "MAX_FILE_TEXT"]

#: Largest file (bytes) read from the disk to show a line or count a column.
MAX_FILE_TEXT = 8 * 1024 * 1024


class EditorPeer(Protocol):
    """What the link needs of the server: the client of the moment (a client that reconnects
    over ``--socket`` brings a new connection, buffers and ``initialize``)."""

    editor_feed: DiagnosticsFeed

    @property
    def initialize_params(self) -> "types.InitializeParams | None":
        """What the connected client sent in ``initialize``."""

    @property
    def buffers(self) -> "BufferStore":
        """The editor's open buffers (and the negotiated encoding)."""

    @property
    def protocol(self) -> "Peer":
        """The connection of the moment."""


def declared_features(server: EditorPeer) -> EditorFeatures:
    """What the connected client declared in ``initialize`` (nothing before it)."""
    params = server.initialize_params
    experimental = getattr(getattr(params, "capabilities", None), "experimental", None)
    raw = experimental.get("toolwireEditor") if isinstance(experimental, dict) else None
    return EditorFeatures.parse(raw)


def file_path(uri: str) -> Path | None:
    """The local file a ``file:`` URI names, links resolved; None for any other URI."""
    fs_path = to_fs_path(uri) if uri.startswith("file:") else None
    if not fs_path or "\x00" in fs_path:  # a %00 names no file (realpath raises ValueError)
        return None
    return Path(os.path.realpath(fs_path))


def diagnostics_changed(server: EditorPeer, params: Any) -> None:
    """``toolwire/editor/diagnosticsChanged``: feed the files named (a bad params object is logged)."""
    try:
        req = E.DiagnosticsChangedParams.model_validate(params if params is not None else {}, strict=True)
    except ValidationError as exc:
        log.warning("%s: invalid params ignored: %s", E.EDITOR_DIAGNOSTICS_CHANGED, exc.errors()[0].get("msg"))
        return
    server.editor_feed.changed(path for path in map(file_path, req.uris) if path is not None)


def _items(raw: Any, key: str, model: type[BaseModel], method: str) -> list[BaseModel]:
    """The items of list ``key`` of an answer that validate as ``model``; the rest dropped (logged).

    Raises:
        ToolError: ``editor_failed`` when the answer is not an object holding such a list.
    """
    values = raw.get(key) if isinstance(raw, dict) else None
    if not isinstance(values, list):
        if isinstance(raw, dict) and values is None and key in raw:
            return []  # null: nothing
        raise ToolError("editor_failed", f"the editor's answer to {method} has no {key} list; try again, or use "
                        "search_files instead")
    out = []
    for value in values:
        try:
            out.append(model.model_validate(value))
        except ValidationError as exc:
            log.warning("%s: an item of %s dropped: %s", method, key, exc.errors()[0].get("msg"))
    return out


class LspEditorLink:
    """The editor's intelligence over LSP for one session (see the module docstring).

    Args:
        server: The server (its connection, buffers and capabilities of the moment).
        documents: The session's view of the open buffers.
    """

    def __init__(self, server: EditorPeer, documents: "LspDocuments") -> None:
        self._server = server
        self._documents = documents

    @property
    def features(self) -> EditorFeatures:
        return declared_features(self._server)

    @property
    def encoding(self) -> str:
        return self._server.buffers.encoding

    @property
    def feed(self) -> DiagnosticsFeed:
        return self._server.editor_feed

    def uri_for(self, path: Path) -> str:
        matches = self._documents.matches(path)
        if matches:
            return sorted(buf.uri for buf in matches)[0]
        params = self._server.initialize_params
        folders = [f.uri for f in getattr(params, "workspace_folders", None) or []]
        if not folders and getattr(params, "root_uri", None):
            folders = [params.root_uri]
        for folder_uri in folders:
            folder = to_fs_path(folder_uri) if folder_uri.startswith("file:") else None
            if not folder:
                continue
            real = Path(os.path.realpath(folder))
            if path == real or path.is_relative_to(real):
                return (Path(folder) / path.relative_to(real)).as_uri()  # the editor's spelling of the folder
        return path.as_uri()

    def path_of(self, uri: str) -> Path | None:
        return file_path(uri)

    def file_text(self, path: Path) -> str | None:
        matches = self._documents.matches(path)
        if matches:
            return sorted(matches, key=lambda buf: buf.uri)[0].text
        try:  # a regular file only: a fifo would block the server, /dev/zero never end
            return read_bytes(path, limit=MAX_FILE_TEXT).decode("utf-8-sig")
        except (ToolError, UnicodeDecodeError):
            return None

    async def _ask(self, method: str, params: dict[str, Any]) -> Any:
        protocol = self._server.protocol
        msg_id = f"editor-{uuid.uuid4().hex[:12]}"
        try:
            return await protocol.send_request_async(method, params, msg_id=msg_id)
        except anyio.get_cancelled_exc_class():  # the call was cancelled or timed out: withdraw the question
            protocol.withdraw(msg_id)
            raise
        except ClientGone:
            raise ToolError("editor_disconnected", f"the editor disconnected before answering {method}; try again "
                            "once it is back") from None
        except JsonRpcMethodNotFound:
            raise ToolError("editor_failed", f"the editor declared toolwireEditor but does not know {method}; use "
                            "search_files and read_file instead") from None
        except Exception as exc:  # the client answered with an error
            raise ToolError("editor_failed", f"the editor answered {method} with an error: {exc}; try again, or use "
                            "search_files instead") from None

    async def diagnostics(self, uris: list[str] | None) -> list[FileDiagnostics]:
        raw = await self._ask(E.EDITOR_DIAGNOSTICS, {"uris": uris})
        items = _items(raw, "items", E.DocumentDiagnostics, E.EDITOR_DIAGNOSTICS)
        return [(item.uri, [d.dump() for d in item.diagnostics]) for item in items]  # type: ignore[attr-defined]

    async def symbols(self, query: str) -> list[dict[str, Any]]:
        raw = await self._ask(E.EDITOR_SYMBOLS, E.EditorSymbolsParams(query=query).dump())
        symbols = _items(raw, "symbols", E.EditorSymbol, E.EDITOR_SYMBOLS)
        # a WorkspaceSymbol without a range the client did not resolve says only which file: dropped
        return [s.dump() for s in symbols if s.location.range is not None]  # type: ignore[attr-defined]

    async def definition(self, uri: str, position: tuple[int, int]) -> list[dict[str, Any]]:
        params = E.EditorDefinitionParams(text_document=E.DocumentRef(uri=uri),
                                          position=E.LspPosition(line=position[0], character=position[1]))
        raw = await self._ask(E.EDITOR_DEFINITION, params.dump())
        return [loc.dump() for loc in _items(raw, "locations", E.LspLocation, E.EDITOR_DEFINITION)]  # type: ignore[attr-defined]

    async def references(self, uri: str, position: tuple[int, int],
                         include_declaration: bool = False) -> list[dict[str, Any]]:
        params = E.EditorReferencesParams(text_document=E.DocumentRef(uri=uri),
                                          position=E.LspPosition(line=position[0], character=position[1]),
                                          include_declaration=include_declaration)
        raw = await self._ask(E.EDITOR_REFERENCES, params.dump())
        return [loc.dump() for loc in _items(raw, "locations", E.LspLocation, E.EDITOR_REFERENCES)]  # type: ignore[attr-defined]
