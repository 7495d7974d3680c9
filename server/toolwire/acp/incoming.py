"""The client's lines before the ACP SDK reads them (``toolwire acp``).

The SDK (``agent-client-protocol`` 0.12, ``acp/_transport.py`` ``NdjsonTransport``
and ``acp/connection.py``) reads one JSON value a line and, on its own:

- logs and drops a line that is not JSON, with no answer to the client;
- stops reading for good on JSON that is not an object (a batch, a number), and on
  a line longer than its buffer;
- logs an ERROR with a traceback for every notification it has no route for
  (``Unhandled error while handling notification``: the router raises
  method-not-found), and for a known notification whose params do not validate.

So :func:`guard` copies the lines from stdin to the SDK's reader and keeps back
every line the SDK would mishandle: a line that is not UTF-8, starts with a byte
order mark, is not JSON or nested
too deeply to be parsed is answered ``-32700``; JSON that is not an object, an
object that is neither a request, a notification nor a response (the SDK ignores
it), a request whose id is not a string, an integer or null (ACP's ``RequestId``),
a message whose method is not a string (the SDK left ``"method": null`` unanswered),
and a line over the limit ``-32600`` (JSON-RPC 2.0, section 5); a
notification Toolwire does not handle (an unknown method, an ``_``-prefixed
extension it does not know) is ignored with one DEBUG line,
and one of :data:`NOTIFICATIONS` whose params are invalid with one WARNING line (a
notification has no answer). A valid ``$/cancel_request`` is handled here, not by the
SDK (which has no route for it): :class:`toolwire.acp.cancel_requests.RequestTracker`. Every request goes on to the SDK, an ``_``-prefixed one too
(``_toolwire/toolCall/cancel``: the SDK hands it to ``ToolwireAcpAgent.ext_method``, which
answers an unknown one method-not-found). Nothing the guard refuses stops it: the agent keeps
serving every session.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from acp.meta import AGENT_METHODS
from acp.schema import CancelNotification, CancelRequestNotification
from pydantic import BaseModel, ValidationError

from toolwire.acp.cancel_requests import CANCEL_REQUEST, RequestTracker

log = logging.getLogger(__name__)

#: The UTF-8 byte order mark: a line starting with it is refused, as toolwire serve refuses
#: such a body (RFC 8259 section 8.1: a sender MUST NOT add one; Python's json names it
#: "Unexpected UTF-8 BOM (decode using utf-8-sig)", advice meant for Python code).
BOM = b"\xef\xbb\xbf"

#: The longest piece of a refused line (or method name) quoted in an error or a log line.
ECHO_LIMIT = 80

#: The notifications the agent handles (``session/cancel`` routed by the SDK to
#: :class:`ToolwireAcpAgent`, ``$/cancel_request`` by :func:`guard`), with the model their
#: params must validate against. Every other notification is ignored here.
NOTIFICATIONS: dict[str, type[BaseModel]] = {AGENT_METHODS["session_cancel"]: CancelNotification,
                                             CANCEL_REQUEST: CancelRequestNotification}


def _error(code: int, message: str, msg_id: Any = None) -> bytes:
    """A JSON-RPC error response, ``id: null`` unless given (JSON-RPC 2.0, section 5)."""
    return (json.dumps({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}) + "\n").encode()


def _clip(text: str) -> str:
    return text if len(text) <= ECHO_LIMIT else text[:ECHO_LIMIT] + "…"


def check_line(line: bytes) -> bytes | None:
    """What to do with one line from the client.

    Returns:
        None when the line goes to the SDK; else the bytes to answer (an error
        response ending in a newline), or ``b""`` to drop it without an answer (a
        blank line, a notification the agent does not handle).
    """
    stripped = line.strip()
    if not stripped:
        return b""
    if stripped.startswith(BOM):  # as toolwire serve answers it (rpc/errors.py)
        return _error(-32700, "Parse error: the line starts with a byte order mark; send UTF-8 without one")
    try:
        text = stripped.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _error(-32700, f"Parse error: the line is not UTF-8 (byte 0x{stripped[exc.start]:02x} at offset "
                              f"{exc.start}) in {stripped[:ECHO_LIMIT]!r}")
    try:
        value = json.loads(text)
    except ValueError as exc:  # json.JSONDecodeError
        return _error(-32700, f"Parse error: {getattr(exc, 'msg', exc)} in {stripped[:ECHO_LIMIT]!r}")
    except RecursionError:  # [[[[…]]]] deeper than Python's recursion limit (about 1000 levels)
        return _error(-32700, f"Parse error: the line nests arrays or objects too deeply to be read "
                              f"in {stripped[:ECHO_LIMIT]!r}")
    if not isinstance(value, dict):
        kind = "a batch (array)" if isinstance(value, list) else f"a JSON {type(value).__name__}"
        return _error(-32600, f"Invalid Request: expected one JSON object per line, got {kind}")
    if "method" not in value and not ("id" in value and ("result" in value or "error" in value)):
        msg_id = value.get("id")
        usable = isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))
        return _error(-32600, 'Invalid Request: neither a request nor a notification (no "method") nor a '
                              'response (no "result" or "error")', msg_id if usable else None)
    if "method" in value and not isinstance(value["method"], str):  # JSON-RPC 2.0, section 7's example
        msg_id = value.get("id")
        return _error(-32600, "Invalid Request: the method must be a string, got "
                              f"{_clip(json.dumps(value['method']))}", msg_id if _valid_id(msg_id) else None)
    if "method" in value and "id" in value and not _valid_id(value["id"]):
        return _error(-32600, "Invalid Request: the id must be a string, an integer or null, got "
                              f"{_clip(json.dumps(value['id']))}")
    if "method" in value and "id" not in value and not _handled_notification(value):
        return b""
    return None


def _valid_id(msg_id: Any) -> bool:
    """ACP's ``RequestId`` (as LSP's): a string, an integer or null; never a boolean, a
    fraction, an array or an object (the SDK answered ``"id": true`` as if it were one)."""
    return msg_id is None or isinstance(msg_id, str) or (isinstance(msg_id, int) and not isinstance(msg_id, bool))


def _handled_notification(message: dict[str, Any]) -> bool:
    """True when the SDK routes this notification to the agent and its params validate;
    else one log line says why it is ignored."""
    method = message["method"]
    name = _clip(method) if isinstance(method, str) else repr(method)[:ECHO_LIMIT]
    model = NOTIFICATIONS.get(method) if isinstance(method, str) else None
    if model is None:
        log.debug("ignored the notification %r: Toolwire does not handle it", name)
        return False
    try:
        model.model_validate(message.get("params"))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in exc.errors()[:3])
        log.warning("ignored the notification %r: invalid params (%s)", name, problems)
        return False
    return True


async def read_line(source: asyncio.StreamReader) -> bytes | None:
    """The next line of ``source`` (with its newline; the last one may lack it), None
    at the end of the stream.

    Raises:
        ValueError: for a line longer than the stream's limit; the whole line has
            been read and dropped, the next call reads the line after it.
    """
    too_long = False
    while True:
        try:
            line = await source.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:  # the stream ended
            if too_long:
                raise ValueError("the line is longer than the limit") from None
            return exc.partial or None
        except asyncio.LimitOverrunError as exc:
            await source.readexactly(exc.consumed)  # drop the head of the line, then look for its end
            too_long = True
            continue
        if too_long:
            raise ValueError("the line is longer than the limit")
        return line


async def guard(source: asyncio.StreamReader, target: asyncio.StreamReader, writer: asyncio.StreamWriter,
                requests: RequestTracker | None = None) -> None:
    """Copy lines from ``source`` to ``target`` (the SDK's reader) until ``source``
    ends, answering or dropping the ones :func:`check_line` keeps back; ``requests`` sees
    every line let through and keeps ``$/cancel_request`` (:meth:`RequestTracker.take`)."""
    try:
        while True:
            try:
                line = await read_line(source)
            except ValueError:
                refusal = _error(-32600, "Invalid Request: the line is longer than the agent accepts")
            else:
                if line is None:
                    break
                refusal = check_line(line)
            if refusal is None and requests is not None and requests.take(line):
                continue
            if refusal is None:
                target.feed_data(line if line.endswith(b"\n") else line + b"\n")
            elif refusal:
                log.warning("refused a malformed message from the client")
                writer.write(refusal)
                await writer.drain()
    finally:
        target.feed_eof()
