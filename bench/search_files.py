"""Benchmark: ``search_files`` and ``list_files`` against their engine run directly.

On the generated tree of ``bench/search_tree.py`` (about 20,000 files / 200 MB: a git
repository with committed and untracked files, hidden files, binary files, files over
the read limit, a ``.gitignore`` and large ignored folders), each figure times, in the
same run and interleaved round by round, the tool (``Tool.run`` with a ``ToolContext``
on the workspace, as the agent calls it, on an event loop set up as the server's) and
the engine run directly as a subprocess with the same options (ignore rules, hidden
files, no ``.git/``, the read limit, smart case, literal or regular expression), its
whole output read. One JSON line per figure:

``{"figure", "engine", "toolwire_ms", "engine_ms", "ratio", "paired_ratio", ...}``

``ratio`` is the median tool time over the median engine time; ``paired_ratio`` the
median of each round's own ratio (it follows the machine's load less); ``cpu_ratio`` the
same for CPU time (user + system, this process and its children: the tool's Python side
and every process it started, against the engine process), which a shared machine's
load moves much less than wall time. The target
(issue 21) is ``ratio <= 1.3``. Each engine the tools implement (``rg``, ``git``) is
measured; ``engine_direct`` lines compare the engines themselves (git / rg).

Figures:

* ``search_files_literal``: ``needle_literal_rare`` (10 visible files; smart case).
* ``search_files_regex``: ``color_[a-z]+\\s*=\\s*0x[0-9a-f]{6}\\b`` (10 visible files).
* ``search_files_counted``: ``common_marker(10``, 2,601 visible matching lines, the tool at
  its default limit (100, the rest counted) against the engine printing them all.
* ``search_files_common``: ``common_marker``, 104,148 visible matching lines, the tool at
  its default limit (100) against the engine printing them all (the tool stops counting
  past its cap, so it does less work than the engine here).
  For ``rg`` the search lines also give ``engine_sorted_ms``: the same command with
  ``--sort path`` (single-threaded; the tool's order), and its ratio to the unsorted run.
* ``list_files_glob``: ``**/*.py`` (about 4,700 files), the tool at its default limit
  (500) against the engine's own listing of every match.
* with ``engine: "walk"`` (the last fallback, no rg and no git: a walk and a search in
  Python in a worker thread), ``search_files_literal`` and ``list_files_glob`` once more,
  3 rounds, against rg run directly (informative).
* ``*_e2e`` (``search_files_literal``, ``list_files_glob``): the same calls through
  ``toolwire serve`` over stdio, ``calling`` → ``done`` (``bench/search_e2e.py``).
* ``search_files_memory``: the tool's peak of Python allocations (``tracemalloc``) and
  its process's peak RSS (``VmHWM`` reset through ``/proc/self/clear_refs`` right before
  the call, in a child process per query) for the 10, 2,601 and 104,148-match queries;
  ``ratio`` (allocations) and ``rss_ratio``, 104,148 against 10 matches, near 1 mean
  memory is flat in the number of matches.

Usage::

    python bench/search_files.py                 # the 20,000-file tree (built once, cached), 9 rounds
    python bench/search_files.py --quick         # a 2,000-file tree, 3 rounds: smoke
    python bench/search_files.py --engine rg --only literal,list
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import search_tree  # noqa: E402
from search_tree import COMMON, RARE, RARE_REGEX  # noqa: E402

READ_LIMIT = 2 * 1024 * 1024  # toolwire.workspace.fs.MAX_FILE_BYTES: larger files are skipped
LIST_GLOB = "**/*.py"
COUNTED = COMMON + "(10"  # 2,601 visible matching lines: all counted, under the tool's cap


def rg_binary() -> str | None:
    """The ``rg`` the server would find first: its own environment's bin, then PATH."""
    own = Path(sys.executable).parent / "rg"
    return str(own) if own.is_file() else shutil.which("rg")


def smart_case_insensitive(query: str) -> bool:
    return query == query.lower()


def rg_search_argv(rg: str, query: str, regex: bool) -> list[str]:
    return [rg, "--no-config", "--hidden", "--glob", "!.git", *exclude_options("rg"), f"--max-filesize={READ_LIMIT}",
            "--line-number", "--with-filename", "--no-heading", "--color=never", "--smart-case",
            *([] if regex else ["--fixed-strings"]), "--regexp", query, "--", "."]


