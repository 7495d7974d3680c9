"""A JSON-RPC client for ``toolwire serve --socket`` tests: the server as a process of
its own session (process group), and clients that connect, leave and come back.

Nothing here sleeps: readers wait on the socket, tests wait on queues and process exit.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

TIMEOUT = 60.0


class SocketServer:
    """``toolwire serve --socket PATH`` in its own process group (killed whole by :meth:`kill`)."""

    def __init__(self, path: Path, *extra: str) -> None:
        self.path = path
        self.extra = extra
        self.proc: asyncio.subprocess.Process | None = None
        self.first_line = ""

    async def start(self) -> "SocketServer":
        """Start it and wait for its "listening" line on stderr."""
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "toolwire", "serve", "--socket", str(self.path), "--log-level", "WARNING",
            *self.extra, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True)
        assert self.proc.stderr is not None
        line = await asyncio.wait_for(self.proc.stderr.readline(), TIMEOUT)
        self.first_line = line.decode()
        assert self.first_line.startswith("toolwire serve: listening on"), self.first_line
        return self

    async def exited(self, timeout: float = TIMEOUT) -> int:
        """Wait for the process to end; its exit code."""
        assert self.proc is not None
        return await asyncio.wait_for(self.proc.wait(), timeout)

    def kill(self) -> None:
        """Kill the whole process group (nothing is left behind)."""
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class SocketClient:
    """One connection to the server.

    Attributes:
        asks: Requests the server sent us, in order (answer with :meth:`answer`).
        updates: ``toolwire/session/update`` params, in order.
    """

    def __init__(self) -> None:
        self.asks: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.updates: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._ids = itertools.count(1)
        self._waiting: dict[Any, asyncio.Future] = {}
        self._reader_task: asyncio.Task | None = None
        self._writer: asyncio.StreamWriter | None = None
        self.eof = asyncio.Event()

    async def connect(self, path: Path, capabilities: dict[str, Any] | None = None,
                      options: dict[str, Any] | None = None) -> "SocketClient":
        """Connect, ``initialize`` (with ``capabilities`` and initializationOptions), ``initialized``."""
        reader, self._writer = await asyncio.open_unix_connection(str(path), limit=1 << 24)
        self._reader_task = asyncio.ensure_future(self._read(reader))
        await self.request("initialize", {"processId": None, "rootUri": None, "capabilities": capabilities or {},
                                          "initializationOptions": options or {}})
        self.notify("initialized", {})
        return self

    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self._writer is not None
        self._writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def send(self, method: str, params: Any) -> asyncio.Future:
        """Send a request; the future resolves with its result (or raises on an error)."""
        msg_id = next(self._ids)
        future = self._waiting[msg_id] = asyncio.get_running_loop().create_future()
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return future

    async def request(self, method: str, params: Any) -> Any:
        return await asyncio.wait_for(self.send(method, params), TIMEOUT)

    def answer(self, msg_id: Any, result: Any) -> None:
        self._write({"jsonrpc": "2.0", "id": msg_id, "result": result})

    async def ask(self, method: str) -> dict[str, Any]:
        """The next request the server sent us (it must be ``method``)."""
        message = await asyncio.wait_for(self.asks.get(), TIMEOUT)
        assert message["method"] == method, message
        return message

    async def update_until(self, check) -> dict[str, Any]:
        """Updates until one with ``check(update)`` true; returns it."""
        while True:
            params = await asyncio.wait_for(self.updates.get(), TIMEOUT)
            if check(params["update"]):
                return params["update"]

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(head.split(b":")[1].split(b"\r\n")[0])
                message = json.loads(await reader.readexactly(length))
                if "method" in message and "id" in message:
                    self.asks.put_nowait(message)
                elif "method" in message:
                    if message["method"] == "toolwire/session/update":
                        self.updates.put_nowait(message["params"])
                elif message.get("id") in self._waiting:
                    future = self._waiting.pop(message["id"])
                    if "error" in message:
                        future.set_exception(RuntimeError(message["error"]))
                    else:
                        future.set_result(message.get("result"))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.eof.set()

    async def close(self) -> None:
        """Drop the connection without ``shutdown``/``exit`` (a window that reloads)."""
        if self._writer is not None:
            self._writer.close()
            try:
                await self._writer.wait_closed()
            except ConnectionError:
                pass
        if self._reader_task is not None:
            await asyncio.wait_for(self.eof.wait(), TIMEOUT)

    async def stop_server(self) -> None:
        """``shutdown`` then ``exit``: the explicit stop."""
        await self.request("shutdown", None)
        self.notify("exit", None)
