"""Real MCP servers for the MCP tests, as ``mcpServers`` entries (the settings shape).

The registry servers are installed by ``make mcp-servers`` (a prerequisite of ``make test``)
into ``$TOOLWIRE_MCP_CACHE`` (default ``~/.cache/toolwire-mcp``), pinned by
``tests/mcp-servers.txt`` and ``tests/mcp-npm``. A missing server fails the test with that
command; it is never skipped. What each offers that the tests use:

* ``time_server()``: ``mcp-server-time`` (PyPI) over stdio. Tools ``get_current_time``
  ``{timezone}`` and ``convert_time`` ``{source_timezone, time, target_timezone}``, both
  ``readOnlyHint: true``; an unknown time zone answers ``isError: true``.
* ``git_server(repo)``: ``mcp-server-git`` (PyPI) over stdio, ``--repository repo``. Twelve
  tools taking ``repo_path``: read-only ``git_status``, ``git_log``, ``git_diff*``,
  ``git_show``, ``git_branch``; ``git_add``, ``git_commit`` (not read-only), ``git_reset``
  (``destructiveHint: true``), ``git_create_branch``, ``git_checkout``.
* ``everything_stdio()`` and the ``everything_http`` fixture:
  ``@modelcontextprotocol/server-everything`` (npm) over stdio, and over streamable HTTP on
  127.0.0.1 at a free port (``http://127.0.0.1:PORT/mcp``). Tools: ``echo`` ``{message}``
  (answers ``"Echo: <message>"``), ``get-sum`` ``{a, b}``, ``get-tiny-image`` (text, a PNG
  image part, text), ``get-annotated-message`` ``{messageType, includeImage?}`` (content
  annotations), ``get-structured-content`` ``{location}`` (``structuredContent``),
  ``get-resource-links`` ``{count?}`` (``resource_link`` parts), ``get-resource-reference``
  ``{resourceType?, resourceId?}`` (an embedded ``resource``), ``gzip-file-as-resource``
  ``{name?, data?, outputType?}`` (``data`` other than http(s)/data URLs answers
  ``isError: true`` without any fetch), ``trigger-long-running-operation``
  ``{duration?, steps?}`` (progress notifications when given a progress token; seconds long),
  ``get-env``, ``toggle-simulated-logging``, ``toggle-subscriber-updates``. Every listed tool
  has all four annotation hints (``readOnlyHint: true`` but for ``gzip-file-as-resource``,
  the toggles and ``simulate-research-query``). Right after initialization the server
  registers ``simulate-research-query`` (a task-only tool) and sends
  ``notifications/tools/list_changed``: whether the first ``tools/list`` has it is a race.
* ``probe_server(record)``: ``tests/data/mcp/probe_server.py`` (ours, the SDK's low-level
  server over stdio) for what the registry servers cannot show on demand: the
  ``notifications/cancelled`` it received, a crash in the middle of a call, a server ignoring
  a cancel, ``tools/list_changed`` when asked. Its events go to a :class:`ProbeRecord` fifo.
* ``hostile_server(*modes)``: ``tests/data/mcp/hostile_server.py`` (ours, JSON-RPC by hand so it
  can break the rules): garbage on stdout, no or an error answer to ``initialize``, no tools
  capability, odd, invalid or thousands of tools, huge or malformed results, stderr floods,
  ``list_changed`` storms.
"""

from __future__ import annotations

import json
import os
import queue
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

CACHE = Path(os.environ.get("TOOLWIRE_MCP_CACHE") or Path.home() / ".cache" / "toolwire-mcp")
INSTALL = "make mcp-servers"
EVERYTHING = CACHE / "npm" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
PROBE = Path(__file__).parent / "data" / "mcp" / "probe_server.py"
HOSTILE = Path(__file__).parent / "data" / "mcp" / "hostile_server.py"
LOOPBACK = Path(__file__).parent / "data" / "mcp" / "loopback.cjs"
START_TIMEOUT = 60.0  # a safety net: the HTTP server listens within a second or two


def installed(path: Path) -> str:
    """``path`` as a string; fails the test, naming the install command, when it is missing."""
    if not path.exists():
        pytest.fail(f"the test MCP server {path} is not installed: run `{INSTALL}` (see tests/mcp_servers.py)")
    return str(path)


def node() -> str:
    """The ``node`` executable on PATH (Node 20 or newer); fails the test when there is none."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not on PATH: the npm test MCP servers need Node 20 or newer")
    return found


def _entry(command: str, args: list[str], tools: list[str] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio", "command": command, "args": args}
    if tools is not None:
        entry["tools"] = tools
    return entry


def time_server(timezone: str = "UTC", tools: list[str] | None = None) -> dict[str, Any]:
    """``mcp-server-time`` over stdio, its local time zone fixed so answers do not depend on
    the machine; ``tools``: the entry's allowlist (all of them when None)."""
    return _entry(installed(CACHE / "venv" / "bin" / "mcp-server-time"), ["--local-timezone", timezone], tools)


def git_server(repository: Path, tools: list[str] | None = None) -> dict[str, Any]:
    """``mcp-server-git`` over stdio, limited to ``repository``."""
    return _entry(installed(CACHE / "venv" / "bin" / "mcp-server-git"), ["--repository", str(repository)], tools)


