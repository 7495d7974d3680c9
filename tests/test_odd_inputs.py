"""Odd inputs to the look-around tools (issue 21), tried as a user and an attacker would:
names with newlines and option-like or pathspec-like names, under each engine."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import pytest

from toolwire.agent.project_rules import ProjectRules, RulesSource
from toolwire.tools.base import ArgumentsInvalid, ToolContext, ToolError, validate_arguments
from toolwire.tools import searchrun
from toolwire.tools.engine import ENGINE_ENV
from toolwire.tools.searching import MAX_QUERY
from toolwire.workspace.documents import MemoryDocuments

from test_list_files import run as listing
from test_search_files import REG, engine, hits, isolated, search, tree  # noqa: F401 - engine, isolated: fixtures


async def test_a_name_with_a_newline_is_one_file_on_every_engine(engine: str, tmp_path: Path) -> None:
    # git grep -z still ends each output line with a newline: a name holding one came out
    # as its last part ("line.txt") under the git engine.
    root = tree(tmp_path / "ws", {"new\nline.txt": "TODO nl\n", "b\nin.dat": b"TODO\0bin\n", "z.txt": "TODO z\n"})
    result = await search(root, query="TODO")
    assert hits(result) == [('"new\\nline.txt"', 1, "TODO nl"), ("z.txt", 1, "TODO z")]
    assert result.content == ('"new\\nline.txt":1: TODO nl\n\nz.txt:1: TODO z\n\n'
                              'binary files that match (lines not shown): "b\\nin.dat"')


async def test_a_glob_with_a_colon_in_the_name_on_every_engine(engine: str, tmp_path: Path) -> None:
    # rg refused the file type narrowing the glob's name became ("--type-add twglob:c:d.txt":
    # "invalid definition"), so under rg list_files and search_files failed engine_failed.
    root = tree(tmp_path / "ws", {"c:d.txt": "TODO\n", "include:y.txt": "TODO\n", "x.txt": "TODO\n"})
    listed = await listing(root, pattern="*:*")
    assert listed.content == "c:d.txt\ninclude:y.txt"
    assert (await listing(root, pattern=":(top)*")).content == "[]"
    found = await search(root, query="TODO", include="c:d.txt")
    assert hits(found) == [("c:d.txt", 1, "TODO")]


async def test_case_of_letters_beyond_ascii_on_every_engine(engine: str, tmp_path: Path) -> None:
    # git ran with LC_ALL=C, where -i folds only ASCII: 'ünïcode' did not find 'ÜNÏCODE'.
    root = tree(tmp_path / "ws", {"uni.txt": "Ünïcode TODO Straße\nÜNÏCODE\nünïcode\n"})
    assert [h[1] for h in hits(await search(root, query="ünïcode"))] == [1, 2, 3]  # smart case: no upper case
    assert [h[1] for h in hits(await search(root, query="ÜNÏCODE"))] == [2]  # an upper-case letter: sensitive
    assert [h[1] for h in hits(await search(root, query="ÜNÏCODE", case_sensitive=False))] == [1, 2, 3]
    assert [h[1] for h in hits(await search(root, query="ünï.ode", regex=True))] == [1, 2, 3]


def test_a_refused_path_with_dot_dot_reads_no_nested_rules(tmp_path: Path) -> None:
    # A call naming sub/../.. (refused: outside the workspace) was given the root AGENTS.md
    # again as a nested "sub/../AGENTS.md" (the session passes a refused path unresolved).
    root = tmp_path.resolve()
    (root / "sub").mkdir()
    (root / "AGENTS.md").write_text("ROOT\n")
    (root / "sub" / "AGENTS.md").write_text("SUB\n")
    rules = ProjectRules()
    rules.read_root(RulesSource(root))
    assert rules.nested_for(RulesSource(root), [root / "sub" / ".." / ".."]) is None
    assert rules.nested_for(RulesSource(root), [root / "sub" / ".." / ".." / "outside" / "x"]) is None
    assert [f.path for f in rules.listing()] == ["AGENTS.md"]
    assert rules.nested_for(RulesSource(root), [root / "sub" / "f.txt"]) == (
        "Instructions from sub/AGENTS.md (apply to files under sub/):\nSUB")


async def test_an_include_under_dot_git_searches_nothing_on_every_engine(engine: str, tmp_path: Path) -> None:
    # rg was given .git as its path (the glob's literal folder) and searched it: include
    # '.git/**' returned .git/HEAD's line (and .git/config may hold a remote's credentials).
    root = tree(tmp_path / "ws", {"a.txt": "main\n"})
    (root / ".git" / "config").write_text("[remote]\n\turl = https://user:main-token@example.invalid/r\n")
    for include in (".git/**", ".git/*", ".git/HEAD", ".git/config"):
        for ignored in (False, True):
            result = await search(root, query="main", include=include, ignored=ignored)
            assert result.content == "[]", (include, ignored)
    assert hits(await search(root, query="main")) == [("a.txt", 1, "main")]


async def test_utf16_is_binary_and_a_bom_is_not_shown_on_every_engine(engine: str, tmp_path: Path) -> None:
    # rg transcoded a UTF-16 file (BOM sniffing) and showed its lines, which read_file
    # refuses as binary and git and the walk do not match; git showed the UTF-8 BOM.
    root = tree(tmp_path / "ws", {"bom.txt": b"\xef\xbb\xbfneedle bom\nneedle 2\n",
                                  "utf16.txt": "needle utf16\n".encode("utf-16"), "z.txt": "needle\n"})
    result = await search(root, query="needle")
    assert hits(result) == [("bom.txt", 1, "needle bom"), ("bom.txt", 2, "needle 2"), ("z.txt", 1, "needle")]


async def test_a_fifo_as_path_is_refused_on_every_engine(engine: str, tmp_path: Path) -> None:
    # rg given a FIFO by name opened it and waited for a writer: the call (and turn) hung.
    root = tree(tmp_path / "ws", {"a.txt": "needle\n"})
    os.mkfifo(root / "pipe")
    tool = REG.get("search_files")
    assert tool is not None
    with anyio.fail_after(60):
        with pytest.raises(ToolError) as failed:
            await tool.run(validate_arguments(tool, {"query": "needle", "path": "pipe"}), ToolContext(root))
    assert (failed.value.code, failed.value.message) == ("not_a_file", "pipe is not a regular file or a folder")
    assert hits(await search(root, query="needle")) == [("a.txt", 1, "needle")]  # a FIFO in the tree is skipped


async def test_a_query_holding_nul_is_refused_as_an_argument(tmp_path: Path) -> None:
    # rg and git cannot take a NUL in their arguments: the call failed tool_failed
    # ('ExceptionGroup: unhandled errors in a TaskGroup'), the walk answered [].
    tool = REG.get("search_files")
    assert tool is not None
    with pytest.raises(ArgumentsInvalid) as failed:
        validate_arguments(tool, {"query": "a\0b"})
    assert "query must not hold a NUL character" in str(failed.value)


async def test_a_query_over_the_length_limit_is_refused_and_one_at_it_runs(engine: str, tmp_path: Path) -> None:
    # A query of 140,000 characters was over what one process argument may hold (E2BIG):
    # the call failed tool_failed under rg and git.
    tool = REG.get("search_files")
    assert tool is not None
    with pytest.raises(ArgumentsInvalid) as failed:
        validate_arguments(tool, {"query": "x" * (MAX_QUERY + 1)})
    assert f"query is over {MAX_QUERY} characters" in str(failed.value)
    root = tree(tmp_path / "ws", {"a.txt": "é" * MAX_QUERY + "\n"})
    assert hits(await search(root, query="é" * MAX_QUERY))[0][:2] == ("a.txt", 1)


async def test_open_buffers_are_searched_off_the_event_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Under git (and the walk) open buffers were searched in Python on the event loop: a
    # catastrophic expression such as (a+)+$ on an open buffer froze the whole server.
    monkeypatch.setenv(ENGINE_ENV, "git")
    root = tree(tmp_path / "ws", {"a.txt": "needle\n"})
    docs = MemoryDocuments()
    docs.open(root / "b.txt", "needle in a buffer\n")
    started, loop_free = threading.Event(), threading.Event()
    waited: list[bool] = []
    real = searchrun.search_text

    def slow_search_text(*args: object, **kwargs: object):
        started.set()
        waited.append(loop_free.wait(60))  # the loop answers unless this runs on it
        return real(*args, **kwargs)

    monkeypatch.setattr(searchrun, "search_text", slow_search_text)

    async def beat() -> None:
        await anyio.to_thread.run_sync(started.wait, 120)
        loop_free.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        result = await search(ToolContext(root, docs), query="needle")
    assert waited == [True]
    assert hits(result) == [("a.txt", 1, "needle"), ("b.txt", 1, "needle in a buffer")]


async def test_a_repository_inside_is_walked_with_its_own_ignore_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The walk applied the outer repository's .gitignore inside a clone in a sub-folder
    # (inner/a.log left out by the outer '*.log'), where rg, like git, applies the inner one's.
    root = tree(tmp_path / "ws", {".gitignore": "*.log\n", "top.log": "x\n"})
    inner = tree(root / "inner", {".gitignore": "*.tmp\n", "a.log": "x\n", "b.tmp": "x\n", "c.txt": "x\n"})
    assert inner.is_dir()
    for kind in ("rg", "walk"):
        monkeypatch.setenv(ENGINE_ENV, kind)
        listed = await listing(root, pattern="**")
        assert listed.content == ".gitignore\ninner/.gitignore\ninner/a.log\ninner/c.txt", kind
        assert [h[0] for h in hits(await search(root, query="x"))] == ["inner/a.log", "inner/c.txt"], kind


async def test_a_repository_inside_counts_its_entries_as_listing_it_shows(engine: str, tmp_path: Path) -> None:
    # The root listing counted inner/'s entries with the outer .gitignore ('inner/ (1 entry)',
    # a.log left out) while list_files of inner/ lists a.log and c.txt under its own rules.
    root = tree(tmp_path / "ws", {".gitignore": "*.log\n"})
    tree(root / "inner", {".gitignore": "*.tmp\n", "a.log": "x\n", "b.tmp": "x\n"})
    assert (await listing(root, path="inner")).content == "inner/.gitignore\ninner/a.log"
    assert (await listing(root)).content == ".gitignore\ninner/ (2 entries)"
