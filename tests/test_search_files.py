"""search_files on real trees, real git repositories and real symlinks, under each engine
(rg, git grep, the walk): every rule of issue 21 gives the same result on each."""

from __future__ import annotations

import os
import subprocess
import threading
from contextlib import aclosing
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from toolwire.tools import default_registry
from toolwire.tools import searchrun
from toolwire.tools.base import ToolContext, ToolError, ToolResult, validate_arguments
from toolwire.tools.engine import ENGINE_ENV, Outcome, find_engine
from toolwire.tools.searchparse import PyMatcher
from toolwire.tools.searchresult import COUNT_CAP
from toolwire.workspace.documents import MemoryDocuments
from toolwire.workspace.fs import MAX_FILE_BYTES

from engines import engine, git, isolated, write_global_excludes  # noqa: F401 (fixtures)

REG = default_registry()


def tree(root: Path, files: dict[str, str | bytes], *, repo: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if repo:
        git(root, "init", "-q", "-b", "main")
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


async def search(ctx: ToolContext | Path, **arguments: Any) -> ToolResult:
    if isinstance(ctx, Path):
        ctx = ToolContext(ctx)
    tool = REG.get("search_files")
    assert tool is not None
    result = await tool.run(validate_arguments(tool, arguments), ctx)
    assert result.ok
    assert result.data is not None and result.data["engine"] == os.environ[ENGINE_ENV]
    return result


def hits(result: ToolResult) -> list[tuple[str, int, str]]:
    assert result.data is not None
    return [(m["path"], m["line"], m["text"]) for m in result.data["matches"]]


# ---- the registry


def test_registered_read_only_after_read_file() -> None:
    names = REG.names()
    assert names.index("search_files") == names.index("read_file") + 1 or "list_files" in names
    assert names.index("search_files") > names.index("read_file")
    tool = REG.get("search_files")
    assert tool is not None and tool.read_only
    params = tool.definition()["function"]["parameters"]["properties"]
    assert list(params) == ["query", "regex", "path", "include", "case_sensitive", "context_lines", "limit", "ignored"]
    defaults = {k: v.get("default") for k, v in params.items()}
    assert defaults == {"query": None, "regex": False, "path": ".", "include": None, "case_sensitive": None,
                        "context_lines": 0, "limit": 100, "ignored": False}


# ---- the form of a result


async def test_matches_grouped_by_file_as_path_line_text(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"b.py": "x = 1\nneedle = 2\n", "a/z.py": "needle()\nno\nneedle\n",
                                  "a/y.txt": "nothing\n"})
    result = await search(root, query="needle")
    assert result.content == "a/z.py:1: needle()\na/z.py:3: needle\n\nb.py:2: needle = 2"
    assert hits(result) == [("a/z.py", 1, "needle()"), ("a/z.py", 3, "needle"), ("b.py", 2, "needle = 2")]
    assert result.data is not None
    assert (result.data["truncated"], result.data["total"], result.data["files"]) == (False, 3, 2)


async def test_context_lines_around_matches(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"f.txt": "".join(f"line {i}\n" for i in range(1, 11)).replace("line 3", "hit 3")
                                  .replace("line 4", "hit 4").replace("line 9", "hit 9")})
    result = await search(root, query="hit", context_lines=1)
    assert result.content == ("f.txt-2- line 2\nf.txt:3: hit 3\nf.txt:4: hit 4\nf.txt-5- line 5\n--\n"
                              "f.txt-8- line 8\nf.txt:9: hit 9\nf.txt-10- line 10")
    assert [m["line"] for m in result.data["matches"]] == [3, 4, 9]  # type: ignore[index]


async def test_empty_result_is_brackets_not_an_error(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"a.txt": "hello\n"})
    result = await search(root, query="absent")
    assert result.content == "[]"
    assert result.data is not None and result.data["matches"] == [] and result.data["total"] == 0


async def test_crlf_line_ends_are_not_part_of_the_text(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"w.txt": b"one\r\nneedle two\r\n"})
    assert hits(await search(root, query="needle")) == [("w.txt", 2, "needle two")]


