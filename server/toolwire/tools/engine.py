"""The engine that lists and searches the workspace: ripgrep, else git, else a walk.

Which one (:func:`find_engine`, in this order; protocol.md "Search engine"):

1. ``rg`` of the server's own environment (the ``ripgrep==14.1.0`` wheel installs it beside
   the Python executable), then ``rg`` on ``PATH``, then the ``rg`` the editor ships (the
   ``ripgrepPath`` setting: the VS Code client passes VS Code's own
   ``@vscode/ripgrep`` binary);
2. the ``git`` binary: ``git ls-files`` (and ``git grep``) inside a repository; outside one
   the walk below lists the files;
3. a walk of the folder in a worker thread (:func:`walk_files`), with the repository's
   ignore rules read in Python (:mod:`toolwire.workspace.ignores`).

``TOOLWIRE_ENGINE=rg|git|walk`` in the server's environment picks one (tests run every case
under each); an engine that is not there falls to the next.

Every engine gives the same files: ``.git`` never; hidden files and folders yes; ignored files
(``.gitignore``, ``.git/info/exclude``, the global excludes file) only with ``ignored``;
symbolic links never followed (a listing of files names regular files only).

Subprocesses stream (:func:`toolwire.tools.proc_stream.stream_batches`): stdout is read in
chunks and handed on as lists of records, nothing blocks the event loop, and the process (its
whole group) is killed at once when the reader stops early, fails or is cancelled.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
from contextlib import aclosing
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import anyio

from toolwire.tools.gitrun import git_argv, git_env
from toolwire.tools.proc_stream import Outcome, stream_batches
from toolwire.workspace.errors import ToolError
from toolwire.workspace.globs import Glob
from toolwire.workspace.ignores import IgnoreRules, global_excludes_file, repo_top

__all__ = [
    "ENGINE_ENV",
    "Engine",
    "EngineKind",
    "find_engine",
    "find_rg",
    "rg_list_argv",
    "git_list_argv",
    "stream_batches",
    "Outcome",
    "walk_files",
    "list_batches",
    "ignored_among",
    "in_repository",
]

EngineKind = Literal["rg", "git", "walk"]
#: Environment variable that picks the engine (``rg``, ``git`` or ``walk``).
ENGINE_ENV = "TOOLWIRE_ENGINE"
#: Records a walk hands on at a time.
WALK_BATCH = 4096

_EXE = ".exe" if os.name == "nt" else ""
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Engine:
    """The engine a call runs with.

    Attributes:
        kind: ``rg``, ``git`` or ``walk``.
        rg: The ``rg`` executable (kind ``rg``), else None.
        git: The ``git`` executable when one is on ``PATH`` (any kind but ``walk``: the rg
            engine asks git which names are ignored), else None.
    """

    kind: EngineKind
    rg: str | None = None
    git: str | None = None


def _executable(path: str | os.PathLike[str] | None) -> str | None:
    if not path:
        return None
    text = os.fspath(path)
    return text if os.path.isfile(text) and os.access(text, os.X_OK) else None


def find_rg(client_rg: str | None = None) -> str | None:
    """The ``rg`` to run: the server's environment's, then ``PATH``'s, then ``client_rg``."""
    own = Path(sys.executable).parent / f"rg{_EXE}"
    scripts = Path(sys.prefix) / ("Scripts" if os.name == "nt" else "bin") / f"rg{_EXE}"
    return _executable(own) or _executable(scripts) or _executable(shutil.which("rg")) or _executable(client_rg)


def find_engine(client_rg: str | None = None) -> Engine:
    """The engine of this call (module docstring). Looked up each call: a few ``stat`` calls.

    Args:
        client_rg: The ``rg`` the editor offers (the ``ripgrepPath`` setting), or None.
    """
    wanted = os.environ.get(ENGINE_ENV, "").strip().lower()
    git = shutil.which("git") if wanted != "walk" else None
    if wanted in ("", "rg"):
        rg = find_rg(client_rg)
        if rg is not None:
            return Engine("rg", rg, git)
    if git is not None:
        return Engine("git", None, git)
    return Engine("walk")


