"""``toolwire serve --tcp``: one client per server process, others refused clearly.

pygls' own TCP server hands every new connection the same protocol object, so a
second client would take over the first one's session and receive its answers.
Here the first connection owns the server; while it is connected, any further
connection receives one framed JSON-RPC error (``id: null``, code
:data:`SERVER_BUSY`) and is closed. When the client disconnects, the server exits
(as with stdio). Where the server listens is printed on stderr at start-up.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from typing import Any

from pygls.io_ import run_async

log = logging.getLogger(__name__)

#: The error code sent to a connection refused because another client is connected.
SERVER_BUSY = -31003


class ListenError(Exception):
    """The address cannot be listened on (bad host, port in use, no permission)."""


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` → ``(host, port)``; IPv6 hosts may be bracketed (``[::1]:8765``).

    Raises:
        ValueError: not ``HOST:PORT``, or a port outside 0–65535 (0 picks a free one).
    """
    host, sep, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"--tcp takes HOST:PORT, e.g. 127.0.0.1:8765 (got {text[:100]!r})")
    number = int(port)
    if not 0 <= number <= 65535:
        raise ValueError(f"--tcp port must be between 0 and 65535 (got {number})")
    return host, number


def _busy_message() -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
        "code": SERVER_BUSY,
        "message": "toolwire serve --tcp serves one client at a time and another client is connected; "
                   "start another server (another port) for this client"}}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def serve_tcp(server: Any, host: str, port: int) -> None:
    """Serve one client over TCP on ``host:port`` until it disconnects or sends ``exit``.

    Args:
        server: The pygls server (its ``protocol`` serves the connection).
        host: Address to bind.
        port: Port to bind (0: any free port; the one chosen is printed).

    Raises:
        ListenError: the address cannot be bound, with the reason in one line.
    """
    stop = threading.Event()
    server._stop_event = stop
    busy = asyncio.Lock()
    done: asyncio.Future[None] | None = None

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if busy.locked():
            peer = writer.get_extra_info("peername")
            log.warning("refused a second TCP client %s: one client at a time", peer)
            writer.write(_busy_message())
            try:
                await writer.drain()
            finally:
                writer.close()
            return
        async with busy:
            log.info("client connected: %s", writer.get_extra_info("peername"))
            server.protocol.set_writer(writer)
            try:
                await run_async(stop_event=stop, reader=reader, protocol=server.protocol, logger=log,
                                error_handler=server.report_server_error)
            finally:
                log.info("client disconnected")
                if done is not None and not done.done():
                    done.set_result(None)

    async def main() -> None:
        nonlocal done
        done = asyncio.get_running_loop().create_future()
        try:
            listener = await asyncio.start_server(connection, host, port)
        except OSError as exc:
            raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        addresses = ", ".join(_format(sock.getsockname()) for sock in listener.sockets)
        print(f"toolwire serve: listening on {addresses} (one client)", file=sys.stderr, flush=True)
        async with listener:
            await done

    try:
        asyncio.run(main())
    except SystemExit:  # ``exit``: the code is in server.protocol.exit_code
        pass
    finally:
        server.shutdown()


def _format(sockname: Any) -> str:
    host, port = sockname[0], sockname[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
