"""Access to files that are open in the editor.

Tools never talk to the editor directly: they get a :class:`Documents` object.
The LSP layer implements it over document sync and ``workspace/applyEdit``;
headless runs and unit tests use :class:`NoOpenDocuments` or
:class:`MemoryDocuments`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass(slots=True, frozen=True)
class OpenDocument:
    """An editor buffer.

    Attributes:
        path: Absolute, resolved path of the file.
        text: The buffer's current text (may differ from the disk: unsaved edits).
        version: The LSP document version; increases on every change.
        uri: The URI the editor opened the document under (edits go there),
            when the buffer comes from LSP document sync.
    """

    path: Path
    text: str
    version: int
    uri: str | None = None


class Documents(Protocol):
    """Open editor buffers, by resolved path."""

    def get(self, path: Path) -> OpenDocument | None:
        """The open buffer for ``path`` (absolute, resolved), or None if not open.

        Raises:
            ToolError: the buffer exists but cannot be used (e.g. ``open_twice``,
                ``out_of_sync`` in the LSP implementation).
        """
        ...

    def open_documents(self) -> list[OpenDocument]:
        """Every open buffer (paths absolute and resolved)."""
        ...

    async def replace(self, doc: OpenDocument, new_text: str) -> bool:
        """Replace the whole buffer through the editor, if it is still at ``doc.version``.

        Returns:
            True when the editor applied the edit; False when the document moved
            on since ``doc`` was read (the caller reports the call as stale).

        Raises:
            ToolError: the editor cannot or did not take the edit, with a code
                saying why (LSP: ``editor_unsupported``, ``editor_refused``), or took
                it onto text that changed meanwhile (LSP, a client without versioned
                edits: ``stale`` with ``data.applied`` true; the edit stays in the buffer).
        """
        ...


class NoOpenDocuments:
    """No editor: every file is read from and written to disk."""

    def get(self, path: Path) -> OpenDocument | None:
        return None

    def open_documents(self) -> list[OpenDocument]:
        return []

    async def replace(self, doc: OpenDocument, new_text: str) -> bool:
        return False


class MemoryDocuments:
    """In-memory buffers, for tests of the open-buffer path without an editor."""

    def __init__(self) -> None:
        self.docs: dict[Path, OpenDocument] = {}
        self.refuse = False

    def open(self, path: Path, text: str, version: int = 1) -> None:
        """Open (or reset) a buffer."""
        self.docs[path] = OpenDocument(path, text, version)

    def get(self, path: Path) -> OpenDocument | None:
        return self.docs.get(path)

    def open_documents(self) -> list[OpenDocument]:
        return list(self.docs.values())

    async def replace(self, doc: OpenDocument, new_text: str) -> bool:
        current = self.docs.get(doc.path)
        if self.refuse or current is None or current.version != doc.version:
            return False
        self.docs[doc.path] = OpenDocument(doc.path, new_text, doc.version + 1)
        return True


def unsaved_in_editor(documents: Documents, root: Path, scope: list[str] | None = None) -> list[str]:
    """Workspace-relative paths of open buffers whose text differs from the file on disk.

    Args:
        documents: The open buffers.
        root: The workspace folder (absolute, resolved).
        scope: Only paths equal to or below these workspace-relative paths
            (``"."`` is everything); None means everything.

    Returns:
        The paths, sorted. A buffer of a file missing on disk counts as unsaved.
    """
    out = []
    for doc in documents.open_documents():
        try:
            rel = doc.path.relative_to(root).as_posix()
        except ValueError:
            continue
        if scope is not None and not any(
            p in (".", "") or rel == p.rstrip("/") or rel.startswith(p.rstrip("/") + "/") for p in scope
        ):
            continue
        try:
            disk = doc.path.read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError):
            disk = None
        if disk != doc.text:
            out.append(rel)
    return sorted(set(out))  # a file open under two URIs is named once
