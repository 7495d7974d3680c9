"""One workspace watcher per workspace folder, owned by the server.

Sessions on the same folder share a watcher. Files the repository ignores
(``.gitignore`` and the other git exclude sources) are never reported. Its reports of files changed outside
Toolwire reach every such session (:meth:`Session.note_external_changes`), and
Toolwire's own writes are announced to it first (``Session.write_listener``), so
they are never reported back. At most :data:`MAX_WATCHED` folders are watched;
the least recently attached one stops first.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from toolwire.agent.session import Session
from toolwire.tools.gitrun import run_git
from toolwire.workspace.errors import ToolError
from toolwire.workspace.watch import FileEvent, WorkspaceWatcher

log = logging.getLogger(__name__)

#: Folders watched at once.
MAX_WATCHED = 16
#: Seconds ``session/new`` waits for a new watcher to receive events.
READY_TIMEOUT = 5.0


class _Ready:
    """The task-status object ``WorkspaceWatcher.run`` reports readiness to (anyio's protocol)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def started(self, value: object = None) -> None:
        self.event.set()


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

    async def attach(self, session: Session) -> None:
        """Start (or share) the watcher of ``session.root``, connect the session to it,
        and wait (at most :data:`READY_TIMEOUT` s) until it receives events."""
        root = session.root
        entry = self._watchers.get(root)
        if entry is None:
            watcher = WorkspaceWatcher(root, lambda events, root=root: self._deliver(root, events))  # async
            ready = _Ready()
            task = asyncio.get_running_loop().create_task(self._run(watcher, ready), name=f"watch {root}")
            entry = self._watchers[root] = (watcher, task)
            try:
                await asyncio.wait_for(ready.event.wait(), READY_TIMEOUT)
            except asyncio.TimeoutError:
                log.warning("the watcher of %s is slow to start; changes until then go unseen", root)
            while len(self._watchers) > MAX_WATCHED:
                old_root, (_, old_task) = self._watchers.popitem(last=False)
                old_task.cancel()
                for old in self._sessions.pop(old_root, []):
                    old.write_listener = None
        self._watchers.move_to_end(root)
        session.write_listener = entry[0].expect
        self._sessions.setdefault(root, []).append(session)

    def detach(self, session: Session) -> None:
        """Disconnect a closed session; its folder's watcher stops when no session uses it."""
        root = session.root
        sessions = self._sessions.get(root, [])
        sessions[:] = [other for other in sessions if other is not session]
        session.write_listener = None
        if not sessions:
            self._sessions.pop(root, None)
            entry = self._watchers.pop(root, None)
            if entry is not None:
                entry[1].cancel()

    async def _deliver(self, root: Path, events: list[FileEvent]) -> None:
        paths = await _not_ignored(root, [event.path for event in events])
        if paths and any(session.is_quiet() for session in self._sessions.get(root, [])):
            paths = await _differing_from_git(root, paths)  # the rest is a git tool's own work
        if not paths:
            return
        log.info("external changes in %s: %s", root, ", ".join(str(p) for p in paths[:10]))
        for session in self._sessions.get(root, []):
            relative = session.note_external_changes(paths)
            if self._notify is not None and relative:
                self._notify(session, relative)

    @staticmethod
    async def _run(watcher: WorkspaceWatcher, ready: "_Ready") -> None:
        try:
            await watcher.run(task_status=ready)
        except OSError as exc:  # e.g. the inotify watch limit: work on without a watcher
            log.warning("cannot watch %s: %s", watcher.root, exc)

    def close(self) -> None:
        """Stop every watcher."""
        for _, task in self._watchers.values():
            task.cancel()
        self._watchers.clear()
        self._sessions.clear()


_ESCAPES = {ord("a"): 7, ord("b"): 8, ord("t"): 9, ord("n"): 10, ord("v"): 11, ord("f"): 12, ord("r"): 13}


def _unquote(name: bytes) -> bytes:
    """A path as git prints it (``core.quotePath``: C-quoted in double quotes when it
    holds control characters, ``"`` or ``\\``) back to its bytes."""
    if not (len(name) >= 2 and name[:1] == b'"' and name[-1:] == b'"'):
        return name
    body, out, i = name[1:-1], bytearray(), 0
    while i < len(body):
        ch = body[i]
        if ch != 0x5C or i + 1 == len(body):  # not a backslash
            out.append(ch)
            i += 1
        elif body[i + 1 : i + 4].isdigit() and len(body[i + 1 : i + 4]) == 3:  # \NNN octal byte
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(_ESCAPES.get(body[i + 1], body[i + 1]))
            i += 2
    return bytes(out)


async def _not_ignored(root: Path, paths: list[Path]) -> list[Path]:
    """``paths`` minus those the repository's ignore rules (``.gitignore``,
    ``.git/info/exclude``, ``core.excludesFile``) exclude; all of them outside a
    repository. Asks ``git check-ignore`` (read-only: no hooks or filters run)."""
    if not paths:
        return []
    rel = []
    for path in paths:
        try:
            rel.append(path.relative_to(root).as_posix())
        except ValueError:
            continue
    if not rel:
        return []
    try:
        out = await run_git(root, ["check-ignore", "--", *rel], read_only=True, timeout=10, check=False,
                            literal_pathspecs=False, filters=())  # check-ignore runs no filter driver
    except ToolError as exc:  # git missing or too slow: report everything rather than nothing
        log.warning("cannot check ignore rules in %s: %s", root, exc.message)
        return paths
    if out.returncode not in (0, 1):  # 128: not a repository
        return paths
    # one name per LF-ended line (not str.splitlines: U+2028 & co. are part of a name);
    # names with control characters, quotes or backslashes come C-quoted
    ignored = {root / os.fsdecode(_unquote(name)) for name in out.stdout.split(b"\n") if name}
    return [path for path in paths if path not in ignored]


async def _differing_from_git(root: Path, paths: list[Path]) -> list[Path]:
    """Of ``paths``, those git sees as changed against the index, or untracked.

    While a git tool of Toolwire's rewrites the tree (restore, branch switch), the
    files it writes match the index afterwards; a file that differs, or is
    untracked, was changed by someone else. Outside a repository: all of them.
    """
    rel = {}
    for path in paths:
        try:
            rel[path.relative_to(root).as_posix()] = path
        except ValueError:
            continue
    try:
        out = await run_git(root, ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *rel],
                            read_only=True, timeout=10, check=False, literal_pathspecs=True)
    except ToolError:
        return paths
    if out.returncode != 0:
        return paths
    changed = set()
    entries = iter(out.text.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        if entry[0] in "RC":
            next(entries, None)  # a rename or copy is followed by its source path
        if entry[1] != " " or entry[:2] == "??":
            changed.add(entry[3:])
    return [path for name, path in rel.items() if name in changed]
