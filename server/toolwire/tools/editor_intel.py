"""The editor's intelligence, as the tools and the session see it: problems, symbols,
definitions, references, and a feed of "the problems of this file changed".

Front-end neutral. A front-end whose client can answer such questions implements
:class:`EditorLink` (the LSP front-end: ``toolwire/editor/*`` requests to the client,
:mod:`toolwire.lsp.editor_link`); ACP and ``toolwire run`` have none, so their
sessions have no :class:`EditorIntel` and the editor tools are not offered.

:class:`EditorIntel` is what a running tool gets (``ToolContext.editor``): the link,
bounded by the ``editorTimeout`` setting. A client that does not answer within it,
answers with an error or answers nonsense gives a :class:`ToolError` (error as data,
the call ends ``errored``), never a hung call; a cancelled call withdraws its request
(the link's job). Results are LSP's own JSON (``Diagnostic``, ``Location``,
``SymbolInformation``), positions in the link's :attr:`EditorLink.encoding` (LSP 3.17
"Position"; :mod:`toolwire.workspace.positions` converts them).

The feed (:class:`DiagnosticsFeed`) is fed by the client's
``toolwire/editor/diagnosticsChanged`` notification and keyed by resolved file path
(a URI the editor spells through a symbolic link names the same file).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio

from toolwire.workspace.errors import ToolError

__all__ = ["EditorFeatures", "EditorLink", "EditorIntel", "DiagnosticsFeed", "FileDiagnostics",
           "DEFAULT_EDITOR_TIMEOUT"]

T = TypeVar("T")

#: Seconds the editor has to answer one question by default (setting ``editorTimeout``).
DEFAULT_EDITOR_TIMEOUT = 10.0

#: ``(uri, [Diagnostic as LSP JSON])``: one document's problems as the editor gave them.
FileDiagnostics = tuple[str, list[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class EditorFeatures:
    """What the client declared it can answer (``capabilities.experimental.toolwireEditor``).

    Attributes:
        diagnostics: ``toolwire/editor/diagnostics`` and the ``diagnosticsChanged`` feed.
        symbols: ``toolwire/editor/symbols`` (workspace symbols).
        definition: ``toolwire/editor/definition``.
        references: ``toolwire/editor/references``.
    """

    diagnostics: bool = False
    symbols: bool = False
    definition: bool = False
    references: bool = False

    @classmethod
    def parse(cls, raw: Any) -> "EditorFeatures":
        """The features of a ``toolwireEditor`` object: a key counts only when it is ``true``
        (any subset; anything that is not an object declares nothing)."""
        if not isinstance(raw, dict):
            return cls()
        return cls(**{name: raw.get(name) is True for name in ("diagnostics", "symbols", "definition", "references")})

    def any(self) -> bool:
        """True when the client declared at least one feature."""
        return self.diagnostics or self.symbols or self.definition or self.references

    def names(self) -> list[str]:
        """The declared features' names, in the order of the fields."""
        return [name for name in ("diagnostics", "symbols", "definition", "references") if getattr(self, name)]


class DiagnosticsFeed:
    """Which files' problems changed, as the client reports them.

    Every report counts once per file: :meth:`count` is how many reports named a file
    so far, so a caller notes it before an edit and waits for it to move
    (:meth:`wait_changed`). :meth:`seen` says whether a file ever had a report this
    session (a file nothing reports on is not waited for).
    """

    def __init__(self) -> None:
        self._counts: dict[Path, int] = {}
        self._moved = anyio.Event()

    def changed(self, paths: Iterable[Path]) -> None:
        """The client reported that these files' problems changed (resolved paths)."""
        for path in set(paths):
            self._counts[path] = self._counts.get(path, 0) + 1
        moved, self._moved = self._moved, anyio.Event()
        moved.set()

    def count(self, path: Path) -> int:
        """How many reports named ``path`` (resolved) so far."""
        return self._counts.get(path, 0)

    def seen(self, path: Path) -> bool:
        """True when a report ever named ``path``."""
        return path in self._counts

    async def wait_changed(self, path: Path, after: int, timeout: float) -> bool:
        """Wait until a report names ``path`` once more than ``after`` reports did.

        Returns:
            True when one did (at once if it already has); False after ``timeout`` seconds.
        """
        with anyio.move_on_after(timeout):
            while self.count(path) <= after:
                await self._moved.wait()
            return True
        return False


