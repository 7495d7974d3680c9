"""The list engine (toolwire.tools.engine) on real trees, real git repositories and real
symlinks, under each engine: rg, git and the walk give the same files; a listing stopped or
cancelled kills its process at once."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

from toolwire.tools import engine as eng
from toolwire.tools.engine import ENGINE_ENV, Outcome, find_engine, find_rg, ignored_among, list_batches, stream_batches
from toolwire.workspace.globs import compile_glob

from conftest import write_files
from engines import engine, git, isolated, write_global_excludes  # noqa: F401 (fixtures)

def make_repo(root: Path, home: Path) -> Path:
    """A repository with ignored files of each source, hidden files, a symlink out and one in."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    files = {
        "a.py": "", "src/app.py": "", "src/pkg/mod.py": "", ".github/workflows/ci.yml": "",
        ".gitignore": "build/\n*.log\n!keep.log\n", "keep.log": "", "x.log": "", "build/out.py": "",
        "src/gen/cache.tmp": "", "notes/private.txt": "", "src/.hidden.py": "",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".git" / "info" / "exclude").write_text("notes/\n")
    write_global_excludes(home)
    outside = root.parent / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("")
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "link.py").symlink_to("a.py")
    git(root, "add", "a.py", "src/app.py", ".gitignore")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "one")
    return root


async def listing(base: Path, *, ignored: bool = False, pattern: str | None = None) -> list[str]:
    out: list[str] = []
    glob = compile_glob(pattern) if pattern else None
    async with aclosing(list_batches(find_engine(), base, ignored=ignored, glob=glob)) as batches:
        async for batch in batches:
            out += batch
    # git also names symlinks (list_files shows regular files only, checking what it shows)
    return sorted(p for p in out if not (base / p).is_symlink())


REPO_FILES = [".github/workflows/ci.yml", ".gitignore", "a.py", "keep.log", "src/.hidden.py", "src/app.py",
              "src/pkg/mod.py"]


async def test_same_files_under_every_engine(engine: str, tmp_path: Path, isolated: Path) -> None:
    root = make_repo(tmp_path / "ws", isolated)
    assert await listing(root) == REPO_FILES
    everything = await listing(root, ignored=True)
    assert everything == sorted(REPO_FILES + ["build/out.py", "notes/private.txt", "src/gen/cache.tmp", "x.log"])
    assert not any(p.startswith(".git/") or "/.git/" in p for p in everything)
    assert await listing(root / "src") == [".hidden.py", "app.py", "pkg/mod.py"]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.py", ["a.py"]),
        ("**/*.py", ["a.py", "src/.hidden.py", "src/app.py", "src/pkg/mod.py"]),
        ("src/*.py", ["src/.hidden.py", "src/app.py"]),
        ("src/**", ["src/.hidden.py", "src/app.py", "src/pkg/mod.py"]),
        ("**/*.{yml,log}", [".github/workflows/ci.yml", "keep.log"]),
        ("*.log", ["keep.log"]),  # x.log is ignored: a glob never brings it back (rg's --glob would)
        ("build/**", []),
        ("**/*.tmp", []),
    ],
)
async def test_globs_on_disk_under_every_engine(engine: str, tmp_path: Path, isolated: Path, pattern: str,
                                                expected: list[str]) -> None:
    root = make_repo(tmp_path / "ws", isolated)
    assert await listing(root, pattern=pattern) == expected


async def test_ignored_true_with_a_glob(engine: str, tmp_path: Path, isolated: Path) -> None:
    root = make_repo(tmp_path / "ws", isolated)
    assert await listing(root, ignored=True, pattern="**/*.{log,tmp}") == ["keep.log", "src/gen/cache.tmp", "x.log"]
    assert await listing(root, ignored=True, pattern="build/*") == ["build/out.py"]


