"""Workspace watcher with real file writes; waits on events, never on sleeps."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from toolwire.tools import default_registry
from toolwire.tools.base import ToolContext, validate_arguments
from toolwire.workspace.watch import FileEvent, WorkspaceWatcher

REG = default_registry()


@asynccontextmanager
async def watching(root: Path) -> AsyncIterator[tuple[WorkspaceWatcher, MemoryObjectReceiveStream[list[FileEvent]]]]:
    send, receive = anyio.create_memory_object_stream[list[FileEvent]](100)
    watcher = WorkspaceWatcher(root, send.send, debounce_ms=100, step_ms=10)
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(10):
            await tg.start(watcher.run)
        yield watcher, receive
        tg.cancel_scope.cancel()


async def collect_until(receive: MemoryObjectReceiveStream[list[FileEvent]], path: Path) -> list[FileEvent]:
    seen: list[FileEvent] = []
    with anyio.fail_after(10):
        while not any(e.path == path for e in seen):
            seen += await receive.receive()
    return seen


async def test_external_write_is_reported(tmp_path: Path) -> None:
    async with watching(tmp_path) as (_, receive):
        (tmp_path / "a.txt").write_text("hello")
        events = await collect_until(receive, tmp_path / "a.txt")
    assert {e.kind for e in events if e.path == tmp_path / "a.txt"} <= {"added", "modified"}


async def test_own_writes_and_deletes_are_not_reported(tmp_path: Path) -> None:
    (tmp_path / "gone.txt").write_text("bye")
    async with watching(tmp_path) as (watcher, receive):
        ctx = ToolContext(tmp_path, write_listener=watcher.expect)
        for name, arguments in (
            ("create_file", {"path": "own.txt", "content": "mine\n"}),
            ("edit_file", {"path": "own.txt", "old_string": "mine", "new_string": "ours"}),
            ("delete_file", {"path": "gone.txt"}),
        ):
            tool = REG.get(name)
            assert tool is not None
            await tool.run(validate_arguments(tool, arguments), ctx)
        (tmp_path / "external.txt").write_text("theirs")
        events = await collect_until(receive, tmp_path / "external.txt")
    reported = {e.path.name for e in events}
    assert reported == {"external.txt"}, events


async def test_external_change_after_own_write_is_reported(tmp_path: Path) -> None:
    async with watching(tmp_path) as (watcher, receive):
        ctx = ToolContext(tmp_path, write_listener=watcher.expect)
        tool = REG.get("create_file")
        assert tool is not None
        await tool.run(validate_arguments(tool, {"path": "f.txt", "content": "server"}), ctx)
        (tmp_path / "f.txt").write_text("user edit")
        events = await collect_until(receive, tmp_path / "f.txt")
    assert any(e.path.name == "f.txt" for e in events)


async def test_ignored_folders_are_not_reported(tmp_path: Path) -> None:
    for folder in ("node_modules", ".git", "__pycache__", "build"):
        (tmp_path / folder).mkdir()
    async with watching(tmp_path) as (_, receive):
        for folder in ("node_modules", ".git", "__pycache__", "build"):
            (tmp_path / folder / "x.js").write_text("x")
        (tmp_path / "src.py").write_text("x")
        events = await collect_until(receive, tmp_path / "src.py")
    assert {e.path.name for e in events} == {"src.py"}, events


async def test_own_write_of_a_file_over_2_mib_is_not_reported(tmp_path: Path) -> None:
    """The watcher knows its own writes up to the edit limit (16 MiB), not only up to 2 MiB."""
    big = tmp_path / "big.txt"
    big.write_text("".join(f"line {n}\n" for n in range(400_000)))  # ~4.5 MB
    async with watching(tmp_path) as (watcher, receive):
        ctx = ToolContext(tmp_path, write_listener=watcher.expect)
        tool = REG.get("edit_file")
        assert tool is not None
        result = await tool.run(validate_arguments(tool, {"path": "big.txt", "old_string": "line 200000\n",
                                                          "new_string": "LINE 200000\n"}), ctx)
        assert result.ok, result.content
        (tmp_path / "external.txt").write_text("theirs")
        events = await collect_until(receive, tmp_path / "external.txt")
    assert {e.path.name for e in events} == {"external.txt"}, events


async def test_a_file_name_that_is_not_utf8_does_not_stop_the_watcher(tmp_path: Path) -> None:
    """watchfiles cannot decode such a name and drops its batch; the watcher watches again
    and later changes are reported."""
    restarted = anyio.Event()

    class Restarts(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "dropped a batch of changes" in record.getMessage():
                restarted.set()

    handler = Restarts()
    logging.getLogger("toolwire.workspace.watch").addHandler(handler)
    try:
        async with watching(tmp_path) as (_, receive):
            with open(os.path.join(os.fsencode(tmp_path), b"caf\xe9.txt"), "wb") as fh:  # Latin-1, not UTF-8
                fh.write(b"x")
            with anyio.fail_after(10):
                await restarted.wait()
            # The new watcher reports once it is up: write until a change comes back.
            with anyio.fail_after(20):
                while True:
                    (tmp_path / "after.txt").write_text("again")
                    with anyio.move_on_after(0.5):
                        events = await receive.receive()
                        if any(e.path == tmp_path / "after.txt" for e in events):
                            break
    finally:
        logging.getLogger("toolwire.workspace.watch").removeHandler(handler)


async def test_everything_in_a_folder_that_appears_is_reported(tmp_path: Path) -> None:
    """The backend watches a new folder only once it has seen it appear: files written
    into it before then, and the contents of a folder moved in whole, have no event of
    their own. The watcher walks each new folder, so none of them is lost."""
    root, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    root.mkdir()
    for n in range(5):  # a tree made outside the workspace, then moved in
        (elsewhere / "moved" / f"d{n}").mkdir(parents=True)
        (elsewhere / "moved" / f"d{n}" / "f.txt").write_text("x")
    (elsewhere / "moved" / "node_modules").mkdir()
    (elsewhere / "moved" / "node_modules" / "dep.js").write_text("x")
    expected = {root / "moved" / f"d{n}" / "f.txt" for n in range(5)}
    async with watching(root) as (_, receive):
        for n in range(20):  # a folder, and a file in it at once (mkdir -p, git checkout, unzip)
            (root / f"new{n}" / "deep").mkdir(parents=True)
            (root / f"new{n}" / "deep" / "file.txt").write_text("x")
            expected.add(root / f"new{n}" / "deep" / "file.txt")
        (elsewhere / "moved").rename(root / "moved")
        seen: set[Path] = set()
        with anyio.fail_after(20):
            while not expected <= seen:
                seen |= {e.path for e in await receive.receive()}
    assert expected <= seen
    assert not [path for path in seen if "node_modules" in path.parts], seen
