"""list_files on real files, real git repositories and real symlinks, under each engine
(rg, git, walk): each case of issue 21 as the exact list the model reads."""

from __future__ import annotations

import os
import subprocess
import threading
from contextlib import aclosing
from pathlib import Path

import anyio
import pytest

from toolwire.tools import default_registry
from toolwire.tools import engine as eng
from toolwire.tools.base import ToolContext, ToolError, ToolResult, validate_arguments
from toolwire.tools.engine import ENGINE_ENV, Outcome, find_engine
from toolwire.workspace.documents import MemoryDocuments

from conftest import write_files
from engines import engine, git, isolated, write_global_excludes  # noqa: F401 (fixtures)

REG = default_registry()
TOOL = REG.get("list_files")


@pytest.fixture(autouse=True)
def global_excludes(isolated: Path) -> Path:
    """The global excludes are the test's own (core.excludesFile of a test-local GIT_CONFIG_GLOBAL)."""
    write_global_excludes(isolated)
    return isolated


FILES = {
    "README.md": "", "a.py": "", "src/app.py": "", "src/pkg/__init__.py": "", "src/pkg/deep/mod.py": "",
    "src/pkg/t1.py": "", "src/pkg/t10.py": "", "tests/test_app.py": "", ".github/workflows/ci.yml": "",
    ".gitignore": "build/\n*.log\n", ".env": "SECRET=1\n", "x.log": "", "build/out.py": "",
    "build/deep/more.py": "", "notes/todo.txt": "", "src/cache.tmp": "", "gone.py": "",
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".git" / "info" / "exclude").write_text("notes/\n")
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "secret.py").write_text("")
    (outside / "deep" / "x.py").write_text("")
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "src" / "link.py").symlink_to("app.py")
    (root / "empty").mkdir()
    git(root, "add", "a.py", "src/app.py", ".gitignore", "gone.py", "src/link.py")
    git(root, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "one")
    (root / "gone.py").unlink()  # tracked, deleted from the disk: not listed
    return root


async def run(root: Path, docs: MemoryDocuments | None = None, **arguments) -> ToolResult:
    ctx = ToolContext(root, documents=docs or MemoryDocuments())
    return await TOOL.run(validate_arguments(TOOL, arguments), ctx)


async def lines(root: Path, docs: MemoryDocuments | None = None, **arguments) -> list[str]:
    return (await run(root, docs, **arguments)).content.split("\n")


def test_registered_right_after_read_file_read_only() -> None:
    names = REG.names()
    assert names[names.index("read_file") + 1] == "list_files"
    assert TOOL.read_only
    schema = TOOL.definition()["function"]["parameters"]
    assert set(schema["properties"]) == {"path", "pattern", "limit", "ignored"}
    assert TOOL.Args().model_dump() == {"path": ".", "pattern": None, "limit": 500, "ignored": False}


async def test_entries_of_the_workspace_folder(engine: str, ws: Path) -> None:
    assert await lines(ws) == [
        ".env",  # modelExclude files are listed like any other
        ".github/ (1 entry)",
        ".gitignore",
        "README.md",
        "a.py",
        "build/ (ignored)",
        "empty/ (0 entries)",
        "notes/ (ignored)",  # .git/info/exclude
        "out (symlink to outside the workspace, not followed)",
        "src/ (3 entries)",  # app.py, link.py, pkg/; cache.tmp is a global exclude
        "tests/ (1 entry)",
    ]


