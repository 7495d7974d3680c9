"""The ``workspace/applyEdit`` of an open buffer: its form, and the check of an unversioned one.

A client that declares ``workspace.workspaceEdit.documentChanges`` (VS Code, Helix,
Eglot) gets one ``TextDocumentEdit`` on the version the tool read: the editor refuses it
if the buffer moved on, so it never lands on other text. A client that declares only
``workspace.applyEdit`` (Neovim's built-in client, 0.10–0.12) gets plain
``WorkspaceEdit.changes`` (``uri → TextEdit[]``), which LSP applies to whatever the
buffer holds. Its ranges are the narrowest ones
(:func:`toolwire.workspace.positions.narrow_edits`: text between two changes is not
sent, so typing there survives), in the negotiated encoding and by the LSP line rule.
Once the editor answers, the ``didChange`` it sends back must show exactly the text the
tool meant (:func:`confirm_unversioned`); when it does not (the user typed while the
edit was on its way) the call fails ``stale`` naming the lines, and says that the edit
stays in the buffer, where the editor's undo removes it.
"""

from __future__ import annotations

import logging
from typing import Literal, Protocol

from lsprotocol import types

from toolwire.workspace.documents import OpenDocument
from toolwire.workspace.errors import ToolError
from toolwire.workspace.positions import changed_lines, minimal_edit, narrow_edits

log = logging.getLogger(__name__)

#: Seconds an applied edit waits for the editor's ``didChange`` before the call goes on.
CHANGE_REPORT_WAIT = 5.0

__all__ = ["CHANGE_REPORT_WAIT", "edit_form", "missing_edit_capabilities", "build_edit", "confirm_unversioned",
           "describe_lines"]

EditForm = Literal["versioned", "changes"]


class EditedBuffer(Protocol):
    """An open buffer as the server keeps it (:class:`toolwire.lsp.buffers.EditorBuffer`)."""

    text: str
    version: int
    out_of_sync: str | None


class EditedBuffers(Protocol):
    """What an edit needs of the editor's open buffers (:class:`toolwire.lsp.buffers.BufferStore`)."""

    def get(self, uri: str) -> EditedBuffer | None:
        """The buffer open under ``uri``, or None."""

    async def wait_moved(self, uri: str, version: int, timeout: float) -> bool:
        """Wait until ``uri`` is past ``version``, closed or reopened; False after ``timeout`` seconds."""

    def range_of(self, text: str, start: int, end: int) -> types.Range:
        """The LSP range, in the negotiated encoding, of code-point offsets of ``text``."""


def edit_form(caps: types.ClientCapabilities | None) -> EditForm | None:
    """How edits of open buffers are sent to a client with capabilities ``caps``.

    Returns:
        ``"versioned"`` (``documentChanges``) when it declares ``workspace.applyEdit`` and
        ``workspace.workspaceEdit.documentChanges``; ``"changes"`` when it declares only
        ``workspace.applyEdit``; None when it cannot take edits at all.
    """
    workspace = getattr(caps, "workspace", None)
    if not getattr(workspace, "apply_edit", None):
        return None
    if getattr(getattr(workspace, "workspace_edit", None), "document_changes", None):
        return "versioned"
    return "changes"


def missing_edit_capabilities(caps: types.ClientCapabilities | None) -> list[str]:
    """The client capabilities an editor edit needs that ``caps`` does not declare:
    ``["workspace.applyEdit"]``, or empty when editor edits may be sent (in either form)."""
    return [] if edit_form(caps) is not None else ["workspace.applyEdit"]


def build_edit(store: EditedBuffers, doc: OpenDocument, new_text: str, form: EditForm) -> types.WorkspaceEdit:
    """The ``WorkspaceEdit`` turning ``doc.text`` into ``new_text`` (they differ).

    ``versioned``: one ``TextDocumentEdit`` on ``doc.version`` with one ``TextEdit``, the
    smallest single range. ``changes``: ``{uri: [TextEdit…]}``, one narrowest range per
    changed run of lines. Ranges are in the store's negotiated encoding.
    """
    uri = doc.uri
    assert uri is not None
    if form == "versioned":
        start, end, replacement = minimal_edit(doc.text, new_text)
        edit = types.TextEdit(range=store.range_of(doc.text, start, end), new_text=replacement)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=doc.version),
            edits=[edit])])
    edits = [types.TextEdit(range=store.range_of(doc.text, start, end), new_text=replacement)
             for start, end, replacement in narrow_edits(doc.text, new_text)]
    return types.WorkspaceEdit(changes={uri: edits})


def describe_lines(ranges: list[tuple[int, int]]) -> str:
    """``[(3, 3), (7, 8)]`` → ``"lines 3, 7-8"`` (``"line 3"`` for one line)."""
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in ranges]
    return ("line " if len(parts) == 1 and "-" not in parts[0] else "lines ") + ", ".join(parts)


async def confirm_unversioned(store: EditedBuffers, doc: OpenDocument, new_text: str) -> None:
    """After the editor answered ``applied: true`` to an unversioned edit of ``doc``: check
    that the buffer now holds exactly ``new_text``.

    The text is taken from the editor's ``didChange`` reports: any report that arrives
    after the answer carries the edit (an editor reports its own change after applying
    it: Neovim sends it after answering, debounced). Waits up to
    :data:`CHANGE_REPORT_WAIT` seconds for such a report when the text is not yet the
    meant one. An editor that reports nothing at all is trusted, as for a versioned edit;
    a buffer closed meanwhile cannot be checked and is taken as edited.

    Raises:
        ToolError: ``stale`` (``data``: ``applied: true`` and ``lines``, 1-based inclusive
            ranges of the buffer as it is now) when the buffer holds other text: the edit
            landed on text the user changed meanwhile and stays in the buffer;
            ``out_of_sync`` when a report did not fit the server's copy of the buffer.
    """
    uri = doc.uri
    assert uri is not None
    buf = store.get(uri)
    if buf is None or (buf.text == new_text and buf.out_of_sync is None):
        return
    answered = buf.version
    moved = await store.wait_moved(uri, answered, CHANGE_REPORT_WAIT)
    buf = store.get(uri)
    if buf is None or (buf.text == new_text and buf.out_of_sync is None):
        return
    name = doc.path.name
    if buf.out_of_sync is not None:
        raise ToolError("out_of_sync", f"the edit of {name} was applied, but {buf.out_of_sync}; ask the user to close "
                        "and reopen the file so the server gets its text again, then read it")
    if not moved and answered == doc.version:
        log.warning("%s: the editor applied an edit but reported no change within %g s", uri, CHANGE_REPORT_WAIT)
        return
    lines = changed_lines(new_text, buf.text)
    raise ToolError(
        "stale",
        f"after the editor applied the edit of {name}, {describe_lines(lines)} of its buffer "
        f"{'differs' if describe_lines(lines).startswith('line ') else 'differ'} from what the edit "
        "meant (text was typed there while the edit was on its way, or the editor applied it its own way). The edit "
        "stays in the buffer: the editor's undo removes it and brings back the text it replaced. Read the file again "
        "before changing it",
        {"applied": True, "lines": [list(r) for r in lines]})