@functools.cache
def git_has_pcre(root: Path) -> bool:
    """Whether this git's grep takes ``-P`` (built with PCRE), tried in the repository ``root``."""
    probe = subprocess.run(["git", "grep", "-P", "-e", "x", "--", ".gitignore"], cwd=root, capture_output=True)
    return probe.returncode in (0, 1)


@functools.cache
def exclude_options(engine: str) -> tuple[str, ...]:
    """The default ``modelExclude`` patterns as the engine's own options (the tools' forms:
    ``--iglob !.env ...`` for rg, ``:(exclude,glob,icase)**/.env ...`` pathspecs for git)."""
    from toolwire.workspace.model_exclude import ModelExclude
    return tuple(ModelExclude().rg_globs() if engine == "rg" else ModelExclude().git_pathspecs())


def git_search_argv(root: Path, query: str, regex: bool) -> list[str]:
    # git grep has no size limit: the files over the read limit are searched (the tool
    # must drop them); -I skips binary files, --untracked adds the untracked, not ignored.
    # A regular expression is PCRE (-P) when git has it, as the tool runs it.
    syntax = ("--perl-regexp" if git_has_pcre(root) else "--extended-regexp") if regex else "--fixed-strings"
    return ["git", "-c", "grep.fallbackToNoIndex=false", "grep", "--line-number", "--no-color", "-I",
            "--untracked", "--exclude-standard", *(["-i"] if smart_case_insensitive(query) else []),
            syntax, "-e", query, "--", ".", *exclude_options("git")]


def rg_list_argv(rg: str, glob: str) -> list[str]:
    return [rg, "--no-config", "--files", "--hidden", "--glob", "!.git", "--glob", glob, "--", "."]


def git_list_argv(glob: str) -> list[str]:
    return ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", f":(glob){glob}"]


def direct_argv(engine: str, kind: str, query: str, regex: bool = False, root: Path | None = None) -> list[str]:
    rg = rg_binary()
    if engine == "rg":
        assert rg is not None
        return rg_search_argv(rg, query, regex) if kind == "search" else rg_list_argv(rg, query)
    assert root is not None
    return git_search_argv(root, query, regex) if kind == "search" else git_list_argv(query)


