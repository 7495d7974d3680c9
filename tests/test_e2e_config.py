"""``workspace/didChangeConfiguration``: settings change for the next turn of every session,
a running turn is never touched, and an API key sent this way never leaks (real server
over stdio, the openai SDK against a local endpoint, the server's own log file)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from conftest import make_client, new_session, prompt, server_fixture, write_script
from endpoint import FakeEndpoint, Reply, TEXT_ONLY

pytestmark = pytest.mark.asyncio(loop_scope="module")

cfg_client = server_fixture("cfg_client", make_client)


def configure(client, section: dict[str, Any]) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"toolwire": section}))


async def snapshot(client, sid: str) -> dict[str, Any]:
    return await client.call("toolwire/session/snapshot", {"sessionId": sid})


async def test_a_change_applies_to_the_next_turn_and_never_to_the_running_one(cfg_client, repo, tmp_path):
    client = cfg_client
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "hello.txt", "old_string": "hello", "new_string": "hi"}, "id": "e1"}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r1"}]},
        {"text": "first turn done"},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r2"}]},
        {"text": "never reached: one request per turn now"},
    ])
    sid = await new_session(client, repo, script, replayLog=str(log))
    client.permission_hold = asyncio.Event()
    client.permission_asked.clear()
    turn = asyncio.ensure_future(prompt(client, sid, "first"))
    try:
        await asyncio.wait_for(client.permission_asked.wait(), 20)
        configure(client, {"maxModelRequests": 1, "permissions": {"read": "deny"}})
        assert (await snapshot(client, sid))["running"] is True  # handled after the notification: it came mid-turn
    finally:
        client.permission_hold.set()
        client.permission_hold = None
    first = await asyncio.wait_for(turn, 20)
    # the running turn kept its settings: three requests, the read was not denied
    assert first["stopReason"] == "end_turn"
    finals = {cid: snaps[-1] for cid, snaps in client.tool_calls(sid).items()}
    assert finals["e1"]["status"] == "done" and finals["r1"]["status"] == "done"
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(requests) == 3
    # the next turn has the new ones: one request, reads denied
    second = await prompt(client, sid, "second")
    assert second["stopReason"] == "max_turn_requests"
    r2 = client.tool_calls(sid)["r2"][-1]
    assert r2["status"] == "canceled" and r2["cancelReason"] == "policy_denied"
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(requests) == 4
    configure(client, {"maxModelRequests": 25, "permissions": {}})


async def test_model_change_keeps_a_sessions_own_model_and_reports_bad_values(cfg_client, repo, tmp_path):
    client = cfg_client
    other = write_script(tmp_path / "other.jsonl", [{"text": "from the configured script"}])
    own = write_script(tmp_path / "own.jsonl", [{"text": "from the session's own script"}])
    plain = (await client.call("toolwire/session/new", {"cwd": str(repo)}))["sessionId"]  # the server's model
    pinned = await new_session(client, repo, own)  # a model of its own
    shown = len(client.messages)
    configure(client, {"model": f"replay:{other}", "maxModelRequests": "lots", "toolCalling": "smoke-signals"})
    assert (await snapshot(client, plain))["model"] == f"replay:{other}"
    assert (await snapshot(client, pinned))["model"] == f"replay:{own}"
    await prompt(client, plain)
    text = "".join(u["content"]["text"] for u in client.updates[plain] if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "from the configured script"
    await prompt(client, pinned)
    text = "".join(u["content"]["text"] for u in client.updates[pinned] if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "from the session's own script"
    warnings = [m.message for m in client.messages[shown:] if m.type == types.MessageType.Warning]
    assert any("maxModelRequests" in w and "keeping the current value" in w for w in warnings), warnings
    assert any("toolCalling" in w for w in warnings), warnings
    # an unbuildable model is reported; the session keeps the one it has
    configure(client, {"model": "bogus:thing"})
    assert (await snapshot(client, plain))["model"] == f"replay:{other}"
    assert any("bogus:thing" in m.message for m in client.messages[shown:])
    configure(client, {"model": "replay"})


SECRET = "sk-test-Zq8v3XbN1pLr7Tw4"
SECRET2 = "sk-test-second-Hh2kMmW9"
INIT_SECRET = "sk-init-Pp5cQd8Rr1Ss"


async def test_api_key_from_configuration_is_used_and_never_leaks(repo, tmp_path):
    log = tmp_path / "server.log"
    wire = tmp_path / "server-to-client.bin"
    stderr = tmp_path / "server.stderr"
    # tee keeps a copy of every byte the server writes to the client
    command = (f"{sys.executable} -m toolwire serve --log-level DEBUG --log-file {log} 2>{stderr} "
               f"| tee {wire}")
    echo_key = json.dumps({"error": {"message": f"Incorrect API key provided: {SECRET}", "type": "invalid_request_error",
                                     "code": "invalid_api_key"}}).encode()
    replies = [Reply(401, echo_key), Reply(200, TEXT_ONLY)]
    with FakeEndpoint(replies) as endpoint:
        config = ClientServerConfig(server_command=["sh", "-c", command], client_factory=make_client)
        client = await config.start()
        try:
            await client.initialize_session(types.InitializeParams(
                capabilities=types.ClientCapabilities(), initialization_options={"apiKey": INIT_SECRET}))
            configure(client, {"model": "openai:gpt-test", "baseUrl": endpoint.base_url, "apiKey": SECRET})
            sid = (await client.call("toolwire/session/new", {"cwd": str(repo)}))["sessionId"]
            assert (await snapshot(client, sid))["model"] == "openai:gpt-test"
            failed = await prompt(client, sid)
            assert failed["stopReason"] == "error" and "Incorrect API key provided" in failed["message"]
            assert endpoint.authorizations == [f"Bearer {SECRET}"]  # the configured key was used
            # a new key (and a bad value next to it): the next turn uses the new key
            configure(client, {"apiKey": SECRET2, "temperature": 99})
            ok = await prompt(client, sid)
            assert ok["stopReason"] == "end_turn"
            assert endpoint.authorizations[-1] == f"Bearer {SECRET2}"
            shown = [m.message for m in client.messages]
            assert any("temperature" in m for m in shown)
            seen = json.dumps([client.updates[sid], failed, ok, shown, [m.message for m in client.log_messages],
                               await snapshot(client, sid)])
        finally:
            await client.shutdown_session()
            await client.stop()
    server_log = log.read_text()
    assert "settings changed: apiKey" in server_log  # DEBUG logging ran: the key had every chance to appear
    everything = {"log file": server_log, "stderr": stderr.read_text(), "wire": wire.read_bytes().decode("utf-8", "replace"),
                  "messages": seen}
    for where, text in everything.items():
        for secret in (SECRET, SECRET2, INIT_SECRET):
            assert secret not in text, f"{secret} leaked into the {where}"
    assert "Incorrect API key provided: ***" in everything["wire"]  # the echo was redacted, not dropped
