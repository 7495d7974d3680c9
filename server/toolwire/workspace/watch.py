"""Watch the workspace for changes made outside the server.

:class:`WorkspaceWatcher` runs ``watchfiles.awatch`` on the workspace folder
(short debounce), drops ignored folders (``.git``, ``node_modules``, ``.venv``,
``__pycache__``, ``dist``, ``build``…) and the atomic-write temporary files,
and hands each batch of remaining changes to a callback.

The server's own writes are not reported back: the tools announce every write
through :meth:`WorkspaceWatcher.expect` (it fits ``ToolContext.write_listener``)
with the new content, and an event on that path is dropped while the file
still holds exactly that content (compared by SHA-256), or is still absent
after an announced deletion.

A folder that appears (created, or moved in) is walked when its event comes, and
every file and folder in it is reported as added: the backend watches a new folder
only once it has seen it appear, so what was written into it before then (a
``mkdir`` then a write, ``git checkout`` creating a folder with its files, a folder
moved in whole) sends no event of its own. A file seen both ways may be reported
twice, in two batches; no change is lost. One write may come in two batches too: a
file opened (created) and written more than ``step_ms`` later is reported added, then
modified (clients join such reports: the panel's reducer).

Readiness: ``await tg.start(watcher.run)`` returns once the watcher provably
sees events: it writes a probe file in a private temporary folder it also
watches, and waits until that probe's event comes back.

A file name that is not UTF-8: watchfiles' backend cannot hand such a path over
and fails with the whole batch it came in. The watcher then logs a warning and
watches again (changes of that batch, and any made while it starts again, are not
reported); after :data:`MAX_RESTARTS` failures within :data:`RESTART_WINDOW`
seconds it stops with ``OSError`` (the server works on without a watcher).

Fences: :meth:`WorkspaceWatcher.fence` writes another probe there and returns an
event set once the batch holding it has been handed to the callback (and the
callback returned). The kernel queues one watcher's events in order, so every
change made before the fence was written has then been delivered. Two watchers
hand a tree over without losing a change this way (``agent/watching.py``).
"""

from __future__ import annotations

import inspect
import logging
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import anyio
from watchfiles import Change, awatch
from watchfiles._rust_notify import WatchfilesRustInternalError  # public in the package's stub (__all__)

from toolwire.workspace.digest import sha256_hex
from toolwire.workspace.fs import MAX_EDIT_BYTES, is_temp_name

__all__ = ["FileEvent", "WorkspaceWatcher", "DEFAULT_IGNORED"]

DEFAULT_IGNORED: Final = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", "dist", "build", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox", ".hg", ".svn", ".idea"}
)  # fmt: skip
"""Folder names whose contents are never reported, at any depth."""

_KINDS: Final = {Change.added: "added", Change.modified: "modified", Change.deleted: "deleted"}
log = logging.getLogger(__name__)

#: A watcher that fails more than this many times within :data:`RESTART_WINDOW` seconds stops.
MAX_RESTARTS: Final = 5
RESTART_WINDOW: Final = 60.0
_PROBE_EVERY: Final = 0.05  # seconds between probe writes until the first one is seen


@dataclass(frozen=True, slots=True)
class FileEvent:
    """One external change.

    Attributes:
        kind: ``"added"``, ``"modified"`` or ``"deleted"``.
        path: Absolute path (under the resolved workspace root).
    """

    kind: Literal["added", "modified", "deleted"]
    path: Path


Callback = Callable[[list[FileEvent]], Awaitable[None] | None]


def _digest(path: Path) -> str | None:
    """SHA-256 of the file's bytes; None when missing; ``"?"`` when unreadable or larger
    than the tools write (:data:`~toolwire.workspace.fs.MAX_EDIT_BYTES`)."""
    try:
        if os.path.getsize(path) > MAX_EDIT_BYTES:
            return "?"
        with open(path, "rb") as fh:
            return sha256_hex(fh.read())
    except FileNotFoundError:
        return None
    except OSError:
        return "?"


