"""JSON-RPC edge cases pygls leaves unanswered, answered per the JSON-RPC 2.0 spec §5.1.

* A body that is not JSON gets ``-32700 Parse error`` with ``id: null``.
* A request whose ``jsonrpc`` member is missing or not ``"2.0"`` gets
  ``-32600 Invalid Request`` (with its id, so the client does not wait forever).

Either way the server keeps serving.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from pygls.protocol import LanguageServerProtocol

log = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def error_response(msg_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response object."""
    return {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}


class ToolwireProtocol(LanguageServerProtocol):
    """pygls' LSP protocol, plus answers for malformed requests."""

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