def run_direct(argv: list[str], cwd: Path) -> tuple[float, int]:
    """Seconds to run ``argv`` to its end with its whole output read; the lines it printed."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    assert proc.returncode in (0, 1), (argv, proc.returncode)
    sep = b"\0" if "-z" in argv else b"\n"
    return elapsed, proc.stdout.count(sep)


@dataclass(slots=True)
class Case:
    figure: str
    tool: str
    args: dict[str, Any]
    kind: str            # "search" | "list"
    query: str
    regex: bool = False


CASES = {
    "literal": Case("search_files_literal", "search_files", {"query": RARE}, "search", RARE),
    "regex": Case("search_files_regex", "search_files", {"query": RARE_REGEX, "regex": True}, "search",
                  RARE_REGEX, True),
    "counted": Case("search_files_counted", "search_files", {"query": COUNTED}, "search", COUNTED),
    "common": Case("search_files_common", "search_files", {"query": COMMON}, "search", COMMON),
    "list": Case("list_files_glob", "list_files", {"path": ".", "pattern": LIST_GLOB}, "list", LIST_GLOB),
}


# --- the tools ---------------------------------------------------------------------------------

def tool_available(name: str) -> bool:
    from toolwire.tools import default_registry
    return default_registry().get(name) is not None


def tool_context(root: Path, engine: str):
    """A ``ToolContext`` on ``root`` whose tools use ``engine`` (``TOOLWIRE_ENGINE``, read at
    each call: :func:`toolwire.tools.engine.find_engine`)."""
    from toolwire.tools.base import ToolContext
    os.environ["TOOLWIRE_ENGINE"] = engine
    return ToolContext(root)


async def run_tool(case: Case, root: Path, engine: str) -> tuple[float, Any]:
    from toolwire.tools import default_registry
    from toolwire.tools.base import validate_arguments
    tool = default_registry().get(case.tool)
    assert tool is not None
    args = validate_arguments(tool, case.args)
    ctx = tool_context(root, engine)
    start = time.perf_counter()
    result = await tool.run(args, ctx)
    elapsed = time.perf_counter() - start
    assert result.ok, result.content
    return elapsed, result


def tool_total(result: Any) -> int | None:
    data = result.data or {}
    return data.get("total")


# --- figures -----------------------------------------------------------------------------------

def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of its reaped children so far."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


async def time_case(case: Case, root: Path, engine: str, rounds: int, with_tool: bool) -> dict[str, Any]:
    """The tool on ``engine`` against that engine run directly (the walk, which has no
    command of its own, against rg)."""
    argv = direct_argv("rg" if engine == "walk" else engine, case.kind, case.query, case.regex, root)
    sorted_argv = [*argv[:-4], "--sort", "path", *argv[-4:]] if engine == "rg" and case.kind == "search" else None
    direct, tool, paired, in_order = [], [], [], []
    cpu: dict[int, list[float]] = {0: [], 1: []}
    lines = total = None
    run_direct(argv, root)  # warm the page cache and the engine's binary
    if with_tool:
        await run_tool(case, root, engine)
    for r in range(rounds):
        order = (0, 1) if r % 2 == 0 else (1, 0)
        if sorted_argv is not None:
            in_order.append(run_direct(sorted_argv, root)[0])
        for which in order:
            before = cpu_seconds()
            if which == 0:
                t, lines = run_direct(argv, root)
                direct.append(t)
            elif with_tool:
                t, result = await run_tool(case, root, engine)
                total = tool_total(result)
                tool.append(t)
            else:
                continue
            cpu[which].append(cpu_seconds() - before)
        if with_tool:
            paired.append(tool[-1] / direct[-1])
    out: dict[str, Any] = {"figure": case.figure, "engine": engine, "args": case.args,
                           "engine_ms": _ms(statistics.median(direct)), "engine_lines": lines}
    if with_tool:
        out.update(toolwire_ms=_ms(statistics.median(tool)), ratio=round(statistics.median(tool) /
                   statistics.median(direct), 3), paired_ratio=round(statistics.median(paired), 3),
                   tool_total=total, target="ratio <= 1.3",
                   cpu_ratio=round(statistics.median(cpu[1]) / statistics.median(cpu[0]), 3),
                   toolwire_cpu_ms=_ms(statistics.median(cpu[1])), engine_cpu_ms=_ms(statistics.median(cpu[0])))
    else:
        out.update(toolwire_ms=None, ratio=None, note=f"{case.tool} is not on this branch: engine only")
    if in_order:  # what ripgrep's single-threaded --sort path (the tool's order) costs by itself
        out.update(engine_sorted_ms=_ms(statistics.median(in_order)),
                   sorted_over_unsorted=round(statistics.median(in_order) / statistics.median(direct), 3))
    if engine == "walk":
        out.update(target="informative: the walk in Python against rg run directly")
    out.update(rounds=rounds, engine_argv=" ".join(argv[1:] if engine in ("rg", "walk") else argv))
    return out


def engines_side_by_side(root: Path, rounds: int) -> list[dict[str, Any]]:
    """git against rg, both run directly, per case."""
    out = []
    for key, case in CASES.items():
        rg_argv, git_argv = (direct_argv(e, case.kind, case.query, case.regex, root) for e in ("rg", "git"))
        run_direct(rg_argv, root), run_direct(git_argv, root)
        rg_t, git_t = [], []
        rg_lines = git_lines = 0
        for _ in range(rounds):
            t, rg_lines = run_direct(rg_argv, root)
            rg_t.append(t)
            t, git_lines = run_direct(git_argv, root)
            git_t.append(t)
        out.append({"figure": "engine_direct", "case": key, "rg_ms": _ms(statistics.median(rg_t)),
                    "git_ms": _ms(statistics.median(git_t)),
                    "git_over_rg": round(statistics.median(git_t) / statistics.median(rg_t), 3),
                    "rg_lines": rg_lines, "git_lines": git_lines, "rounds": rounds})
    return out


def _child_memory(root: Path, engine: str, key: str) -> None:
    """In a child process: the peak RSS growth of one tool call (printed as JSON)."""
    from toolwire.lsp.boot import use_pidfd_child_watcher

    async def once() -> None:
        use_pidfd_child_watcher()
        await run_tool(CASES["literal"], root, engine)  # imports and first-call caches out of the way
        Path("/proc/self/clear_refs").write_text("5")   # resets VmHWM to the current RSS
        before = _status_kb("VmRSS")
        await run_tool(CASES[key], root, engine)
        print(json.dumps({"rss_before_kb": before, "peak_growth_kb": _status_kb("VmHWM") - before}))

    asyncio.run(once())


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


async def memory_figure(root: Path, engine: str) -> dict[str, Any]:
    """Peak memory of one call for 10, 2,601 and 104,148 matching lines."""
    keys = ("literal", "counted", "common")
    out: dict[str, Any] = {"figure": "search_files_memory", "engine": engine}
    for key in keys:
        tracemalloc.start()
        tracemalloc.reset_peak()
        _, result = await run_tool(CASES[key], root, engine)
        out[f"tracemalloc_peak_kb_{key}"] = round(tracemalloc.get_traced_memory()[1] / 1024, 1)
        tracemalloc.stop()
        out[f"total_{key}"] = tool_total(result)
        proc = subprocess.run([sys.executable, __file__, "--child-memory", key, "--engine", engine,
                               "--root", str(root)], capture_output=True, text=True, check=True)
        child = json.loads(proc.stdout.strip().splitlines()[-1])
        out[f"peak_rss_kb_{key}"] = child["rss_before_kb"] + child["peak_growth_kb"]
        out[f"rss_growth_kb_{key}"] = child["peak_growth_kb"]
    out["ratio"] = round(out["tracemalloc_peak_kb_common"] / out["tracemalloc_peak_kb_literal"], 2)
    out["rss_ratio"] = round(out["peak_rss_kb_common"] / out["peak_rss_kb_literal"], 3)
    out["target"] = "flat: ratio near 1 (results stream and stop at the limit)"
    return out


def engines_to_measure(choice: str) -> list[str]:
    have = [e for e in ("rg", "git") if (rg_binary() if e == "rg" else shutil.which("git"))]
    return have if choice == "all" else [e for e in have if e == choice]


async def main(opts: argparse.Namespace) -> None:
    from toolwire.lsp.boot import use_pidfd_child_watcher
    use_pidfd_child_watcher()  # as the server's loop does
    start = time.perf_counter()
    tree = search_tree.build(0.1 if opts.quick else 1.0)
    print(json.dumps({"figure": "tree", "root": str(tree.root), "files": tree.files,
                      "megabytes": round(tree.bytes / 1e6, 1), "visible_files": tree.visible_files,
                      "build_or_cache_s": round(time.perf_counter() - start, 1),
                      "rg": rg_binary(), "load_average": os.getloadavg()[0]}), flush=True)
    rounds = opts.rounds or (3 if opts.quick else 9)
    only = opts.only.split(",") if opts.only else [*CASES, "memory", "walk", "engines", "e2e"]
    for engine in engines_to_measure(opts.engine):
        for key in (k for k in CASES if k in only):
            case = CASES[key]
            print(json.dumps(await time_case(case, tree.root, engine, rounds, tool_available(case.tool))), flush=True)
        if "memory" in only and tool_available("search_files"):
            print(json.dumps(await memory_figure(tree.root, engine)), flush=True)
    if "walk" in only and rg_binary() is not None:  # the last fallback: no rg, no git
        for key in ("literal", "list"):
            if tool_available(CASES[key].tool):
                print(json.dumps(await time_case(CASES[key], tree.root, "walk", min(rounds, 3), True)), flush=True)
    if "engines" in only and len(engines_to_measure("all")) == 2:
        for line in engines_side_by_side(tree.root, rounds):
            print(json.dumps(line), flush=True)
    if "e2e" in only:
        from search_e2e import e2e_figure
        engine = engines_to_measure(opts.engine)[0]  # the server looks for rg first, as this does
        for case in (CASES["literal"], CASES["list"]):
            if tool_available(case.tool):
                line = await e2e_figure(tree.root, case, engine,
                                        direct_argv(engine, case.kind, case.query, case.regex, tree.root), rounds, run_direct)
                print(json.dumps(line), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 2,000-file tree, 3 rounds (smoke run)")
    parser.add_argument("--rounds", type=int, default=0, help="rounds per figure (default 9, --quick 3)")
    parser.add_argument("--engine", choices=("rg", "git", "all"), default="all")
    parser.add_argument("--only", default="", help="comma-separated: literal,regex,counted,common,list,memory,walk,engines,e2e")
    parser.add_argument("--child-memory", default="", help=argparse.SUPPRESS)
    parser.add_argument("--root", default="", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child_memory:
        _child_memory(Path(opts.root), opts.engine, opts.child_memory)
    else:
        asyncio.run(main(opts))