# ---- literal, regex, case


async def test_literal_by_default_regex_when_asked(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"m.py": "abc\na.c\ndef run(x):\n"})
    assert hits(await search(root, query="a.c")) == [("m.py", 2, "a.c")]
    assert hits(await search(root, query="a.c", regex=True)) == [("m.py", 1, "abc"), ("m.py", 2, "a.c")]
    assert hits(await search(root, query=r"def \w+\(", regex=True)) == [("m.py", 3, "def run(x):")]
    assert hits(await search(root, query="(x)")) == [("m.py", 3, "def run(x):")]


async def test_invalid_regex_is_an_error_for_the_model(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"m.py": "abc\n"})
    tool = REG.get("search_files")
    assert tool is not None
    with pytest.raises(ToolError) as err:
        await tool.run(validate_arguments(tool, {"query": "a(b", "regex": True}), ToolContext(root))
    assert err.value.code == "invalid_regex" and "regex false" in err.value.message


async def test_smart_case(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"c.txt": "Hello\nhello\nHELLO\n"})
    assert [h[1] for h in hits(await search(root, query="hello"))] == [1, 2, 3]
    assert [h[1] for h in hits(await search(root, query="Hello"))] == [1]
    assert [h[1] for h in hits(await search(root, query="hello", case_sensitive=True))] == [2]
    assert [h[1] for h in hits(await search(root, query="Hello", case_sensitive=False))] == [1, 2, 3]
    # an escape is no upper-case letter: \S+ stays insensitive
    assert [h[1] for h in hits(await search(root, query=r"h\S+o", regex=True))] == [1, 2, 3]


def test_query_is_one_line() -> None:
    tool = REG.get("search_files")
    assert tool is not None
    from toolwire.tools.base import ArgumentsInvalid

    with pytest.raises(ArgumentsInvalid):
        validate_arguments(tool, {"query": "a\nb"})
    with pytest.raises(ArgumentsInvalid):
        validate_arguments(tool, {"query": ""})


# ---- bounds


async def test_long_lines_are_cut_around_the_match(engine: str, tmp_path: Path) -> None:
    line = "x" * 4000 + "needle" + "y" * 3000
    root = tree(tmp_path / "ws", {"min.js": line + "\n"})
    result = await search(root, query="needle")
    shown = result.content.removeprefix("min.js:1: ")
    assert shown.startswith("[3920 characters]…") and shown.endswith("…[+2786 characters]")
    assert "needle" in shown and len(shown) < 400
    assert result.data is not None and result.data["matches"][0]["text"] == line


async def test_at_most_limit_matches_then_how_many_more(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {f"d/f{i:02d}.txt": "needle\nneedle\n" for i in range(30)})
    result = await search(root, query="needle", limit=7)
    assert result.data is not None
    assert len(result.data["matches"]) == 7 and result.data["truncated"] is True
    assert result.data["total"] == 60 and result.data["total_is_lower_bound"] is False
    assert [m["path"] for m in result.data["matches"]] == ["d/f00.txt"] * 2 + ["d/f01.txt"] * 2 + ["d/f02.txt"] * 2 + [
        "d/f03.txt"]
    assert result.content.endswith("\n\n7 of 60 matches shown. Narrow the search: a folder as path, an include "
                                   "glob (e.g. \"**/*.py\"), or a more specific query.")


async def test_counting_stops_at_a_cap_and_says_more_than(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"many.txt": "needle\n" * (COUNT_CAP + 500)})
    result = await search(root, query="needle", limit=3)
    assert result.data is not None and result.data["total_is_lower_bound"] is True
    assert result.data["total"] >= COUNT_CAP and len(result.data["matches"]) == 3
    assert f"3 of more than {result.data['total']} matches shown" in result.content


# ---- what is searched


async def test_git_folder_never(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"a.txt": "needle\n"})
    (root / ".git" / "needle-file").write_text("needle\n")
    git(root, "config", "user.name", "needle")
    for ignored in (False, True):
        assert hits(await search(root, query="needle", ignored=ignored)) == [("a.txt", 1, "needle")]