async def test_outside_a_repository_nothing_is_ignored(engine: str, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write_files(root, {".gitignore": "*.log\n", "x.log": "", "sub/b.txt": ""})
    assert await listing(root) == [".gitignore", "sub/b.txt", "x.log"]


async def test_ignored_among(engine: str, tmp_path: Path, isolated: Path) -> None:
    root = make_repo(tmp_path / "ws", isolated)
    names = ["build", "notes", "x.log", "keep.log", "src", "src/gen/cache.tmp", "a.py"]
    assert await ignored_among(find_engine(), root, names, {"build", "notes", "src"}) == {
        "build", "notes", "x.log", "src/gen/cache.tmp"}
    assert await ignored_among(find_engine(), tmp_path, ["x.log"], set()) == set()  # not a repository


def test_engine_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = Path(sys.executable).parent / "rg"
    assert own.is_file(), "the test install carries rg (ripgrep==14.1.0) in the venv"
    monkeypatch.delenv(ENGINE_ENV, raising=False)
    assert find_engine() == eng.Engine("rg", str(own), find_engine().git)
    # no rg of our own and none on PATH: the editor's one
    monkeypatch.setattr(eng.sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setattr(eng.sys, "prefix", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    client = tmp_path / "vscode" / "rg"
    client.parent.mkdir()
    client.write_bytes(own.read_bytes())
    client.chmod(0o755)
    assert find_rg(str(client)) == str(client)
    assert find_rg(str(tmp_path / "missing")) is None
    assert find_engine().kind == "walk"  # no rg, no git on this PATH
    monkeypatch.setenv(ENGINE_ENV, "git")
    assert find_engine(str(client)).kind == "walk"  # git wanted but missing: the next one


def process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


async def test_stopping_early_kills_the_process(tmp_path: Path) -> None:
    outcome = Outcome()
    argv = [sys.executable, "-c", "import sys\nwhile True: sys.stdout.write('x' * 100 + '\\n')"]
    async with aclosing(stream_batches(argv, tmp_path, sep="\n", outcome=outcome)) as batches:
        async for batch in batches:
            assert batch[0] == "x" * 100
            break
    assert outcome.pid is not None and process_gone(outcome.pid)
    assert outcome.returncode is None  # killed, did not end by itself


def big_tree(root: Path, files: int = 6000) -> Path:
    """Enough long names that the listing cannot fit in a pipe while the reader waits."""
    for i in range(files):
        folder = root / f"folder-{i % 60:03d}-{'x' * 80}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file-{i:05d}-{'y' * 100}.txt").write_bytes(b"")
    return root


async def test_cancel_kills_the_engine_process(engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = big_tree(tmp_path / "big")
    if engine == "git":
        git(root, "init", "-q")
    started: list[Outcome] = []
    real = eng.stream_batches

    def spy(*args, **kwargs):
        kwargs.setdefault("outcome", Outcome())
        started.append(kwargs["outcome"])
        return real(*args, **kwargs)

    monkeypatch.setattr(eng, "stream_batches", spy)
    first = anyio.Event()
    seen = 0

    async def lister() -> None:
        nonlocal seen
        async with aclosing(list_batches(find_engine(), root, ignored=False, glob=None)) as batches:
            async for batch in batches:
                seen += len(batch)
                first.set()
                await anyio.sleep_forever()  # a slow consumer: the engine is still writing

    async with anyio.create_task_group() as tg:
        tg.start_soon(lister)
        with anyio.fail_after(60):
            await first.wait()
        tg.cancel_scope.cancel()
    assert 0 < seen < 6000
    if engine == "walk":
        assert started == []  # a worker thread, stopped by its flag
    else:
        (outcome,) = started
        assert outcome.pid is not None and process_gone(outcome.pid)
        assert outcome.returncode is None


async def test_gitignore_rules_read_alike_by_every_engine(engine: str, tmp_path: Path) -> None:
    """The walk reads .gitignore in Python: nested files, ! re-includes, anchored lines, folder-only
    lines, ** and escapes give what rg and git give."""
    root = tmp_path / "rules"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    files = [
        "top.log", "keep.log", "a/b.log", "a/keep.log", "a/sub/x.log", "docs/gen/out.html", "docs/gen.md",
        "src/build/x.c", "build/y.c", "src/lib/build", "deep/a/b/c/tmp.txt", "deep/tmp.txt", "#hash.txt",
        "name with space .txt", "a/sub/.hidden", "vendor/v.c", "vendor/keep/k.c",
    ]
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    (root / ".gitignore").write_text(
        "# a comment\n*.log\n!keep.log\n/docs/gen/\nbuild/\ndeep/**/tmp.txt\n\\#hash.txt\n"
        "name with space .txt\\ \nvendor/*\n!vendor/keep/\n")
    (root / "a" / ".gitignore").write_text("!b.log\nsub/\n")
    assert await listing(root) == sorted([
        ".gitignore", "a/.gitignore", "a/b.log", "a/keep.log", "docs/gen.md", "keep.log", "src/lib/build",
        "vendor/keep/k.c", "name with space .txt",  # \#hash.txt ignores #hash.txt; "\ " keeps a trailing space
    ])


async def test_git_failing_hands_over_to_the_walk(tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv(ENGINE_ENV, "git")
    root = make_repo(tmp_path / "ws", isolated)
    (root / ".git" / "index").write_bytes(b"not an index")  # git ls-files: fatal, before any name
    assert await listing(root) == REPO_FILES
    assert await listing(root, pattern="**/*.py") == ["a.py", "src/.hidden.py", "src/app.py", "src/pkg/mod.py"]
    assert "git ls-files failed" in caplog.text and "listing with the walk" in caplog.text


async def test_rg_failing_is_a_tool_error_with_its_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from toolwire.workspace.errors import ToolError

    monkeypatch.setenv(ENGINE_ENV, "rg")
    real = eng.rg_list_argv
    monkeypatch.setattr(eng, "rg_list_argv", lambda *a, **k: [*real(*a, **k), "--no-such-flag"])
    (tmp_path / "a.txt").write_text("")
    with pytest.raises(ToolError) as err:
        await listing(tmp_path)
    assert err.value.code == "engine_failed" and "rg failed" in err.value.message and "no-such-flag" in err.value.message


async def test_a_reader_that_stopped_with_the_pipe_paused_still_ends(tmp_path: Path) -> None:
    """asyncio answers ``wait()`` only once the pipes are closed; a reader that stopped early
    leaves stdout paused with unread data, so the killed process was never reaped and the
    cancelled call hung (a search cancelled under load, one run in a few). The child fills
    the pipe until writes have failed for a second: the reader is paused then."""
    signal = tmp_path / "paused"
    os.mkfifo(signal)  # the child's word that the pipe is paused: the reader blocks on it, no polling
    child = (
        "import os, sys, time, fcntl\n"
        "fd = sys.stdout.fileno()\n"
        "fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)\n"
        "line = b'x' * 99 + b'\\n'\n"
        "since = None\n"
        "while True:\n"
        "    try:\n"
        "        os.write(fd, line * 100)\n"
        "        since = None\n"
        "    except BlockingIOError:\n"
        "        since = since or time.monotonic()\n"
        "        if time.monotonic() - since > 1.0:\n"
        f"            open({str(signal)!r}, 'wb').close()\n"
        "            time.sleep(3600)\n"
        "        time.sleep(0.01)\n"
    )
    outcome = Outcome()
    with anyio.fail_after(60):
        async with aclosing(stream_batches([sys.executable, "-c", child], tmp_path, sep="\n",
                                           outcome=outcome)) as batches:
            async for _batch in batches:
                await anyio.to_thread.run_sync(_wait_for_signal, signal)
                break
    assert outcome.pid is not None and process_gone(outcome.pid)


def _wait_for_signal(fifo: Path) -> None:
    """Blocks until the child has opened and closed ``fifo`` (opening a fifo for reading waits
    for its writer; reading then ends at the writer's close)."""
    with open(fifo, "rb") as reader:
        reader.read()
