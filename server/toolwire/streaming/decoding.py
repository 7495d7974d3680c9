"""Payloads of one response → canonical events, whatever the format and however malformed.

Every consumer of a stream (a server-run turn, ``toolwire merge``, client-fed
streams) needs the same three things, done once here:

* the format: given, or detected from the first payload that tells it; payloads
  before that are held and replayed once it is known;
* a fresh normalizer for the response;
* robustness: a payload that is not an object, or that makes the normalizer fail
  (a provider sent a field of the wrong type, say), is skipped and recorded in
  :attr:`PayloadDecoder.anomalies`, never raised: one bad chunk must not end the
  turn or lose the other calls. Error events the provider sends are still errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolwire.streaming.delta import StreamEvent
from toolwire.streaming.formats.base import Normalizer
from toolwire.streaming.formats.registry import detect_format, make_normalizer
from toolwire.streaming.framing import Frame

Wrapper = Callable[[Normalizer], Normalizer]


class BrokenStream(Exception):
    """The byte framing itself broke (e.g. an AWS event stream CRC mismatch):
    nothing after it can be trusted."""


class PayloadDecoder:
    """Normalizes one response's payloads (see the module docstring).

    Args:
        fmt: A format name, or None to detect it.
        wrap: Optional wrapper around the normalizer (text tool-calling mode).

    Raises:
        UnknownFormat: ``fmt`` is not a known format name (at construction).
    """

    def __init__(self, fmt: str | None = None, wrap: Wrapper | None = None) -> None:
        self._wrap = wrap
        self.normalizer: Normalizer | None = None
        self.held: list[tuple[Any, str | None]] = []
        self.anomalies: list[str] = []
        if fmt:
            self.adopt(fmt)

    @property
    def format(self) -> str | None:
        """The format name, once given or detected."""
        return self.normalizer.format if self.normalizer is not None else None

    @property
    def explicit_ends(self) -> bool:
        """True when the format closes each call (see :class:`StreamMerger`)."""
        return self.normalizer.explicit_ends if self.normalizer is not None else False

    def adopt(self, fmt: str) -> list[StreamEvent]:
        """Fix the format (if not fixed yet) and normalize the held payloads.

        Raises:
            UnknownFormat: ``fmt`` is not a known format name.
        """
        if self.normalizer is not None:
            return []
        normalizer = make_normalizer(fmt)
        self.normalizer = self._wrap(normalizer) if self._wrap else normalizer
        held, self.held = self.held, []
        out: list[StreamEvent] = []
        for payload, event in held:
            out.extend(self._normalize(payload, event))
        return out

    def feed_frame(self, frame: Frame) -> list[StreamEvent]:
        """Events of one decoded frame: none for ``[DONE]``; an undecodable payload
        is skipped with an anomaly.

        Raises:
            BrokenStream: the frame says the framing broke (``fatal``).
        """
        if frame.done:
            return []
        if frame.fatal:
            raise BrokenStream(frame.error or "the stream broke")
        if frame.error is not None:
            self.anomalies.append(f"skipped a payload: {frame.error}")
            return []
        return self.feed(frame.payload, frame.event)

    def fast_path(self) -> Callable[[Any], tuple[Any, str] | None] | None:
        """The normalizer's shortcut for a bare argument fragment, once the format is known.

        ``fragment(payload)`` returns ``(key, text)`` when :meth:`feed` would return
        exactly ``[ArgumentsDelta(key, text)]``, else None (then call :meth:`feed`);
        it never raises. None when the format is not known yet, the normalizer has no
        shortcut, or it is wrapped (text tool-calling mode).
        """
        return getattr(self.normalizer, "fragment", None) if self.normalizer is not None else None

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        """Events of one payload (of the held ones too, when this payload reveals the format).

        A payload that is not a JSON object (a stray string, number or list) is
        skipped with an anomaly: every provider's payloads are objects.
        """
        if not isinstance(payload, dict):
            self.anomalies.append(f"skipped a payload that is not a JSON object: {repr(payload)[:120]}")
            return []
        if self.normalizer is None:
            self.held.append((payload, event))
            found = detect_format(payload, event)
            return self.adopt(found) if found is not None else []
        return self._normalize(payload, event)

    def close(self) -> list[StreamEvent]:
        """Events owed at the end of the stream (none while the format is unknown)."""
        if self.normalizer is None:
            return []
        try:
            return self.normalizer.close()
        except Exception as exc:  # a normalizer bug must not end the stream
            self.anomalies.append(f"closing the {self.format} stream failed: {type(exc).__name__}: {exc}")
            return []

    def _normalize(self, payload: Any, event: str | None) -> list[StreamEvent]:
        assert self.normalizer is not None
        try:
            return self.normalizer.feed(payload, event)
        except Exception as exc:  # malformed provider payload: skip it, keep the stream
            self.anomalies.append(
                f"skipped a malformed {self.format} payload ({type(exc).__name__}: {exc}): {repr(payload)[:120]}"
            )
            return []