async def test_entries_of_a_subfolder_with_ignored_true(engine: str, ws: Path) -> None:
    result = await run(ws, path="src", ignored=True)
    assert result.content.split("\n") == [
        "src/app.py",
        "src/cache.tmp (ignored)",
        "src/link.py (symlink to src/app.py)",
        "src/pkg/ (4 entries)",
    ]
    assert result.data["matches"][1] == {"path": "src/cache.tmp", "type": "file", "ignored": True}
    assert result.data["matches"][2] == {"path": "src/link.py", "type": "symlink", "target": "src/app.py"}
    assert result.data["matches"][3] == {"path": "src/pkg/", "type": "folder", "entries": 4}
    top = await lines(ws, ignored=True)
    assert "build/ (2 entries, ignored)" in top and "x.log (ignored)" in top and "notes/ (1 entry, ignored)" in top


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.py", ["a.py"]),
        ("**/*.py", ["a.py", "src/app.py", "src/pkg/__init__.py", "src/pkg/deep/mod.py", "src/pkg/t1.py",
                     "src/pkg/t10.py", "tests/test_app.py"]),
        ("src/*.py", ["src/app.py"]),  # * never crosses /; the symlink is not a file
        ("src/pkg/t?.py", ["src/pkg/t1.py"]),
        ("src/**", ["src/app.py", "src/pkg/__init__.py", "src/pkg/deep/mod.py", "src/pkg/t1.py", "src/pkg/t10.py"]),
        ("{src,tests}/*.py", ["src/app.py", "tests/test_app.py"]),
        ("**/*.{yml,md}", [".github/workflows/ci.yml", "README.md"]),
        ("**/t1*.py", ["src/pkg/t1.py", "src/pkg/t10.py"]),
        (".*", [".env", ".gitignore"]),
        ("*.log", []),  # ignored
        ("build/**", []),
        ("out/**", []),  # a symlink leaving the workspace is never followed
    ],
)
async def test_pattern_lists_exactly(engine: str, ws: Path, pattern: str, expected: list[str]) -> None:
    result = await run(ws, pattern=pattern)
    assert [m["path"] for m in result.data["matches"]] == expected
    assert result.content == ("\n".join(expected) if expected else "[]")
    assert result.data["total"] == len(expected) and result.data["truncated"] is False


async def test_pattern_relative_to_path(engine: str, ws: Path) -> None:
    assert await lines(ws, path="src", pattern="*.py") == ["src/app.py"]
    assert await lines(ws, path="src/pkg", pattern="**/*.py") == [
        "src/pkg/__init__.py", "src/pkg/deep/mod.py", "src/pkg/t1.py", "src/pkg/t10.py"]


async def test_pattern_with_ignored_true(engine: str, ws: Path) -> None:
    assert await lines(ws, pattern="**/*.{log,tmp,txt}", ignored=True) == ["notes/todo.txt", "src/cache.tmp", "x.log"]
    assert await lines(ws, path="build", ignored=True, pattern="**") == ["build/deep/more.py", "build/out.py"]


async def test_an_ignored_path_says_how_to_list_it(engine: str, ws: Path) -> None:
    result = await run(ws, path="build", pattern="**/*.py")
    assert result.content == "[]\n[build/ is ignored by the repository; set ignored to true to list it]"
    assert result.data["matches"] == [] and result.data["total"] == 0


async def test_limit_says_how_many_more_and_how_to_narrow(engine: str, ws: Path) -> None:
    result = await run(ws, pattern="**/*.py", limit=3)
    assert result.content.split("\n") == [
        "a.py", "src/app.py", "src/pkg/__init__.py",
        "[4 more not shown; give a narrower pattern or a subfolder as path, or raise limit]"]
    assert result.data["truncated"] is True and result.data["total"] == 7 and len(result.data["matches"]) == 3
    folder = await run(ws, limit=2)
    assert folder.content.split("\n") == [
        ".env", ".github/ (1 entry)",
        "[9 more not shown; give a pattern (e.g. '*.py') or a subfolder as path, or raise limit]"]
    assert folder.data["total"] == 11


async def test_empty_results_are_an_empty_list(engine: str, ws: Path) -> None:
    assert (await run(ws, path="empty")).content == "[]"
    result = await run(ws, pattern="**/*.rs")
    assert result.content == "[]" and result.data == {
        "path": ".", "pattern": "**/*.rs", "engine": engine, "matches": [], "truncated": False, "total": 0}


