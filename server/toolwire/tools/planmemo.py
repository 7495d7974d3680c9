"""A session's last few edit plans, so approving and running an edit plans it once.

The scheduler plans an edit three times: for the approval (the diff the user
sees), again right before it runs (to refuse it as ``stale`` when the change
would differ from what was approved) and in the tool itself. On a 10 MB file a
plan reads, decodes, searches and splices the whole text. The memo keeps the
result of the first plan; the later ones take it back only after checking that
the file still reads exactly as it did (the edit tools do the check:
:func:`toolwire.tools.target.still_reads`), so a reused plan is the plan a new
one would make.

Memory stays bounded: at most :data:`MAX_ENTRIES` plans and about
:data:`MAX_CHARS` characters of text between them (the newest entry is always
kept); an entry is dropped once its edit is applied.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Final

__all__ = ["PlanMemo", "MAX_ENTRIES", "MAX_CHARS"]

#: Plans kept at most.
MAX_ENTRIES: Final = 4
#: Characters (text before, text after, bytes read) the kept plans may hold together: 64 Mi.
MAX_CHARS: Final = 64 * 1024 * 1024


class PlanMemo:
    """Plans by key (the tool and its arguments), newest last.

    Values are opaque here; ``size`` is what an entry holds, in characters or
    bytes, for the memory bound. Not thread-safe (the event loop's thread only).
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()

    def get(self, key: Hashable) -> Any | None:
        """The plan kept under ``key``, or None."""
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def put(self, key: Hashable, value: Any, size: int) -> None:
        """Keep ``value`` under ``key`` (replacing an older one), then drop the oldest
        entries beyond :data:`MAX_ENTRIES` or :data:`MAX_CHARS`."""
        self._entries.pop(key, None)
        self._entries[key] = (value, size)
        total = sum(size for _, size in self._entries.values())
        while len(self._entries) > 1 and (len(self._entries) > MAX_ENTRIES or total > MAX_CHARS):
            _, (_, dropped) = self._entries.popitem(last=False)
            total -= dropped

    def drop(self, key: Hashable) -> None:
        """Forget the plan under ``key`` (its edit was applied, or it is no longer valid)."""
        self._entries.pop(key, None)

    def clear(self) -> None:
        """Forget every plan."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
