"""JSON-RPC 2.0 and LSP message rules that pygls leaves to the server, in one place.

:class:`RpcProtocol` is the plumbing under the LSP front-end's protocol class
(:class:`toolwire.lsp.boot.ToolwireProtocol`, which adds the document sync); the
error codes and the rules for error responses are in :mod:`toolwire.rpc.errors`.

Every message is checked here before pygls sees it (JSON-RPC 2.0 §4–§6, LSP 3.17
"Base Protocol" and "Lifecycle Messages"):

* A body that is not JSON or not UTF-8 (no byte order mark, not UTF-16 or UTF-32;
  the transports hand bodies on as text, :class:`toolwire.rpc.transport.FrameReader`):
  ``-32700 Parse error``, ``id: null``.
* A body that is JSON but not an object (a number, a string, ``null``), an object
  that is neither a request, a notification nor a response (e.g. only an ``id``),
  a ``jsonrpc`` member other than ``"2.0"``, a ``method`` that is not a string, an
  ``id`` that is not a string or an integer: ``-32600 Invalid Request``, with the
  request's id when it has a usable one, else ``id: null``.
* A batch (a JSON array): each member is handled as if it had come alone, and each
  request in it is answered by its own response message (LSP has no batches, so
  responses are never collected into an array); an empty batch is one ``-32600``.
* ``params`` may be omitted (JSON-RPC §4.2): the handler receives none; a method
  that needs them answers ``-32602`` naming the missing field.
* Before ``initialize``: requests get ``-32002 ServerNotInitialized`` and
  notifications are dropped, except ``exit`` (LSP "initialize").
* After ``shutdown``: requests get ``-32600`` (LSP "shutdown").
* ``exit`` records the exit code LSP prescribes (0 after ``shutdown``, else 1).

Every message is redacted on its way out (:meth:`toolwire.redaction.Redactor.redact_message`):
no secret the server was given is written to the client, whichever path built the
message (results, errors and their ``data``, notifications, pygls' own answers).

Client mistakes (invalid params, unknown sessions, invalid requests) are logged as
one line; only bugs get a traceback, and only in the log: error responses never
carry a traceback and never echo more than :data:`ECHO_LIMIT` characters of input.

Notifications and results of ``toolwire/`` methods are plain JSON data and are
written as they are, without pygls' message objects (whose converter would walk
every value). Messages are written as compact UTF-8 JSON (no ``\\u`` escapes for
non-ASCII text, no spaces after separators) with only the ``Content-Length``
header, which the LSP base protocol says is the one required header (the
``Content-Type`` default is ``application/vscode-jsonrpc; charset=utf-8``). A
message holding a lone UTF-16 surrogate, which UTF-8 cannot carry, is written
with ASCII escapes as before.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
import uuid
from concurrent.futures import Future
from collections.abc import Awaitable
from typing import Any, Protocol

from lsprotocol import types
from lsprotocol.types import ResponseErrorMessage
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcRequestCancelled
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    default_converter,
)

from toolwire.redaction import shared as shared_redactor
from toolwire.rpc.errors import (
    CLIENT_MISTAKES,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    SERVER_NOT_INITIALIZED,
    ClientGone,
    cattrs_reason,
    clip,
    error_response,
    short_repr,
    small_data,
    usable_id,
)

log = logging.getLogger(__name__)


def make_converter():
    """pygls' converter, but custom-method params and results stay plain JSON data
    (a server's and a client's: ``toolwire serve`` and ``toolwire run`` use it)."""
    converter = default_converter()

    def keep(obj: dict, cls: type) -> Any:
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, keep)
    return converter


class Peer(Protocol):
    """The other end of one connection, as the parts that talk to it see it:
    :class:`RpcProtocol` is one (a test may pass a fake)."""

    def notify(self, method: str, params: Any | None = None) -> None:
        """Send a notification."""

    def send_request_async(self, method: str, params: Any | None = None, msg_id: Any = None) -> Awaitable[Any]:
        """Send a request; the awaitable gives the answer (or raises the error answered,
        :class:`~toolwire.rpc.errors.ClientGone` when the connection ends first)."""

    def withdraw(self, msg_id: Any) -> bool:
        """Forget a request still unanswered and send ``$/cancelRequest``; True when it was."""


class RpcProtocol(LanguageServerProtocol):
    """pygls' LSP protocol, with every message checked against JSON-RPC and LSP first.

    One object serves one connection. When the connection ends, :meth:`detach`
    closes it for good: nothing more is written, answers to the client's requests
    still running are dropped (a later client has its own ids), and requests sent
    to the client fail with :class:`ClientGone`.

    Once ``initialize`` is answered, and before any later message is handled, the
    server's ``after_initialize()`` runs (once): the server answers ``initialize``
    from a light start and loads the rest then (see :mod:`toolwire.lsp.boot`).

    What the handling of one incoming message writes at once (a notification and
    the answer of a synchronous handler, e.g. a ``toolwire/toolCalls/merge``'s
    ``tool_call`` update and its result) goes out in **one write**, in the order it
    was sent: one pipe write and one wake-up of the client instead of one per
    message. What async handlers send later is written as it is sent.

    Attributes:
        initialized: True once an ``initialize`` request arrived.
        exit_code: None until ``exit`` arrives; then 0 after ``shutdown``, else 1.
        closed: The connection ended (:meth:`detach`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._corked: list[bytes] | None = None  # framed messages held while a message is handled
        self.initialized = False
        self.exit_code: int | None = None
        self.closed = False
        self._outgoing: set[Any] = set()
        self._initialize_id: Any = None
        self._started = False

    def detach(self) -> None:
        """The connection ended: write nothing more, fail the requests sent to the
        client with :class:`ClientGone` (their callers decide: re-send on the next
        connection, or give up safely)."""
        self.closed = True
        for msg_id in list(self._outgoing):
            future = self._request_futures.pop(msg_id, None)
            self._result_types.pop(msg_id, None)
            if future is not None and not future.done():
                future.set_exception(ClientGone(f"the client disconnected before answering request {msg_id}"))
        self._outgoing.clear()

    def send_request(self, method: str, params: Any | None = None, callback: Any = None,
                     msg_id: Any = None) -> Any:
        """Send a request to the client; on a closed connection the future fails
        with :class:`ClientGone` at once (nothing is sent)."""
        if self.closed:
            future: Future[Any] = Future()
            future.set_exception(ClientGone(f"no client is connected to answer {method}"))
            return future
        if msg_id is None:
            msg_id = str(uuid.uuid4())
        self._outgoing.add(msg_id)
        future = super().send_request(method, params, callback, msg_id)
        future.add_done_callback(lambda _f: self._outgoing.discard(msg_id))
        return future

    def withdraw(self, msg_id: Any) -> bool:
        """Withdraw a request sent to the client that is still unanswered: forget it (a
        late answer is ignored) and send ``$/cancelRequest`` (LSP "Cancellation Support").

        Returns:
            True when the request was still pending.
        """
        future = self._request_futures.pop(msg_id, None)
        self._result_types.pop(msg_id, None)
        if future is None:
            return False
        future.cancel()
        if not self.closed:
            # typed params: pygls cannot serialize a plain dict for this LSP method
            self.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        return True

    def _finish_start(self) -> None:
        """Run the server's ``after_initialize()`` once (errors are logged; the server goes on)."""
        if self._started:
            return
        self._started = True
        after = getattr(self._server, "after_initialize", None)
        if after is None:
            return
        try:
            after()
        except Exception:
            log.exception("the server could not finish starting")

    # pygls structures every object of a body through ``json.loads(object_hook=...)``,
    # nested ones included; we structure the top-level message ourselves instead.
    def structure_message(self, data: dict[str, Any]) -> Any:
        return data

    def handle_message(self, message: Any) -> None:
        if self._corked is not None:  # already inside the handling of a message
            self._handle_message(message)
            return
        self._corked = []
        try:
            self._handle_message(message)
        finally:
            self._flush()
            self._corked = None

    def _flush(self) -> None:
        """Write what the handling of the current message sent so far, in one write."""
        held = self._corked
        if held:
            self._corked = []
            self._write(b"".join(held))

    def _handle_message(self, message: Any) -> None:
        if isinstance(message, list):
            if not message:
                self._refuse(None, INVALID_REQUEST, "Invalid Request: an empty batch")
            for member in message:
                self._handle_one(member)
            return
        self._handle_one(message)

    def _refuse(self, msg_id: Any, code: int, message: str) -> None:
        log.warning("refused a message: %s", clip(message, 300))
        self._send_data(error_response(msg_id if usable_id(msg_id) else None, code, message))

    def _handle_one(self, message: Any) -> None:
        if not isinstance(message, dict):
            self._refuse(None, INVALID_REQUEST, f"Invalid Request: a message must be a JSON object, not {type(message).__name__}")
            return
        msg_id = message.get("id")
        method = message.get("method")
        if message.get("jsonrpc") != "2.0":
            if method is not None and "id" not in message:  # a notification: nothing to answer
                log.warning("ignored a notification without \"jsonrpc\": \"2.0\" (method %s)", short_repr(method))
                return
            self._refuse(msg_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
            return
        if "method" not in message:
            if "id" in message and ("result" in message or "error" in message):
                self._structure_response(message)
                return
            self._refuse(msg_id, INVALID_REQUEST,
                         "Invalid Request: neither a request nor a notification (no \"method\") nor a response "
                         "(no \"result\" or \"error\")")
            return
        if not isinstance(method, str):
            self._refuse(msg_id, INVALID_REQUEST, 'Invalid Request: "method" must be a string')
            return
        is_request = "id" in message
        if is_request and not usable_id(msg_id):
            self._refuse(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
            return
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            if is_request:
                self._refuse(msg_id, INVALID_PARAMS, f"{method}: invalid params: params must be an object or an array")
            else:
                log.warning("ignored notification %s: params must be an object or an array", short_repr(method))
            return
        if method == "exit":
            self.exit_code = 0 if self._shutdown else 1
        elif not self.initialized and method != "initialize":
            if is_request:
                self._refuse(msg_id, SERVER_NOT_INITIALIZED,
                             f"ServerNotInitialized: {short_repr(method)} before initialize")
            else:
                log.warning("dropped notification %s: the server is not initialized", short_repr(method))
            return
        elif self._shutdown:
            if is_request:
                self._refuse(msg_id, INVALID_REQUEST, f"Invalid Request: {short_repr(method)} after shutdown")
            return
        elif method != "initialize" and not self._started:
            self._finish_start()  # initialize is not answered yet: load the rest before this message
        data = {"jsonrpc": "2.0", "method": method, "params": params}
        if is_request:
            data["id"] = msg_id
        try:
            kind = self.get_message_type(method) or (JsonRPCRequestMessage if is_request else JsonRPCNotification)
            structured = self._converter.structure(data, kind)
        except Exception as exc:  # lsprotocol params that do not fit the method's type
            if is_request:
                self._refuse(msg_id, INVALID_PARAMS, f"{method}: invalid params: {cattrs_reason(exc)}")
            else:
                log.warning("ignored notification %s: invalid params: %s", method, cattrs_reason(exc))
            return
        if method == "initialize" and is_request:
            self.initialized = True
            self._initialize_id = msg_id
        # What pygls' ``handle_message`` does for a checked request or notification,
        # without its four ``isinstance`` checks against runtime protocols (the
        # message kind is known here): the handler runs in its own context.
        if is_request:
            contextvars.copy_context().run(self._handle_request, msg_id, method, structured.params)
        else:
            contextvars.copy_context().run(self._handle_notification, method, structured.params)

    def _structure_response(self, message: dict[str, Any]) -> None:
        try:
            if "error" in message:
                structured = self._converter.structure(message, ResponseErrorMessage)
            else:
                kind = self._result_types.pop(message["id"], None) or JsonRPCResponseMessage
                structured = self._converter.structure(message, kind)
        except Exception:
            log.warning("ignored a malformed response to request %s", short_repr(message.get("id")))
            return
        super().handle_message(structured)

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """Answer a request: client mistakes logged as one line; bugs logged with a
        traceback but answered without one."""
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self._send_data(error_response(msg_id, JsonRpcRequestCancelled.CODE,
                                           f'Request with id "{msg_id}" is canceled'))
            return
        if msg_id == self._initialize_id and not self._started:
            try:
                self._answer(future, msg_id)
                self._flush()  # the answer goes out now, before the rest of the server loads
            finally:
                self._finish_start()
            return
        self._answer(future, msg_id)

    def _answer(self, future: Any, msg_id: Any) -> None:
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
            return
        if isinstance(exc, JsonRpcException) and exc.code != INTERNAL_ERROR:
            if exc.code in CLIENT_MISTAKES:
                log.warning("request %s: %s", msg_id, clip(exc.message, 300))
            else:
                log.error("request %s: error %s: %s", msg_id, exc.code, clip(exc.message, 300))
            self._send_data(error_response(msg_id, exc.code, exc.message, small_data(exc.data)))
            return
        log.error("request %s failed (a bug)", msg_id, exc_info=exc)
        self._send_data(error_response(msg_id, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}"))
        self._server._report_server_error(JsonRpcInternalError(str(exc)), Exception)

    def _send_data(self, data: Any) -> None:
        """Write one message: compact UTF-8 JSON behind a ``Content-Length`` header
        (nothing once the connection is closed)."""
        if not data or self.closed:
            return
        if self.writer is None:
            log.error("Unable to send data, no available transport!")
            return
        try:
            if not isinstance(data, dict):  # pygls' message objects: as JSON data first
                data = json.loads(json.dumps(data, default=self._serialize_message))
            data = shared_redactor().redact_message(data)
            try:
                body = json.dumps(data, default=self._serialize_message, ensure_ascii=False,
                                  separators=(",", ":")).encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: ASCII escapes carry it
                body = json.dumps(data, default=self._serialize_message, separators=(",", ":")).encode("ascii")
        except Exception as error:  # pygls reports it the same way
            log.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)
            return
        if self._include_headers:
            body = b"Content-Length: %d\r\n\r\n" % len(body) + body
        if self._corked is not None:
            self._corked.append(body)
            return
        self._write(body)

    def _write(self, data: bytes) -> None:
        """Hand framed bytes to the transport (nothing once the connection is closed)."""
        if self.closed or self.writer is None:
            return
        try:
            res = self.writer.write(data)
            if inspect.isawaitable(res):
                asyncio.ensure_future(res)
        except BrokenPipeError:
            log.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:  # pygls reports it the same way
            log.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)

    def notify(self, method: str, params: Any | None = None) -> None:
        """Send a notification; ``toolwire/`` ones (plain JSON data) skip pygls' message objects."""
        if type(params) is dict and method.startswith("toolwire/"):
            self._send_data({"jsonrpc": "2.0", "method": method, "params": params})
            return
        super().notify(method, params)

    def _send_response(self, msg_id: Any, result: Any | None = None, error: Any | None = None) -> None:
        """Send a response; plain JSON results of untyped (custom) requests are written as they are."""
        if error is None and type(result) is dict and msg_id not in self._result_types:
            self._send_data({"jsonrpc": "2.0", "id": msg_id, "result": result})
            return
        super()._send_response(msg_id, result, error)

    def _serialize_message(self, data: Any) -> Any:
        if isinstance(data, dict):
            return data
        return super()._serialize_message(data)