def in_repository(base: Path) -> bool:
    """True when ``base`` lies in a git working tree (a ``.git`` at or above it)."""
    return repo_top(base) is not None


def rg_list_argv(engine: Engine, *, ignored: bool, glob: Glob | None, excludes: str | None) -> list[str]:
    """``rg --files`` of the folder rg runs in: NUL-separated paths relative to it.

    Args:
        engine: An ``rg`` engine.
        ignored: List ignored files too (``--no-ignore``).
        glob: Narrows the walk (:meth:`Glob.rg_args`, never an override).
        excludes: The global excludes file (:func:`toolwire.workspace.ignores.global_excludes_file`;
            rg's own lookup is off), or None.
    """
    assert engine.rg is not None
    argv = [engine.rg, "--files", "--null", "--no-config", "--hidden", "--no-ignore-dot", "--glob", "!.git"]
    if ignored:
        argv.append("--no-ignore")
    else:
        argv.append("--no-ignore-global")
    if excludes and not ignored:
        argv += ["--ignore-file", excludes]
    if glob is not None:
        argv += glob.rg_args()
    return argv


def git_list_argv(*, ignored: bool, glob: Glob | None) -> list[str]:
    """``git ls-files`` of the folder git runs in: tracked and untracked files, NUL-separated,
    relative to it; ignored ones only with ``ignored``."""
    args = ["ls-files", "-z", "--cached", "--others"]
    if not ignored:
        args.append("--exclude-standard")
    if glob is not None:
        args += ["--", *glob.pathspecs()]
    return git_argv(args, read_only=True, literal_pathspecs=False)


def walk_files(base: Path, *, ignored: bool, rules: IgnoreRules | None, stop: threading.Event,
               max_depth: int | None = None) -> Iterator[list[str]]:
    """The regular files below ``base``, one list per folder, paths relative to ``base``.

    Never enters ``.git`` or a symbolic link; skips folders it cannot read. Runs in a worker
    thread; stops at the next folder once ``stop`` is set.

    Args:
        base: The folder to walk.
        ignored: Keep ignored files and folders.
        rules: The repository's rules (None outside a repository: nothing is ignored).
        stop: Set to end the walk.
        max_depth: Most path segments of a file, or None.
    """
    top_rel = ""
    if rules is not None:
        rel = base.relative_to(rules.top).as_posix()
        top_rel = "" if rel == "." else rel + "/"
    check = rules if (rules is not None and not ignored) else None
    # (folder, the rules deciding in it, how many leading characters of a path below it to drop
    # and what to put in front to make it relative to those rules' repository): a repository
    # inside the walked one (a submodule, a clone in a sub-folder) has its own rules, not these.
    pending: list[tuple[str, IgnoreRules | None, int, str]] = [("", check, 0, top_rel)]
    while pending and not stop.is_set():
        folder, check, strip, prefix = pending.pop()
        depth = folder.count("/") + 1 if folder else 1
        try:
            with os.scandir(base / folder if folder else base) as it:
                entries = list(it)
        except OSError:
            continue
        out = []
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            rel = folder + name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
                is_file = not is_dir and entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if not (is_dir or is_file):
                continue
            if check is not None and check.ignored_here(prefix + rel[strip:], is_dir):
                continue
            if is_dir:
                if max_depth is None or depth < max_depth:
                    if check is not None and os.path.lexists(os.path.join(entry.path, ".git")):
                        pending.append((rel + "/", IgnoreRules(Path(entry.path)), len(rel) + 1, ""))
                    else:
                        pending.append((rel + "/", check, strip, prefix))
            else:
                out.append(rel)
        if out:
            yield out


async def _walk_batches(base: Path, *, ignored: bool, max_depth: int | None) -> AsyncIterator[list[str]]:
    top = repo_top(base)
    rules = IgnoreRules(top) if top is not None and not ignored else None
    stop = threading.Event()
    walker = walk_files(base, ignored=ignored, rules=rules, stop=stop, max_depth=max_depth)

    def pull() -> list[str] | None:
        batch: list[str] = []
        for part in walker:
            batch += part
            if len(batch) >= WALK_BATCH:
                break
        return batch or None

    try:
        while (batch := await anyio.to_thread.run_sync(pull, abandon_on_cancel=True)) is not None:
            yield batch
    finally:
        stop.set()