class WorkspaceWatcher:
    """Reports external file changes in a workspace folder.

    Args:
        root: The workspace folder.
        on_change: Called with each non-empty batch of :class:`FileEvent`
            (sorted by path); may be a plain function or a coroutine function.
        ignored: Folder names to ignore at any depth.
        debounce_ms: Longest time changes are grouped before a batch (ms).
        step_ms: Quiet time after a change that ends a batch (ms).
    """

    def __init__(
        self,
        root: Path,
        on_change: Callback,
        *,
        ignored: Iterable[str] = DEFAULT_IGNORED,
        debounce_ms: int = 200,
        step_ms: int = 20,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self._on_change = on_change
        self._ignored = frozenset(ignored)
        self._debounce = debounce_ms
        self._step = step_ms
        self._expected: dict[str, str | None] = {}
        self._probe_root: str | None = None
        self._fences: dict[str, anyio.Event] = {}
        self._fence_count = 0

    def expect(self, path: Path, data: bytes | None) -> None:
        """Announce the server's own write (``data``) or deletion (None) of ``path``.

        Call it before the write; it has the shape of ``ToolContext.write_listener``.
        """
        key = os.path.realpath(path) if data is not None else os.path.abspath(path)
        self._expected[key] = sha256_hex(data) if data is not None else None

    def adopt_expectations(self, other: "WorkspaceWatcher") -> None:
        """Take over ``other``'s announced writes not yet seen (a watcher taking its tree over)."""
        for key, digest in other._expected.items():
            self._expected.setdefault(key, digest)

    def fence(self) -> anyio.Event:
        """Write a fence probe; the event is set once its batch has been delivered.

        Every change made before this call has been handed to the callback by then
        (the callback awaited), or was the watcher's own write.

        Raises:
            RuntimeError: when the watcher is not running (or not ready yet).
        """
        if self._probe_root is None:
            raise RuntimeError(f"the watcher of {self.root} is not running")
        self._fence_count += 1
        path = os.path.join(self._probe_root, f"fence-{self._fence_count}")
        done = self._fences[path] = anyio.Event()
        with open(path, "w") as fh:
            fh.write("fence")
        return done

    def is_ignored(self, path: str) -> bool:
        """True for paths in ignored folders and for atomic-write temporary files."""
        p = Path(path)
        if is_temp_name(p.name):
            return True
        try:
            parts = p.relative_to(self.root).parts
        except ValueError:
            return False
        return any(part in self._ignored for part in parts)

    def _own(self, path: str) -> bool:
        if path not in self._expected:
            return False
        if _digest(Path(path)) == self._expected[path]:
            return True
        del self._expected[path]  # changed again since our write: report it, stop expecting
        return False

    def _in_new_folders(self, events: list[FileEvent]) -> list[FileEvent]:
        """Everything inside the folders ``events`` add, as ``added`` events not in ``events``
        (ignored folders and temporary files left out, links not followed)."""
        seen = {event.path for event in events}
        covered: set[Path] = set()
        found: list[FileEvent] = []
        for event in events:
            if event.kind != "added" or event.path in covered or not os.path.isdir(event.path) \
                    or os.path.islink(event.path):
                continue
            for folder, dirnames, filenames in os.walk(event.path):
                dirnames[:] = [name for name in dirnames if name not in self._ignored]
                covered.update(Path(folder, name) for name in dirnames)
                for name in (*dirnames, *filenames):
                    path = Path(folder, name)
                    if path not in seen and not self.is_ignored(str(path)):
                        seen.add(path)
                        found.append(FileEvent("added", path))
        return found

    async def _deliver(self, events: list[FileEvent]) -> None:
        result = self._on_change(events)
        if inspect.isawaitable(result):
            await result

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch until cancelled. Use ``await task_group.start(watcher.run)``.

        Raises:
            OSError: when the folder cannot be watched.
        """
        with tempfile.TemporaryDirectory(prefix="toolwire-watch-") as probe_dir:
            probe_root = os.path.realpath(probe_dir)
            probe = Path(probe_root) / "ready"
            ready = anyio.Event()

            def keep(change: Change, path: str) -> bool:
                return path.startswith(probe_root) or not self.is_ignored(path)

            async def poke() -> None:
                n = 0
                while not ready.is_set():
                    probe.write_text(str(n))
                    n += 1
                    with anyio.move_on_after(_PROBE_EVERY):
                        await ready.wait()

            restarts: list[float] = []
            try:
                while True:
                    try:
                        await self._watch(probe_root, keep, ready, poke, task_status)
                        break  # the change stream ended (the folder went away)
                    except* WatchfilesRustInternalError as group:
                        # watchfiles' backend gives up on a path it cannot decode (a file name that
                        # is not UTF-8) and drops that batch: watch again, and say so.
                        now = time.monotonic()
                        restarts = [t for t in restarts if now - t < RESTART_WINDOW] + [now]
                        reason = str(group.exceptions[0])
                        if len(restarts) > MAX_RESTARTS:
                            raise OSError(f"the watcher failed {len(restarts)} times within {RESTART_WINDOW:g} s "
                                          f"({reason}); not watching {self.root} any more") from None
                        log.warning("watching %s again: the watcher dropped a batch of changes (%s)", self.root, reason)
                        for fence in self._fences.values():
                            fence.set()  # its batch may be the one dropped: do not wait for it
                        self._fences.clear()
            finally:
                self._probe_root = None
                for fence in self._fences.values():
                    fence.set()  # the watcher ended: nothing more will be delivered
                self._fences.clear()

    async def _watch(self, probe_root: str, keep: Callable[[Change, str], bool], ready: anyio.Event,
                     poke: Callable[[], Awaitable[None]], task_status: anyio.abc.TaskStatus[None]) -> None:
        """One ``awatch`` over the folder and the probe folder, delivering batches until it ends."""
        watcher = awatch(self.root, probe_root, watch_filter=keep, debounce=self._debounce, step=self._step)
        async with aclosing(watcher) as changes, anyio.create_task_group() as tg:
            tg.start_soon(poke)
            async for batch in changes:
                if not ready.is_set() and any(p.startswith(probe_root) for _, p in batch):
                    self._probe_root = probe_root
                    ready.set()
                    task_status.started()
                events = sorted(
                    (FileEvent(_KINDS[c], Path(p)) for c, p in batch if not p.startswith(probe_root)),
                    key=lambda e: (str(e.path), e.kind),
                )
                if any(e.kind == "added" for e in events):
                    inside = await anyio.to_thread.run_sync(self._in_new_folders, events, abandon_on_cancel=True)
                    events = sorted(events + inside, key=lambda e: (str(e.path), e.kind))
                events = [e for e in events if not self._own(str(e.path))]
                if events and ready.is_set():
                    await self._deliver(events)
                for _, p in batch:
                    fence = self._fences.pop(p, None)
                    if fence is not None:
                        fence.set()
