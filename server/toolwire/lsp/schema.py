"""The JSON Schema of the ``toolwire/`` wire protocol, generated from the pydantic models.

``python -m toolwire.lsp.schema > protocol.schema.json`` (``make schema``) writes
it; a test fails when the committed file differs from what this module builds,
and the VS Code client's ``src/generated/wire.ts`` is generated from that file by
``json-schema-to-typescript``. Shape::

    {"$schema", "title", "description",
     "properties": {"<method>": {"params": {$ref}, "result": {$ref}}, ...},
     "x-methods": {"<method>": {"direction", "kind"}},
     "$defs": {<ModelName>: <schema>, ...}}

Params are given in validation mode (what the receiver accepts), results and
notification params in serialization mode (what the sender writes); field names
are the camelCase wire names.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from toolwire.lsp import action_messages as A
from toolwire.lsp import editor_messages as E
from toolwire.lsp import messages as M
from toolwire.lsp import protocol as P
from toolwire.lsp import undo_messages as U
from toolwire.settings import Settings

#: method → (params model, result model or None for notifications).
METHOD_MODELS: dict[str, tuple[type[BaseModel], type[BaseModel] | None]] = {
    P.SESSION_NEW: (P.SessionNewParams, P.SessionNewResult),
    P.SESSION_PROMPT: (P.PromptParams, P.PromptResult),
    P.SESSION_CONTINUE: (P.SessionRef, P.PromptResult),
    P.SESSION_CANCEL: (P.SessionRef, None),
    P.SESSION_CLOSE: (P.SessionRef, M.SessionCloseResult),
    P.SESSION_COMPACT: (P.SessionRef, M.SessionCompactResult),
    P.SESSION_LIST: (P.SessionListParams, P.SessionListResult),
    P.SESSION_LOAD: (P.SessionLoadParams, P.SessionNewResult),
    P.SESSION_DELETE: (P.SessionDeleteParams, P.SessionDeleteResult),
    P.SESSION_SET_MODEL: (P.SessionSetModelParams, P.SessionSetModelResult),
    P.MODELS_LIST: (P.ModelsListParams, P.ModelsListResult),
    P.WORKSPACE_FIND_FILES: (P.FindFilesParams, P.FindFilesResult),
    P.SESSION_SNAPSHOT: (P.SessionRef, M.SnapshotResult),
    P.TOOL_CALL_CANCEL: (P.ToolCallCancelParams, M.ToolCallCancelResult),
    P.TOOLS_LIST: (M.ToolsListParams, M.ToolsListResult),
    P.TOOL_CALLS_MERGE: (P.ToolCallsMergeParams, M.ToolCallsMergeResult),
    P.TOOL_CALLS_RUN: (P.ToolCallsRunParams, M.ToolCallsRunResult),
    P.TOOL_CALL_PREVIEW: (P.ToolCallPreviewParams, P.ToolCallPreviewResult),
    P.SESSION_UNDO_TURN: (U.UndoTurnParams, U.UndoTurnResult),
    P.SESSION_REDO_TURN: (U.UndoTurnParams, U.UndoTurnResult),
    P.SESSION_UPDATE: (M.SessionUpdateParams, None),
    P.REQUEST_PERMISSION: (M.RequestPermissionParams, P.RequestPermissionResult),
    P.EDITOR_DIAGNOSTICS: (E.EditorDiagnosticsParams, E.EditorDiagnosticsResult),
    P.EDITOR_SYMBOLS: (E.EditorSymbolsParams, E.EditorSymbolsResult),
    P.EDITOR_DEFINITION: (E.EditorDefinitionParams, E.EditorLocationsResult),
    P.EDITOR_REFERENCES: (E.EditorReferencesParams, E.EditorLocationsResult),
    P.EDITOR_DIAGNOSTICS_CHANGED: (E.DiagnosticsChangedParams, None),
}

#: Models that are not a method's params or result but are part of the wire.
EXTRA_MODELS: tuple[type[BaseModel], ...] = (P.ToolCallWire, A.RunActionArgs, A.RunActionResult)

#: Models the server accepts outside the ``toolwire/`` methods (validation mode): the
#: settings, as ``initialize``'s ``initializationOptions`` and ``settings`` of
#: ``toolwire/session/new`` and ``workspace/didChangeConfiguration`` carry them; the
#: ``toolwireEditor`` client capability of ``initialize``.
ACCEPTED_MODELS: tuple[type[BaseModel], ...] = (Settings, E.EditorCapability)


class _NoFieldTitles(GenerateJsonSchema):
    """Titles only on models: per-field titles would become one TypeScript alias per field."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _receiver(method: str) -> str:
    return "server" if P.METHODS[method][0] == "client→server" else "client"


def build_schema() -> dict[str, Any]:
    """The whole schema document (deterministic: same models, same JSON)."""
    missing = set(P.METHODS) - set(METHOD_MODELS)
    if missing:
        raise RuntimeError(f"methods without models in toolwire.lsp.schema: {sorted(missing)}")
    pairs: list[tuple[type[BaseModel], str]] = []
    for method, (params, result) in METHOD_MODELS.items():
        # params: what the receiver accepts; results: what the receiver sends back
        pairs.append((params, "validation" if _receiver(method) == "server" else "serialization"))
        if result is not None:
            pairs.append((result, "serialization" if _receiver(method) == "server" else "validation"))
    pairs.extend((model, "serialization") for model in EXTRA_MODELS)
    pairs.extend((model, "validation") for model in ACCEPTED_MODELS)
    seen: set[tuple[type[BaseModel], str]] = set()
    unique = [p for p in pairs if not (p in seen or seen.add(p))]
    refs, document = models_json_schema(unique, ref_template="#/$defs/{model}", schema_generator=_NoFieldTitles)
    defs = document.get("$defs", {})
    properties: dict[str, Any] = {}
    for method, (params, result) in METHOD_MODELS.items():
        entry: dict[str, Any] = {"type": "object", "additionalProperties": False,
                                 "properties": {"params": _ref(refs, params, method, "params")}, "required": ["params"]}
        if result is not None:
            entry["properties"]["result"] = _ref(refs, result, method, "result")
            entry["required"].append("result")
        properties[method] = entry
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ToolwireProtocol",
        "description": ("The toolwire/ JSON-RPC methods: params and results (generated from "
                        "server/toolwire/lsp/protocol.py, messages.py, mcp_messages.py, editor_messages.py, action_messages.py and undo_messages.py by `make schema`; do not edit)."),
        "type": "object",
        "additionalProperties": False,
        "properties": properties,
        "required": list(properties),
        "x-methods": {m: {"direction": d, "kind": k} for m, (d, k) in P.METHODS.items()},
        "$defs": dict(sorted(defs.items())),
    }


def _ref(refs: dict[Any, Any], model: type[BaseModel], method: str, part: str) -> dict[str, Any]:
    for (cls, _mode), ref in refs.items():
        if cls is model:
            return {"$ref": ref["$ref"]}
    raise KeyError(model)  # pragma: no cover - every model was registered above


def params_schema(method: str) -> dict[str, Any]:
    """The params schema of ``method``, self-contained (with ``$defs``), for fuzzing."""
    schema = build_schema()
    ref = schema["properties"][method]["properties"]["params"]["$ref"]
    return {"$ref": ref, "$defs": schema["$defs"]}


def render() -> str:
    """The schema file's text (sorted keys within models kept as pydantic emits them)."""
    return json.dumps(build_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
