"""Wire models of the editor's intelligence: the ``toolwireEditor`` capability, the four
``toolwire/editor/*`` requests the server sends and the ``diagnosticsChanged``
notification the client sends (protocol.md "The editor's intelligence").

Answers carry LSP's own types (``Diagnostic``, ``Location``, ``SymbolInformation`` or
``WorkspaceSymbol``), positions in the negotiated position encoding. Only the fields
the server reads are modelled; any other field is accepted and ignored.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from toolwire.lsp.protocol import (EDITOR_DEFINITION, EDITOR_DIAGNOSTICS, EDITOR_DIAGNOSTICS_CHANGED, EDITOR_REFERENCES,
                                   EDITOR_SYMBOLS, Wire)

__all__ = [
    "EDITOR_DIAGNOSTICS", "EDITOR_SYMBOLS", "EDITOR_DEFINITION", "EDITOR_REFERENCES", "EDITOR_DIAGNOSTICS_CHANGED",
    "EditorCapability", "LspPosition", "LspRange", "LspLocation", "LspDiagnostic", "EditorDiagnosticsParams",
    "DocumentDiagnostics", "EditorDiagnosticsResult", "EditorSymbolsParams", "SymbolLocation", "EditorSymbol",
    "EditorSymbolsResult", "DocumentRef", "EditorDefinitionParams", "EditorReferencesParams",
    "EditorLocationsResult", "DiagnosticsChangedParams",
]



class EditorCapability(Wire):
    """``initialize`` ``capabilities.experimental.toolwireEditor``: what the client can answer
    (any subset; a key counts only when ``true``)."""

    diagnostics: bool | None = Field(None, description="Answers toolwire/editor/diagnostics and sends diagnosticsChanged.")
    symbols: bool | None = Field(None, description="Answers toolwire/editor/symbols.")
    definition: bool | None = Field(None, description="Answers toolwire/editor/definition.")
    references: bool | None = Field(None, description="Answers toolwire/editor/references.")


class LspPosition(Wire):
    """LSP ``Position``: 0-based line, character in units of the negotiated encoding."""

    line: int = Field(ge=0)
    character: int = Field(ge=0)


class LspRange(Wire):
    """LSP ``Range``."""

    start: LspPosition
    end: LspPosition


class LspLocation(Wire):
    """LSP ``Location`` (a ``LocationLink`` is read as ``{uri: targetUri, range: targetSelectionRange}``)."""

    uri: str = Field(min_length=1)
    range: LspRange

    @model_validator(mode="before")
    @classmethod
    def _link(cls, value: Any) -> Any:
        if isinstance(value, dict) and "uri" not in value and "targetUri" in value:
            return {"uri": value["targetUri"], "range": value.get("targetSelectionRange") or value.get("targetRange")}
        return value


class LspDiagnostic(Wire):
    """LSP ``Diagnostic`` (the fields the server reads; ``relatedInformation``, ``tags``,
    ``data`` and the rest are ignored)."""

    range: LspRange
    severity: int | None = Field(None, ge=1, le=4, description="1 error, 2 warning, 3 information, 4 hint; "
                                                               "absent: read as an error.")
    code: int | str | None = None
    source: str | None = None
    message: str

    @field_validator("code", "source", mode="before")
    @classmethod
    def _plain(cls, value: Any) -> Any:
        """A code or source of another type (a ``{value, target}`` object) is read as none: the
        problem is kept."""
        return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


class EditorDiagnosticsParams(Wire):
    """``toolwire/editor/diagnostics`` params: ``uris`` null asks for every document the editor has
    problems for (sent explicitly as ``null``)."""

    uris: list[str] | None


class DocumentDiagnostics(Wire):
    """One document's problems."""

    uri: str = Field(min_length=1)
    diagnostics: list[LspDiagnostic]


class EditorDiagnosticsResult(Wire):
    """``toolwire/editor/diagnostics`` result."""

    items: list[DocumentDiagnostics]


class EditorSymbolsParams(Wire):
    """``toolwire/editor/symbols`` params (LSP ``WorkspaceSymbolParams``' query)."""

    query: str


class SymbolLocation(Wire):
    """A symbol's location: a ``Location``, or a ``WorkspaceSymbol``'s ``{uri}`` without a range
    (dropped by the server: the client resolves it, or it is not used)."""

    uri: str = Field(min_length=1)
    range: LspRange | None = None


class EditorSymbol(Wire):
    """LSP ``SymbolInformation`` or ``WorkspaceSymbol``."""

    name: str
    kind: int = Field(ge=1, description="LSP SymbolKind (1 File … 26 TypeParameter).")
    container_name: str | None = None
    location: SymbolLocation


class EditorSymbolsResult(Wire):
    """``toolwire/editor/symbols`` result."""

    symbols: list[EditorSymbol]


class DocumentRef(Wire):
    """LSP ``TextDocumentIdentifier``."""

    uri: str = Field(min_length=1)


class EditorDefinitionParams(Wire):
    """``toolwire/editor/definition`` params."""

    text_document: DocumentRef
    position: LspPosition


class EditorReferencesParams(Wire):
    """``toolwire/editor/references`` params (the server sends ``includeDeclaration: false``)."""

    text_document: DocumentRef
    position: LspPosition
    include_declaration: bool = False


class EditorLocationsResult(Wire):
    """``toolwire/editor/definition`` and ``toolwire/editor/references`` result."""

    locations: list[LspLocation]


class DiagnosticsChangedParams(Wire):
    """``toolwire/editor/diagnosticsChanged`` params: each URI whose problems changed (debounced
    by the client, about 100 ms)."""

    uris: list[str]