def everything_stdio(tools: list[str] | None = None) -> dict[str, Any]:
    """``server-everything`` over stdio. Its 13 tools and the built-in ones are more than the
    default ``maxTools`` (20) offers: name the ones a test calls in ``tools``."""
    return _entry(node(), [installed(EVERYTHING), "stdio"], tools)


def probe_server(record: ProbeRecord | None = None, tools: list[str] | None = None) -> dict[str, Any]:
    """Our probe server over stdio; its events go to ``record`` when given."""
    entry = _entry(sys.executable, [str(PROBE)], tools)
    if record is not None:
        entry["env"] = {"TOOLWIRE_PROBE_RECORD": str(record.path)}
    return entry


def hostile_server(*modes: str, **env: str) -> dict[str, Any]:
    """Our hostile server over stdio, misbehaving as ``modes`` say (see its docstring), with ``env``."""
    return {"type": "stdio", "command": sys.executable, "args": [str(HOSTILE)],
            "env": {"TOOLWIRE_HOSTILE": ",".join(modes), **env}}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_everything_http() -> tuple[subprocess.Popen, int, list[str]]:
    """Start ``server-everything streamableHttp`` on 127.0.0.1; return it once its stderr says it listens.

    The server has no host option or variable (its ``dist/transports/streamableHttp.js`` calls
    ``app.listen(PORT)``: every interface), so ``tests/data/mcp/loopback.cjs``, preloaded with
    ``node --require``, binds a listen given a port alone to 127.0.0.1. The port is a free one
    chosen here and passed as ``PORT`` (the server has no way to say which port it took for 0);
    one taken in between makes the server exit with "already in use", and another is tried.
    Its stderr lines go on being collected in the returned list.
    """
    command = [node(), "--require", str(LOOPBACK), installed(EVERYTHING), "streamableHttp"]
    for _attempt in range(3):
        port = _free_port()
        proc = subprocess.Popen(command, env={**os.environ, "PORT": str(port)}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        lines: list[str] = []
        seen: queue.Queue[str | None] = queue.Queue()

        def pump(stream=proc.stderr, lines=lines, seen=seen) -> None:
            for line in stream:
                lines.append(line)
                seen.put(line)
            seen.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                line = seen.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                stop(proc)
                pytest.fail(f"server-everything (streamable HTTP) did not listen within {START_TIMEOUT:.0f} s: {''.join(lines)}")
            if line is None:
                break
            if f"listening on port {port}" in line:
                return proc, port, lines
        proc.wait()
        if "already in use" not in "".join(lines):
            pytest.fail(f"server-everything (streamable HTTP) exited with code {proc.returncode}: {''.join(lines)}")
    pytest.fail("server-everything (streamable HTTP): three free ports were taken before it could listen")


def stop(proc: subprocess.Popen) -> None:
    """Kill a server started by :func:`start_everything_http` (its process group) and reap it."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.fixture(scope="module")
def everything_http() -> Iterator[dict[str, Any]]:
    """``server-everything`` over streamable HTTP on 127.0.0.1 (one per test module): its
    ``mcpServers`` entry ``{"type": "http", "url": "http://127.0.0.1:PORT/mcp"}``."""
    proc, port, _stderr = start_everything_http()
    try:
        yield {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}
    finally:
        stop(proc)


class ProbeRecord:
    """The fifo the probe server appends its events to (JSON lines), read in order.

    The test holds a write end open too, so the fifo never reads as ended between the
    server's writes. ``events`` keeps every event read so far.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        os.mkfifo(path)
        self._read = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._keep = os.open(path, os.O_WRONLY)
        self._pending = b""
        self.events: list[dict[str, Any]] = []

    def next(self, timeout: float = 60.0) -> dict[str, Any]:
        """The next event; fails the test if none comes within ``timeout`` seconds (a safety net)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                pytest.fail(f"the probe server recorded nothing more within {timeout:.0f} s; so far: {self.events}")
            self._pending += os.read(self._read, 65536)
        line, self._pending = self._pending.split(b"\n", 1)
        event = json.loads(line)
        self.events.append(event)
        return event

    def wait_for(self, event: str, timeout: float = 60.0) -> dict[str, Any]:
        """Read events until one named ``event`` (e.g. ``"started"``, ``"cancelled"``) and return it."""
        while (got := self.next(timeout))["event"] != event:
            pass
        return got

    async def await_for(self, event: str, timeout: float = 60.0) -> dict[str, Any]:
        """:meth:`wait_for` from async code (in a worker thread, so the event loop goes on)."""
        return await anyio.to_thread.run_sync(self.wait_for, event, timeout, abandon_on_cancel=True)

    def close(self) -> None:
        os.close(self._read)
        os.close(self._keep)


@pytest.fixture
def probe_record(tmp_path: Path) -> Iterator[ProbeRecord]:
    """A fresh :class:`ProbeRecord` in the test's temporary folder."""
    record = ProbeRecord(tmp_path / "probe-events")
    try:
        yield record
    finally:
        record.close()