class EditorLink(Protocol):
    """What a front-end implements to answer the editor questions (one per session).

    Each method sends one question to the client and parses its answer; it raises
    :class:`ToolError` when the client answered with an error or with nothing usable
    (``editor_failed``) or is gone (``editor_disconnected``). Waiting is cancellable:
    a cancelled wait withdraws the question. :class:`EditorIntel` bounds the wait.
    """

    @property
    def features(self) -> EditorFeatures:
        """What the connected client declared (read on every use: a client may reconnect)."""

    @property
    def encoding(self) -> str:
        """The position encoding of every position in and out: ``utf-8``, ``utf-16`` or ``utf-32``."""

    @property
    def feed(self) -> DiagnosticsFeed:
        """Reports of changed problems."""

    def uri_for(self, path: Path) -> str:
        """The URI the editor knows ``path`` (absolute) by: an open buffer's URI, else one under
        the editor's workspace folder when the path is below it, else the file URI of the path."""

    def path_of(self, uri: str) -> Path | None:
        """The local file a URI names, links resolved; None for a URI that names no local file."""

    def file_text(self, path: Path) -> str | None:
        """The text of a file (absolute): its open buffer's, else the disk's (UTF-8); None when
        it cannot be read. Positions of the editor's answers count in this text."""

    async def diagnostics(self, uris: list[str] | None) -> list[FileDiagnostics]:
        """``toolwire/editor/diagnostics``: the problems of ``uris`` (None: of every document the
        editor has problems for)."""

    async def symbols(self, query: str) -> list[dict[str, Any]]:
        """``toolwire/editor/symbols``: workspace symbols, each with a ``location`` that has a
        ``range`` (a ``WorkspaceSymbol`` the client did not resolve is dropped)."""

    async def definition(self, uri: str, position: tuple[int, int]) -> list[dict[str, Any]]:
        """``toolwire/editor/definition``: the ``Location`` objects of the symbol at
        ``(line, character)`` (0-based, :attr:`encoding`) of ``uri``."""

    async def references(self, uri: str, position: tuple[int, int],
                         include_declaration: bool = False) -> list[dict[str, Any]]:
        """``toolwire/editor/references``: the ``Location`` objects of the references."""


class EditorIntel:
    """The editor link a tool uses, bounded by ``editorTimeout`` (see the module docstring).

    Args:
        link: The front-end's link.
        timeout: Seconds each question may wait for its answer (the ``editorTimeout`` setting).
    """

    def __init__(self, link: EditorLink, timeout: float = DEFAULT_EDITOR_TIMEOUT) -> None:
        self.link = link
        self.timeout = timeout

    @property
    def features(self) -> EditorFeatures:
        """What the client declared."""
        return self.link.features

    @property
    def encoding(self) -> str:
        """The position encoding of positions in and out."""
        return self.link.encoding

    @property
    def feed(self) -> DiagnosticsFeed:
        """Reports of changed problems."""
        return self.link.feed

    def uri_for(self, path: Path) -> str:
        """See :meth:`EditorLink.uri_for`."""
        return self.link.uri_for(path)

    def path_of(self, uri: str) -> Path | None:
        """See :meth:`EditorLink.path_of`."""
        return self.link.path_of(uri)

    def file_text(self, path: Path) -> str | None:
        """See :meth:`EditorLink.file_text`."""
        return self.link.file_text(path)

    def require(self, feature: str) -> None:
        """Refuse a question the client did not declare.

        Raises:
            ToolError: ``editor_unsupported`` naming the missing feature.
        """
        if not getattr(self.features, feature):
            raise ToolError("editor_unsupported", f"the editor does not answer {feature} questions (the client did "
                            f"not declare toolwireEditor.{feature}); use read_file or search_files instead",
                            {"missing": [feature]})

    async def _bounded(self, method: str, call: Awaitable[T]) -> T:
        with anyio.move_on_after(self.timeout) as scope:
            return await call
        assert scope.cancelled_caught
        raise ToolError("editor_timeout", f"the editor did not answer {method} within {self.timeout:g} s (setting "
                        "editorTimeout); it may still be busy: try again later, or use search_files instead",
                        {"method": method, "timeout": self.timeout})

    async def diagnostics(self, uris: list[str] | None = None) -> list[FileDiagnostics]:
        """The editor's problems of ``uris`` (None: every document it has problems for).

        Raises:
            ToolError: ``editor_unsupported``, ``editor_timeout``, ``editor_failed``,
                ``editor_disconnected``.
        """
        self.require("diagnostics")
        return await self._bounded("toolwire/editor/diagnostics", self.link.diagnostics(uris))

    async def symbols(self, query: str) -> list[dict[str, Any]]:
        """Workspace symbols matching ``query`` (``SymbolInformation`` JSON, each with a range).

        Raises:
            ToolError: as :meth:`diagnostics`.
        """
        self.require("symbols")
        return await self._bounded("toolwire/editor/symbols", self.link.symbols(query))

    async def definition(self, uri: str, position: tuple[int, int]) -> list[dict[str, Any]]:
        """Where the symbol at ``position`` of ``uri`` is defined (``Location`` JSON).

        Raises:
            ToolError: as :meth:`diagnostics`.
        """
        self.require("definition")
        return await self._bounded("toolwire/editor/definition", self.link.definition(uri, position))

    async def references(self, uri: str, position: tuple[int, int],
                         include_declaration: bool = False) -> list[dict[str, Any]]:
        """The references of the symbol at ``position`` of ``uri`` (``Location`` JSON).

        Raises:
            ToolError: as :meth:`diagnostics`.
        """
        self.require("references")
        return await self._bounded("toolwire/editor/references",
                                   self.link.references(uri, position, include_declaration))
