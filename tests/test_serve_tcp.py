"""``toolwire serve --tcp HOST:PORT`` speaks the same protocol on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def connect(port: int, deadline: float) -> socket.socket:
    """Connect once the server listens (no event exists for that: retry until the deadline)."""
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=10)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def request(sock: socket.socket, msg_id: int, method: str, params: dict) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    reader = sock.makefile("rb")
    length = int(reader.readline().split(b":")[1])
    while reader.readline() not in (b"\r\n", b""):
        pass
    return json.loads(reader.read(length))


def test_initialize_and_a_request_over_tcp():
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "toolwire", "serve", "--tcp", f"127.0.0.1:{port}",
                               "--log-level", "WARNING"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        sock = connect(port, time.monotonic() + 20)
        with sock:
            assert request(sock, 1, "initialize", {"capabilities": {}})["result"]["serverInfo"]["name"] == "toolwire"
            tools = request(sock, 2, "toolwire/tools/list", {})["result"]["tools"]
            assert "git_commit" in [t["function"]["name"] for t in tools]
    finally:
        server.kill()
        out, _ = server.communicate()
    assert out == b""  # in TCP mode stdout carries nothing


def test_a_bad_tcp_address_is_a_usage_error():
    done = subprocess.run([sys.executable, "-m", "toolwire", "serve", "--tcp", "nonsense"], capture_output=True, text=True)
    assert done.returncode == 2 and "HOST:PORT" in done.stderr
