"""Sessions on nested folders share one watcher (``agent/watching.py``).

Real watchfiles, real files, real git. Every wait is on a report (a later marker
file proves nothing else is on its way: a watcher delivers in order). The count
of the process's inotify instances says how many watchers run.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import Counter
from pathlib import Path

import pytest

from gitrepos import git, init_repo, isolated_git  # noqa: F401 - fixture
from toolwire.agent.permissions import PermissionPolicy
from toolwire.agent.session import Session
from toolwire.llm.replay import ReplayModel
from toolwire.agent.watching import WatchHub
from toolwire.settings import Settings
from toolwire.tools import default_registry
from toolwire.tools.base import validate_arguments

pytestmark = pytest.mark.usefixtures("isolated_git")
REG = default_registry()
WAIT = 20.0  # seconds before a missing report fails the test


def inotify_instances() -> int:
    """The process's open inotify instances (one per running watcher)."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            pass
    return count


async def instances_after_stop(expected: int) -> int:
    """The inotify instances once ``expected`` are left (at most 10 s): a stopped
    watcher's backend thread closes its instance a moment after the watcher returns,
    and tells no one, so this polls."""
    async with asyncio.timeout(10):
        while inotify_instances() != expected:
            await asyncio.sleep(0.01)
    return inotify_instances()