async def test_ignored_files_only_when_asked(engine: str, tmp_path: Path, isolated: Path) -> None:
    root = tree(tmp_path / "ws", {".gitignore": "build/\n*.log\n", "src/a.py": "needle\n", "build/out.py": "needle\n",
                                  "x.log": "needle\n", "notes/n.txt": "needle\n", "c.tmp": "needle\n"})
    (root / ".git" / "info" / "exclude").write_text("notes/\n")
    write_global_excludes(isolated)
    assert [h[0] for h in hits(await search(root, query="needle"))] == ["src/a.py"]
    everything = [h[0] for h in hits(await search(root, query="needle", ignored=True))]
    assert everything == ["build/out.py", "c.tmp", "notes/n.txt", "src/a.py", "x.log"]


async def test_an_ignored_path_is_searched_only_when_asked(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {".gitignore": "build/\n*.log\n", "build/sub/out.py": "needle\n", "x.log": "needle\n"})
    for path, shown in (("build", "build/"), ("build/sub", "build/sub/"), ("x.log", "x.log")):
        result = await search(root, query="needle", path=path)
        assert result.content == f"[]\n\n{shown} is ignored by the repository; set ignored to true to search it"
        assert result.data is not None and result.data["ignored_path"] is True and result.data["matches"] == []
    assert [h[0] for h in hits(await search(root, query="needle", path="build", ignored=True))] == ["build/sub/out.py"]


async def test_hidden_files_are_searched(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {".github/workflows/ci.yml": "run: needle\n", ".eslintrc": "needle\n"})
    assert [h[0] for h in hits(await search(root, query="needle"))] == [".eslintrc", ".github/workflows/ci.yml"]


async def test_binary_files_named_not_shown(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"img.bin": b"\x89PNG\x00\x01needle\x00", "t.txt": "needle\n",
                                  "other.bin": b"\x00\x01nothing"})
    result = await search(root, query="needle")
    assert hits(result) == [("t.txt", 1, "needle")]
    assert result.data is not None and result.data["binary"] == ["img.bin"]
    assert result.content == "t.txt:1: needle\n\nbinary files that match (lines not shown): img.bin"


async def test_symlinks_out_of_the_workspace_are_not_followed(engine: str, tmp_path: Path) -> None:
    outside = tree(tmp_path / "outside", {"secret.txt": "needle\n", "d/s.txt": "needle\n"}, repo=False)
    root = tree(tmp_path / "ws", {"in.txt": "needle\n"})
    os.symlink(outside / "secret.txt", root / "file-link.txt")
    os.symlink(outside / "d", root / "dir-link")
    assert hits(await search(root, query="needle")) == [("in.txt", 1, "needle")]
    assert hits(await search(root, query="needle", ignored=True)) == [("in.txt", 1, "needle")]


