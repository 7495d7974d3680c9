"""Malformed JSON-RPC over raw stdio: clear errors, and the server keeps serving."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


class RawServer:
    """``toolwire serve`` spoken to byte by byte; every read checks the framing."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "toolwire", "serve", "--log-level", "ERROR"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, body: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def read(self) -> dict:
        assert self.proc.stdout is not None
        header = self.proc.stdout.readline()
        assert header.startswith(b"Content-Length: "), header  # nothing but framed JSON-RPC on stdout
        length = int(header.split(b":")[1])
        while (line := self.proc.stdout.readline()) not in (b"\r\n", b""):
            assert line.startswith(b"Content-Type:"), line
        return json.loads(self.proc.stdout.read(length))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def raw():
    server = RawServer()
    server.send(b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}')
    assert server.read()["id"] == 0
    yield server
    server.close()


def test_parse_error_then_the_server_keeps_serving(raw):
    raw.send(b"{not json")
    error = raw.read()
    assert error["id"] is None and error["error"]["code"] == -32700
    raw.send(b'{"jsonrpc": "2.0", "id": 2, "method": "toolwire/tools/list", "params": {}}')
    answer = raw.read()
    assert answer["id"] == 2 and "read_file" in json.dumps(answer["result"])


@pytest.mark.parametrize("body", [
    b'{"id": 3, "method": "toolwire/tools/list", "params": {}}',
    b'{"jsonrpc": "1.0", "id": 3, "method": "toolwire/tools/list", "params": {}}',
])
def test_a_request_without_jsonrpc_2_gets_invalid_request(raw, body):
    raw.send(body)
    assert raw.read() == {"jsonrpc": "2.0", "id": 3,
                          "error": {"code": -32600, "message": 'Invalid Request: "jsonrpc" must be "2.0"'}}


def test_unknown_method_and_bad_params(raw):
    raw.send(b'{"jsonrpc": "2.0", "id": 4, "method": "toolwire/nope", "params": {}}')
    assert raw.read()["error"]["code"] == -32601
    raw.send(b'{"jsonrpc": "2.0", "id": 5, "method": "toolwire/session/new", "params": {"cwd": ["x"]}}')
    error = raw.read()["error"]
    assert error["code"] == -32602 and "cwd" in error["message"]
    raw.send(b'{"jsonrpc": "2.0", "id": 6, "method": "toolwire/session/prompt", "params": {"sessionId": "nope", "prompt": "hi"}}')
    assert raw.read()["error"]["code"] == -32002
