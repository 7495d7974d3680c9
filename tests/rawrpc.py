"""A minimal JSON-RPC client over a ``toolwire serve`` subprocess's stdio that counts bytes.

pytest-lsp hides the bytes on the wire; the tests of the update form need them.
Messages are framed with ``Content-Length`` headers (LSP base protocol). The
server's requests to us (permission requests) are answered ``allow_once``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from typing import Any


class RawServer:
    """``toolwire serve`` as a subprocess, spoken to directly.

    Attributes:
        received: Every message from the server, in order, as ``(byte count, message)``
            (the byte count includes the headers).
    """

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None
        self.received: list[tuple[int, dict[str, Any]]] = []
        self._ids = itertools.count(1)
        self._waiting: dict[Any, asyncio.Future] = {}
        self._reader: asyncio.Task | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 26)
        self._reader = asyncio.ensure_future(self._read())
        await self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        self.notify("initialized", {})

    def _write(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode()
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        msg_id = next(self._ids)
        future = self._waiting[msg_id] = asyncio.get_running_loop().create_future()
        self._write({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        assert self._reader is not None
        done, _ = await asyncio.wait({future, self._reader}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
        if future not in done:
            future.cancel()
            raise RuntimeError(f"no answer to {method}: the server exited or hung")
        return future.result()

    async def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        out = self.proc.stdout
        while True:
            head = await out.readuntil(b"\r\n\r\n")
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))
            body = await out.readexactly(length)
            message = json.loads(body)
            self.received.append((len(head) + length, message))
            if "method" in message and "id" in message:  # the server asks: allow
                self._write({"jsonrpc": "2.0", "id": message["id"],
                             "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}})
            elif "id" in message and message["id"] in self._waiting:
                future = self._waiting.pop(message["id"])
                if "error" in message:
                    future.set_exception(RuntimeError(message["error"]))
                else:
                    future.set_result(message.get("result"))

    async def stop(self) -> None:
        try:
            await self.request("shutdown", None)
            self.notify("exit", None)
            assert self.proc is not None
            await asyncio.wait_for(self.proc.wait(), 10)
        finally:
            if self._reader is not None:
                self._reader.cancel()
            if self.proc is not None and self.proc.returncode is None:
                self.proc.kill()