async def test_unsaved_buffers_are_listed(engine: str, ws: Path) -> None:
    docs = MemoryDocuments()
    docs.open(ws / "src" / "fresh.py", "created in the editor, not saved\n")
    docs.open(ws / "newpkg" / "mod.py", "x = 1\n")
    docs.open(ws / "a.py", "unsaved edit of a file on disk\n")
    assert await lines(ws, docs, pattern="**/*.py") == [
        "a.py", "newpkg/mod.py", "src/app.py", "src/fresh.py", "src/pkg/__init__.py", "src/pkg/deep/mod.py",
        "src/pkg/t1.py", "src/pkg/t10.py", "tests/test_app.py"]
    top = await run(ws, docs)
    assert "newpkg/ (1 entry, not saved yet)" in top.content.split("\n")
    assert "src/ (4 entries)" in top.content.split("\n")
    assert await lines(ws, docs, path="src", pattern="f*") == ["src/fresh.py"]
    sub = await run(ws, docs, path="src")
    assert "src/fresh.py (not saved yet)" in sub.content.split("\n")
    assert {"path": "src/fresh.py", "type": "file", "unsaved": True} in sub.data["matches"]


async def test_matches_have_one_shape_for_a_folder_and_a_glob(engine: str, ws: Path) -> None:
    """data.matches holds one object per entry in both modes (a glob listing held plain strings):
    the same object for the same file, a buffer not saved yet marked unsaved in both."""
    docs = MemoryDocuments()
    docs.open(ws / "src" / "fresh.py", "created in the editor, not saved\n")
    globbed = await run(ws, docs, path="src", pattern="*.py")
    assert globbed.data["matches"] == [
        {"path": "src/app.py", "type": "file"}, {"path": "src/fresh.py", "type": "file", "unsaved": True}]
    folder = await run(ws, docs, path="src")
    for item in globbed.data["matches"]:
        assert item in folder.data["matches"]
    deep = await run(ws, pattern="**/*.py", limit=2)
    assert deep.data["matches"] == [{"path": "a.py", "type": "file"}, {"path": "src/app.py", "type": "file"}]
    assert deep.content.split("\n")[:2] == ["a.py", "src/app.py"]


async def test_odd_names_in_display_form(engine: str, ws: Path) -> None:
    (ws / "odd\nname.py").write_text("")
    (ws / "evil\u202etxt.py").write_text("")
    listed = await lines(ws, pattern="*.py")
    assert listed == ["a.py", '"evil\\342\\200\\256txt.py"', '"odd\\nname.py"']
    assert '"odd\\nname.py"' in await lines(ws)


