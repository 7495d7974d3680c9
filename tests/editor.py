"""A test editor: keeps its own buffers, applies ``workspace/applyEdit`` the way VS Code
does (versioned, ranges in the negotiated position encoding, computed with the
reference model of ``lsp_text.py``), and reports every change with an incremental
``didChange``. It can refuse edits, hold them unanswered, and record ``$/cancelRequest``.

Plain ``WorkspaceEdit.changes`` (sent to a client without ``documentChanges``) are
applied the way Neovim applies them: to whatever the buffer holds, last range first,
all of them reported in one ``didChange`` (Neovim debounces its reports), optionally
after a change the user typed while the edit was on its way."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

import lsp_text as ref
from conftest import ToolwireTestClient, make_client

#: Client capabilities of a client that can take editor edits.
EDITS = types.WorkspaceClientCapabilities(
    apply_edit=True, workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True))


class EditorClient(ToolwireTestClient):
    """See the module docstring.

    Attributes:
        buffers: ``uri → (text, version)``.
        encoding: The position encoding the server chose in ``initialize``.
        refuse_edits: Answer ``applied: false`` with this failure reason when set.
        hold_edits: When set, answers wait for this event (an editor that hangs).
        edits: Every applyEdit params received.
        cancelled: Ids of server requests the server withdrew with ``$/cancelRequest``.
    """

    def __init__(self) -> None:
        super().__init__()
        self.buffers: dict[str, tuple[str, int]] = {}
        self.encoding = "utf-16"
        self.refuse_edits: str | None = None
        self.hold_edits: asyncio.Event | None = None
        self.edit_arrived = asyncio.Event()
        self.edits: list[types.ApplyWorkspaceEditParams] = []
        self.cancelled: list[Any] = []
        self.report_late = False  # report applied edits with didChange only after answering (a slow editor)
        #: A change ``(start, end, text)`` the user types right before the next plain ``changes``
        #: edit is applied (reported in the same didChange, as a debouncing editor does).
        self.typed_before_edit: tuple[tuple[int, int], tuple[int, int], str] | None = None
        #: Report that typing with this change instead (a buggy editor's report), once.
        self.typed_reported_at: tuple[tuple[int, int], tuple[int, int], str] | None = None
        self.silent_edits = False  # apply plain changes without reporting them (an editor that never does)

    def open(self, path: Path | str, text: str, version: int = 1) -> str:
        uri = path if isinstance(path, str) else path.as_uri()
        self.buffers[uri] = (text, version)
        self.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
        return uri

    def close(self, uri: str) -> None:
        self.buffers.pop(uri, None)
        self.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))

    def type_into(self, uri: str, text: str) -> None:
        """Replace the whole buffer (a whole-document change)."""
        _, version = self.buffers[uri]
        self.buffers[uri] = (text, version + 1)
        self.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    def change(self, uri: str, start: tuple[int, int], end: tuple[int, int], new_text: str,
               *, report_after: float | None = None) -> None:
        """An incremental change, like a user typing (positions in the negotiated encoding);
        reported at once, or ``report_after`` seconds later (a slow editor)."""
        text, version = self.buffers[uri]
        self.buffers[uri] = (ref.apply(text, start, end, new_text, self.encoding), version + 1)
        params = types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(*start), end=types.Position(*end)), text=new_text)])
        if report_after is None:
            self.text_document_did_change(params)
        else:
            asyncio.get_running_loop().call_later(report_after, self.text_document_did_change, params)

    async def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.edits.append(params)
        self.edit_arrived.set()
        if self.hold_edits is not None:
            await self.hold_edits.wait()
        if self.refuse_edits is not None:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason=self.refuse_edits)
        if params.edit.changes:
            return self._apply_changes(params.edit.changes)
        for change in params.edit.document_changes or []:
            uri = change.text_document.uri
            if uri not in self.buffers:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason=f"{uri} is not open")
            text, version = self.buffers[uri]
            if change.text_document.version != version:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version moved")
            for edit in change.edits:  # VS Code applies them and reports each as a change
                rng = edit.range
                self.change(uri, (rng.start.line, rng.start.character), (rng.end.line, rng.end.character),
                            edit.new_text, report_after=0.3 if self.report_late else None)
        return types.ApplyWorkspaceEditResult(applied=True)


    def _apply_changes(self, changes: dict[str, list[types.TextEdit]]) -> types.ApplyWorkspaceEditResult:
        """Plain ``changes``: no version to check, ranges applied to the buffer as it is now."""
        for uri, edits in changes.items():
            if uri not in self.buffers:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason=f"{uri} is not open")
            text, version = self.buffers[uri]
            reported = []
            if self.typed_before_edit is not None:
                start, end, typed = self.typed_before_edit
                self.typed_before_edit = None
                text = ref.apply(text, start, end, typed, self.encoding)
                reported.append(self.typed_reported_at or (start, end, typed))
                self.typed_reported_at = None
            ordered = sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)
            for edit in ordered:  # the last first: the earlier ranges still name the same places
                start = (edit.range.start.line, edit.range.start.character)
                end = (edit.range.end.line, edit.range.end.character)
                text = ref.apply(text, start, end, edit.new_text, self.encoding)
                reported.append((start, end, edit.new_text))
            self.buffers[uri] = (text, version + 1)
            report = types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
                content_changes=[types.TextDocumentContentChangePartial(
                    range=types.Range(start=types.Position(*a), end=types.Position(*b)), text=t)
                    for a, b, t in reported])
            if self.silent_edits:
                continue  # applied, never reported
            if self.report_late:
                asyncio.get_running_loop().call_later(0.3, self.text_document_did_change, report)
            else:
                self.text_document_did_change(report)
        return types.ApplyWorkspaceEditResult(applied=True)


def make_editor() -> EditorClient:
    client = make_client(EditorClient)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    async def apply_edit(params):
        return await client.apply_edit(params)

    handle_cancel = client.protocol._handle_cancel_notification  # pygls handles $/cancelRequest itself

    def record_cancel(msg_id):
        client.cancelled.append(msg_id)
        handle_cancel(msg_id)

    client.protocol._handle_cancel_notification = record_cancel
    return client


def editor_fixture(name: str, *, encodings: list[str] | None = None,
                   workspace: types.WorkspaceClientCapabilities | None = EDITS,
                   env: dict[str, str] | None = None) -> Any:
    """A module-scoped fixture ``name``: a real ``toolwire serve`` over stdio driven by an
    :class:`EditorClient` that offers ``encodings`` (``general.positionEncodings``); the
    server's environment is this process's with ``env`` added."""

    @pytest_lsp.fixture(
        name=name,
        scope="module",
        config=ClientServerConfig(
            server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
            client_factory=make_editor,
            server_env={**os.environ, **env} if env else None,
        ),
    )
    async def fixture(lsp_client: EditorClient):
        general = types.GeneralClientCapabilities(position_encodings=encodings) if encodings else None
        result = await lsp_client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(workspace=workspace, general=general)))
        lsp_client.encoding = str(result.capabilities.position_encoding or "utf-16")
        yield
        if lsp_client.hold_edits is not None:
            lsp_client.hold_edits.set()
        await lsp_client.shutdown_session()

    return fixture