async def test_files_over_the_read_limit_are_named_and_counted(engine: str, tmp_path: Path) -> None:
    big = ("filler line\n" * (MAX_FILE_BYTES // 12 + 10)) + "needle at the end\n"
    root = tree(tmp_path / "ws", {"big.log": big, "small.txt": "needle\n"})
    result = await search(root, query="needle")
    assert hits(result) == [("small.txt", 1, "needle")]
    assert result.data is not None and result.data["too_large"] == ["big.log"]
    assert "files over the 2 MB read limit that match, lines not shown (1): big.log" in result.content


async def test_a_file_over_the_read_limit_past_the_limit_is_named_not_counted(engine: str, tmp_path: Path) -> None:
    """The limit is reached before the engine comes to the big file: its lines are still not
    counted as matches, and it is still named (found by bench/search_files.py)."""
    big = "needle in a big file\n" * (MAX_FILE_BYTES // 21 + 10)
    root = tree(tmp_path / "ws", {"a.txt": "needle 1\nneedle 2\n", "z_big.log": big})
    for limit in (1, 100):
        result = await search(root, query="needle", limit=limit)
        assert result.data is not None
        assert (result.data["total"], result.data["too_large"]) == (2, ["z_big.log"]), limit
        assert [hit[:2] for hit in hits(result)] == [("a.txt", 1), ("a.txt", 2)][:limit]


async def test_odd_names_in_display_form(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"evil\u202etxt.exe": "needle\n", "tab\tname.txt": "needle\n",
                                  "line\nbreak.txt": "needle\n", "bin\nary.bin": b"\0needle"})
    (root / os.fsdecode(b"caf\xe9.txt")).write_text("needle\n")
    result = await search(root, query="needle")
    shown = sorted(h[0] for h in hits(result))
    assert shown == ['"caf\\351.txt"', '"evil\\342\\200\\256txt.exe"', '"line\\nbreak.txt"', '"tab\\tname.txt"']
    assert result.data is not None and result.data["binary"] == ['"bin\\nary.bin"']


# ---- path and include


async def test_path_and_include_globs(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"top.py": "needle\n", "src/a.py": "needle\n", "src/deep/b.py": "needle\n",
                                  "src/c.ts": "needle\n", "test/t.py": "needle\n", "other/o.py": "needle\n"})

    async def paths(**kw: Any) -> list[str]:
        return [h[0] for h in hits(await search(root, query="needle", **kw))]

    assert await paths(path="src") == ["src/a.py", "src/c.ts", "src/deep/b.py"]
    assert await paths(path="src", include="*.py") == ["src/a.py"]
    assert await paths(path="src", include="**/*.py") == ["src/a.py", "src/deep/b.py"]
    assert await paths(include="*.py") == ["top.py"]
    assert await paths(include="{src,test}/**/*.py") == ["src/a.py", "src/deep/b.py", "test/t.py"]
    assert await paths(path="src/deep/b.py") == ["src/deep/b.py"]


async def test_missing_path_is_not_found(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"a.txt": "x\n"})
    tool = REG.get("search_files")
    assert tool is not None
    for path, code in (("nope", "not_found"), ("../x", "outside_workspace")):
        with pytest.raises(ToolError) as err:
            await tool.run(validate_arguments(tool, {"query": "x", "path": path}), ToolContext(root))
        assert err.value.code == code
    with pytest.raises(ToolError) as err:
        await tool.run(validate_arguments(tool, {"query": "x", "include": "a/{b"}), ToolContext(root))
    assert err.value.code == "invalid_glob"


# ---- what the editor shows


async def test_unsaved_buffers_are_searched_instead_of_the_disk(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {".gitignore": "build/\n", "a.py": "old needle\n", "b.py": "needle on disk\n",
                                  "same.py": "needle same\n", "build/gen.py": "x\n", "c.py": "nothing\n"})
    docs = MemoryDocuments()
    docs.open(root / "a.py", "first\nnew needle\n")  # unsaved change
    docs.open(root / "new.py", "needle in a new file\n")  # created in the editor, never saved
    docs.open(root / "same.py", "needle same\n")  # open, unchanged
    docs.open(root / "build/gen.py", "needle ignored\n")  # unsaved, in an ignored folder
    docs.open(root / "b.py", "gone\n")  # the unsaved text no longer holds it
    ctx = ToolContext(root, docs)
    result = await search(ctx, query="needle")
    assert hits(result) == [("a.py", 2, "new needle"), ("new.py", 1, "needle in a new file"),
                            ("same.py", 1, "needle same")]
    with_ignored = await search(ctx, query="needle", ignored=True)
    assert ("build/gen.py", 1, "needle ignored") in hits(with_ignored)
    scoped = await search(ctx, query="needle", include="new*")
    assert hits(scoped) == [("new.py", 1, "needle in a new file")]


class TwoUris(MemoryDocuments):
    """A file open under two URIs (through a link and by its real path)."""

    def __init__(self, texts: list[str], path: Path) -> None:
        super().__init__()
        self.texts, self.path = texts, path

    def open_documents(self) -> list[Any]:
        from toolwire.workspace.documents import OpenDocument

        return [OpenDocument(self.path, text, 1) for text in self.texts]

    def get(self, path: Path) -> Any:
        if len(set(self.texts)) > 1:
            raise ToolError("open_twice", "open twice with different texts")
        return self.open_documents()[0]


