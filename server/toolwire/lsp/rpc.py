"""JSON-RPC edge cases pygls leaves unanswered, answered per the JSON-RPC 2.0 spec §5.1,
and a leaner writer.

* A body that is not JSON gets ``-32700 Parse error`` with ``id: null``.
* A request whose ``jsonrpc`` member is missing or not ``"2.0"`` gets
  ``-32600 Invalid Request`` (with its id, so the client does not wait forever).

Either way the server keeps serving.

Messages are written as compact UTF-8 JSON (no ``\\u`` escapes for
non-ASCII text, no spaces after separators) with only the ``Content-Length``
header, which the LSP base protocol says is the one required header (the
``Content-Type`` default is ``application/vscode-jsonrpc; charset=utf-8``). A
message holding a lone UTF-16 surrogate, which UTF-8 cannot carry, is written
with ASCII escapes as before.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from typing import Any

from pygls.exceptions import JsonRpcInternalError

from pygls.protocol import LanguageServerProtocol

from toolwire.lsp.documents import DocumentSyncMixin

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def error_response(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response object."""
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


class ToolwireProtocol(DocumentSyncMixin, LanguageServerProtocol):
    """pygls' LSP protocol, plus answers for malformed requests and our own document sync."""

    def handle_message(self, message: Any) -> None:
        version = message.get("jsonrpc") if isinstance(message, dict) else getattr(message, "jsonrpc", None)
        if version != "2.0":
            msg_id = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
            method = message.get("method") if isinstance(message, dict) else getattr(message, "method", None)
            log.warning("invalid JSON-RPC message (jsonrpc=%r, method=%r)", version, method)
            if msg_id is not None and method is not None:
                self._send_data(error_response(msg_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'))
            return
        super().handle_message(message)

    def _send_data(self, data: Any) -> None:
        """Write one message: compact UTF-8 JSON behind a ``Content-Length`` header."""
        if not data:
            return
        if self.writer is None:
            log.error("Unable to send data, no available transport!")
            return
        try:
            try:
                body = json.dumps(data, default=self._serialize_message, ensure_ascii=False,
                                  separators=(",", ":")).encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate: ASCII escapes carry it
                body = json.dumps(data, default=self._serialize_message, separators=(",", ":")).encode("ascii")
            if self._include_headers:
                body = b"Content-Length: %d\r\n\r\n" % len(body) + body
            res = self.writer.write(body)
            if inspect.isawaitable(res):
                asyncio.ensure_future(res)
        except BrokenPipeError:
            log.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:  # pygls reports it the same way
            log.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)

    def _serialize_message(self, data: Any) -> Any:
        if isinstance(data, dict):
            return data
        return super()._serialize_message(data)


def answer_parse_error(protocol: LanguageServerProtocol, error: Exception) -> bool:
    """Send ``-32700`` for a body that was not JSON; True when ``error`` was one."""
    if isinstance(error, json.JSONDecodeError):
        protocol._send_data(error_response(None, PARSE_ERROR, f"Parse error: {error}"))
        return True
    return False
