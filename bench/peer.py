"""A JSON-RPC peer over a server subprocess's stdio, for ``bench/server.py``.

``Content-Length`` framing (the LSP base protocol); every message the server
writes is kept with its size in bytes (headers included) and its arrival time
(``time.perf_counter``). Requests from the server (permission requests) are
answered ``allow_once`` at once, or by :attr:`Peer.answer` when set.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from typing import Any


class Peer:
    """One server subprocess, spoken to directly.

    Attributes:
        received: ``(bytes, arrival time, message)`` per message from the server, in
            order, while :attr:`keep` is true (long fed streams turn it off: the old,
            quadratic update form writes gigabytes).
        keep: Whether to keep the messages in :attr:`received`.
        bytes_in: Bytes the server wrote so far.
        messages_in: Messages the server wrote so far.
        answer: When set, the result of each request from the server is ``answer(message)``
            (an editor's answers: ``workspace/applyEdit``, ``toolwire/editor/*``).
    """

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.cmd = cmd
        self.env = env
        self.proc: asyncio.subprocess.Process | None = None
        self.received: list[tuple[int, float, dict[str, Any]]] = []
        self.keep = True
        self.bytes_in = 0
        self.messages_in = 0
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future] = {}
        self._watchers: list[tuple[Callable[[dict[str, Any]], bool], asyncio.Future]] = []
        self._reader: asyncio.Task | None = None
        self.answer: Callable[[dict[str, Any]], Any] | None = None

    async def start(self) -> None:
        """Start the process and the reader."""
        self.proc = await asyncio.create_subprocess_exec(
            *self.cmd, env=self.env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, limit=1 << 28)
        self._reader = asyncio.ensure_future(self._read())

    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def send_request(self, method: str, params: Any) -> asyncio.Future:
        """Send a request; returns the future of its result."""
        msg_id = next(self._ids)
        future = self._pending[msg_id] = asyncio.get_running_loop().create_future()
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return future

    async def request(self, method: str, params: Any, timeout: float = 300) -> Any:
        """Send a request and wait for its result (an error response raises RuntimeError)."""
        future = self.send_request(method, params)
        assert self._reader is not None
        done, _ = await asyncio.wait({future, self._reader}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if future not in done:
            raise RuntimeError(f"{self.cmd[-1]}: no answer to {method} (the server exited or hung)")
        return future.result()

    def wait_for(self, predicate: Callable[[dict[str, Any]], bool]) -> asyncio.Future:
        """A future of the arrival time of the next message satisfying ``predicate``."""
        future = asyncio.get_running_loop().create_future()
        self._watchers.append((predicate, future))
        return future

    async def settle(self) -> None:
        """Wait until every request sent so far is answered."""
        if self._pending:
            await asyncio.wait(list(self._pending.values()), timeout=60)

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        out = self.proc.stdout
        while True:
            head = await out.readuntil(b"\r\n\r\n")
            length = next(int(part.split(b":")[1]) for part in head.split(b"\r\n")
                          if part.lower().startswith(b"content-length"))
            body = await out.readexactly(length)
            at = time.perf_counter()
            message = json.loads(body)
            if self.keep:
                self.received.append((len(head) + length, at, message))
            self.bytes_in += len(head) + length
            self.messages_in += 1
            for watcher in list(self._watchers):
                if watcher[0](message):
                    self._watchers.remove(watcher)
                    if not watcher[1].done():
                        watcher[1].set_result(at)
            if "method" in message and "id" in message:
                result = (self.answer(message) if self.answer is not None
                          else {"outcome": {"outcome": "selected", "optionId": "allow_once"}})
                self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})
            elif "id" in message and message["id"] in self._pending:
                future = self._pending.pop(message["id"])
                if "error" in message:
                    future.set_exception(RuntimeError(json.dumps(message["error"])))
                else:
                    future.set_result(message.get("result"))

    async def stop(self) -> None:
        """Shut the server down (killed if it does not exit within 10 s)."""
        try:
            if self.proc is not None and self.proc.returncode is None:
                await self.request("shutdown", None, timeout=10)
                self.notify("exit", None)
                await asyncio.wait_for(self.proc.wait(), 10)
        except (RuntimeError, asyncio.TimeoutError, ConnectionError):
            pass
        finally:
            if self._reader is not None:
                self._reader.cancel()
            if self.proc is not None and self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