async def test_a_file_open_under_two_uris_is_searched_once(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"a.txt": "needle on disk\n"})
    same = await search(ToolContext(root, TwoUris(["needle unsaved\n"] * 2, root / "a.txt")), query="needle")
    assert hits(same) == [("a.txt", 1, "needle unsaved")]
    differ = await search(ToolContext(root, TwoUris(["needle one\n", "needle two\n"], root / "a.txt")), query="needle")
    assert hits(differ) == [("a.txt", 1, "needle on disk")]


async def test_buffers_keep_their_place_in_a_bounded_result(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {f"f{i}.txt": "needle\n" for i in range(5)})
    docs = MemoryDocuments()
    docs.open(root / "f2.txt", "needle\nneedle\n")
    result = await search(ToolContext(root, docs), query="needle", limit=4)
    assert [(h[0], h[1]) for h in hits(result)] == [("f0.txt", 1), ("f1.txt", 1), ("f2.txt", 1), ("f2.txt", 2)]
    assert result.data is not None and result.data["total"] == 6


# ---- modelExclude


async def test_model_excluded_files_are_not_searched_and_named(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {".env": "API_KEY=needle\n", "keys/server.pem": "needle\n", "app.py": "needle\n",
                                  "config/.env.local": "needle\n", ".envrc": "needle\n"})
    docs = MemoryDocuments()
    docs.open(root / ".env", "API_KEY=needle unsaved\n")
    result = await search(ToolContext(root, docs), query="needle")
    assert hits(result) == [(".envrc", 1, "needle"), ("app.py", 1, "needle")]
    assert result.data is not None
    assert result.data["excluded"] == [{"path": ".env", "pattern": ".env"},
                                       {"path": "config/.env.local", "pattern": ".env.*"},
                                       {"path": "keys/server.pem", "pattern": "*.pem"}]
    assert result.content.endswith("not searched (modelExclude): .env, config/.env.local, keys/server.pem — "
                                   "read_file asks the user")
    assert "API_KEY" not in result.content
    docs.open(root / "keys" / "new.key", "needle\n")  # created in the editor, never saved: named too
    fresh = await search(ToolContext(root, docs), query="needle", include="**/*.key")
    assert fresh.data is not None and fresh.data["excluded"] == [{"path": "keys/new.key", "pattern": "*.key"}]
    assert hits(await search(ToolContext(root), query="needle", path="app.py", include="*.py")) == [
        ("app.py", 1, "needle")]  # a file as path: include is matched against its name
    scoped = await search(ToolContext(root, docs), query="needle", path="keys")
    assert hits(scoped) == [] and scoped.content == "[]\n\nnot searched (modelExclude): keys/new.key, keys/server.pem — " \
                                                     "read_file asks the user"


async def test_model_excluded_files_only_in_the_editor_are_named_too(engine: str, tmp_path: Path) -> None:
    """A secret file created in the editor and not saved is not searched and named like one on
    the disk (the engine's listing of excluded files cannot see it); an open one in an ignored
    folder only with ignored: true, as on the disk."""
    root = tree(tmp_path / "ws", {".gitignore": "build/\n", "app.py": "needle\n", "build/old.key": "x\n"})
    docs = MemoryDocuments()
    docs.open(root / "build" / "old.key", "needle edited\n")  # on the disk too, ignored there
    docs.open(root / "config" / ".env.local", "TOKEN=needle unsaved\n")
    docs.open(root / "keys" / "id_rsa", "needle private\n")
    docs.open(root / "build" / "deploy.pem", "needle ignored\n")
    result = await search(ToolContext(root, docs), query="needle")
    assert hits(result) == [("app.py", 1, "needle")]
    assert result.data is not None and result.data["excluded"] == [{"path": "config/.env.local", "pattern": ".env.*"},
                                                                   {"path": "keys/id_rsa", "pattern": "id_rsa*"}]
    assert result.content == ("app.py:1: needle\n\nnot searched (modelExclude): config/.env.local, keys/id_rsa — "
                              "read_file asks the user")
    with_ignored = await search(ToolContext(root, docs), query="needle", ignored=True)
    assert with_ignored.data is not None and [e["path"] for e in with_ignored.data["excluded"]] == [
        "build/deploy.pem", "build/old.key", "config/.env.local", "keys/id_rsa"]
    assert "private" not in with_ignored.content and "unsaved" not in with_ignored.content


