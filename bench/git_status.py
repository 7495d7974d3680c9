"""Benchmark: the git_status tool against ``git status --porcelain=v2`` run directly, side by side.

A repository of 5,000 tracked files (in 50 folders) with 200 of them modified
is made in a temporary folder. In one run, alternating so both see the same
machine state, the benchmark times:

* ``raw``: ``git status --porcelain=v2`` as a subprocess (what a person would
  run; output read and discarded);
* ``tool_warm``: the git_status tool (``GitStatus.run``) with the repository
  facts cached, as within a turn: one git process;
* ``tool_cold``: the same with an empty cache, as the first git tool of a turn
  (the facts cost two more small git processes).

Each line of output is one JSON object: the figure, Toolwire's median in ms,
raw git's median in ms in the same run, their ratio, and the number of git
processes the tool started (from ``data["git_processes"]``). Goal (issue 12):
``tool_warm`` ratio <= 1.2. A workspace that is a sub-folder of the repository
(``sub``) is measured too, against ``git status --porcelain=v2 -- .`` there.

Usage::

    python bench/git_status.py            # 5,000 files, 200 modified, 15 rounds
    python bench/git_status.py --quick    # 500 files, 20 modified, 3 rounds (smoke)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio

from toolwire.tools.base import ToolContext
from toolwire.tools.git import GitStatus, NoArgs
from toolwire.tools.gitrepo import GitCache


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def make_repo(base: Path, files: int, modified: int) -> Path:
    """A committed repository of ``files`` files, ``modified`` of them then changed."""
    root = base / "repo"
    for i in range(files):
        path = root / "pkg" / f"d{i % 50:02d}" / f"f{i:05d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"file {i}\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "init")
    step = max(files // modified, 1)
    for i in range(0, files, step)[:modified]:
        (root / "pkg" / f"d{i % 50:02d}" / f"f{i:05d}.txt").write_text(f"changed {i}\n")
    subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=root, capture_output=True)  # refresh the index once, as a person's prompt would
    return root


def raw_status(cwd: Path, limit: bool) -> float:
    start = time.perf_counter()
    subprocess.run(["git", "status", "--porcelain=v2", *(["--", "."] if limit else [])], cwd=cwd, check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return time.perf_counter() - start


async def tool_status(cwd: Path, cache: GitCache) -> tuple[float, int, int]:
    start = time.perf_counter()
    result = await GitStatus().run(NoArgs(), ToolContext(cwd, git=cache))
    elapsed = time.perf_counter() - start
    assert result.ok and result.data is not None
    return elapsed, result.data["git_processes"], len(result.data["unstaged"])


async def measure(root: Path, cwd: Path, rounds: int, label: str, expect: int) -> None:
    warm_cache = GitCache()
    await tool_status(cwd, warm_cache)
    raw, warm, cold = [], [], []
    warm_procs = cold_procs = 0
    for _ in range(rounds):
        raw.append(raw_status(cwd, cwd != root))
        t, warm_procs, seen = await tool_status(cwd, warm_cache)
        assert seen == expect, (seen, expect)
        warm.append(t)
        t, cold_procs, _ = await tool_status(cwd, GitCache())
        cold.append(t)
    raw_ms = statistics.median(raw) * 1000
    for name, times, procs in (("tool_warm", warm, warm_procs), ("tool_cold", cold, cold_procs)):
        ms = statistics.median(times) * 1000
        print(json.dumps({"figure": f"git_status_{label}_{name}", "toolwire_ms": round(ms, 2),
                          "raw_git_ms": round(raw_ms, 2), "ratio": round(ms / raw_ms, 3),
                          "git_processes": procs, "raw_git_processes": 1, "rounds": rounds}))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small repository, few rounds (smoke run)")
    opts = parser.parse_args()
    files, modified, rounds = (500, 20, 3) if opts.quick else (5000, 200, 15)
    os.environ.setdefault("GIT_CONFIG_NOSYSTEM", "1")
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-git-") as tmp:
        root = make_repo(Path(tmp), files, modified)
        await measure(root, root, rounds, "root", modified)
        sub = root / "pkg" / "d00"
        await measure(root, sub, rounds, "subfolder", len([i for i in range(0, files, max(files // modified, 1))[:modified]
                                                           if i % 50 == 0]))


if __name__ == "__main__":
    anyio.run(main)
