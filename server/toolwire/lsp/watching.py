"""One workspace watcher per workspace folder, owned by the server.

Sessions on the same folder share a watcher. Its reports of files changed outside
Toolwire reach every such session (:meth:`Session.note_external_changes`), and
Toolwire's own writes are announced to it first (``Session.write_listener``), so
they are never reported back. At most :data:`MAX_WATCHED` folders are watched;
the least recently attached one stops first.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from toolwire.agent.session import Session
from toolwire.workspace.watch import FileEvent, WorkspaceWatcher

log = logging.getLogger(__name__)

#: Folders watched at once.
MAX_WATCHED = 16


class WatchHub:
    """The server's watchers, by workspace folder.

    Args:
        on_sessions_changed: Called with each session and the workspace-relative
            paths changed outside Toolwire (the server pushes them to the client).
    """

    def __init__(self, on_sessions_changed: Callable[[Session, list[str]], None] | None = None) -> None:
        self._notify = on_sessions_changed
        self._watchers: OrderedDict[Path, tuple[WorkspaceWatcher, asyncio.Task]] = OrderedDict()
        self._sessions: dict[Path, list[Session]] = {}

    def attach(self, session: Session) -> None:
        """Start (or share) the watcher of ``session.root`` and connect the session to it."""
        root = session.root
        entry = self._watchers.get(root)
        if entry is None:
            watcher = WorkspaceWatcher(root, lambda events, root=root: self._deliver(root, events))
            task = asyncio.get_running_loop().create_task(self._run(watcher), name=f"watch {root}")
            entry = self._watchers[root] = (watcher, task)
            while len(self._watchers) > MAX_WATCHED:
                old_root, (_, old_task) = self._watchers.popitem(last=False)
                old_task.cancel()
                for old in self._sessions.pop(old_root, []):
                    old.write_listener = None
        self._watchers.move_to_end(root)
        session.write_listener = entry[0].expect
        self._sessions.setdefault(root, []).append(session)

    def _deliver(self, root: Path, events: list[FileEvent]) -> None:
        paths = [event.path for event in events]
        log.info("external changes in %s: %s", root, ", ".join(str(p) for p in paths[:10]))
        for session in self._sessions.get(root, []):
            relative = session.note_external_changes(paths)
            if self._notify is not None and relative:
                self._notify(session, relative)

    @staticmethod
    async def _run(watcher: WorkspaceWatcher) -> None:
        try:
            await watcher.run()
        except OSError as exc:  # e.g. the inotify watch limit: work on without a watcher
            log.warning("cannot watch %s: %s", watcher.root, exc)

    def close(self) -> None:
        """Stop every watcher."""
        for _, task in self._watchers.values():
            task.cancel()
        self._watchers.clear()
        self._sessions.clear()