# ---- cancellation


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("kind", ["rg", "git"])
async def test_cancel_kills_the_engine_process(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENGINE_ENV, kind)
    root = tree(tmp_path / "ws", {f"d{i % 20}/f{i}.txt": "needle line\n" * 2000 for i in range(100)})
    started: list[tuple[list[str], Outcome]] = []
    first = anyio.Event()
    real = searchrun.stream_batches

    async def slow(*args: Any, **kwargs: Any):
        kwargs.setdefault("outcome", Outcome())
        started.append((list(args[0]), kwargs["outcome"]))
        async with aclosing(real(*args, **kwargs)) as batches:
            async for batch in batches:
                yield batch
                first.set()
                await anyio.sleep_forever()  # the engine is still writing

    monkeypatch.setattr(searchrun, "stream_batches", slow)
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(search, root, query="needle"))
        with anyio.fail_after(60):
            await first.wait()
        tg.cancel_scope.cancel()
    (search_run,) = [o for argv, o in started if "--json" in argv or "grep" in argv]
    assert search_run.pid is not None and _process_gone(search_run.pid)
    assert search_run.returncode is None  # killed, not ended by itself
    assert all(o.pid is not None and _process_gone(o.pid) for _, o in started)


async def test_the_walk_runs_off_the_event_loop_and_stops_on_cancel(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENGINE_ENV, "walk")
    root = tree(tmp_path / "ws", {"a.txt": "needle\n"})
    entered, release = threading.Event(), threading.Event()
    stops: list[threading.Event] = []
    real = searchrun.walk_files

    def blocked(base: Path, **kwargs: Any):
        stops.append(kwargs["stop"])
        entered.set()
        release.wait(60)  # holds the worker thread; the event loop goes on
        yield from real(base, **kwargs)

    monkeypatch.setattr(searchrun, "walk_files", blocked)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(search, root, query="needle"))
            with anyio.fail_after(60):
                await anyio.to_thread.run_sync(entered.wait)
            tg.cancel_scope.cancel()  # reached while the walk is still running: the loop was free
        assert stops and stops[0].is_set()  # the walk is told to stop
    finally:
        release.set()


async def test_a_path_through_a_symlink_is_searched_where_it_leads(engine: str, tmp_path: Path) -> None:
    """A path naming a link to a folder searches the folder itself: the modelExclude rules and
    the ignore rules apply to the real paths (a link to conf/ does not open conf/secret.json up)."""
    root = tree(tmp_path / "ws", {".gitignore": "conf/cache.txt\n", "conf/secret.json": "needle\n",
                                  "conf/cache.txt": "needle\n", "conf/app.json": "needle\n"})
    os.symlink(root / "conf", root / "link")
    from toolwire.workspace.model_exclude import ModelExclude

    ctx = ToolContext(root, model_exclude=ModelExclude(["conf/secret.json"]))
    through = await search(ctx, query="needle", path="link")
    assert hits(through) == [("conf/app.json", 1, "needle")]
    assert through.data is not None and through.data["excluded"] == [{"path": "conf/secret.json",
                                                                       "pattern": "conf/secret.json"}]


