"""The JSON-RPC error codes Toolwire sends, their exception classes, and the rules
for what an error response may carry, in one place (protocol.md, "Errors").

* The codes of JSON-RPC 2.0 §5.1, LSP's ``ServerNotInitialized``, and Toolwire's
  own (outside both reserved ranges: JSON-RPC's -32768..-32000 and LSP's
  -32899..-32800).
* :data:`CLIENT_MISTAKES`: codes that mean "the client asked for something
  wrong", logged as one line; every other error is a bug, logged with a traceback
  (never sent).
* An error message never echoes more than :data:`ECHO_LIMIT` characters
  (:func:`clip`); error ``data`` is sent only when small and free of tracebacks
  (:func:`small_data`).
* A body that is not JSON, not UTF-8 or nested too deeply is answered ``-32700``
  with ``id: null`` (:func:`answer_parse_error`), and pygls' traceback for it is
  dropped from the log.
* :class:`ClientGone`: what a request sent to the client fails with when its
  connection ended.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from cattrs import transform_error
from pygls.exceptions import JsonRpcException

if TYPE_CHECKING:
    from pygls.protocol import JsonRPCProtocol

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
#: LSP: a request before ``initialize``.
SERVER_NOT_INITIALIZED = -32002
#: Toolwire: a prompt while the session's turn is still running (outside both
#: reserved ranges: JSON-RPC's -32768..-32000 and LSP's -32899..-32800).
TURN_IN_PROGRESS = -31001
#: Toolwire: the ``sessionId`` names no session of this server.
UNKNOWN_SESSION = -31002
#: Toolwire: a connection refused because another client is connected (``--tcp``).
SERVER_BUSY = -31003

#: Codes that mean "the client asked for something wrong": logged as one line.
CLIENT_MISTAKES = frozenset({INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SERVER_NOT_INITIALIZED,
                             TURN_IN_PROGRESS, UNKNOWN_SESSION})

#: Longest error message sent (characters); longer ones are cut with a marker.
ECHO_LIMIT = 1000


class TurnInProgress(JsonRpcException):
    """A prompt arrived while the session's previous turn is still running."""

    CODE = TURN_IN_PROGRESS
    MESSAGE = "a turn is already running in this session"


class UnknownSession(JsonRpcException):
    """The ``sessionId`` names no session of this server."""

    CODE = UNKNOWN_SESSION
    MESSAGE = "unknown session"


class ClientGone(Exception):
    """The client a request was sent to disconnected (or none is connected), so no
    answer will come on this connection; another client may connect later."""


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to ``limit`` characters with a marker giving its full length."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}… [{len(text)} characters in all]"


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)``, at most about ``limit`` characters (for echoing client input)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}…"


def error_response(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response object (the message capped at :data:`ECHO_LIMIT`)."""
    error: dict[str, Any] = {"code": code, "message": clip(message)}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


def usable_id(msg_id: Any) -> bool:
    """True for an id JSON-RPC allows a request to have: a string or an integer (not a boolean)."""
    return isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))



def small_data(data: Any) -> Any:
    """Error ``data`` kept only when small and free of tracebacks."""
    if data is None or (isinstance(data, dict) and "traceback" in data):
        return None
    text = json.dumps(data, default=str)
    return data if len(text) <= ECHO_LIMIT else None


def cattrs_reason(exc: BaseException) -> str:
    """One line saying why cattrs could not structure LSP params, fields in camelCase
    (e.g. ``params.textDocument.version: required field missing``); no input echoed."""
    from pydantic.alias_generators import to_camel  # imported late: pydantic is not loaded before initialize

    try:
        lines = transform_error(exc)
    except Exception:  # not a cattrs error
        lines = [f"{type(exc).__name__}"]
    parts = []
    for line in lines:
        reason, _, where = line.rpartition(" @ $.")
        if not reason:
            reason, where = line, ""
        path = ".".join(to_camel(part) if part.isidentifier() else part for part in where.split("."))
        parts.append(f"{path}: {reason}" if path else reason)
    return clip("; ".join(parts), 300)


#: What ``json.loads`` raises for a body it cannot parse: not JSON, not UTF-8, or nested
#: deeper than Python's recursion limit allows (``[[[[…]]]]``, about 1000 levels).
PARSE_FAILURES = (json.JSONDecodeError, UnicodeDecodeError, RecursionError)


class _NoParseTracebacks(logging.Filter):
    """Drops pygls' "Unable to handle message" traceback for bodies that are not JSON:
    :func:`answer_parse_error` answers them and the server logs one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, PARSE_FAILURES)


# run_async logs with the logger it is given: pygls' server's (start_io) or Toolwire's read log.
for _name in ("pygls.io_", "pygls.server", "toolwire.rpc.read"):
    logging.getLogger(_name).addFilter(_NoParseTracebacks())


def answer_parse_error(protocol: JsonRPCProtocol, error: Exception) -> bool:
    """Send ``-32700`` for a body that was not JSON, not UTF-8 or nested too deeply; True
    when ``error`` was one.

    The message says "not UTF-8" for a body that is not valid UTF-8, one that starts
    with a byte order mark and one holding NUL characters (UTF-16 or UTF-32 text)."""
    if not isinstance(error, PARSE_FAILURES):
        return False
    reason = clip(str(error), 200)
    if isinstance(error, RecursionError):
        reason = "the body nests arrays or objects too deeply to be read"
    elif isinstance(error, UnicodeDecodeError):
        reason = f"the body is not UTF-8 ({error.reason} at byte {error.start})"
    elif error.doc.startswith("\ufeff"):
        reason = "the body starts with a byte order mark; send UTF-8 without one"
    elif "\x00" in error.doc:
        reason = f"the body is not UTF-8 (it holds NUL characters: UTF-16 or UTF-32?); {reason}"
    protocol._send_data(error_response(None, PARSE_ERROR, f"Parse error: {reason}"))
    return True
