"""The server reaps its git processes on the event loop, not with a thread per process
(issue 12, goal 5: asyncio's default watcher on Python 3.11 starts one thread per
child, 2–4 ms per git run on a loaded machine). Real git runs; the threads started
while they run are recorded."""

from __future__ import annotations

import asyncio
import sys
import threading

import pytest

from toolwire.lsp.boot import use_pidfd_child_watcher
from toolwire.tools.gitrun import run_git

py311 = pytest.mark.skipif(sys.version_info >= (3, 12), reason="Python 3.12+ reaps through pidfds by itself")


def threads_started_by_git_runs(tmp_path, monkeypatch, *, install: bool) -> list[str]:
    started: list[str] = []
    original = threading.Thread.start

    def start(self: threading.Thread) -> None:
        started.append(self.name)
        original(self)

    async def go() -> None:
        if install:
            assert use_pidfd_child_watcher()
        monkeypatch.setattr(threading.Thread, "start", start)
        try:
            for _ in range(3):
                out = await run_git(tmp_path, ["--version"], read_only=True, timeout=30, filters=())
                assert out.returncode == 0 and out.text.startswith("git version")
        finally:
            monkeypatch.setattr(threading.Thread, "start", original)

    try:
        asyncio.run(go())
    finally:
        asyncio.set_child_watcher(None)  # the next loop gets asyncio's default again
    return started


@py311
def test_the_server_loop_reaps_git_without_a_thread_per_process(tmp_path, monkeypatch):
    assert threads_started_by_git_runs(tmp_path, monkeypatch, install=True) == []


@py311
def test_asyncio_default_starts_a_thread_per_process(tmp_path, monkeypatch):
    """The control: what the server no longer does."""
    started = threads_started_by_git_runs(tmp_path, monkeypatch, install=False)
    assert len([name for name in started if "waitpid" in name]) == 3, started


def test_after_initialize_takes_the_loaded_modules_out_of_the_collectors_passes():
    """What the server loads after ``initialize`` is frozen (``gc.freeze``): full
    collections no longer walk it (bench/server.py, fed batch 256)."""
    import gc

    from toolwire.lsp.boot import ToolwireServer
    from toolwire.lsp.main import load_handlers

    server = ToolwireServer(load_handlers)
    before = gc.get_freeze_count()

    async def go() -> None:
        server.after_initialize()

    try:
        asyncio.run(go())
        assert gc.get_freeze_count() > before
        assert server.host.settings.model == "replay" and server.host.watchers is not None
    finally:
        gc.unfreeze()
        asyncio.set_child_watcher(None)
