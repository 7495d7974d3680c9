"""Per-path locks for tool calls: calls on one file never overlap, and go in call order.

``hold(paths)`` takes every path of a call at once. Waiters form one FIFO
queue: a holder is admitted when no earlier, still-live holder shares a path
with it (or is exclusive). Because the oldest live holder is never blocked,
this cannot deadlock, and two calls on the same path run in the order their
``hold`` began, even when one of them also takes other paths. Keys are the
resolved, sorted paths, so ``a.py`` and ``./sub/../a.py`` or a symlink to it
share one lock; a folder's key conflicts with every path below it (compared by
path components), so ``git restore .`` and an edit of ``src/a.py`` never overlap.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio

__all__ = ["PathLocks", "overlaps"]


def _contains(folder: str, path: str) -> bool:
    """True when ``path`` is ``folder`` or lies below it, by path components."""
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def overlaps(a: Iterable[str], b: Iterable[str]) -> bool:
    """True when a key of ``a`` and a key of ``b`` are the same path or one holds the other.

    Args:
        a: Lock keys (see :meth:`PathLocks.key`).
        b: Lock keys.
    """
    b = list(b)
    return any(_contains(x, y) or _contains(y, x) for x in a for y in b)


@dataclass(eq=False, slots=True)
class _Holder:
    keys: frozenset[str]
    exclusive: bool
    admitted: anyio.Event = field(default_factory=anyio.Event)


class PathLocks:
    """Locks keyed by resolved path, acquired together and granted in call order.

    Args:
        root: Folder that relative paths are resolved against (optional;
            absolute paths need none).
    """

    def __init__(self, root: Path | None = None) -> None:
        self._root = root
        self._live: list[_Holder] = []

    def key(self, path: str | os.PathLike[str]) -> str:
        """The lock key of ``path``: absolute, symlinks resolved, normalized."""
        p = Path(path)
        if not p.is_absolute() and self._root is not None:
            p = self._root / p
        try:
            return os.path.realpath(p)
        except (OSError, ValueError):
            return os.path.normpath(os.path.abspath(p))

    def _blocked(self, holder: _Holder) -> bool:
        for other in self._live:
            if other is holder:
                return False
            if other.exclusive or holder.exclusive or overlaps(other.keys, holder.keys):
                return True
        return False

    def _admit_ready(self) -> None:
        for holder in self._live:
            if not holder.admitted.is_set() and not self._blocked(holder):
                holder.admitted.set()

    @asynccontextmanager
    async def hold(self, paths: Iterable[str | os.PathLike[str]], *, exclusive: bool = False) -> AsyncIterator[list[str]]:
        """Hold the locks of every path in ``paths`` for the ``async with`` body.

        Args:
            paths: Absolute paths, or relative to the root given at
                construction. An empty list takes no lock (unless exclusive).
            exclusive: Wait for every earlier holder and keep every later one
                out (for barrier calls that affect the whole tree).

        Yields:
            The sorted lock keys held.

        Cancellation while waiting leaves no trace; locks are released on any
        exit, synchronously (no await in the cleanup).
        """
        keys = sorted({self.key(p) for p in paths})
        if not keys and not exclusive:
            await anyio.lowlevel.checkpoint()
            yield []
            return
        holder = _Holder(frozenset(keys), exclusive)
        self._live.append(holder)
        try:
            if self._blocked(holder):
                await holder.admitted.wait()
            else:
                holder.admitted.set()
                await anyio.lowlevel.checkpoint()
            yield keys
        finally:
            self._live.remove(holder)
            self._admit_ready()

    def held(self) -> list[list[str]]:
        """Keys of the admitted holders, oldest first (for tests and diagnostics)."""
        return [sorted(h.keys) for h in self._live if h.admitted.is_set()]
