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
    assert raw.read()["error"]["code"] == -31002


# ---------------------------------------------------------------- issue 11 §3


def uninitialized() -> RawServer:
    return RawServer()


def test_requests_before_initialize_get_server_not_initialized():
    server = uninitialized()
    try:
        server.send(b'{"jsonrpc": "2.0", "id": 1, "method": "toolwire/tools/list", "params": {}}')
        assert server.read() == {"jsonrpc": "2.0", "id": 1, "error": {
            "code": -32002, "message": "ServerNotInitialized: 'toolwire/tools/list' before initialize"}}
        server.send(b'{"jsonrpc": "2.0", "method": "toolwire/session/cancel", "params": {"sessionId": "x"}}')  # dropped
        server.send(b'{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {}}}')
        assert server.read()["id"] == 2  # the notification got no answer: the next message is this one
    finally:
        server.close()


def test_a_request_without_params(raw):
    raw.send(b'{"jsonrpc": "2.0", "id": 1, "method": "toolwire/tools/list"}')
    assert "read_file" in json.dumps(raw.read()["result"])
    raw.send(b'{"jsonrpc": "2.0", "id": 2, "method": "toolwire/session/new"}')
    assert raw.read()["error"] == {"code": -32602, "message": "toolwire/session/new: invalid params: cwd: Field required"}
    raw.send(b'{"jsonrpc": "2.0", "id": 3, "method": "toolwire/session/prompt"}')
    error = raw.read()["error"]
    assert error["code"] == -32602 and "sessionId: Field required" in error["message"] and "prompt: Field required" in error["message"]
    raw.send(b'{"jsonrpc": "2.0", "id": 4, "method": "toolwire/tools/list", "params": 7}')
    assert raw.read()["error"]["code"] == -32602


@pytest.mark.parametrize("body", [b"42", b'"hello"', b"null", b"true", b"[]"])
def test_json_that_is_not_an_object_gets_invalid_request_with_null_id(raw, body):
    raw.send(body)
    answer = raw.read()
    assert answer["id"] is None and answer["error"]["code"] == -32600
    raw.send(b'{"jsonrpc": "2.0", "id": 9, "method": "toolwire/tools/list"}')
    assert raw.read()["id"] == 9  # still serving


@pytest.mark.parametrize("body, msg_id", [
    (b'{"jsonrpc": "2.0", "id": 5}', 5),
    (b'{"id": "x"}', "x"),
    (b'{"jsonrpc": "2.0", "id": 6, "method": 12}', 6),
    (b'{"jsonrpc": "2.0", "id": [1], "method": "toolwire/tools/list"}', None),
    (b'{"jsonrpc": "2.0"}', None),
])
def test_objects_that_are_no_message_get_invalid_request(raw, body, msg_id):
    raw.send(body)
    answer = raw.read()
    assert answer["id"] == msg_id and answer["error"]["code"] == -32600


def test_a_batch_gets_one_answer_per_request(raw):
    raw.send(json.dumps([
        {"jsonrpc": "2.0", "id": 1, "method": "toolwire/tools/list"},
        {"jsonrpc": "2.0", "method": "toolwire/session/cancel", "params": {"sessionId": "none"}},  # no answer
        7,
        {"jsonrpc": "2.0", "id": 2, "method": "toolwire/session/snapshot", "params": {"sessionId": "none"}},
    ]).encode())
    answers = [raw.read() for _ in range(3)]
    assert answers[0]["id"] == 1 and "result" in answers[0]
    assert answers[1] == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32600, "message": "Invalid Request: a message must be a JSON object, not int"}}
    assert answers[2]["id"] == 2 and answers[2]["error"]["code"] == -31002


def test_invalid_utf8_is_a_parse_error(raw):
    raw.send(b'{"jsonrpc": "2.0", "id": 1, "method": "\xff"}')
    assert raw.read()["error"]["code"] == -32700


def test_a_body_nested_too_deeply_is_a_parse_error_and_the_server_keeps_serving(raw):
    raw.send(b"[" * 100_000 + b"]" * 100_000)  # json.loads: RecursionError, not a JSONDecodeError
    assert raw.read() == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": "Parse error: the body nests arrays or objects too deeply to be read"}}
    raw.send(b'{"jsonrpc": "2.0", "id": 2, "method": "toolwire/tools/list", "params": {}}')
    assert raw.read()["id"] == 2


@pytest.mark.parametrize("cwd, reason", [
    ("/" + "a" * 5000, "is too long"),
    ("relative/folder", "is not an absolute path"),
    ("/nonexistent-toolwire-folder", "does not exist"),
    ("/etc/hostname", "is not a folder"),
    ("/" + "b" * 300 + "/x", "cannot be used"),  # a path component over NAME_MAX
    ("/tmp/\u0000x", "NUL"),
])
def test_session_new_cwd_is_invalid_params_naming_the_field(raw, cwd, reason):
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "toolwire/session/new", "params": {"cwd": cwd}}).encode())
    error = raw.read()["error"]
    assert error["code"] == -32602, error
    assert error["message"].startswith("toolwire/session/new: invalid params: cwd: ") and reason in error["message"]
    assert len(error["message"]) < 400 and "data" not in error  # no large echo, no traceback


