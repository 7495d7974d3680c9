"""The server's workspace watchers: one per watched tree, shared by every session in it.

A session whose folder lies inside a watched tree shares that tree's watcher
(sessions on ``/ws`` and ``/ws/repo`` use one watcher on ``/ws``): each change
is seen once, and a git run in the inner folder wakes one watcher, not two. A
watcher's reports reach each of its sessions whose folder holds the changed
path, filtered per session folder as before: files the repository ignores
(``.gitignore`` and the other git exclude sources) are never reported, and while
a session's tree-writing git tool runs, only files that differ from git's index
are. Toolwire's own writes are announced to the watcher first
(``Session.write_listener``), so they are never reported back.

When a new session's folder holds watched trees, a watcher on the new folder
takes them over (:meth:`WatchHub.attach`): it starts and is ready, then holds
every batch it gets back while a fence (``WorkspaceWatcher.fence``) is written
through each old watcher and then through the new one. An old watcher delivers
up to its fence and nothing after it (those changes came after the new watcher
began holding); once every fence is seen, the old watchers stop and the held
batches are delivered, so no change is lost, however late a fence comes. Held
batches up to the new watcher's fence may hold changes an old watcher delivered
too (a batch lasts up to the debounce time): a path in both is reported once, as
one watcher's batch reports two changes of a path once; later batches are
delivered whole. An old watcher whose fence has not come within
:data:`FENCE_TIMEOUT` keeps its tree and sessions (the trees stay apart, as when
the new watcher is slow to start). Folders the
watchers skip (``.git``, ``node_modules``, ``build``…, see
``workspace.watch.DEFAULT_IGNORED``) do not nest: a session inside one gets a
watcher of its own. Trees are compared by real path (symlinks resolved).

At most :data:`MAX_WATCHED` trees are watched; the least recently attached one
stops first (its sessions go unwatched). A tree's watcher stops when its last
session detaches (it keeps watching the whole tree while any session in it
remains).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from toolwire.agent.session import Session
from toolwire.tools.gitrun import run_git
from toolwire.workspace.errors import ToolError
from toolwire.workspace.watch import DEFAULT_IGNORED, FileEvent, WorkspaceWatcher

log = logging.getLogger(__name__)

#: Trees watched at once (each tree: one watcher, any number of sessions in it).
MAX_WATCHED = 16
#: Seconds ``session/new`` waits for a new watcher to receive events.
READY_TIMEOUT = 5.0
#: Seconds a handover waits for its fences (an old watcher busy with a backlog of
#: batches sees its fence late; one that has not seen it by then keeps its tree).
FENCE_TIMEOUT = 30.0


class _Ready:
    """The task-status object ``WorkspaceWatcher.run`` reports readiness to (anyio's protocol)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def started(self, value: object = None) -> None:
        self.event.set()


@dataclass(eq=False)
class _Tree:
    """One watcher, the real path it watches, and the sessions it serves.

    ``held`` is None while the watcher delivers; during a handover it is a list
    that collects the new watcher's batches until its ``fence`` is seen, and
    ``held_after`` those after it (before the handover, ``discard`` drops them: the
    old watchers still deliver those changes). An old watcher's ``fence`` ends what
    it delivers; ``reported`` holds the paths it delivered while the new one held.
    """

    root: Path
    watcher: WorkspaceWatcher = field(init=False)
    task: asyncio.Task | None = None
    sessions: list[Session] = field(default_factory=list)
    held: list[FileEvent] | None = None
    held_after: list[FileEvent] = field(default_factory=list)
    fence: anyio.Event | None = None
    reported: set[Path] = field(default_factory=set)
    discard: bool = False
    retired: bool = False
    successor: _Tree | None = None



def _real(session: Session) -> Path:
    return Path(os.path.realpath(session.root))


def _nests(outer: Path, inner: Path) -> bool:
    """True when a watcher of ``outer`` sees the changes under ``inner`` (real paths):
    ``inner`` is ``outer`` or lies under it through no folder the watchers skip."""
    if inner == outer:
        return True
    return outer in inner.parents and not any(part in DEFAULT_IGNORED for part in inner.relative_to(outer).parts)


class WatchHub:
    """The server's watchers, by watched tree (a real path).

    Args:
        on_sessions_changed: Called with each session and the workspace-relative
            paths changed outside Toolwire (the server pushes them to the client).
    """

    def __init__(self, on_sessions_changed: Callable[[Session, list[str]], None] | None = None) -> None:
        self._notify = on_sessions_changed
        self._trees: OrderedDict[Path, _Tree] = OrderedDict()
        self._tree_of: dict[str, _Tree] = {}
        self._lock = asyncio.Lock()
        self._closed = False
        self._stopping: set[asyncio.Task] = set()

    def watched(self) -> dict[Path, list[Session]]:
        """The watched trees (real paths, least recently attached first) and their sessions."""
        return {root: list(tree.sessions) for root, tree in self._trees.items()}

    async def attach(self, session: Session) -> None:
        """Connect ``session`` to the watcher of a tree holding its folder, or start one.

        A new watcher is awaited (at most :data:`READY_TIMEOUT` s) until it receives
        events; when its folder holds watched trees, it takes them and their sessions
        over first (see the module docstring). Then the least recently attached trees
        beyond :data:`MAX_WATCHED` stop.
        """
        async with self._lock:
            if self._closed:
                return
            real = _real(session)
            covering = [tree for tree in self._trees.values() if _nests(tree.root, real)]
            if covering:
                tree = max(covering, key=lambda t: len(t.root.parts))  # the innermost
            else:
                tree = await self._start(real, [t for t in self._trees.values() if _nests(real, t.root)])
                if self._closed:
                    self._stop(tree)
                    return
            self._join(tree, session)
            self._trees.move_to_end(tree.root)
            while len(self._trees) > MAX_WATCHED:
                _, old = self._trees.popitem(last=False)
                log.info("watching more than %d trees: %s is no longer watched", MAX_WATCHED, old.root)
                self._stop(old)
                for other in old.sessions:
                    self._tree_of.pop(other.id, None)
                    other.write_listener = None

    def detach(self, session: Session) -> None:
        """Disconnect a closed session; its tree's watcher stops when no session in it remains."""
        session.write_listener = None
        tree = self._tree_of.pop(session.id, None)
        if tree is None:
            return
        tree.sessions[:] = [other for other in tree.sessions if other is not session]
        if not tree.sessions and not tree.retired and tree.successor is None:
            self._trees.pop(tree.root, None)
            self._stop(tree)

    async def settle(self) -> None:
        """Wait until every watcher told to stop has returned (watchfiles' backend thread
        closes its inotify instance a moment later)."""
        while self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)

    def close(self) -> None:
        """Stop every watcher."""
        self._closed = True
        for tree in self._trees.values():
            self._stop(tree)
        self._trees.clear()
        self._tree_of.clear()

    # ------------------------------------------------------------------ internals
    def _join(self, tree: _Tree, session: Session) -> None:
        tree.sessions.append(session)
        self._tree_of[session.id] = tree
        session.write_listener = lambda path, data, sid=session.id: self._expect(sid, path, data)

    def _expect(self, session_id: str, path: Path, data: bytes | None) -> None:
        """A session's write listener: announce the write to its tree's watcher (and,
        during a handover, to the watcher taking the tree over)."""
        tree = self._tree_of.get(session_id)
        while tree is not None:
            tree.watcher.expect(path, data)
            tree = tree.successor

    async def _start(self, real: Path, inner: list[_Tree]) -> _Tree:
        """Start the watcher of ``real``, wait until it is ready, and hand ``inner`` over to it."""
        tree = _Tree(real)
        tree.watcher = WorkspaceWatcher(real, lambda events: self._deliver(tree, events))  # a coroutine
        tree.discard = bool(inner)
        for old in inner:  # from now on their sessions' writes are announced to both
            old.successor = tree
            tree.watcher.adopt_expectations(old.watcher)
        ready = _Ready()
        tree.task = asyncio.get_running_loop().create_task(self._run(tree.watcher, ready), name=f"watch {real}")
        self._trees[real] = tree
        try:
            await asyncio.wait_for(ready.event.wait(), READY_TIMEOUT)
        except asyncio.TimeoutError:
            log.warning("the watcher of %s is slow to start; changes until then go unseen", real)
        if inner:
            await self._hand_over(tree, inner, ready.event.is_set())
        return tree

    async def _hand_over(self, tree: _Tree, inner: list[_Tree], ready: bool) -> None:
        """Move the sessions of the ``inner`` trees to ``tree`` and stop their watchers."""
        if not ready or tree.task is None or tree.task.done():  # keep the old watchers
            for old in inner:
                old.successor = None
            tree.discard = False
            return
        tree.discard, tree.held = False, []  # from now on every change is in a batch it holds
        for old in inner:  # the old watchers' fences first, then the new one's
            try:
                old.fence = old.watcher.fence()
            except RuntimeError:  # never became ready: nothing of it to wait for
                old.fence = None
        tree.fence = tree.watcher.fence()  # its later batches hold no change an old watcher delivers
        fences = [fence for fence in (tree.fence, *(old.fence for old in inner)) if fence is not None]
        try:
            await asyncio.wait_for(asyncio.gather(*(fence.wait() for fence in fences)), FENCE_TIMEOUT)
        except asyncio.TimeoutError:
            log.warning("handing %s over to the watcher of %s: a fence was not seen in time",
                        ", ".join(str(old.root) for old in inner), tree.root)
        overlap: set[Path] = set()
        for old in inner:
            old.successor = None
            reported, old.reported = old.reported, set()
            if old.fence is not None and not old.fence.is_set():  # it has not delivered all: it stays
                old.fence = None
                log.warning("%s keeps its own watcher (it had not delivered every change)", old.root)
                if not old.sessions and self._trees.get(old.root) is old:
                    del self._trees[old.root]
                    self._stop(old)
                continue
            overlap |= reported
            old.retired = True
            self._stop(old)
            if self._trees.get(old.root) is old:
                del self._trees[old.root]
            for session in old.sessions:
                if self._tree_of.get(session.id) is old:
                    tree.sessions.append(session)
                    self._tree_of[session.id] = tree
            log.info("the watcher of %s now serves %s", tree.root, old.root)
        # A path both reported (the batch around a fence spans up to the debounce time)
        # is reported once, as one watcher's batch would; batches after the new fence
        # hold only changes made after the old fences.
        held = [e for e in tree.held or [] if e.path not in overlap] + tree.held_after
        tree.held, tree.held_after, tree.fence = None, [], None
        if held:
            await self._deliver(tree, held)

    @staticmethod
    async def _run(watcher: WorkspaceWatcher, ready: _Ready) -> None:
        try:
            await watcher.run(task_status=ready)
        except OSError as exc:  # e.g. the inotify watch limit: work on without a watcher
            log.warning("cannot watch %s: %s", watcher.root, exc)

    def _stop(self, tree: _Tree) -> None:
        task = tree.task
        if task is not None and not task.done():
            task.cancel()
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    async def _deliver(self, tree: _Tree, events: list[FileEvent]) -> None:
        """Hand a batch to the tree's sessions, filtered once per session folder."""
        if tree.retired or tree.discard:
            return
        fenced = tree.fence is not None and tree.fence.is_set()  # this batch came after the fence
        if tree.successor is not None and tree.successor.held is not None:  # an old watcher, handing over
            if fenced:
                return  # a change after the fence is in a batch the new watcher holds
            tree.reported.update(event.path for event in events)
        if tree.held is not None:
            (tree.held_after if fenced else tree.held).extend(events)
            return
        by_root: dict[Path, list[Session]] = {}
        for session in tree.sessions:
            by_root.setdefault(_real(session), []).append(session)
        if not by_root:
            return
        await asyncio.gather(*(self._deliver_in(real, sessions, [e.path for e in events])
                               for real, sessions in by_root.items()))

    async def _deliver_in(self, real: Path, sessions: list[Session], changed: list[Path]) -> None:
        """The changes under ``real``, filtered by its repository, to the sessions on it."""
        under = [path for path in dict.fromkeys(changed) if path == real or real in path.parents]
        paths = await _not_ignored(real, under)
        if paths and any(session.is_quiet() for session in sessions):
            paths = await _differing_from_git(real, paths)  # the rest is a git tool's own work
        if not paths:
            return
        log.info("external changes in %s: %s", real, ", ".join(str(p) for p in paths[:10]))
        for session in sessions:
            own = paths if session.root == real else [session.root / p.relative_to(real) for p in paths]
            relative = session.note_external_changes(own)
            if self._notify is not None and relative:
                self._notify(session, relative)


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