async def test_the_text_fits_the_result_limit_in_whole_lines(engine: str, tmp_path: Path) -> None:
    """The session's resultLimit bounds the text: whole lines and the count of the rest, never
    a result the agent must cut in the middle."""
    root = tree(tmp_path / "ws", {f"src/module_{i:02d}.py": "value = needle_function(1, 2, 3)\n" * 3
                                  for i in range(40)})
    result = await search(ToolContext(root, extra={"result_limit": 1000}), query="needle")
    assert len(result.content) <= 1000
    assert result.data is not None and result.data["truncated"] is True and result.data["total"] == 120
    shown = result.data["matches"]
    assert 0 < len(shown) < 100
    rows = [r for r in result.content.split("\n") if ":" in r and r.startswith("src/")]
    assert len(rows) == len(shown) and all(r.endswith("value = needle_function(1, 2, 3)") for r in rows)
    assert result.content.endswith(f"{len(shown)} of 120 matches shown. Narrow the search: a folder as path, an "
                                   "include glob (e.g. \"**/*.py\"), or a more specific query.")
    whole = await search(ToolContext(root), query="needle")
    assert whole.data is not None and len(whole.data["matches"]) == 100  # no limit given: limit alone bounds


async def test_text_that_is_not_utf8_is_shown_with_replacement_characters(engine: str, tmp_path: Path) -> None:
    root = tree(tmp_path / "ws", {"latin1.txt": "caf\xe9 needle\n".encode("latin-1")})
    assert hits(await search(root, query="needle")) == [("latin1.txt", 1, "caf\ufffd needle")]


async def test_an_include_prefix_into_an_ignored_folder_finds_nothing(engine: str, tmp_path: Path) -> None:
    """include 'build/**' with build/ ignored: no engine searches build/ (rg was given build as its path
    argument, and rg never filters a path it is given); ignored: true searches it."""
    root = tree(tmp_path / "ws", {".gitignore": "build/\nsrc/gen/\n", "build/x.py": "needle\n", "a.py": "needle\n",
                                  "src/gen/g.py": "needle\n", "src/s.py": "needle\n"})
    for include in ("build/**", "build/*.py", "src/gen/**", "{build,src/gen}/**"):
        result = await search(root, query="needle", include=include)
        assert result.content == "[]" and hits(result) == [], include
    assert hits(await search(root, query="needle", include="src/**")) == [("src/s.py", 1, "needle")]
    assert hits(await search(root, query="needle", include="gen/**", path="src")) == []
    assert hits(await search(root, query="needle", include="build/**", ignored=True)) == [("build/x.py", 1, "needle")]


async def test_outside_a_repository_nothing_is_ignored_and_links_stay_unfollowed(engine: str,
                                                                               tmp_path: Path) -> None:
    outside = tree(tmp_path / "outside", {"s.txt": "needle\n", "d/x.txt": "needle\n"}, repo=False)
    root = tree(tmp_path / "plain", {".gitignore": "a.txt\n", "a.txt": "needle\n", ".hid/h.txt": "needle\n",
                                     "b.bin": b"x\0needle"}, repo=False)
    os.symlink(outside / "s.txt", root / "flink")
    os.symlink(outside / "d", root / "dlink")
    result = await search(root, query="needle")
    assert [h[0] for h in hits(result)] == [".hid/h.txt", "a.txt"]
    assert result.data is not None and result.data["binary"] == ["b.bin"]


def test_walk_matcher_case_insensitive_literal() -> None:
    """The walk engine's matcher: a case-insensitive literal (smart case) finds its lines in any
    case, with their context, and nothing in a text without it (one scan of the whole text
    decides there before any line is split: bench/search_files.py)."""
    matcher = PyMatcher("needle", regex=False, ignore_case=True)
    text = "a\nNeedle one\nb\r\nx NEEDLE\r\nc\n"
    assert [(ln.number, ln.text, ln.column) for ln in matcher.lines(text, 0)] == [(2, "Needle one", 0),
                                                                                  (4, "x NEEDLE", 2)]
    assert [(ln.number, ln.match) for ln in matcher.lines(text, 1)] == [(1, False), (2, True), (3, False),
                                                                       (4, True), (5, False)]
    assert list(matcher.lines("no match here\nnor here\n", 1)) == []
    assert list(PyMatcher("needle", regex=False, ignore_case=False).lines(text, 0)) == []
    assert [ln.number for ln in PyMatcher("e{2}d", regex=True, ignore_case=True).lines(text, 0)] == [2, 4]