def test_unreadable_cwd_is_invalid_params(raw, tmp_path):
    import os

    if os.geteuid() == 0:  # root reads every folder: the rule cannot be shown, so a child process drops rights
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o000)
        os.chmod(tmp_path, 0o755)
        probe = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c",
                                "import os,sys; sys.exit(0 if os.access(sys.argv[1], os.R_OK | os.X_OK) else 3)",
                                str(locked)], capture_output=True)
        assert probe.returncode == 3  # the server's check (os.access) refuses it for a normal user
        return
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o000)
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "toolwire/session/new", "params": {"cwd": str(locked)}}).encode())
    error = raw.read()["error"]
    assert error["code"] == -32602 and "is not readable" in error["message"]


def test_large_params_are_never_echoed_whole(raw):
    huge = "x" * 200_000
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "toolwire/session/prompt",
                         "params": {"sessionId": huge, "prompt": "hi"}}).encode())
    error = raw.read()["error"]
    assert error["code"] == -31002 and len(json.dumps(error)) < 1200


def test_lsp_params_of_the_wrong_shape_are_invalid_params(raw):
    raw.send(b'{"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {"textDocument": 3}}')
    answer = raw.read()
    assert answer["error"]["code"] in (-32602, -32601)


def exit_code(messages: list[bytes]) -> int:
    server = RawServer()
    for body in messages:
        server.send(body)
    assert server.proc.wait(timeout=30) is not None
    return server.proc.returncode


def test_exit_without_shutdown_exits_1_and_after_shutdown_0():
    init = b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}'
    assert exit_code([init, b'{"jsonrpc": "2.0", "method": "exit"}']) == 1
    assert exit_code([init, b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}', b'{"jsonrpc": "2.0", "method": "exit"}']) == 0


def test_requests_after_shutdown_are_invalid_requests(raw):
    raw.send(b'{"jsonrpc": "2.0", "id": 1, "method": "shutdown"}')
    assert raw.read()["id"] == 1
    raw.send(b'{"jsonrpc": "2.0", "id": 2, "method": "toolwire/tools/list"}')
    assert raw.read()["error"]["code"] == -32600


def test_client_mistakes_are_logged_as_one_line(tmp_path):
    log = tmp_path / "server.log"
    proc = subprocess.Popen([sys.executable, "-m", "toolwire", "serve", "--log-level", "INFO", "--log-file", str(log)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    server = RawServer.__new__(RawServer)
    server.proc = proc
    try:
        server.send(b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}')
        server.read()
        for body in (b'{"jsonrpc": "2.0", "id": 1, "method": "toolwire/session/snapshot", "params": {"sessionId": "no"}}',
                     b'{"jsonrpc": "2.0", "id": 2, "method": "toolwire/session/new", "params": {"cwd": 3}}',
                     b'{"jsonrpc": "2.0", "id": 3, "method": "toolwire/nope"}',
                     b'{not json', b'[]', b'{"jsonrpc": "2.0", "id": 4}'):
            server.send(body)
            server.read()
    finally:
        server.close()
    text = log.read_text()
    assert "Traceback" not in text and "unknown session 'no'" in text and "cwd: Input should be a valid string" in text


def test_params_holding_jsonrpc_like_objects_stay_plain_data(raw):
    """pygls structured every nested object with a "jsonrpc" key as a message; params stay data."""
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "toolwire/session/new", "params": {
        "cwd": "/tmp", "settings": {"jsonrpc": "2.0", "method": "x", "params": {}}}}).encode())
    error = raw.read()["error"]
    assert error["code"] == -32602 and "unknown setting 'jsonrpc'" in error["message"], error


@pytest.mark.parametrize("chunk, kind", [(42, "int"), ([{"a": 1}], "list"), (None, "null"), ("[1, 2]", "list"),
                                         ("7", "int"), ({"event": "x", "data": "true"}, "bool")])
def test_merge_refuses_chunks_that_are_not_objects(raw, tmp_path, chunk, kind):
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "toolwire/session/new", "params": {"cwd": str(tmp_path)}}).encode())
    sid = raw.read()["result"]["sessionId"]
    good = {"choices": [{"index": 0, "delta": {"content": "hi"}}]}
    raw.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "toolwire/toolCalls/merge", "params": {
        "sessionId": sid, "streamId": "s", "format": "openai-chat", "chunks": [good, chunk]}}).encode())
    error = raw.read()["error"]
    assert error["code"] == -32602
    assert f"chunk 1 of the batch is neither an object nor the JSON text of one (got {kind})" in error["message"]
