"""Secrets never leave the process (issue 19, section 2), over the real front-ends.

``baseUrl`` holds user info and key-like query values. For an endpoint that is down
(a bound port that does not listen), one that answers 401 echoing the secrets, and
short secrets (masked only in their structural place), everything each path writes
is grepped for the secrets: ``toolwire serve``'s JSON-RPC stream (stdout), its stderr
and its ``--log-file`` at DEBUG; ``toolwire run``'s text and ``--json`` output, its
stderr and its server log; ``toolwire acp``'s stdout, stderr and log. The failure
must still say what failed: the host and port stay, the secrets are ``***``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import ClientServerConfig

from conftest import make_client, new_session, prompt, write_script
from endpoint import FakeEndpoint, Reply

pytestmark = pytest.mark.asyncio(loop_scope="module")  # the conftest's module-scoped server

PASSWORD = "s3cretpassword"
USER = "user"
API_KEY_Q = "qkey-0123456789abcdef"
TOKEN_Q = "qtok-0123456789abcdef"
#: Short secrets (< 8 characters): replaced only in their structural place.
SHORT = {"user": "Ux4vq", "password": "Zq7xW", "key": "Kj3vQ", "token": "Hb4nP"}
#: An MCP server's header and env values, registered through the redactor's API by ACP
#: session/new (the 401 body echoes them: only the registration keeps them out).
HEADER_SECRET = "hdr-0123456789abcdef"
ENV_SECRET = "env-0123456789abcdef"

CASES = ("down", "http401", "short")


def secrets_of(case: str) -> list[str]:
    if case == "short":
        return [f"{SHORT['user']}:{SHORT['password']}", SHORT["password"], SHORT["key"], SHORT["token"]]
    return [PASSWORD, API_KEY_Q, TOKEN_Q]


def base_url(case: str, port: int) -> str:
    if case == "short":
        return f"http://{SHORT['user']}:{SHORT['password']}@127.0.0.1:{port}/v1?key={SHORT['key']}&token={SHORT['token']}"
    return f"http://{USER}:{PASSWORD}@127.0.0.1:{port}/v1?api-key={API_KEY_Q}&token={TOKEN_Q}"


def echo_401(mcp: bool) -> Reply:
    """A 401 whose error message quotes every secret the process was given (with
    ``mcp``, the MCP header and env values too)."""
    message = f"Incorrect API key provided: {API_KEY_Q}; token {TOKEN_Q}; password {PASSWORD}"
    if mcp:
        message += f"; header {HEADER_SECRET}; env {ENV_SECRET}"
    return Reply(401, json.dumps({"error": {"message": message, "type": "invalid_request_error",
                                            "code": "invalid_api_key"}}).encode())


@contextmanager
def endpoint_for(case: str, mcp: bool = False) -> Iterator[int]:
    """The port of the case's endpoint: a bound socket that never listens (connections
    are refused, and no other process can take the port meanwhile), or a 401 server
    (which must have been asked, with the base URL's query on the request's path)."""
    if case == "http401":
        with FakeEndpoint([echo_401(mcp) for _ in range(4)]) as endpoint:
            yield endpoint.server.server_address[1]
        assert endpoint.paths and all(path == f"/v1/chat/completions?api-key={API_KEY_Q}&token={TOKEN_Q}"
                                      for path in endpoint.paths), endpoint.paths
        return
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
    finally:
        sock.close()


def expected_failure(case: str) -> str:
    return "answered HTTP 401" if case == "http401" else "cannot reach the model endpoint"


def assert_clean(case: str, port: int, texts: dict[str, str]) -> None:
    """No secret anywhere; the failure named with host and port, secrets as ``***``."""
    for where, text in texts.items():
        for secret in secrets_of(case) + [HEADER_SECRET, ENV_SECRET]:
            assert secret not in text, f"{secret!r} leaked into {where}"
    shown = f"http://***@127.0.0.1:{port}/v1?"
    assert any(shown in text and expected_failure(case) in text for text in texts.values()), texts


def settings_for(case: str, port: int) -> dict[str, Any]:
    return {"model": "openai:gpt-test", "baseUrl": base_url(case, port), "modelRetries": 0}


@pytest.mark.parametrize("case", CASES)
async def test_toolwire_serve_writes_no_secret_anywhere(case, repo, tmp_path):
    log, wire, stderr = tmp_path / "server.log", tmp_path / "wire.bin", tmp_path / "server.stderr"
    command = f"{sys.executable} -m toolwire serve --log-level DEBUG --log-file {log} 2>{stderr} | tee {wire}"
    with endpoint_for(case) as port:
        client = await ClientServerConfig(server_command=["sh", "-c", command], client_factory=make_client).start()
        try:
            await client.initialize_session(types.InitializeParams(
                capabilities=types.ClientCapabilities(), initialization_options=settings_for(case, port)))
            sid = (await client.call("toolwire/session/new", {"cwd": str(repo)}))["sessionId"]
            failed = await prompt(client, sid)
            snapshot = await client.call("toolwire/session/snapshot", {"sessionId": sid})
            # a session override with a bad value next to the URL: refused, the URL not echoed
            with pytest.raises(JsonRpcInvalidParams, match="temperature") as refused:
                await client.call("toolwire/session/new", {"cwd": str(repo), "settings": {
                    "baseUrl": base_url(case, port), "temperature": 99}})
            seen = json.dumps([client.updates[sid], failed, snapshot, str(refused.value),
                               [m.message for m in client.messages], [m.message for m in client.log_messages]])
        finally:
            await client.shutdown_session()
            await client.stop()
    assert failed["stopReason"] == "error"
    assert f"http://***@127.0.0.1:{port}/v1?" in failed["message"], failed
    server_log = log.read_text()
    assert " DEBUG openai._base_client: Sending HTTP Request: " in server_log  # the libraries' DEBUG lines ran
    assert_clean(case, port, {"the server log": server_log, "stderr": stderr.read_text(),
                              "the JSON-RPC stream": wire.read_bytes().decode("utf-8", "replace"),
                              "what the client got": seen})


async def test_secrets_sent_after_initialize_are_redacted_too(repo, tmp_path):
    """``baseUrl`` and ``apiKey`` sent with ``workspace/didChangeConfiguration`` and as
    ``session/new`` settings are registered where they arrive: a 401 quoting them all
    reaches the client, the stream and the DEBUG log as ``***``."""
    late = ["cfgpassword123", "cfgkey-0123456789", "sk-late-0123456789", "sespassword123", "seskey-0123456789"]
    def echo(secrets: list[str]) -> Reply:  # a 401 quoting the secrets given so far
        return Reply(401, json.dumps({"error": {"message": "refused: " + " ".join(secrets)}}).encode())

    log, wire = tmp_path / "server.log", tmp_path / "wire.bin"
    command = f"{sys.executable} -m toolwire serve --log-level DEBUG --log-file {log} | tee {wire}"
    with FakeEndpoint([echo(late[:3]), echo(late)]) as endpoint:
        port = endpoint.server.server_address[1]
        client = await ClientServerConfig(server_command=["sh", "-c", command], client_factory=make_client).start()
        try:
            await client.initialize_session(types.InitializeParams(
                capabilities=types.ClientCapabilities(),
                initialization_options={"model": "openai:gpt-test", "modelRetries": 0}))
            client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"toolwire": {
                "baseUrl": f"http://u:{late[0]}@127.0.0.1:{port}/v1?key={late[1]}", "apiKey": late[2]}}))
            first = await prompt(client, (await client.call("toolwire/session/new", {"cwd": str(repo)}))["sessionId"])
            sid = (await client.call("toolwire/session/new", {"cwd": str(repo), "settings": {
                "baseUrl": f"http://u:{late[3]}@127.0.0.1:{port}/v1?token={late[4]}"}}))["sessionId"]
            second = await prompt(client, sid)
        finally:
            await client.shutdown_session()
            await client.stop()
    assert len(endpoint.requests) == 2  # both configured endpoints were asked
    assert first["stopReason"] == "error" and "refused: *** *** ***" in first["message"], first
    assert second["stopReason"] == "error" and "refused: *** *** *** *** ***" in second["message"], second
    assert f"http://***@127.0.0.1:{port}/v1?token=***" in second["message"]
    for where, text in {"the log": log.read_text(), "the stream": wire.read_bytes().decode("utf-8", "replace")}.items():
        for secret in late:
            assert secret not in text, f"{secret} leaked into {where}"


@pytest.mark.parametrize("json_mode", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("case", CASES)
async def test_toolwire_run_prints_no_secret_anywhere(case, json_mode, repo, tmp_path):
    server_log = tmp_path / "server.log"
    with endpoint_for(case) as port:
        settings = settings_for(case, port)
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "toolwire", "run", "--workspace", str(repo), "--model", settings.pop("model"),
             "--settings", json.dumps(settings), "--log-level", "DEBUG", "--server-log", str(server_log),
             *(["--json"] if json_mode else []), "say hi"],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 3, done.stderr[-3000:]
    assert "the turn failed" in done.stderr and f"127.0.0.1:{port}" in done.stderr
    if json_mode:
        final = json.loads(done.stdout.splitlines()[-1])
        assert final["stopReason"] == "error" and f"http://***@127.0.0.1:{port}/v1?" in final["message"]
    assert_clean(case, port, {"stdout": done.stdout, "stderr": done.stderr, "the server log": server_log.read_text()})


def _acp_lines(port: int, case: str) -> list[dict[str, Any]]:
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "CWD", "mcpServers": [
            {"name": "tools", "command": "/bin/true", "args": [], "env": [{"name": "GH_TOKEN", "value": ENV_SECRET}]},
            {"type": "http", "name": "remote", "url": f"https://mcp.example/x?token={TOKEN_Q}",
             "headers": [{"name": "X-Api-Key", "value": HEADER_SECRET}]}]}},
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
         "params": {"sessionId": "SID", "prompt": [{"type": "text", "text": "say hi"}]}},
    ]


@pytest.mark.parametrize("case", CASES)
async def test_toolwire_acp_writes_no_secret_anywhere(case, repo, tmp_path):
    log = tmp_path / "acp.log"
    with endpoint_for(case, mcp=True) as port:
        settings = settings_for(case, port)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "toolwire", "acp", "--settings", json.dumps(settings), "--log-level", "DEBUG",
            "--log-file", str(log), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        out: list[str] = []

        async def answer(request_id: int) -> dict[str, Any]:
            while True:
                line = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
                assert line, "the agent closed its output"
                out.append(line)
                message = json.loads(line)
                if message.get("id") == request_id and "method" not in message:
                    return message

        first, new, go = _acp_lines(port, case)
        new["params"]["cwd"] = str(repo)
        for line in (first, new):
            proc.stdin.write((json.dumps(line) + "\n").encode())
            await proc.stdin.drain()
            reply = await answer(line["id"])
        go["params"]["sessionId"] = reply["result"]["sessionId"]
        proc.stdin.write((json.dumps(go) + "\n").encode())
        await proc.stdin.drain()
        failed = await answer(3)
        proc.stdin.close()
        rest, stderr = await asyncio.wait_for(proc.communicate(), 60)
    out.append(rest.decode())
    stdout = "".join(out)
    assert "error" in failed and f"127.0.0.1:{port}" in json.dumps(failed), failed
    assert_clean(case, port, {"stdout": stdout, "stderr": stderr.decode(), "the log": log.read_text()})


async def test_what_the_model_wrote_is_shown_as_written_but_for_a_url_s_secrets(client, repo, tmp_path):
    """Content a client shows is redacted by the rule only: a quoted ``password = "…"``
    the model wrote stays (log records mask it), a URL's user info does not."""
    text = 'Set password = "hunter2" and token: "abc" in config; clone https://bob:tok@git.example/r.git'
    script = write_script(tmp_path / "script.jsonl", [{"text": text, "chunk_size": 1000}])
    sid = await new_session(client, repo, script)
    await prompt(client, sid)
    shown = "".join(u["content"]["text"] for u in client.updates[sid] if u["sessionUpdate"] == "agent_message_chunk")
    assert shown == 'Set password = "hunter2" and token: "abc" in config; clone https://***@git.example/r.git'
