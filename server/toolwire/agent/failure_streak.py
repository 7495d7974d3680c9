"""The rule that stops a turn whose model keeps making the same failing call."""

from __future__ import annotations

import difflib
import json

from toolwire.streaming.state import Status, ToolCallState

#: The same tool failing this many times in a row with similar arguments stops the turn.
FAILURE_STREAK = 3
#: Arguments at least this similar (difflib ratio of their sorted JSON) count as "similar".
SIMILAR_ARGUMENTS = 0.9


def similar_arguments(a: str, b: str) -> bool:
    """True when two argument JSON texts are equal or nearly so (:data:`SIMILAR_ARGUMENTS`)."""
    return a == b or difflib.SequenceMatcher(None, a, b).ratio() >= SIMILAR_ARGUMENTS


class FailureStreak:
    """The failures of a turn in call order, since the last call that did not fail."""

    def __init__(self) -> None:
        self._failures: list[tuple[str, str]] = []

    def check(self, calls: list[ToolCallState]) -> str | None:
        """Add a response's calls; a message when one tool failed :data:`FAILURE_STREAK`
        times in a row with similar arguments, else None."""
        for call in calls:
            if call.status is not Status.ERRORED:
                self._failures.clear()
                continue
            signature = json.dumps(call.arguments, sort_keys=True) if call.arguments is not None else call.arguments_text
            if self._failures and (self._failures[-1][0] != call.name or not similar_arguments(self._failures[-1][1], signature)):
                self._failures.clear()
            self._failures.append((call.name, signature))
            if len(self._failures) >= FAILURE_STREAK:
                code = call.error.code if call.error else "errored"
                return f"{call.name} failed {len(self._failures)} times in a row with similar arguments ({code}); stopping"
        return None
