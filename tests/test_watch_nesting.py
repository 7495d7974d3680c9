"""Sessions on nested folders share one watcher (``lsp/watching.py``).

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
from toolwire.lsp.watching import WatchHub
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


@pytest.fixture
async def hub():
    reports = Reports()
    hub = WatchHub(reports)
    hub.reports = reports  # type: ignore[attr-defined]
    before = inotify_instances()
    hub.base = before  # type: ignore[attr-defined]
    yield hub
    hub.close()
    await hub.settle()
    assert inotify_instances() == before


async def test_nested_sessions_share_one_watcher_and_each_gets_each_change_once(ws: Path, hub: WatchHub) -> None:
    reports: Reports = hub.reports  # type: ignore[attr-defined]
    outer, inner = make(ws), make(ws / "repo")
    await hub.attach(outer)
    await hub.attach(inner)
    assert list(hub.watched()) == [ws] and inotify_instances() == hub.base + 1  # type: ignore[attr-defined]

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


async def test_detach_inner_first_then_outer(ws: Path, hub: WatchHub) -> None:
    reports: Reports = hub.reports  # type: ignore[attr-defined]
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
    assert hub.watched() == {} and inotify_instances() == hub.base  # type: ignore[attr-defined]


async def test_detach_outer_first_then_inner(ws: Path, hub: WatchHub) -> None:
    reports: Reports = hub.reports  # type: ignore[attr-defined]
    outer, inner = make(ws), make(ws / "repo")
    await hub.attach(outer)
    await hub.attach(inner)
    hub.detach(outer)
    await hub.settle()
    assert hub.watched() == {ws: [inner]} and inotify_instances() == hub.base + 1  # type: ignore[attr-defined]
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
    assert hub.watched() == {} and inotify_instances() == hub.base  # type: ignore[attr-defined]


async def test_an_outer_session_takes_the_inner_watchers_over_without_losing_a_change(ws: Path, hub: WatchHub) -> None:
    reports: Reports = hub.reports  # type: ignore[attr-defined]
    (ws / "other").mkdir()
    inner, sibling, outer = make(ws / "repo"), make(ws / "other"), make(ws)
    await hub.attach(inner)
    await hub.attach(sibling)
    assert inotify_instances() == hub.base + 2  # type: ignore[attr-defined]
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
    assert hub.watched() == {ws: [inner, sibling, outer]} and inotify_instances() == hub.base + 1  # type: ignore[attr-defined]

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


async def test_symlinked_and_skipped_folders(ws: Path, tmp_path: Path, hub: WatchHub) -> None:
    reports: Reports = hub.reports  # type: ignore[attr-defined]
    link = tmp_path / "link"
    link.symlink_to(ws, target_is_directory=True)
    built = ws / "build" / "pkg"  # inside a folder the watchers skip
    built.mkdir(parents=True)
    outer, through_link, in_build = make(ws), make(link / "repo"), make(built)
    await hub.attach(outer)
    await hub.attach(through_link)
    assert list(hub.watched()) == [ws]
    await hub.attach(in_build)
    assert set(hub.watched()) == {ws, built} and inotify_instances() == hub.base + 2  # type: ignore[attr-defined]

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
