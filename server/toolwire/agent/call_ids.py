"""Tool-call ids: one stable id per call, unique in its session (protocol.md, "ToolCall").

Providers reuse ids across responses, turns and streams, and some send none. Every
call, server-run or client-fed, gets its id here, before its first update goes out:

* a call without a provider id gets a fallback: ``call_<turn>_<index>`` in a turn
  (:func:`turn_call_id`), ``<streamId>-<index>`` in a client-fed stream
  (:func:`fed_call_id`);
* an id another call of the session already has gets ``<id>_<n>`` (the smallest free
  ``n`` from 2), and the provider's id is kept in ``call.provider_id`` (sent as
  ``providerCallId``: a client that runs the model itself sends the result back under it).

From then on the id never changes, so the client (snapshots, ``rev``) and the model
(history) see the same one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CallIds", "fed_call_id", "turn_call_id"]


def turn_call_id(turn_number: int, index: int) -> str:
    """The id of a call without one in turn ``turn_number`` of its session, at ``index`` in its response."""
    return f"call_{turn_number}_{index}"


def fed_call_id(stream_id: str, index: int) -> str:
    """The id of a call without one in the client-fed stream ``stream_id``."""
    return f"{stream_id}-{index}"


class CallIds:
    """The ids given out in one session, and the call each belongs to."""

    __slots__ = ("_owners",)

    def __init__(self) -> None:
        self._owners: dict[str, object] = {}

    def settle(self, call: Any, fallback: str) -> str:
        """Fix ``call.id`` (unique in the session) and return it.

        Args:
            call: A :class:`~toolwire.streaming.state.ToolCallState`.
            fallback: The id to give a call that has none (:func:`turn_call_id`,
                :func:`fed_call_id`).
        """
        if call.id and self._owners.get(call.id) is call:
            return call.id
        base = call.id or fallback
        chosen, n = base, 2
        while self._owners.get(chosen, call) is not call:
            chosen, n = f"{base}_{n}", n + 1
        call.id = chosen
        self._owners[chosen] = call
        return chosen

    def reserve(self, call_ids: list[str]) -> None:
        """Mark ``call_ids`` as given out (a session loaded from disk: its calls are not in this
        process, and no new call may take their ids)."""
        for call_id in call_ids:
            self._owners.setdefault(call_id, object())

    def given(self) -> list[str]:
        """Every id given out (or reserved) in the session."""
        return list(self._owners)

    def owner(self, call_id: str) -> object | None:
        """The call that has ``call_id``, or None."""
        return self._owners.get(call_id)
