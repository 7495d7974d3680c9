"""A client's copy of the tool calls, rebuilt from ``tool_call`` updates (protocol.md, "ToolCall updates").

This is the reference reducer for the update form of
:mod:`toolwire.lsp.call_wire`, used by the headless client (``toolwire run``)
and the tests; the VS Code panel implements the same rules in TypeScript.

Rules, per call:

* an update whose ``rev`` is not greater than the last one applied is stale and
  dropped (except a ``generating`` update for a call already past ``generating``:
  a new call that reuses the id, which starts afresh);
* ``argumentsDelta {offset, text}`` appends ``text`` when ``offset`` equals the
  length of the text so far (in code points); when it is smaller the piece
  overlaps what is known and only its part past the end is appended; when it is
  greater a piece was missed: the call is marked as needing a snapshot
  (:attr:`CallMirror.gaps`) and its text is left as it was;
* ``argumentsText`` replaces the text; ``partialArguments`` and ``arguments``
  replace theirs when present (absent means unchanged);
* every other field present replaces the known one;
* a full snapshot (``toolwire/session/snapshot``) is applied with :meth:`CallMirror.reset`.
"""

from __future__ import annotations

from typing import Any

#: Fields a client starts from before any update said otherwise.
_DEFAULTS = {"argumentsText": "", "partialArguments": None, "arguments": None}


class _Call:
    __slots__ = ("fields", "pieces", "length", "stale")

    def __init__(self) -> None:
        self.fields: dict[str, Any] = dict(_DEFAULTS)
        self.pieces: list[str] = []
        self.length = 0
        self.stale = False

    def set_text(self, text: str) -> None:
        self.pieces = [text] if text else []
        self.length = len(text)
        self.stale = False

    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces[:] = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""


class CallMirror:
    """Full ToolCall states of one session, rebuilt from its ``tool_call`` updates.

    Calls are keyed by ``(streamId, toolCallId)``; a call first seen without an
    id is keyed by its ``index`` until the id arrives.

    Attributes:
        gaps: Keys of calls that missed a piece of argument text (ask
            ``toolwire/session/snapshot`` and :meth:`reset` them).
    """

    def __init__(self) -> None:
        self._calls: dict[tuple[Any, str], _Call] = {}
        self.gaps: set[tuple[Any, str]] = set()

    def _key(self, call: dict[str, Any], stream_id: str | None) -> tuple[Any, str]:
        cid = call.get("toolCallId") or ""
        by_index = (stream_id, f"#{call.get('index')}")
        if not cid:
            return by_index
        key = (stream_id, cid)
        if key not in self._calls and by_index in self._calls:
            self._calls[key] = self._calls.pop(by_index)  # its id arrived
            if by_index in self.gaps:
                self.gaps.discard(by_index)
                self.gaps.add(key)
        return key

    def apply(self, call: dict[str, Any], stream_id: str | None = None) -> dict[str, Any] | None:
        """Apply one update's ``toolCall``; returns the call's full state, or None when stale."""
        key = self._key(call, stream_id)
        state = self._calls.get(key)
        rev = call.get("rev", 0)
        if state is not None and rev <= state.fields.get("rev", -1):
            if not (call.get("status") == "generating" and state.fields.get("status") != "generating"):
                return None
            state = None  # a new call reusing a finished call's id
        if state is None:
            state = self._calls[key] = _Call()
            self.gaps.discard(key)
        for name, value in call.items():
            if name == "argumentsDelta":
                continue
            if name == "argumentsText":
                state.set_text(value)
                self.gaps.discard(key)
            else:
                state.fields[name] = value
        delta = call.get("argumentsDelta")
        if delta is not None and "argumentsText" not in call:
            offset, text = delta["offset"], delta["text"]
            if offset == state.length:
                state.pieces.append(text)
                state.length += len(text)
            elif offset < state.length:
                extra = text[state.length - offset:]
                if extra:
                    state.pieces.append(extra)
                    state.length += len(extra)
            else:
                state.stale = True
                self.gaps.add(key)
        return self.snapshot(key)

    def reset(self, call: dict[str, Any], stream_id: str | None = None) -> dict[str, Any]:
        """Take a full snapshot as the call's state (after a gap, or when joining late)."""
        key = self._key(call, stream_id)
        state = self._calls[key] = _Call()
        state.fields.update(call)
        state.set_text(call.get("argumentsText", ""))
        self.gaps.discard(key)
        return self.snapshot(key)

    def snapshot(self, key: tuple[Any, str]) -> dict[str, Any]:
        """The full state of one call (the shape of ``toolwire/session/snapshot``'s calls)."""
        state = self._calls[key]
        out = dict(state.fields)
        out["argumentsText"] = state.text()
        return out

    def calls(self) -> dict[tuple[Any, str], dict[str, Any]]:
        """Every call's full state, keyed as above."""
        return {key: self.snapshot(key) for key in self._calls}


__all__ = ["CallMirror"]
