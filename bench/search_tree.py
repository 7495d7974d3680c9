"""A generated workspace for ``bench/search_files.py``: a git repository of about
20,000 files / 200 MB with a ``.gitignore`` and a few large ignored folders.

The tree is built deterministically (one seeded ``random.Random``) into a cache folder
outside the repository (``$TOOLWIRE_BENCH_CACHE``, else ``~/.cache/toolwire-bench``) and
reused while its name matches :data:`VERSION` and the scale asked for; it is built in a
temporary sibling and renamed into place, so a half-built tree is never reused
(``python bench/search_tree.py [scale]`` builds it and prints where).

Layout (``scale`` 1.0; ``--quick`` uses 0.1):

* ``src/pNN/mNN/fNNNNN.{py,ts,md,json,txt}``: 12,000 committed files of ~9 KB;
  ``.github/``, ``.config/``: a few committed hidden files;
* ``scratch/``: 2,000 untracked files (not ignored: they are searched);
* ``data/``: 3 committed files of 3 MB (over the 2 MiB read limit: skipped) and
  ``assets/``: 50 binary files (NUL bytes: named, not searched);
* ignored by ``.gitignore``: ``node_modules/`` (3,500 files), ``build/`` (1,500, five of
  them 2 MB), ``.venv/`` (1,000) and ``*.log`` files.

Planted lines (the bench checks every engine and tool finds exactly the visible ones):

* :data:`RARE` (``needle_literal_rare``, some lines spelled ``Needle_Literal_Rare``) in 10
  visible files, and also in ignored files, a binary file and a too-large file;
* :data:`RARE_REGEX` matches one planted ``color_<name> = 0x<6 hex>`` line in 10 visible
  files (and in ignored ones);
* :data:`COMMON` (``common_marker``) on about 4 % of all lines: ~100,000 visible matches.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

VERSION = "search-tree-v1"
RARE = "needle_literal_rare"
RARE_REGEX = r"color_[a-z]+\s*=\s*0x[0-9a-f]{6}\b"
COMMON = "common_marker"
VISIBLE_RARE_FILES = 10

_WORDS = ("self value result config handler request response buffer index offset token stream "
          "session worker listener factory return import from class def async await yield lambda "
          "items keys parse render update delete create select filter reduce merge split join "
          "alpha beta gamma delta epsilon path folder name size count limit total match line").split()
_EXTS = (".py", ".py", ".ts", ".md", ".json", ".txt")
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b",
            "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@b",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


@dataclass(frozen=True, slots=True)
class Tree:
    """A built tree: its root and what was planted in it (from its ``.bench.json``)."""

    root: Path
    files: int
    bytes: int
    visible_files: int


def cache_dir() -> Path:
    return Path(os.environ.get("TOOLWIRE_BENCH_CACHE") or Path.home() / ".cache" / "toolwire-bench")


def git(root: Path, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV}
    return subprocess.run(["git", "-c", "gc.auto=0", "-c", "maintenance.auto=false", *args], cwd=root,
                          env=env, check=True, capture_output=True, text=True).stdout


def _pool(rng: random.Random, size: int) -> list[str]:
    """Lines to draw file bodies from; about 4 % carry :data:`COMMON`."""
    lines = []
    for i in range(size):
        words = rng.choices(_WORDS, k=rng.randint(3, 11))
        indent = "    " * rng.randint(0, 3)
        line = indent + " ".join(words)
        if i % 25 == 0:
            line += f" = {COMMON}({i})"
        lines.append(line)
    return lines


def _body(rng: random.Random, pool: list[str], nbytes: int) -> list[str]:
    return rng.choices(pool, k=max(nbytes // 48, 1))


def _write(path: Path, lines: list[str]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return len(data)


def _plant(rng: random.Random, lines: list[str], text: str) -> None:
    lines.insert(rng.randrange(len(lines) + 1), text)


def build(scale: float = 1.0) -> Tree:
    """The tree for ``scale`` (1.0: ~20,000 files / 200 MB), built unless cached.

    The cache entry is a folder holding ``repo/`` (the workspace) and ``bench.json``
    (what was built; written last, so its presence means the tree is whole)."""
    name = f"{VERSION}-x{scale:g}"
    entry = cache_dir() / name
    stamp = entry / "bench.json"
    if not stamp.is_file():
        tmp = cache_dir() / f".{name}.building-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "repo").mkdir(parents=True)
        meta = _generate(tmp / "repo", scale)
        (tmp / "bench.json").write_text(json.dumps(meta))
        shutil.rmtree(entry, ignore_errors=True)
        tmp.rename(entry)
        git(entry / "repo", "update-index", "-q", "--refresh")  # the index holds the build path's stat data
    meta = json.loads(stamp.read_text())
    return Tree(entry / "repo", meta["files"], meta["bytes"], meta["visible_files"])


def _generate(root: Path, scale: float) -> dict:
    rng = random.Random(21)
    pool = _pool(rng, 5000)
    n = lambda count: max(int(count * scale), 2)  # noqa: E731
    total_files = total_bytes = 0
    visible: list[tuple[Path, list[str]]] = []   # planted later, written at the end

    def add(path: Path, lines: list[str]) -> None:
        nonlocal total_files, total_bytes
        total_files += 1
        total_bytes += _write(path, lines)

    (root / ".gitignore").write_text("node_modules/\nbuild/\n.venv/\n*.log\n")
    for i in range(n(12000)):
        path = root / "src" / f"p{i % 40:02d}" / f"m{i // 40 % 25:02d}" / f"f{i:05d}{_EXTS[i % len(_EXTS)]}"
        visible.append((path, _body(rng, pool, rng.randint(2000, 16000))))
    for i in range(6):
        visible.append((root / (".github/workflows" if i < 3 else ".config") / f"hidden{i}.yml",
                        _body(rng, pool, 3000)))
    untracked_from = len(visible)
    for i in range(n(2000)):
        visible.append((root / "scratch" / f"s{i % 20:02d}" / f"note{i:04d}{_EXTS[i % len(_EXTS)]}",
                        _body(rng, pool, rng.randint(2000, 16000))))
    rare_at = rng.sample(range(len(visible)), VISIBLE_RARE_FILES)
    regex_at = rng.sample(range(len(visible)), VISIBLE_RARE_FILES)
    for k, idx in enumerate(rare_at):
        _plant(rng, visible[idx][1], f"x = '{RARE if k % 3 else RARE.title().replace('_l', '_L')}'")
    for idx in regex_at:
        _plant(rng, visible[idx][1], f"color_{rng.choice(_WORDS)} = 0x{rng.randrange(16 ** 6):06x}")
    for path, lines in visible:
        add(path, lines)
    for i in range(3):  # over the 2 MiB read limit: skipped and counted
        lines = _body(rng, pool, 3_000_000)
        _plant(rng, lines, f"{RARE} in a big file")
        add(root / "data" / f"big{i}.txt", lines)
    for i in range(n(50)):
        blob = rng.randbytes(4000) + b"\0" + f"{RARE}\n".encode()
        path = root / "assets" / f"img{i:03d}.bin"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
        total_files += 1
        total_bytes += len(blob)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A", "--", ".", ":!scratch")
    git(root, "commit", "-q", "-m", "generated tree")
    ignored = [("node_modules", n(3500), 10000), ("build", n(1500), 10000), (".venv/lib", n(1000), 10000)]
    for folder, count, size in ignored:
        for i in range(count):
            lines = _body(rng, pool, rng.randint(size // 2, size * 3 // 2))
            if i % 500 == 7:
                _plant(rng, lines, f"{RARE} ignored")
                _plant(rng, lines, "color_ignored = 0xabcdef")
            add(root / folder / f"pkg{i % 50:02d}" / f"file{i:05d}{_EXTS[i % len(_EXTS)]}", lines)
    for i in range(5):
        add(root / "build" / f"bundle{i}.js", _body(rng, pool, 2_000_000))
    for i in range(3):
        add(root / "src" / f"run{i}.log", [f"{RARE} in a log"] + _body(rng, pool, 5000))
    return {"files": total_files, "bytes": total_bytes, "visible_files": len(visible) + 3 + n(50),
            "untracked_files": len(visible) - untracked_from, "scale": scale}


if __name__ == "__main__":
    import sys
    import time
    start = time.perf_counter()
    tree = build(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
    print(json.dumps({"root": str(tree.root), "files": tree.files, "bytes": tree.bytes,
                      "visible_files": tree.visible_files, "seconds": round(time.perf_counter() - start, 1)}))
