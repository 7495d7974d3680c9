"""``toolwire serve`` answers ``initialize`` from a light start (issue 12, goal 3).

The server is started with a meta-path hook that, when a heavy package is first
imported, writes a framed ``test/imported`` notification to the server's own
stdout. Imports and the server's messages happen on the same thread and go
through the same stream, so their order on the wire is the order in which they
happened: the ``initialize`` answer must come before any heavy import, and the
heavy parts must still be loaded (and ``initializationOptions`` still checked)
before the server handles the next message. How fast that is is a benchmark
figure (``bench/server.py``, ``cold_start_s``), not a test.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from typing import Any

#: Imported only after the initialize answer.
HEAVY = ("pydantic", "toolwire.agent", "toolwire.tools", "toolwire.streaming.merger", "toolwire.streaming.formats",
         "toolwire.settings", "toolwire.lsp.server", "toolwire.lsp.protocol", "openai", "watchfiles")

WRAPPER = """
import json, sys
HEAVY = %r
class Report:
    seen = set()
    def find_spec(self, name, path=None, target=None):
        for heavy in HEAVY:
            if (name == heavy or name.startswith(heavy + ".")) and heavy not in self.seen:
                self.seen.add(heavy)
                body = json.dumps({"jsonrpc": "2.0", "method": "test/imported", "params": {"name": heavy}}).encode()
                sys.stdout.buffer.write(b"Content-Length: %%d\\r\\n\\r\\n" %% len(body) + body)
                sys.stdout.buffer.flush()
        return None
sys.meta_path.insert(0, Report())
from toolwire.cli import main
raise SystemExit(main(["serve", "--log-level", "ERROR"]))
""" % (HEAVY,)


class Server:
    """The wrapped server; messages from it arrive on :attr:`messages` (a reader thread)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WRAPPER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                byte = out.read(1)
                if not byte:
                    return
                head += byte
            length = int(head.split(b":")[1].split(b"\r\n")[0])
            self.messages.put(json.loads(out.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def until(self, msg_id: int) -> list[dict[str, Any]]:
        """Every message up to and including the answer to ``msg_id``."""
        seen = []
        while True:
            message = self.messages.get(timeout=60)
            seen.append(message)
            if message.get("id") == msg_id and "method" not in message:
                return seen

    def close(self) -> None:
        try:
            self.send({"id": 99, "method": "shutdown"})
            self.send({"method": "exit"})
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


def test_initialize_is_answered_before_the_heavy_imports(tmp_path):
    server = Server()
    try:
        server.send({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {},
            "initializationOptions": {"toolTimeout": -1}}})
        before = server.until(1)
        imported_before = [m["params"]["name"] for m in before if m.get("method") == "test/imported"]
        assert imported_before == [], f"imported before the initialize answer: {imported_before}"
        capabilities = before[-1]["result"]["capabilities"]
        # the features registered by the light start still shape the answer
        assert capabilities["executeCommandProvider"]["commands"] == ["toolwire.runAction"]
        assert set(capabilities["codeActionProvider"]["codeActionKinds"]) == {"quickfix", "refactor.rewrite", ""}

        server.send({"method": "initialized", "params": {}})
        server.send({"id": 2, "method": "toolwire/session/new", "params": {"cwd": str(tmp_path)}})
        after = server.until(2)
        imported_after = {m["params"]["name"] for m in after if m.get("method") == "test/imported"}
        assert {"pydantic", "toolwire.agent", "toolwire.lsp.server", "toolwire.settings"} <= imported_after
        # the bad option is reported after the answer, before the next request is handled
        shown = [m["params"]["message"] for m in after if m.get("method") == "window/showMessage"]
        assert len(shown) == 1 and "setting toolTimeout" in shown[0], shown
        assert after[-1]["result"]["sessionId"]
    finally:
        server.close()


def test_a_request_racing_the_initialize_answer_still_finds_every_method(tmp_path):
    """Messages sent together with initialize (no waiting for its answer) are handled
    by the fully loaded server."""
    server = Server()
    try:
        server.send({"id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}})
        server.send({"method": "initialized", "params": {}})
        server.send({"id": 2, "method": "toolwire/tools/list"})
        messages = server.until(2)
        assert "result" in messages[-1] and messages[-1]["result"]["tools"], messages[-1]
        answer = next(m for m in messages if m.get("id") == 1)
        assert "capabilities" in answer["result"]
    finally:
        server.close()
