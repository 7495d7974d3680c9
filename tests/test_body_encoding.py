"""A body that is not UTF-8 gets -32700 on every transport, and the server keeps serving.

LSP's base protocol: the content part is encoded in UTF-8 (the one charset its
``Content-Type`` may name). ``json.loads`` on bytes would guess UTF-16 or UTF-32 and
skip a UTF-8 byte order mark, so those bodies used to get normal answers. Each test
speaks bytes to a real ``toolwire serve``: stdin as a pipe, stdin as a file, ``--tcp``
and ``--socket``.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "toolwire/tools/list", "params": {}}
TEXT = json.dumps(REQUEST)

#: name → body; each is the request above in an encoding that is not plain UTF-8.
BAD_BODIES = {
    "utf-16-le": TEXT.encode("utf-16-le"),
    "utf-16 with BOM": TEXT.encode("utf-16"),
    "utf-16-be": TEXT.encode("utf-16-be"),
    "utf-32": TEXT.encode("utf-32"),
    "utf-32-le": TEXT.encode("utf-32-le"),
    "utf-8 with BOM": b"\xef\xbb\xbf" + TEXT.encode(),
    "invalid utf-8": TEXT.replace("tools/list", "tools/\u00e9").encode("latin-1"),
}


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def initialize() -> bytes:
    return frame(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                             "params": {"capabilities": {}}}).encode())


def read_message(reader) -> dict:
    header = reader.readline()
    assert header.startswith(b"Content-Length: "), header
    length = int(header.split(b":")[1])
    while reader.readline() not in (b"\r\n", b""):
        pass
    return json.loads(reader.read(length))


def check_exchange(send, reader) -> None:
    """initialize, then each bad body (-32700, id null, says "UTF-8"), then a good request (answered)."""
    send(initialize())
    assert read_message(reader)["id"] == 0
    for name, body in BAD_BODIES.items():
        send(frame(body))
        answer = read_message(reader)
        assert answer["id"] is None and answer["error"]["code"] == -32700, (name, answer)
        message = answer["error"]["message"]
        assert "UTF-8" in message or "byte order mark" in message, (name, message)
        assert len(message) <= 1000
    send(frame(TEXT.encode()))
    answer = read_message(reader)
    assert answer["id"] == 7 and answer["result"]["tools"], answer


def test_stdio_pipe():
    proc = subprocess.Popen([sys.executable, "-m", "toolwire", "serve", "--log-level", "ERROR"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        def send(data: bytes) -> None:
            proc.stdin.write(data)
            proc.stdin.flush()
        check_exchange(send, proc.stdout)
    finally:
        proc.kill()
        proc.wait()


def test_stdio_from_a_file(tmp_path: Path):
    """A stdin the event loop cannot poll (a regular file) goes through the same check."""
    script = tmp_path / "in.bin"
    script.write_bytes(initialize() + b"".join(frame(body) for body in BAD_BODIES.values()) + frame(TEXT.encode()))
    out_path = tmp_path / "out.bin"
    with script.open("rb") as stdin, out_path.open("wb") as stdout:
        subprocess.run([sys.executable, "-m", "toolwire", "serve", "--log-level", "ERROR"], stdin=stdin,
                       stdout=stdout, stderr=subprocess.DEVNULL, timeout=60, check=False)
    with out_path.open("rb") as reader:
        messages = [read_message(reader) for _ in range(len(BAD_BODIES) + 2)]
    assert messages[0]["id"] == 0
    assert [m["error"]["code"] for m in messages[1:-1]] == [-32700] * len(BAD_BODIES)
    assert messages[-1]["id"] == 7 and messages[-1]["result"]["tools"]


def connect(family: int, address, deadline: float) -> socket.socket:
    """Connect once the server listens (retry until the deadline)."""
    while True:
        try:
            sock = socket.socket(family)
            sock.settimeout(30)
            sock.connect(address)
            return sock
        except (ConnectionRefusedError, FileNotFoundError):
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@pytest.mark.parametrize("transport", ["tcp", "socket"])
def test_tcp_and_unix_socket(tmp_path: Path, transport: str):
    if transport == "tcp":
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        args, family, address = ["--tcp", f"127.0.0.1:{port}"], socket.AF_INET, ("127.0.0.1", port)
    else:
        path = tmp_path / "tw.sock"
        args, family, address = ["--socket", str(path)], socket.AF_UNIX, str(path)
    server = subprocess.Popen([sys.executable, "-m", "toolwire", "serve", *args, "--log-level", "ERROR"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with connect(family, address, time.monotonic() + 30) as sock:
            check_exchange(sock.sendall, sock.makefile("rb"))
    finally:
        server.kill()
        server.wait()
