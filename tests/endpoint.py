"""A scriptable OpenAI-compatible endpoint on 127.0.0.1 for tests.

Each POST gets the next scripted reply, in order: a whole HTTP response
(:class:`Reply`, or a ``(status, body)`` tuple; :func:`refusal` builds an HTTP 400 with
an OpenAI-shaped error body), a connection reset before any
response (:class:`Reset`), a chunked SSE body cut off mid-stream (:class:`Truncated`),
or a stream that sends a few chunks and then stalls until the test releases it
while watching for the client to hang up (:class:`Stall`). When the script runs
out, the endpoint answers with a short text stream.

Nothing here sleeps: the handler threads block on sockets and events only.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from toolwire.llm.replay import scripted_chunks

TEXT_ONLY = (
    b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
    b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def sse_events(payloads: list[dict[str, Any]]) -> list[bytes]:
    """One ``data: …`` SSE event per payload."""
    return [b"data: " + json.dumps(p).encode() + b"\n\n" for p in payloads]


def chat_stream(line: dict[str, Any], number: int = 1) -> list[bytes]:
    """The SSE events of a whole Chat Completions response, ``[DONE]`` included.

    Args:
        line: A replay-script line (``{"text"?, "tool_calls"?, "chunk_size"?}``).
        number: Response number, used in generated call ids (``call_r<number>_<i>``).
    """
    return sse_events(scripted_chunks(line, number)) + [b"data: [DONE]\n\n"]


def chat_body(line: dict[str, Any], number: int = 1) -> bytes:
    """:func:`chat_stream` joined into one body."""
    return b"".join(chat_stream(line, number))


@dataclass
class Reply:
    """A complete HTTP response with a ``Content-Length``."""

    status: int = 200
    body: bytes = TEXT_ONLY
    headers: dict[str, str] = field(default_factory=dict)


def error_body(message: str, *, type: str = "invalid_request_error", param: str | None = None,
               code: str | int | None = None, **extra: Any) -> bytes:
    """An OpenAI-shaped error body: ``{"error": {"message", "type", "param", "code", …extra}}``."""
    return json.dumps({"error": {"message": message, "type": type, "param": param, "code": code, **extra}}).encode()


def refusal(message: str, *, status: int = 400, **fields: Any) -> "Reply":
    """An HTTP 400 (or ``status``) with :func:`error_body` (``type``, ``param``, ``code``, extra fields)."""
    return Reply(status, error_body(message, **fields))


@dataclass
class Reset:
    """Read the request, then reset the connection (RST) without answering."""


@dataclass
class Truncated:
    """Send ``events`` in a chunked 200 response, then close the socket without the
    final zero-length chunk (and so without ``[DONE]``)."""

    events: list[bytes]


@dataclass
class Stall:
    """Send ``events`` in a chunked 200 response, then wait.

    The handler blocks until either the client closes the connection (then
    :attr:`disconnected` is set) or the test calls :meth:`release` (then the
    rest of the body, ``tail``, is sent).

    Attributes:
        sent: Set once ``events`` were written and flushed.
        disconnected: Set when the client hung up while the stream was stalled.
    """

    events: list[bytes]
    tail: list[bytes] = field(default_factory=list)
    sent: threading.Event = field(default_factory=threading.Event)
    disconnected: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self._wake_r, self._wake_w = os.pipe()
        self._released = False

    def release(self) -> None:
        """Let the stalled handler go on (idempotent)."""
        if not self._released:
            self._released = True
            os.write(self._wake_w, b"x")

    def wait_for_hangup(self, sock: socket.socket) -> bool:
        """Block until the client closes ``sock`` (True) or :meth:`release` (False)."""
        while True:
            ready, _, _ = select.select([sock, self._wake_r], [], [])
            if self._wake_r in ready:
                return False
            try:
                data = sock.recv(1, socket.MSG_PEEK)
            except OSError:  # ECONNRESET: the client reset the connection
                return True
            if not data:  # orderly shutdown by the client
                return True
            sock.recv(len(data))  # a pipelined byte: not expected from the SDK; drop it


class FakeEndpoint:
    """An OpenAI-compatible endpoint on 127.0.0.1 that answers each POST with the next reply.

    Args:
        replies: In order; ``(status, body)`` tuples are :class:`Reply` shorthand.
        check: A rule the endpoint enforces on every request before the script:
            ``body -> None`` (accepted: the next reply is sent), or a refusal: a
            message (an HTTP 400 with that message) or a :class:`Reply` (sent as is);
            a refused request does not use up a scripted reply.

    Attributes:
        requests: Every request body received (parsed JSON), in order.
        request_times: ``time.monotonic()`` at the arrival of each request.
        authorizations: The ``Authorization`` header of each request ("" when absent).
        models: The ids ``GET …/models`` lists (None: it answers HTTP 404); ``models_status`` another
            status to answer it with (401); ``model_gets`` the ``Authorization`` of each such GET.
    """

    def __init__(self, replies: list[Any] | None = None, check: Any = None) -> None:
        self.check = check
        self.replies: list[Any] = [Reply(*r) if isinstance(r, tuple) else r for r in (replies or [])]
        self._stalls = [r for r in self.replies if isinstance(r, Stall)]
        self.requests: list[dict] = []
        self.request_times: list[float] = []
        self.authorizations: list[str] = []
        self.paths: list[str] = []  # each request's path and query, as sent
        self.models: list[str] | None = None
        self.models_status = 200
        self.model_gets: list[str] = []
        self._arrived = threading.Condition()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                with endpoint._arrived:
                    endpoint.model_gets.append(self.headers.get("Authorization", ""))
                    endpoint._arrived.notify_all()
                if not self.path.split("?")[0].endswith("/models") or endpoint.models is None:
                    self._whole(Reply(404, error_body("not found")))
                elif endpoint.models_status != 200:
                    self._whole(Reply(endpoint.models_status, error_body("Incorrect API key provided")))
                else:
                    data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in endpoint.models]
                    self._whole(Reply(200, json.dumps({"object": "list", "data": data}).encode(),
                                      {"Content-Type": "application/json"}))

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with endpoint._arrived:
                    endpoint.requests.append(body)
                    endpoint.request_times.append(time.monotonic())
                    endpoint.authorizations.append(self.headers.get("Authorization", ""))
                    endpoint.paths.append(self.path)
                    problem = endpoint.check(body) if endpoint.check is not None else None
                    if isinstance(problem, Reply):
                        reply = problem
                    elif problem:
                        reply = refusal(problem)
                    else:
                        reply = endpoint.replies.pop(0) if endpoint.replies else Reply()
                    endpoint._arrived.notify_all()
                if isinstance(reply, Reply):
                    self._whole(reply)
                elif isinstance(reply, Reset):
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                elif isinstance(reply, Truncated):
                    self._chunked_head()
                    for event in reply.events:
                        self._chunk(event)
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True
                elif isinstance(reply, Stall):
                    self._chunked_head()
                    for event in reply.events:
                        self._chunk(event)
                    self.wfile.flush()
                    reply.sent.set()
                    if reply.wait_for_hangup(self.connection):
                        reply.disconnected.set()
                        self.close_connection = True
                        return
                    for event in reply.tail:
                        self._chunk(event)
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                else:  # pragma: no cover - a test bug
                    raise TypeError(f"unknown reply {reply!r}")

            def _whole(self, reply: Reply) -> None:
                self.send_response(reply.status)
                headers = {"Content-Type": "text/event-stream" if reply.status == 200 else "application/json",
                           **reply.headers}  # a reply's own headers win
                headers["Content-Length"] = str(len(reply.body))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply.body)

            def _chunked_head(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def wait_for_requests(self, count: int, timeout: float = 20.0) -> bool:
        """Block until ``count`` requests arrived (False on timeout); for ``asyncio.to_thread``."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= count, timeout)

    def __enter__(self) -> "FakeEndpoint":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        for stall in self._stalls:
            stall.release()
        self.server.shutdown()
        self.server.server_close()
