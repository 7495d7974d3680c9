"""protocol.md documents exactly what the protocol models and settings define."""

from __future__ import annotations

import re
from pathlib import Path

from toolwire.lsp.protocol import METHODS
from toolwire.settings import Settings

DOC = (Path(__file__).parent.parent / "protocol.md").read_text()


def test_every_method_is_documented_with_its_direction_and_kind():
    for method, (direction, kind) in METHODS.items():
        assert f"`{method}`" in DOC, method
        row = next(line for line in DOC.splitlines() if line.startswith(f"| {direction} | `{method}`"))
        assert kind.split(",")[0] in row


def test_every_setting_is_documented():
    for name, field in Settings.model_fields.items():
        assert f"`{field.alias or name}`" in DOC, name


def test_every_status_and_cancel_reason_is_documented():
    from toolwire.streaming.state import CancelReason, Status

    for status in Status:
        assert f"`{status.value}`" in DOC
    for reason in CancelReason:
        assert f"`{reason.value}`" in DOC


CLIENT = Path(__file__).parent.parent / "client-vscode" / "src"
TS = (CLIENT / "protocol.ts").read_text()
WIRE_TS = (CLIENT / "generated" / "wire.ts").read_text()


def test_the_client_types_name_every_method_update_status_and_stop_reason():
    """protocol.ts has a method object for every method (typed from the generated table);
    the generated types hold every update kind, status and cancel reason the server
    sends; protocol.ts names the stop reasons (the wire says only ``string``)."""
    from toolwire.agent.events import (CallChange, CallSnapshot, McpServerChanged, MessageChunk, PlanEntry, PlanUpdate,
                                       SessionWarning, ToolCallChanged, TurnUpdate, UsageUpdate, WorkspaceChange)
    from toolwire.lsp.protocol import update_payload
    from toolwire.streaming.state import CancelReason, Status

    for method in METHODS:
        assert f'request("{method}")' in TS or f'notification("{method}")' in TS, method
        assert f'"{method}": {{' in WIRE_TS, method
    samples = [ToolCallChanged(CallSnapshot(), CallChange()), MessageChunk("x"), MessageChunk("x", "reasoning"), TurnUpdate("ended", "end_turn"),
               UsageUpdate(1, 2, 3), WorkspaceChange(("a",)), SessionWarning("tools_left_out", "m", ("git_branch",)),
               McpServerChanged("time", "failed", "exited (code 1)"), PlanUpdate((PlanEntry("a", "pending", "low"),))]
    for event in samples:
        kind = update_payload(event)["sessionUpdate"]
        assert re.search(rf'sessionUpdate: (?:"[a-z_]+" \| )*"{kind}"', WIRE_TS), kind
    for value in [*(s.value for s in Status), *(r.value for r in CancelReason)]:
        assert f'"{value}"' in WIRE_TS, value
    for reason in ("end_turn", "max_tokens", "max_turn_requests", "repeated_tool_failure", "cancelled", "error"):
        assert f'"{reason}"' in TS, reason
        assert f"`{reason}`" in DOC, reason


def test_the_client_declares_no_payload_shape_of_its_own():
    """protocol.ts re-exports or derives every wire type from generated/wire.ts: no
    interface and no object type literal of its own (change the models, run make schema)."""
    assert not re.search(r"^export interface ", TS, re.M)
    assert not re.search(r"^export type \w+ =\s*\{", TS, re.M)
    assert 'from "./generated/wire";' in TS


def test_tool_call_snapshots_match_the_wire_model():
    from toolwire.lsp.protocol import ToolCallWire
    from toolwire.streaming.state import CallError, CancelReason, Status, ToolCallState

    call = ToolCallState(key=0, index=0, id="c", name="edit_file")
    call.fragments.append('{"path": "a"}')
    snapshots = [call.to_wire()]
    call.transition(Status.GENERATED)
    call.transition(Status.CALLING)
    call.result = {"ok": True, "content": "x", "data": None, "errorCode": None}
    call.transition(Status.DONE)
    snapshots.append(call.to_wire())
    other = ToolCallState(key=1, index=1)
    other.transition(Status.ERRORED, error=CallError("invalid_json", "bad"))
    rejected = ToolCallState(key=2, index=2)
    rejected.transition(Status.CANCELED, cancel_reason=CancelReason.REJECTED)
    for snapshot in [*snapshots, other.to_wire(), rejected.to_wire()]:
        assert ToolCallWire.model_validate(snapshot).model_dump(by_alias=True, mode="json", exclude_unset=True) == snapshot


def _lsp_part() -> str:
    """protocol.md up to the ACP section (whose codes are the ACP SDK's, not ours)."""
    return DOC.split("## Agent Client Protocol front-end")[0]


def test_the_errors_table_gives_the_codes_the_server_sends():
    """Every code of the Errors table is the value of the server's constant of that name,
    and every error code the LSP part of the doc mentions is in the table."""
    import re

    from toolwire.rpc import errors as rpc

    section = _lsp_part().split("## Errors")[1].split("\n## ")[0]
    table = {int(code): name for code, name in re.findall(r"^\| (-3\d{4}) \| (\w+) \|", section, re.M)}
    constants = {"ParseError": rpc.PARSE_ERROR, "InvalidRequest": rpc.INVALID_REQUEST,
                 "MethodNotFound": rpc.METHOD_NOT_FOUND, "InvalidParams": rpc.INVALID_PARAMS,
                 "InternalError": rpc.INTERNAL_ERROR, "ServerNotInitialized": rpc.SERVER_NOT_INITIALIZED,
                 "TurnInProgress": rpc.TurnInProgress.CODE, "UnknownSession": rpc.UnknownSession.CODE,
                 "ServerBusy": rpc.SERVER_BUSY}
    for name, code in constants.items():
        assert table.get(code) == name, (name, code)
    body = _lsp_part().replace(section, "")
    for code in re.findall(r"(?<![\d.…])-3\d{4}\b", body):
        assert int(code) in table, f"protocol.md mentions error {code}, which the Errors table does not list"


def test_every_mention_of_an_error_code_fits_its_meaning():
    """Where a method's text names an error code, the words around it say what the
    table says the code means (an unknown session is -31002, a running turn -31001,
    a request before initialize -32002): so a method's section cannot give LSP's
    -32001/-32002 for Toolwire's own errors."""
    import re

    section = _lsp_part().split("## Errors")[1].split("\n## ")[0]
    body = _lsp_part().replace(section, "")
    meaning = {"-31001": ("turn",), "-31002": ("session",), "-32002": ("initialize",)}
    for match in re.finditer(r"(?<![\d.…])(-3\d{4})\b", body):
        code = match.group(1)
        window = body[max(0, match.start() - 120): match.end() + 60].lower()
        for word in meaning.get(code, ()):
            assert word in window, f"{code} near {window!r}"
        clause = re.split(r"[;.\n]\s", body[match.end():match.end() + 80])[0].lower()
        if "session" in clause and "unknown" in clause:
            assert code == "-31002", f"{code} given for an unknown session: {clause!r}"
        if "turn" in clause and ("runs" in clause or "running" in clause):
            assert code == "-31001", f"{code} given for a running turn: {clause!r}"
