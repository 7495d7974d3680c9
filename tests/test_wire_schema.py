"""Issue 11 §5: one source of truth for the wire. ``protocol.schema.json`` is generated
from the pydantic models and the client's ``src/generated/wire.ts`` from it; both
must be current (``make schema`` regenerates them)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from toolwire.lsp import protocol as P
from toolwire.lsp.schema import METHOD_MODELS, build_schema, render

ROOT = Path(__file__).parent.parent
SCHEMA = ROOT / "protocol.schema.json"
CLIENT = ROOT / "client-vscode"


def test_the_committed_schema_is_current():
    assert SCHEMA.read_text() == render(), "protocol.schema.json is out of date: run `make schema`"


def test_every_method_has_params_and_every_request_a_result():
    schema = build_schema()
    assert set(schema["properties"]) == set(P.METHODS) == set(METHOD_MODELS)
    for method, (direction, kind) in P.METHODS.items():
        entry = schema["properties"][method]["properties"]
        assert "params" in entry
        assert ("result" in entry) == (kind == "request"), method
        assert schema["x-methods"][method] == {"direction": direction, "kind": kind}


def test_the_generated_typescript_is_current():
    node = shutil.which("node")
    assert node, "node (20+) is needed: install Node.js, then `make test-client` (or `cd client-vscode && npm ci`)"
    assert (CLIENT / "node_modules" / "json-schema-to-typescript").is_dir(), (
        "client-vscode/node_modules is missing: run `cd client-vscode && npm ci` (or `make test-client`)")
    done = subprocess.run([node, "scripts/wire.mjs", "--check"], cwd=CLIENT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout


def test_wire_models_describe_what_the_server_sends():
    """The models behind the schema validate real payloads (a drift test for the new models)."""
    from toolwire.lsp import messages as M
    from toolwire.tools import default_registry

    definitions = [{**d, "source": "builtin"} for d in default_registry().definitions()]
    definitions.append({"type": "function", "function": {"name": "mcp__time__get_current_time", "description": "d",
                                                         "parameters": {"type": "object"}},
                        "source": {"mcpServer": "time", "tool": "get_current_time"}, "annotations": {"readOnlyHint": True}})
    M.ToolsListResult.model_validate({"tools": definitions, "count": len(definitions), "maxTools": 20, "leftOut": [],
                                      "mcpServers": [{"name": "time", "state": "ready", "tools": 2, "offered": 1}]})
    M.SessionUpdateParams.model_validate({"sessionId": "s", "update": {
        "sessionUpdate": "warning", "code": "tools_left_out", "message": "m", "names": ["git_branch"]}})
    M.SessionUpdateParams.model_validate({"sessionId": "s", "update": {
        "sessionUpdate": "usage", "usage": {"inputTokens": None, "outputTokens": 3, "durationMs": 12}}})
    M.SessionUpdateParams.model_validate({"sessionId": "s", "streamId": "r", "update": {
        "sessionUpdate": "turn", "state": "ended", "turnId": "t1", "stopReason": "end_turn"}})
    from toolwire.agent.events import McpServerChanged, PlanEntry, PlanUpdate
    for event in (McpServerChanged("time", "ready"), McpServerChanged("git", "failed", "command not found: mcp-server-gitx"),
                  PlanUpdate((PlanEntry("Fix it", "in_progress", "high"), PlanEntry("Test it", "pending", "low")))):
        M.SessionUpdateParams.model_validate({"sessionId": "s", "update": P.update_payload(event)})
    assert json.loads(SCHEMA.read_text())["title"] == "ToolwireProtocol"
