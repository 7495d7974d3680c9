"""Per-path locks: no overlap on one path, call order, no deadlock, cancellation."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from toolwire.workspace.locks import PathLocks


async def test_same_path_never_overlaps_and_keeps_call_order(tmp_path: Path) -> None:
    locks = PathLocks(tmp_path)
    order: list[str] = []
    release = anyio.Event()
    entered_first = anyio.Event()

    async def first() -> None:
        async with locks.hold(["a.py"]):
            order.append("first+")
            entered_first.set()
            await release.wait()
            order.append("first-")

    async def later(name: str, paths: list[str]) -> None:
        async with locks.hold(paths):
            order.append(name)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await entered_first.wait()
            tg.start_soon(later, "second", ["a.py", "b.py"])
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(later, "third", ["./sub/../a.py"])
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(later, "other", ["c.py"])  # unrelated path: runs at once
            await anyio.wait_all_tasks_blocked()
            assert order == ["first+", "other"]
            release.set()
    assert order == ["first+", "other", "first-", "second", "third"]


async def test_symlink_and_absolute_spelling_share_a_lock(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text("")
    os.symlink(tmp_path / "real.py", tmp_path / "alias.py")
    locks = PathLocks(tmp_path)
    assert locks.key("alias.py") == locks.key(str(tmp_path / "real.py"))


async def test_opposite_orders_do_not_deadlock(tmp_path: Path) -> None:
    locks = PathLocks(tmp_path)
    done: list[str] = []

    async def worker(name: str, paths: list[str]) -> None:
        for _ in range(20):
            async with locks.hold(paths):
                await anyio.lowlevel.checkpoint()
        done.append(name)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(worker, "ab", ["a", "b"])
            tg.start_soon(worker, "ba", ["b", "a"])
            tg.start_soon(worker, "b", ["b"])
    assert sorted(done) == ["ab", "b", "ba"]


async def test_cancelled_waiter_leaves_no_trace(tmp_path: Path) -> None:
    locks = PathLocks(tmp_path)
    holding = anyio.Event()
    release = anyio.Event()

    async def holder() -> None:
        async with locks.hold(["a"]):
            holding.set()
            await release.wait()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(holder)
            await holding.wait()
            with anyio.CancelScope() as scope:
                scope.cancel()
                async with locks.hold(["a"]):
                    pytest.fail("must not be admitted")
            release.set()
        async with locks.hold(["a"]) as keys:
            assert keys == [str(tmp_path / "a")]
    assert locks.held() == []


async def test_exclusive_waits_for_everyone_and_blocks_later(tmp_path: Path) -> None:
    locks = PathLocks(tmp_path)
    order: list[str] = []
    release = anyio.Event()
    started = anyio.Event()

    async def edit() -> None:
        async with locks.hold(["a"]):
            started.set()
            await release.wait()
            order.append("edit")

    async def barrier() -> None:
        async with locks.hold([], exclusive=True):
            order.append("barrier")

    async def after() -> None:
        async with locks.hold(["z"]):
            order.append("after")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(edit)
            await started.wait()
            tg.start_soon(barrier)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(after)
            await anyio.wait_all_tasks_blocked()
            assert order == []
            release.set()
    assert order == ["edit", "barrier", "after"]


async def test_a_folder_lock_conflicts_with_the_files_below_it(tmp_path):
    import anyio

    from toolwire.workspace.locks import PathLocks, overlaps

    (tmp_path / "src").mkdir()
    assert overlaps([str(tmp_path / "src")], [str(tmp_path / "src" / "a.py")])
    assert overlaps([str(tmp_path)], [str(tmp_path / "x")])
    assert not overlaps([str(tmp_path / "src")], [str(tmp_path / "src2" / "a.py")])  # components, not prefixes
    locks = PathLocks(tmp_path)
    order: list[str] = []
    first_in = anyio.Event()
    release = anyio.Event()

    async def folder() -> None:
        async with locks.hold(["src"]):
            order.append("folder in")
            first_in.set()
            await release.wait()
            order.append("folder out")

    async def file() -> None:
        async with locks.hold(["src/a.py"]):
            order.append("file in")

    async with anyio.create_task_group() as tg:
        tg.start_soon(folder)
        await first_in.wait()
        tg.start_soon(file)
        await anyio.lowlevel.checkpoint()
        release.set()
    assert order == ["folder in", "folder out", "file in"]