class Reports:
    """What the hub reported, per session, and a way to wait for a report."""

    def __init__(self) -> None:
        self.seen: dict[str, list[str]] = {}
        self._changed = asyncio.Condition()

    def __call__(self, session: Session, paths: list[str]) -> None:
        self.seen.setdefault(session.id, []).extend(paths)
        asyncio.get_running_loop().create_task(self._wake())

    async def _wake(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait(self, session: Session, path: str) -> None:
        async with asyncio.timeout(WAIT):
            async with self._changed:
                await self._changed.wait_for(lambda: path in self.seen.get(session.id, []))

    def count(self, session: Session) -> Counter[str]:
        return Counter(self.seen.get(session.id, []))


def make(root: Path) -> Session:
    return Session(root=root, model=ReplayModel(None), registry=default_registry(),
                   policy=PermissionPolicy({}), settings=Settings())


async def create(session: Session, path: str, content: str, ctx=None) -> None:
    tool = REG.get("create_file")
    assert tool is not None
    result = await tool.run(validate_arguments(tool, {"path": path, "content": content}), ctx or session.tool_context())
    assert result.ok, result.content


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """``ws`` (a plain folder) holding ``ws/repo`` (a git repository ignoring ``*.log``)."""
    root = tmp_path / "ws"
    repo = init_repo(root / "repo")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore logs")
    return root.resolve()


class RecordingHub(WatchHub):
    """The server's hub, with what it reported and the inotify instances open before it."""

    def __init__(self) -> None:
        self.reports = Reports()
        self.base = inotify_instances()
        super().__init__(self.reports)


@pytest.fixture
async def hub():
    hub = RecordingHub()
    yield hub
    hub.close()
    await hub.settle()
    assert await instances_after_stop(hub.base) == hub.base


async def test_nested_sessions_share_one_watcher_and_each_gets_each_change_once(ws: Path, hub: RecordingHub) -> None:
    reports = hub.reports
    outer, inner = make(ws), make(ws / "repo")
    await hub.attach(outer)
    await hub.attach(inner)
    assert list(hub.watched()) == [ws] and inotify_instances() == hub.base + 1

    (ws / "repo" / "theirs.txt").write_text("external\n")
    (ws / "top.txt").write_text("external\n")
    (ws / "repo" / "debug.log").write_text("ignored by the repository\n")
    await create(inner, "ours.txt", "inner's own write\n")
    await create(outer, "repo/ours2.txt", "outer's own write\n")
    await create(outer, "mine.txt", "outer's own write\n")
    (ws / "repo" / "marker.txt").write_text("last\n")
    await reports.wait(inner, "marker.txt")
    await reports.wait(outer, "repo/marker.txt")

    assert reports.count(inner) == Counter({"theirs.txt": 1, "marker.txt": 1})
    # the outer folder is no repository: the inner one's ignore rules are not the outer session's
    assert reports.count(outer) == Counter({"repo/theirs.txt": 1, "top.txt": 1, "repo/debug.log": 1,
                                            "repo/marker.txt": 1})


async def test_detach_inner_first_then_outer(ws: Path, hub: RecordingHub) -> None:
    reports = hub.reports
    outer, inner = make(ws), make(ws / "repo")
    await hub.attach(outer)
    await hub.attach(inner)
    hub.detach(inner)
    assert inner.write_listener is None and hub.watched() == {ws: [outer]}
    (ws / "repo" / "after.txt").write_text("x\n")
    await reports.wait(outer, "repo/after.txt")
    assert "after.txt" not in reports.count(inner)
    await create(outer, "repo/own.txt", "own\n")
    (ws / "marker.txt").write_text("last\n")
    await reports.wait(outer, "marker.txt")
    assert "repo/own.txt" not in reports.count(outer)
    hub.detach(outer)
    await hub.settle()
    assert hub.watched() == {} and await instances_after_stop(hub.base) == hub.base


async def test_detach_outer_first_then_inner(ws: Path, hub: RecordingHub) -> None:
    reports = hub.reports
    outer, inner = make(ws), make(ws / "repo")
    await hub.attach(outer)
    await hub.attach(inner)
    hub.detach(outer)
    await hub.settle()
    assert hub.watched() == {ws: [inner]} and await instances_after_stop(hub.base + 1) == hub.base + 1
    (ws / "top.txt").write_text("nobody's\n")
    (ws / "repo" / "after.txt").write_text("x\n")
    await reports.wait(inner, "after.txt")
    await create(inner, "own.txt", "own\n")
    (ws / "repo" / "marker.txt").write_text("last\n")
    await reports.wait(inner, "marker.txt")
    assert reports.count(inner) == Counter({"after.txt": 1, "marker.txt": 1})
    assert "top.txt" not in reports.count(outer)
    hub.detach(inner)
    await hub.settle()
    assert hub.watched() == {} and await instances_after_stop(hub.base) == hub.base


async def test_an_outer_session_takes_the_inner_watchers_over_without_losing_a_change(ws: Path, hub: RecordingHub) -> None:
    reports = hub.reports
    (ws / "other").mkdir()
    inner, sibling, outer = make(ws / "repo"), make(ws / "other"), make(ws)
    await hub.attach(inner)
    await hub.attach(sibling)
    assert inotify_instances() == hub.base + 2
    ctx = inner.tool_context()  # taken before the handover, used after it

    burst = ws / "repo" / "burst"
    burst.mkdir()
    done, written = threading.Event(), []

    def write_during_the_handover() -> None:
        while not done.is_set() and len(written) < 2000:
            name = f"f{len(written):04d}.txt"
            (burst / name).write_text("x\n")
            written.append(f"burst/{name}")
            done.wait(0.002)  # pace the writes; ends as soon as the handover is over

    writer = asyncio.get_running_loop().run_in_executor(None, write_during_the_handover)
    await reports.wait(inner, "burst/f0000.txt")  # the writes have begun
    await hub.attach(outer)
    done.set()
    await writer
    await hub.settle()
    assert hub.watched() == {ws: [inner, sibling, outer]} and await instances_after_stop(hub.base + 1) == hub.base + 1

    await create(inner, "own-after.txt", "own\n", ctx)
    (ws / "repo" / "marker.txt").write_text("last\n")
    (ws / "other" / "marker.txt").write_text("last\n")
    await reports.wait(inner, "marker.txt")
    await reports.wait(sibling, "marker.txt")
    await reports.wait(outer, "repo/marker.txt")
    got = reports.count(inner)
    missing = [path for path in written if path not in got]
    assert not missing, f"{len(missing)} of {len(written)} changes made during the handover were lost"
    assert "own-after.txt" not in got and got["marker.txt"] == 1
    assert reports.count(sibling) == Counter({"marker.txt": 1})


async def test_an_inner_watcher_whose_fence_comes_late_keeps_its_tree_and_loses_no_change(
        ws: Path, hub: RecordingHub, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A fence needs a batch of its watcher (20 ms at least): with no time to wait for
    one, the inner watchers are not stopped with changes undelivered; they keep their trees."""
    from toolwire.agent import watching

    monkeypatch.setattr(watching, "FENCE_TIMEOUT", 0)
    reports = hub.reports
    (ws / "other").mkdir()
    inner, sibling, outer = make(ws / "repo"), make(ws / "other"), make(ws)
    await hub.attach(inner)
    await hub.attach(sibling)
    burst = ws / "repo" / "burst"
    burst.mkdir()
    done, written = threading.Event(), []

    def write_during_the_handover() -> None:
        while not done.is_set() and len(written) < 2000:
            name = f"f{len(written):04d}.txt"
            (burst / name).write_text("x\n")
            written.append(f"burst/{name}")
            done.wait(0.002)

    writer = asyncio.get_running_loop().run_in_executor(None, write_during_the_handover)
    await reports.wait(inner, "burst/f0000.txt")
    await hub.attach(outer)
    done.set()
    await writer
    assert hub.watched() == {ws / "repo": [inner], ws / "other": [sibling], ws: [outer]}
    assert inotify_instances() == hub.base + 3
    assert "a fence was not seen in time" in caplog.text and "keeps its own watcher" in caplog.text

    (ws / "repo" / "marker.txt").write_text("last\n")
    (ws / "other" / "marker.txt").write_text("last\n")
    await reports.wait(inner, "marker.txt")
    await reports.wait(sibling, "marker.txt")
    await reports.wait(outer, "repo/marker.txt")
    got = reports.count(inner)
    missing = [path for path in written if path not in got]
    assert not missing, f"{len(missing)} of {len(written)} changes made during the handover were lost"
    assert got["marker.txt"] == 1 and reports.count(sibling) == Counter({"marker.txt": 1})


async def test_symlinked_and_skipped_folders(ws: Path, tmp_path: Path, hub: RecordingHub) -> None:
    reports = hub.reports
    link = tmp_path / "link"
    link.symlink_to(ws, target_is_directory=True)
    built = ws / "build" / "pkg"  # inside a folder the watchers skip
    built.mkdir(parents=True)
    outer, through_link, in_build = make(ws), make(link / "repo"), make(built)
    await hub.attach(outer)
    await hub.attach(through_link)
    assert list(hub.watched()) == [ws]
    await hub.attach(in_build)
    assert set(hub.watched()) == {ws, built} and inotify_instances() == hub.base + 2

    (ws / "repo" / "a.txt").write_text("x\n")
    (built / "b.txt").write_text("x\n")
    await create(through_link, "own.txt", "own\n")
    (ws / "repo" / "marker.txt").write_text("last\n")
    await reports.wait(through_link, "marker.txt")
    await reports.wait(in_build, "b.txt")
    await reports.wait(outer, "repo/marker.txt")
    assert reports.count(through_link) == Counter({"a.txt": 1, "marker.txt": 1})
    assert "build/pkg/b.txt" not in reports.count(outer)
    assert through_link.external_changes == {"a.txt", "marker.txt"}


async def test_a_quiet_session_checks_against_its_own_repository(ws: Path, hub: RecordingHub) -> None:
    """While the inner session's tree-writing git tool runs, its report is checked against
    its repository's index; the outer session (no tool running) is told as usual."""
    reports = hub.reports
    repo = ws / "repo"
    outer, inner = make(ws), make(repo)
    await hub.attach(outer)
    await hub.attach(inner)
    (repo / "a.txt").write_text("local change\n")
    await reports.wait(inner, "a.txt")
    inner.tree_write_started()
    tool = REG.get("git_restore")
    assert tool is not None
    result = await tool.run(validate_arguments(tool, {"paths": ["a.txt"]}), inner.tool_context())
    assert result.ok and (repo / "a.txt").read_text() == "one\n"
    (repo / "user.txt").write_text("typed meanwhile\n")
    await reports.wait(inner, "user.txt")
    await reports.wait(outer, "repo/a.txt")
    await reports.wait(outer, "repo/user.txt")
    inner.tree_write_finished()
    assert reports.count(inner) == Counter({"a.txt": 1, "user.txt": 1})  # the restore is not reported
    assert reports.count(outer)["repo/a.txt"] == 2  # the local change, then the restore


async def test_max_watched_counts_trees_not_sessions(ws: Path, hub: RecordingHub, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolwire.agent import watching

    monkeypatch.setattr(watching, "MAX_WATCHED", 2)
    for name in ("b", "c"):
        (ws / name).mkdir()
    a, a_inner, b, c = make(ws / "repo"), make(ws / "repo" / "sub"), make(ws / "b"), make(ws / "c")
    (ws / "repo" / "sub").mkdir()
    await hub.attach(a)
    await hub.attach(b)
    await hub.attach(a_inner)  # shares a's watcher, and makes it the most recently attached
    assert list(hub.watched()) == [ws / "b", ws / "repo"]
    await hub.attach(c)  # b's watcher stops first
    await hub.settle()
    assert list(hub.watched()) == [ws / "repo", ws / "c"] and b.write_listener is None
    assert await instances_after_stop(hub.base + 2) == hub.base + 2
    (ws / "b" / "x.txt").write_text("x\n")
    (ws / "repo" / "sub" / "y.txt").write_text("y\n")
    await hub.reports.wait(a_inner, "y.txt")
    await hub.reports.wait(a, "sub/y.txt")
    assert hub.reports.count(b) == Counter()
