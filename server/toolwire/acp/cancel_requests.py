"""``$/cancel_request`` both ways (ACP v1, as LSP's ``$/cancelRequest``).

The SDK (``agent-client-protocol`` 0.12) knows neither direction, so :class:`RequestTracker`
watches the lines on both sides:

* client → agent: the guard (:func:`toolwire.acp.incoming.guard`) hands it every line it lets
  through (:meth:`RequestTracker.take`); it notes each ``session/prompt`` request's id and
  session, and a ``$/cancel_request`` naming an open one ends that turn as ``session/cancel``
  does (the prompt answers ``cancelled``); one naming any other request is ignored (the
  other requests answer at once). The notification never reaches the SDK.
* agent → client: a request sent inside :meth:`RequestTracker.withdrawable` (a permission
  question, a file read) that Toolwire withdraws (the task awaiting its answer is cancelled:
  the turn or the call was cancelled) before its answer came is followed by
  ``$/cancel_request`` with its id. The ids come from the SDK's stream observer
  (:meth:`RequestTracker.observe`), which runs in the task that sends the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

from acp.connection import StreamDirection, StreamEvent
from acp.meta import AGENT_METHODS

log = logging.getLogger(__name__)

#: The notification's method (not in the SDK's method tables).
CANCEL_REQUEST = "$/cancel_request"

_PROMPT = AGENT_METHODS["session_prompt"]

#: The ids of the requests sent by the current :meth:`RequestTracker.withdrawable` block.
_SENT: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("toolwire_acp_sent", default=None)


class RequestTracker:
    """The open requests of both sides, for ``$/cancel_request``.

    Args:
        cancel_prompt: Ends the turn of a session (the agent's :meth:`cancel_prompt`).
    """

    def __init__(self, cancel_prompt: Callable[[str], None]) -> None:
        self._cancel_prompt = cancel_prompt
        self._prompts: dict[Any, str] = {}  # open session/prompt request id -> session id
        self._sent: set[Any] = set()  # ids of the agent's requests still unanswered
        self.writer: asyncio.StreamWriter | None = None

    def take(self, line: bytes) -> bool:
        """Look at one line the guard let through; True when it is a ``$/cancel_request``
        (handled here: not for the SDK)."""
        if b"$/cancel_request" not in line and _PROMPT.encode() not in line:
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        method = message.get("method")
        if method == _PROMPT and "id" in message:
            session_id = (message.get("params") or {}).get("sessionId")
            if isinstance(session_id, str):
                self._prompts[message["id"]] = session_id
            return False
        if method != CANCEL_REQUEST or "id" in message:
            return False
        request_id = (message.get("params") or {}).get("requestId")
        session_id = self._prompts.get(request_id)
        if session_id is None:
            log.debug("$/cancel_request for %r: no open session/prompt of that id (ignored)", request_id)
        else:
            self._cancel_prompt(session_id)
        return True

    def observe(self, event: StreamEvent) -> None:
        """The SDK's stream observer: answers sent and received, requests sent."""
        message = event.message
        if "id" not in message:
            return
        if event.direction is StreamDirection.OUTGOING:
            if "method" in message:
                self._sent.add(message["id"])
                sent = _SENT.get()
                if sent is not None:
                    sent.append(message["id"])
            else:
                self._prompts.pop(message["id"], None)
        elif "method" not in message:
            self._sent.discard(message["id"])

    @contextlib.contextmanager
    def withdrawable(self) -> Iterator[None]:
        """Run agent→client requests; if the block is cancelled, each still unanswered is
        withdrawn with ``$/cancel_request``."""
        sent: list[Any] = []
        token = _SENT.set(sent)
        try:
            yield
        except asyncio.CancelledError:
            for request_id in sent:
                if request_id in self._sent:
                    self._sent.discard(request_id)
                    self._send(request_id)
            raise
        finally:
            _SENT.reset(token)

    def _send(self, request_id: Any) -> None:
        if self.writer is None:
            return
        try:
            self.writer.write((json.dumps({"jsonrpc": "2.0", "method": CANCEL_REQUEST,
                                           "params": {"requestId": request_id}}) + "\n").encode())
        except Exception as exc:  # noqa: BLE001 - the client went away
            log.info("$/cancel_request for %r not sent: %s", request_id, exc)
