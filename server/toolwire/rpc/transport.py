"""The byte streams ``toolwire serve`` speaks JSON-RPC over: stdio and ``--tcp``.

**stdio** (:func:`serve_stdio`). When stdin is a pipe or a socket (an editor
starting the server), it is read on the event loop (``loop.connect_read_pipe``
and an :class:`asyncio.StreamReader`): a message that arrives whole is handled
without leaving the loop. pygls' own stdio reader hands every header line and
every body to a worker thread and back, three thread round trips per message;
other stdins (a terminal, a file) still use it.

**TCP** (:func:`serve_tcp`): one client per server process, others refused clearly.

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
import os
import stat
import sys
import threading
from typing import Any

from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async

from toolwire.rpc.errors import SERVER_BUSY

log = logging.getLogger(__name__)
#: The logger pygls' read loop (``run_async``) reports unreadable messages with, on every transport.
READ_LOG = logging.getLogger("toolwire.rpc.read")


#: Longest header line kept (bytes); a longer one is dropped as unreadable (it cannot be ``Content-Length``).
HEADER_LINE_LIMIT = 1 << 16


class FrameReader:
    """A reader (an :class:`asyncio.StreamReader`, or pygls' threaded stdin reader) as
    pygls' ``run_async`` reads it (``readline``, ``readexactly``).

    A header line longer than the reader's limit makes ``StreamReader.readline``
    raise ``ValueError``, which would end the read loop and the connection; here it is
    logged and read as a header line nobody knows (skipped, as LSP's base protocol
    skips unknown headers), and the next message is read as usual.

    Every body is handed on as ``str``, decoded as strict UTF-8 (LSP's base
    protocol: the content is ``utf-8``; the only charset ``Content-Type`` may name).
    pygls' loop gives the body to ``json.loads``, which for ``bytes`` would guess
    UTF-16 or UTF-32 and skip a UTF-8 byte order mark; a ``str`` is read as it is, so
    a body in another encoding, or one that starts with a BOM, is not JSON and is
    answered ``-32700`` (:func:`toolwire.rpc.errors.answer_parse_error`). A body that
    is not valid UTF-8 at all is handed on as :class:`NotUtf8` (bytes whose decoding
    raises the ``UnicodeDecodeError``), answered ``-32700`` too.

    Between two messages the reader yields to the event loop once, even when the
    next one is already buffered: a notification's async handler (e.g.
    ``workspace/didChangeConfiguration``) is a task, and it must start before the
    request that follows it is handled, so that request sees what it changed.
    """

    def __init__(self, reader: Any) -> None:
        self._reader = reader
        self._after_body = False

    async def readline(self) -> bytes:
        """One line with its ``\\r\\n``; ``b""`` at the end of the stream."""
        if self._after_body:  # the previous message's handler ran; let the tasks it started begin
            self._after_body = False
            await asyncio.sleep(0)
        try:
            return await self._reader.readline()
        except ValueError:
            log.warning("dropped a header line longer than %d bytes", HEADER_LINE_LIMIT)
            return b"X-Dropped-Header: too long\r\n"

    async def readexactly(self, n: int) -> str | bytes:
        """The next ``n`` bytes as UTF-8 text (:func:`utf8_body`); ``b""`` when the stream
        ends first (the read loop stops)."""
        self._after_body = True
        try:
            return utf8_body(await self._reader.readexactly(n))
        except asyncio.IncompleteReadError as exc:
            if exc.partial:
                log.warning("the stream ended inside a message (%d of %d bytes)", len(exc.partial), n)
            return b""


class NotUtf8(bytes):
    """A body that is not valid UTF-8: ``json.loads`` raises the decoding error it keeps.

    ``json.loads`` decodes ``bytes`` with their ``decode`` method, so this is how a
    read loop we do not own (pygls' ``run_async``) is made to fail on such a body
    the way it fails on one that is not JSON (its error handler answers ``-32700``).
    """

    error: UnicodeDecodeError

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:  # noqa: ARG002 - always fails
        """Raises the ``UnicodeDecodeError`` the strict UTF-8 decoding gave."""
        raise self.error


def utf8_body(body: bytes) -> str | bytes:
    """``body`` decoded as strict UTF-8, or a :class:`NotUtf8` when it is not UTF-8.

    A leading byte order mark stays in the text (``json.loads`` rejects it: "Unexpected
    UTF-8 BOM"); UTF-16 and UTF-32 text of ASCII characters is valid UTF-8 full of NUL
    characters, which is not JSON either.
    """
    if not body:
        return body
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        wrapped = NotUtf8(body)
        wrapped.error = exc
        return wrapped


def _readable_on_loop(fd: int) -> bool:
    """True for a pipe or a socket: readable through epoll, and ours alone to make non-blocking.

    A terminal is left to pygls' reader: making it non-blocking would change it for
    the shell too. Regular files cannot be polled."""
    if os.name != "posix":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def serve_stdio(server: Any) -> None:
    """Serve one client over stdin/stdout until the stream ends or ``exit``.

    A pipe or a socket is read on the event loop; any other stdin (a terminal, a
    file) by pygls' reader, in a worker thread. Either way through :class:`FrameReader`.

    Args:
        server: The pygls server (its ``protocol`` serves the client; ``shutdown``
            runs at the end as pygls' ``start_io`` does).
    """
    stdin = sys.stdin.buffer
    on_loop = _readable_on_loop(stdin.fileno())
    if on_loop:
        log.debug("stdin is a pipe or a socket: read on the event loop")
    stop = threading.Event()
    server._stop_event = stop
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))

    async def main() -> None:
        transport = None
        if on_loop:
            reader: Any = asyncio.StreamReader(limit=HEADER_LINE_LIMIT)
            transport, _ = await asyncio.get_running_loop().connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), stdin)
        else:
            reader = StdinAsyncReader(stdin, server.thread_pool)
        try:
            await run_async(stop_event=stop, reader=FrameReader(reader), protocol=server.protocol, logger=READ_LOG,
                            error_handler=server.report_server_error)
        finally:
            if transport is not None:
                transport.close()

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the client closed its end of stdout; stopping")
    except (KeyboardInterrupt, SystemExit):  # ``exit``: the code is in server.protocol.exit_code
        pass
    finally:
        server.shutdown()


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
                await run_async(stop_event=stop, reader=FrameReader(reader), protocol=server.protocol, logger=READ_LOG,
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