def _rg_excludes() -> str | None:
    """The global excludes file as git finds it (rg's own lookup, ``--no-ignore-global``
    here, reads neither ``GIT_CONFIG_GLOBAL`` nor ``GIT_CONFIG_NOSYSTEM``)."""
    path = global_excludes_file()
    return str(path) if path is not None and path.is_file() else None


async def list_batches(engine: Engine, base: Path, *, ignored: bool, glob: Glob | None) -> AsyncIterator[list[str]]:
    """The files below ``base`` as lists of paths relative to it, from the engine, in no order.

    With ``glob``, only paths it matches (the engine narrows, :meth:`Glob.filter` decides).
    Regular files only for rg and the walk; git also names tracked symbolic links and tracked
    files deleted from the disk (the caller checks what it shows). Use inside
    ``contextlib.aclosing``.

    An engine that fails before it names a file (git refusing the repository, a damaged
    index) hands over to the walk, which lists the same files; rg naming some files but
    not all (a folder it cannot read) is taken as it is, as the walk skips such folders.

    Raises:
        ToolError: ``engine_failed`` when the engine failed after naming files (what it
            named is not all there is), or rg failed naming none; the message is its own.
    """
    outcome = Outcome()
    if engine.kind == "rg":
        excludes = None if ignored or not in_repository(base) else _rg_excludes()
        argv = rg_list_argv(engine, ignored=ignored, glob=glob, excludes=excludes)
        source = stream_batches(argv, base, outcome=outcome)
    elif engine.kind == "git" and in_repository(base):
        source = stream_batches(git_list_argv(ignored=ignored, glob=glob), base, env=git_env(read_only=True),
                                outcome=outcome)
    else:
        source = _walk_batches(base, ignored=ignored, max_depth=glob.max_depth if glob else None)
        outcome.returncode = 0
    named = False
    try:
        async for batch in source:
            named = True
            yield batch if glob is None else list(glob.filter(batch))
    finally:
        await source.aclose()
    code = outcome.returncode
    if engine.kind == "rg" and (code in (0, 1) or named):
        return
    if code == 0:
        return
    name = "rg" if engine.kind == "rg" else "git ls-files"
    reason = (outcome.stderr.splitlines() or [f"exit status {code}"])[-1]
    if engine.kind == "git" and not named:
        log.warning("%s failed in %s (%s); listing with the walk", name, base, reason)
        async with aclosing(list_batches(Engine("walk"), base, ignored=ignored, glob=glob)) as walked:
            async for batch in walked:
                yield batch
        return
    raise ToolError("engine_failed", f"{name} failed: {reason}")


async def ignored_among(engine: Engine, base: Path, names: Sequence[str], dirs: set[str]) -> set[str]:
    """Which of ``names`` (paths relative to ``base``) the repository ignores.

    git answers when there is one (``git check-ignore``: tracked files are never ignored);
    the walk engine, or no git, reads the rules in Python (``dirs`` says which names are
    folders). Outside a repository nothing is ignored.
    """
    top = repo_top(base)
    if top is None or not names:
        return set()
    if engine.git is not None and engine.kind != "walk":
        outcome = Outcome()
        payload = b"".join(os.fsencode(name) + b"\0" for name in names)
        argv = git_argv(["check-ignore", "-z", "--stdin"], read_only=True, literal_pathspecs=False)
        out: set[str] = set()
        checks = stream_batches(argv, base, env=git_env(read_only=True), outcome=outcome, stdin=payload)
        async with aclosing(checks) as batches:
            async for batch in batches:
                out.update(batch)
        if outcome.returncode in (0, 1):
            return out
    rules = IgnoreRules(top)
    rel = base.relative_to(top).as_posix()
    prefix = "" if rel == "." else rel + "/"
    return {name for name in names if rules.ignored(prefix + name, name in dirs)}
