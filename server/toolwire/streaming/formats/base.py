"""The normalizer protocol shared by every provider format."""

from __future__ import annotations

from typing import Any, Protocol

from toolwire.streaming.delta import StreamEvent


class Normalizer(Protocol):
    """Turns one provider's stream payloads into canonical events.

    A normalizer is stateful for one response (some formats need to remember
    the previous call, or generate stable ids) and is pure: no I/O.

    Attributes:
        format: The format name (see :data:`toolwire.streaming.formats.registry.FORMATS`).
        explicit_ends: True when the format closes each call explicitly, so a
            call still open at the end of the stream was cut off.
    """

    format: str
    explicit_ends: bool

    def feed(self, payload: Any, event: str | None = None) -> list[StreamEvent]:
        """Normalize one payload.

        Args:
            payload: One parsed chunk or event (usually a dict).
            event: The SSE ``event:`` name it came with, if any.

        Returns:
            Zero or more canonical events, in order. Unknown or malformed parts
            of a payload are skipped, never raised on; a payload that is not an
            object at all yields a :class:`~toolwire.streaming.delta.StreamError`.
        """
        ...

    def close(self) -> list[StreamEvent]:
        """Events owed at the end of the stream (e.g. calls never closed). Usually empty."""
        ...