async def test_outside_a_repository(engine: str, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write_files(root, {".gitignore": "*.log\n", "x.log": "", "sub/b.txt": ""})
    assert await lines(root) == [".gitignore", "sub/ (1 entry)", "x.log"]
    assert await lines(root, pattern="**") == [".gitignore", "sub/b.txt", "x.log"]


@pytest.mark.parametrize(
    ("arguments", "code", "words"),
    [
        ({"pattern": "src/[ab"}, "invalid_glob", "no closing ]"),
        ({"pattern": "../*.py"}, "invalid_glob", "set path to the folder"),
        ({"path": "a.py"}, "not_a_folder", "read it with read_file"),
        ({"path": "nope"}, "not_found", "does not exist"),
        ({"path": ".."}, "outside_workspace", "outside the workspace"),
        ({"path": ".git"}, "outside_workspace", ".git"),
        ({"path": "out"}, "outside_workspace", "through a symlink"),
    ],
)
async def test_refusals_say_what_to_do(ws: Path, arguments: dict, code: str, words: str) -> None:
    with pytest.raises(ToolError) as err:
        await run(ws, **arguments)
    assert err.value.code == code and words in err.value.message


def test_limit_is_bounded() -> None:
    from toolwire.tools.base import ArgumentsInvalid

    for bad in ({"limit": 0}, {"limit": 5001}, {"other": 1}):
        with pytest.raises(ArgumentsInvalid):
            validate_arguments(TOOL, bad)


async def test_cancelling_a_listing_of_a_big_tree_stops_it(engine: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "big"
    for i in range(6000):
        folder = root / f"folder-{i % 60:03d}-{'x' * 80}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file-{i:05d}-{'y' * 100}.txt").write_bytes(b"")
    if engine == "git":
        git(root, "init", "-q")
    started: list[Outcome] = []
    reading = anyio.Event()
    real = eng.stream_batches

    async def slow(*args, **kwargs):  # the engine's stream, with a reader that stalls after one batch
        kwargs["outcome"] = outcome = Outcome()
        started.append(outcome)
        async with aclosing(real(*args, **kwargs)) as batches:
            async for batch in batches:
                yield batch
                reading.set()
                await anyio.sleep_forever()

    async def slow_walk(*args, **kwargs):
        async with aclosing(real_walk(*args, **kwargs)) as batches:
            async for batch in batches:
                yield batch
                reading.set()
                await anyio.sleep_forever()

    real_walk = eng._walk_batches
    monkeypatch.setattr(eng, "stream_batches", slow)
    monkeypatch.setattr(eng, "_walk_batches", slow_walk)
    done: list[ToolResult] = []

    async def call() -> None:
        done.append(await run(root, pattern="**/*.txt"))

    async with anyio.create_task_group() as tg:
        tg.start_soon(call)
        with anyio.fail_after(60):
            await reading.wait()
        tg.cancel_scope.cancel()
    assert done == []
    for outcome in started:
        assert outcome.pid is not None and outcome.returncode is None  # killed, not finished
        with pytest.raises(ProcessLookupError):
            os.kill(outcome.pid, 0)
    assert (engine == "walk") == (started == [])


async def test_the_editors_rg_is_used_when_the_server_has_none(ws: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """ripgrepPath (the VS Code client sends VS Code's own rg) reaches the tools and is run
    when neither the server's environment nor PATH has rg (nor git: ignores read in Python)."""
    import shutil
    import sys

    from toolwire.agent.permissions import PermissionPolicy
    from toolwire.agent.session import Session
    from toolwire.llm.replay import ReplayModel
    from toolwire.settings import parse_settings

    editor_rg = tmp_path / "vscode" / "node_modules.asar.unpacked" / "@vscode" / "ripgrep" / "bin" / "rg"
    editor_rg.parent.mkdir(parents=True)
    shutil.copy(Path(sys.executable).parent / "rg", editor_rg)
    settings, problems = parse_settings({"ripgrepPath": str(editor_rg)})
    assert problems == []
    script = tmp_path / "script.jsonl"
    script.write_text("")
    session = Session(root=ws, model=ReplayModel(script), registry=REG, policy=PermissionPolicy(), settings=settings)
    ctx = session.tool_context()
    assert ctx.ripgrep == str(editor_rg)
    monkeypatch.delenv(ENGINE_ENV, raising=False)
    monkeypatch.setattr(eng.sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setattr(eng.sys, "prefix", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = await TOOL.run(validate_arguments(TOOL, {"pattern": "**/*.py"}), ctx)
    assert result.data["engine"] == "rg"
    assert [m["path"] for m in result.data["matches"]] == [
        "a.py", "src/app.py", "src/pkg/__init__.py", "src/pkg/deep/mod.py", "src/pkg/t1.py", "src/pkg/t10.py",
        "tests/test_app.py"]
    assert "notes/ (ignored)" in (await TOOL.run(validate_arguments(TOOL, {}), ctx)).content.split("\n")


async def test_the_folder_scan_runs_off_the_event_loop_and_a_cancel_ends_the_call(
        engine: str, ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder and each child folder it counts are read in a worker thread, never on the event
    loop; a scan held in its thread does not stop the loop, and the call's cancel ends it at once."""
    from toolwire.tools import listing

    threads: list[bool] = []  # per scan: ran on the main (event loop) thread
    real = listing._scan
    monkeypatch.setattr(listing, "_scan", lambda folder: (threads.append(threading.current_thread()
                                                                         is threading.main_thread()), real(folder))[1])
    result = await run(ws)
    assert "src/ (3 entries)" in result.content.split("\n")
    assert len(threads) > 1 and not any(threads)

    entered, release = threading.Event(), threading.Event()

    def held(folder: Path):
        if threading.current_thread() is not threading.main_thread():  # on the loop it would hang the test
            entered.set()
            release.wait(60)
        return real(folder)

    monkeypatch.setattr(listing, "_scan", held)
    done: list[ToolResult] = []

    async def call() -> None:
        done.append(await run(ws))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(60):
                await anyio.to_thread.run_sync(entered.wait)  # the loop runs this while the scan is held
            tg.cancel_scope.cancel()
        assert done == [] and not release.is_set()  # ended with the scan still held
    finally:
        release.set()


async def test_the_text_fits_the_result_limit_in_whole_entries(engine: str, tmp_path: Path) -> None:
    """The session's resultLimit bounds the text: whole entries and a true count of the rest (500
    paths make some 15,000 characters, which the agent would cut in the middle)."""
    root = tmp_path / "ws"
    names = [f"src/module_{i:03d}_with_a_long_name.py" for i in range(60)]
    for rel in names:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    for i in range(40):
        (root / f"folder_{i:02d}_with_a_long_name").mkdir()
    ctx = ToolContext(root, documents=MemoryDocuments(), extra={"result_limit": 1000})
    tool = REG.get("list_files")
    for arguments, total, how in (
            ({"pattern": "**/*.py"}, 60, "a narrower pattern or a subfolder as path"),
            ({}, 41, "a pattern (e.g. '*.py') or a subfolder as path")):
        result = await tool.run(validate_arguments(tool, arguments), ctx)
        assert len(result.content) <= 1000, arguments
        *shown, note = result.content.split("\n")
        assert 0 < len(shown) < total and result.data["total"] == total and result.data["truncated"] is True
        assert note == f"[{total - len(shown)} more not shown; give {how}]"  # raising limit would not help
        matches = result.data["matches"]
        assert [m["path"] for m in matches] == [s.split(" (")[0] for s in shown]
        whole = await run(root, **arguments)  # no session limit: limit alone bounds
        assert whole.content.split("\n")[: len(shown)] == shown and len(whole.content.split("\n")) == total
    narrow = await tool.run(validate_arguments(tool, {"pattern": "**/*.py", "limit": 5}), ctx)
    assert narrow.content.split("\n") == [*names[:5], "[55 more not shown; give a narrower pattern or a subfolder "
                                                      "as path, or raise limit]"]


async def test_a_folder_holding_only_ignored_files_says_how_many(engine: str, tmp_path: Path) -> None:
    """A folder whose files are all ignored does not look empty: '(0 entries, 2 ignored)'; with
    ignored: true they are counted as entries; a truly empty folder stays '(0 entries)'."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for rel in (".gitignore", "logs/a.log", "logs/b.log", "mixed/a.log", "mixed/keep.txt", "deep/cache/x.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("*.log\ncache/\n" if rel == ".gitignore" else "")
    (root / "empty").mkdir()
    assert await lines(root) == [".gitignore", "deep/ (1 entry)", "empty/ (0 entries)", "logs/ (0 entries, 2 ignored)",
                                 "mixed/ (1 entry)"]
    result = await run(root)
    assert result.data["matches"][3] == {"path": "logs/", "type": "folder", "entries": 0, "ignored_entries": 2}
    assert "ignored_entries" not in result.data["matches"][2]
    assert "logs/ (2 entries)" in await lines(root, ignored=True)
    listed = await run(root, path="logs")  # the folder itself: not an empty list either
    assert listed.content == "[]\n[2 ignored files not shown; set ignored to true to list them]"
    assert listed.data["matches"] == [] and listed.data["total"] == 0 and listed.data["ignored_entries"] == 2
    assert await lines(root, path="logs", ignored=True) == ["logs/a.log (ignored)", "logs/b.log (ignored)"]
    assert await lines(root, path="empty") == ["[]"]
