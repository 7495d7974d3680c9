"""``toolwire serve --tcp HOST:PORT`` speaks the same protocol on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest


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


def read_message(reader) -> dict:
    length = int(reader.readline().split(b":")[1])
    while reader.readline() not in (b"\r\n", b""):
        pass
    return json.loads(reader.read(length))


def test_a_second_client_is_refused_clearly_and_the_first_keeps_its_state():
    server = subprocess.Popen([sys.executable, "-m", "toolwire", "serve", "--tcp", "127.0.0.1:0", "--log-level", "WARNING"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        line = server.stderr.readline().decode()  # the server says where it listens, then serves
        assert line.startswith("toolwire serve: listening on 127.0.0.1:"), line
        port = int(line.split("127.0.0.1:")[1].split()[0])
        first = socket.create_connection(("127.0.0.1", port), timeout=20)
        assert request(first, 1, "initialize", {"capabilities": {}})["result"]["serverInfo"]["name"] == "toolwire"
        second = socket.create_connection(("127.0.0.1", port), timeout=20)
        refusal = read_message(second.makefile("rb"))
        assert refusal["id"] is None and refusal["error"]["code"] == -31003
        assert "one client at a time" in refusal["error"]["message"]
        assert second.recv(1) == b""  # and closed
        # The first client's answers still come to the first client.
        assert "git_commit" in json.dumps(request(first, 2, "toolwire/tools/list", {}))
        first.close()
        assert server.wait(timeout=30) == 0  # the client left: the server ends, as over stdio
    finally:
        server.kill()
        server.wait()


def test_a_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "toolwire", "serve", "--tcp", f"127.0.0.1:{port}"],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "address already in use" in done.stderr.lower()


@pytest.mark.parametrize("address, words", [
    ("localhost:99999", "between 0 and 65535"),
    ("nonsense", "HOST:PORT"),
    (":8765", "HOST:PORT"),
    ("127.0.0.1:http", "HOST:PORT"),
    ("203.0.113.7:8765", "cannot listen on 203.0.113.7:8765"),  # not an address of this machine
])
def test_bad_addresses_are_one_line_and_exit_2(address, words):
    done = subprocess.run([sys.executable, "-m", "toolwire", "serve", "--tcp", address],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr and words in done.stderr
