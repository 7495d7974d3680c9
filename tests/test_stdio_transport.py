"""``toolwire serve`` over stdio: a pipe is read on the event loop, anything else by pygls' reader.

The real server as a subprocess, bytes written by hand: messages split at every
byte, a header line longer than the reader's limit, a stream that ends inside a
body, and a stdin that is a regular file (which cannot be polled).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolwire.rpc.transport import HEADER_LINE_LIMIT

INIT = b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}}'
TOOLS = b'{"jsonrpc": "2.0", "id": 1, "method": "toolwire/tools/list", "params": {}}'
SHUTDOWN = b'{"jsonrpc": "2.0", "id": 2, "method": "shutdown"}'
EXIT = b'{"jsonrpc": "2.0", "method": "exit"}'


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def serve(log: Path, stdin: int | object = subprocess.PIPE) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "toolwire", "serve", "--log-level", "DEBUG", "--log-file", str(log)],
                            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def read(proc: subprocess.Popen) -> dict:
    assert proc.stdout is not None
    header = proc.stdout.readline()
    assert header.startswith(b"Content-Length: "), header
    assert proc.stdout.readline() == b"\r\n"
    return json.loads(proc.stdout.read(int(header.split(b":")[1])))


def send(proc: subprocess.Popen, data: bytes) -> None:
    assert proc.stdin is not None
    proc.stdin.write(data)
    proc.stdin.flush()


def stop(proc: subprocess.Popen) -> None:
    """``shutdown`` (answered) and ``exit``, then the stream closes: exit code 0."""
    send(proc, frame(SHUTDOWN) + frame(EXIT))
    assert proc.stdin is not None
    proc.stdin.close()
    assert read(proc)["id"] == 2
    assert proc.wait(timeout=30) == 0


def test_a_pipe_is_read_on_the_event_loop_even_one_byte_at_a_time(tmp_path):
    log = tmp_path / "server.log"
    proc = serve(log)
    assert proc.stdin is not None
    try:
        for byte in frame(INIT) + frame(TOOLS):  # every write is its own pipe read on the server's side
            send(proc, bytes([byte]))
        assert read(proc)["id"] == 0
        answer = read(proc)
        assert answer["id"] == 1 and "read_file" in json.dumps(answer["result"])
        stop(proc)
    finally:
        proc.kill()
    assert "stdin is a pipe or a socket: read on the event loop" in log.read_text()


@contextmanager
def initialized(log: Path) -> Iterator[subprocess.Popen]:
    """The server over a stdin pipe, ``initialize`` answered; killed at the end."""
    proc = serve(log)
    try:
        send(proc, frame(INIT))
        assert read(proc)["id"] == 0
        yield proc
    finally:
        proc.kill()


def test_an_overlong_header_line_is_dropped_and_the_next_message_served(tmp_path):
    log = tmp_path / "server.log"
    with initialized(log) as proc:
        junk = b"X-Junk: " + b"j" * (3 * HEADER_LINE_LIMIT) + b"\r\n"
        send(proc, junk + frame(TOOLS))  # the junk line is read as a header nobody knows
        assert read(proc)["id"] == 1
        stop(proc)
    text = log.read_text()
    assert f"dropped a header line longer than {HEADER_LINE_LIMIT} bytes" in text and "Traceback" not in text


def test_a_stream_that_ends_inside_a_body_stops_the_server_cleanly(tmp_path):
    log = tmp_path / "server.log"
    with initialized(log) as proc:
        send(proc, frame(TOOLS)[:-10])  # the client dies mid-message
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0  # no exit notification: like a client that just closes the stream
        assert proc.stdout is not None and proc.stdout.read() == b""  # nothing answered for half a message
    text = log.read_text()
    assert "the stream ended inside a message" in text and "Traceback" not in text


def test_a_regular_file_on_stdin_is_read_by_pygls_reader(tmp_path):
    script = tmp_path / "session.bin"
    script.write_bytes(frame(INIT) + frame(TOOLS) + frame(SHUTDOWN) + frame(EXIT))
    log = tmp_path / "server.log"
    with script.open("rb") as stdin:
        proc = serve(log, stdin)
        try:
            assert [read(proc)["id"] for _ in range(3)] == [0, 1, 2]
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()
    assert "stdin is a pipe" not in log.read_text()


def test_a_request_right_behind_a_configuration_change_sees_it(tmp_path):
    """Both messages in one write: the notification's async handler starts before the request is handled."""
    script = tmp_path / "script.jsonl"
    script.write_text('{"text": "hi"}\n')
    proc = serve(tmp_path / "server.log")
    assert proc.stdin is not None
    try:
        new = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "toolwire/session/new", "params": {"cwd": str(tmp_path)}})
        proc.stdin.write(frame(INIT) + frame(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}')
                         + frame(new.encode()))
        proc.stdin.flush()
        assert read(proc)["id"] == 0
        session = read(proc)["result"]["sessionId"]
        for n in range(5):  # each time both arrive in one pipe read
            model = f"replay:{script}" if n % 2 == 0 else "replay"
            change = {"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
                      "params": {"settings": {"toolwire": {"model": model}}}}
            snap = {"jsonrpc": "2.0", "id": 10 + n, "method": "toolwire/session/snapshot",
                    "params": {"sessionId": session}}
            proc.stdin.write(frame(json.dumps(change).encode()) + frame(json.dumps(snap).encode()))
            proc.stdin.flush()
            answer = read(proc)
            while "id" not in answer:  # notifications (log messages) may come first
                answer = read(proc)
            assert answer["id"] == 10 + n and answer["result"]["model"] == model
    finally:
        proc.kill()


def test_a_socket_on_stdin_is_read_on_the_event_loop(tmp_path):
    """Some editors start servers with a socket pair for stdio."""
    ours, theirs = socket.socketpair()
    log = tmp_path / "server.log"
    try:
        proc = serve(log, theirs.fileno())
        theirs.close()
        try:
            ours.sendall(frame(INIT) + frame(TOOLS) + frame(SHUTDOWN) + frame(EXIT))
            assert [read(proc)["id"] for _ in range(3)] == [0, 1, 2]
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()
    finally:
        ours.close()
    assert "stdin is a pipe or a socket: read on the event loop" in log.read_text()
