"""One search_files run: open buffers, the engine's disk search, the excluded files.

Order of work: the open buffers whose text is not the disk's (unsaved changes, files not
saved yet) are found and searched first (few and small); then the engine searches the
disk, and the buffers' results are fed in at their place in path order while the disk
copies of those files are dropped; the names of the ``modelExclude`` files in scope are
listed meanwhile (never searched).
"""

from __future__ import annotations

import mmap
import os
import re
import threading
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import Path

import anyio

from toolwire.tools.base import ToolContext
from toolwire.tools.engine import (
    Engine,
    find_engine,
    ignored_among,
    list_batches,
    walk_files,
)
from toolwire.tools.gitrun import git_argv, git_env
from toolwire.tools.proc_stream import Outcome, stream_batches
from toolwire.tools.searchengines import (
    Search,
    feed_git_grep,
    feed_rg,
    git_grep_args,
    rg_argv,
    rg_buffer_hit,
    search_text,
)
from toolwire.tools.searchfeed import BufferHit, Feed, path_key
from toolwire.tools.searchparse import PyMatcher
from toolwire.tools.searchresult import Results
from toolwire.workspace.errors import ToolError, clip_quote, tool_error_in
from toolwire.workspace.fs import MAX_FILE_BYTES
from toolwire.workspace.globs import Glob, compile_glob
from toolwire.workspace.ignores import IgnoreRules, global_excludes_file, repo_top
from toolwire.workspace.names import display_name

__all__ = ["run_search", "Buffer", "dirty_buffers"]


@dataclass(frozen=True, slots=True)
class Buffer:
    """An open buffer searched instead of its file: ``name`` workspace-relative (file
    system spelling), ``text`` what the editor shows."""

    name: str
    text: str


def _in_scope(search: Search, glob: Glob | None, name: str) -> bool:
    target = search.target
    if target != "." and name != target and not name.startswith(search.base):
        return False
    if glob is None:
        return True
    return glob.match(name[len(search.base):] if name != target else os.path.basename(name))


def _same_as_disk(path: Path, data: bytes) -> bool:
    """True when the file at ``path`` holds ``data`` (with or without a UTF-8 BOM); a
    size that differs answers without reading the file."""
    try:
        size = os.stat(path).st_size
        if size not in (len(data), len(data) + 3):
            return False
        disk = path.read_bytes()
    except OSError:
        return False
    return disk == data or disk == b"\xef\xbb\xbf" + data


def dirty_buffers(ctx: ToolContext, search: Search, glob: Glob | None,
                  excluded: list[tuple[str, str]]) -> tuple[list[Buffer], frozenset[str]]:
    """The open buffers in scope whose text is not the file's (they are searched instead of
    it), and their names (their disk copies are not searched).

    Buffers of ``.git`` are left out; those of ``modelExclude`` files are not searched and
    go to ``excluded`` as ``(name, pattern)`` (a file created in the editor is on no disk
    listing).
    """
    out: list[Buffer] = []
    names: set[str] = set()
    seen: set[str] = set()
    for listed in ctx.documents.open_documents():
        try:
            name = listed.path.relative_to(search.root).as_posix()
        except ValueError:
            continue
        if name in seen or ".git" in name.split("/") or not _in_scope(search, glob, name):
            continue
        seen.add(name)
        try:  # one file open under two URIs is one buffer (or, holding two texts, none: the disk)
            doc = ctx.documents.get(listed.path) or listed
        except ToolError:
            continue
        pattern = ctx.model_exclude.match(name)
        if pattern is not None:
            excluded.append((name, pattern))
            continue
        if _same_as_disk(search.root / name, doc.text.encode("utf-8", "surrogatepass")):
            continue  # what the disk holds: the engine finds it there, in its ignore rules' light
        names.add(name)
        out.append(Buffer(name, doc.text))
    return out, frozenset(names)


def _ignore_args(search: Search) -> list[str]:
    """ripgrep's ignore options, as the list engine has them: git's global excludes file
    read the way git finds it (:func:`toolwire.workspace.ignores.global_excludes_file`)."""
    if search.ignored:
        return ["--no-ignore"]
    args = ["--no-ignore-global"]
    if repo_top(search.root) is not None:
        excludes = global_excludes_file()
        if excludes is not None and excludes.is_file():
            args += ["--ignore-file", str(excludes)]
    return args


def _error(engine: str, search: Search, stderr: str) -> ToolError:
    text = stderr.strip() or f"{engine} failed"
    if search.regex and ("regex" in text.lower() or "parse error" in text.lower() or "fatal:" in text):
        return ToolError("invalid_regex", f"invalid regular expression {clip_quote(search.query)}: "
                                          f"{clip_quote(text.splitlines()[-1] if text else text, 300)}. Fix it, "
                                          "or search for a literal text with regex false")
    return ToolError("search_failed", f"the search failed ({engine}): {clip_quote(text, 300)}")


async def _prefix_ignored(engine: Engine, search: Search, glob: Glob | None) -> bool:
    """True when the folder of ``include``'s literal prefix is ignored by the repository (or lies
    in an ignored folder): rg is given that folder as its path argument and never filters a path
    it is given, so it is asked first (git and the walk filter it themselves)."""
    if search.ignored or glob is None or not glob.prefix:
        return False
    folder = search.root / (search.base + glob.prefix.rstrip("/"))
    return bool(await ignored_among(engine, folder.parent, [folder.name], {folder.name}))


async def _rg_disk(engine: Engine, search: Search, glob: Glob | None, ctx: ToolContext, feed: Feed) -> None:
    if await _prefix_ignored(engine, search, glob):
        return
    argv = rg_argv(engine.rg or "rg", search, glob, ctx.model_exclude.rg_globs())
    argv[1:1] = _ignore_args(search)
    outcome = Outcome()
    async with aclosing(stream_batches(argv, search.root, sep="\n", outcome=outcome)) as batches:
        await feed_rg(_records(batches), feed)
    if outcome.returncode == 2 and outcome.stderr:
        raise _error("rg", search, outcome.stderr)


def _grep_env() -> dict[str, str]:
    """git's environment for ``git grep``: messages in C, characters UTF-8 (under ``LC_ALL=C``
    ``-i`` folds only ASCII letters, so ``ünïcode`` missed ``ÜNÏCODE``, which rg and the walk find)."""
    env = git_env(read_only=True)
    env.pop("LC_ALL", None)
    env.update(LANG="C", LC_MESSAGES="C", LC_CTYPE="C.UTF-8")
    return env


async def _git_disk(engine: Engine, search: Search, glob: Glob | None, ctx: ToolContext, feed: Feed) -> None:
    repository = repo_top(search.root) is not None
    for pcre in (True, False):
        args = git_grep_args(search, glob, ctx.model_exclude.git_pathspecs(), repository=repository, pcre=pcre)
        outcome = Outcome()
        async with aclosing(stream_batches(git_argv(args, read_only=True, literal_pathspecs=False), search.root,
                                           sep="\n", env=_grep_env(), outcome=outcome)) as batches:
            await feed_git_grep(_records(batches), feed)
        if outcome.returncode is None or outcome.returncode in (0, 1):
            return
        if not (pcre and search.regex and "pcre" in outcome.stderr.lower()):
            raise _error("git grep", search, outcome.stderr)
    # not reached


async def _records(batches: AsyncIterator[list[str]]) -> AsyncIterator[str]:
    async for batch in batches:
        for record in batch:
            yield record


def _walk_disk(search: Search, glob: Glob | None, ctx: ToolContext, feed: Feed, stop: threading.Event) -> None:
    """The walk engine, in a worker thread: every file below the scope, in path order,
    searched in Python (:class:`~toolwire.tools.searchparse.PyMatcher`)."""
    matcher = PyMatcher(search.query, regex=search.regex, ignore_case=search.ignore_case)
    raw = re.compile(search.query.encode("utf-8", "surrogateescape") if search.regex
                     else re.escape(search.query.encode("utf-8", "surrogateescape")),
                     re.IGNORECASE if search.ignore_case else 0)
    target = search.root / search.target
    if os.path.isfile(target) and not os.path.islink(target):
        names = [search.target]
    else:
        top = repo_top(search.root)
        rules = IgnoreRules(top) if top is not None and not search.ignored else None
        names = [search.base + rel for batch in walk_files(target, ignored=search.ignored, rules=rules, stop=stop,
                                                            max_depth=glob.max_depth if glob else None)
                 for rel in batch]
        names.sort(key=path_key)
    for name in names:
        if stop.is_set() or feed.results.done:
            return
        if not feed.wanted(name):
            continue
        pattern = ctx.model_exclude.match(name)
        if pattern is not None:
            if len(feed.results.excluded) < EXCLUDED_KEPT:
                feed.results.excluded.append((display_name(name), pattern))
            continue
        try:
            with open(search.root / name, "rb") as fh:
                if os.fstat(fh.fileno()).st_size > MAX_FILE_BYTES:  # only whether it matches: mapped, not read
                    with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                        if raw.search(mapped) is not None:
                            feed.begin(name)
                            feed.end(binary=False)
                    continue
                data = fh.read()
        except (OSError, ValueError):
            continue
        if b"\0" in data:
            if raw.search(data) is not None:
                feed.begin(name)
                feed.end(binary=True)
            continue
        text = data.decode("utf-8", "replace")
        if data.startswith(b"\xef\xbb\xbf"):
            text = text[1:]
        lines = list(matcher.lines(text, search.context))
        if lines:
            feed.begin(name)
            for line in lines:
                feed.line(line)
            feed.end(binary=False)


async def _buffer_hits(engine: Engine, search: Search, buffers: list[Buffer]) -> list[BufferHit]:
    """Each buffer searched: by ripgrep on stdin (the same expression syntax as the disk
    search), else in Python."""
    if engine.kind != "rg":  # in a worker thread: a large buffer or a slow expression never holds the loop
        matcher = _matcher(search)
        return await anyio.to_thread.run_sync(
            lambda: [search_text(matcher, b.name, b.text, search.context) for b in buffers], abandon_on_cancel=True)
    out = []
    argv = rg_argv(engine.rg or "rg", search, None, (), stdin=True)
    for buffer in buffers:
        outcome = Outcome()
        records: list[str] = []
        data = buffer.text.encode("utf-8", "surrogatepass")
        async with aclosing(stream_batches(argv, search.root, sep="\n", outcome=outcome, stdin=data)) as batches:
            async for batch in batches:
                records += batch
        if outcome.returncode == 2 and outcome.stderr:
            raise _error("rg", search, outcome.stderr)
        out.append(rg_buffer_hit(buffer.name, buffer.text, records))
    return out


def _matcher(search: Search) -> PyMatcher:
    try:
        return PyMatcher(search.query, regex=search.regex, ignore_case=search.ignore_case)
    except re.error as exc:
        raise ToolError("invalid_regex", f"invalid regular expression {clip_quote(search.query)}: {exc}. Fix it, "
                                         "or search for a literal text with regex false") from None


async def _disk(engine: Engine, search: Search, glob: Glob | None, ctx: ToolContext, feed: Feed) -> None:
    if engine.kind == "rg":
        await _rg_disk(engine, search, glob, ctx, feed)
    elif engine.kind == "git":
        await _git_disk(engine, search, glob, ctx, feed)
    else:
        stop = threading.Event()
        try:
            await anyio.to_thread.run_sync(_walk_disk, search, glob, ctx, feed, stop, abandon_on_cancel=True)
        finally:
            stop.set()


async def run_search(ctx: ToolContext, search: Search, results: Results) -> str:
    """Search the buffers and the disk into ``results``; the engine's name (``rg``, ``git``, ``walk``).

    Raises:
        ToolError: ``invalid_glob``, ``invalid_regex``, ``search_failed``.
    """
    glob = compile_glob(search.include) if search.include else None
    engine = find_engine(ctx.ripgrep)
    if engine.kind == "walk":
        _matcher(search)  # an expression error before any work (the walk's syntax is Python's)
    open_excluded: list[tuple[str, str]] = []
    buffers, shadowed = dirty_buffers(ctx, search, glob, open_excluded)
    if (buffers or open_excluded) and not search.ignored:  # an ignored file is neither searched nor named
        ignored = await ignored_among(engine, search.root, [b.name for b in buffers] + [n for n, _ in open_excluded],
                                      set())
        buffers = [b for b in buffers if b.name not in ignored]
        open_excluded = [item for item in open_excluded if item[0] not in ignored]
    hits = await _buffer_hits(engine, search, buffers)
    feed = Feed(results, search.root, search.base, glob, hits, shadowed)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_list_excluded, engine, search, glob, ctx, results)
            await _disk(engine, search, glob, ctx, feed)
    except ExceptionGroup as group:
        error = tool_error_in(group)
        if error is None:
            raise
        raise error from None
    feed.finish()
    named = {shown for shown, _ in results.excluded}
    for name, pattern in open_excluded:
        if display_name(name) not in named and len(results.excluded) < EXCLUDED_KEPT:
            results.excluded.append((display_name(name), pattern))
    results.excluded.sort(key=lambda item: path_key(item[0]))
    results.binary.sort(key=path_key)
    results.too_large.sort(key=path_key)
    return engine.kind


#: Most excluded files named in one result (the data too).
EXCLUDED_KEPT = 200


def _any_case(glob: str) -> str:
    """A glob matching ``glob``'s letters in any case (``*.pem`` -> ``*.[pP][eE][mM]``);
    one holding a ``[`` class is kept as it is."""
    if "[" in glob:
        return glob
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() and c.lower() != c.upper() else c for c in glob)


def _excluded_rg_argv(engine: Engine, search: Search, patterns: tuple[str, ...]) -> list[str] | None:
    """``rg --files`` of the files whose name the patterns could match (a superset:
    each pattern's last segment as a file type, in any case), or None when a pattern
    names folders only (``secrets/``: no file-name filter reaches what lies below)."""
    argv = [engine.rg or "rg", "--files", "--null", "--no-config", "--hidden", "--no-ignore-dot", "--no-messages",
            "--glob", "!.git", *_ignore_args(search)]
    for pattern in patterns:
        if pattern.endswith("/"):
            return None
        argv += ["--type-add", f"twexcluded:{_any_case(pattern.strip('/').rsplit('/', 1)[-1])}"]
    return argv + ["--type", "twexcluded", "--", search.target]


async def _list_excluded(engine: Engine, search: Search, glob: Glob | None, ctx: ToolContext,
                         results: Results) -> None:
    """Name the ``modelExclude`` files in scope (never searched) in ``results.excluded``."""
    exclude = ctx.model_exclude
    if not exclude or engine.kind == "walk":
        return  # the walk names them as it goes
    seen: set[str] = set()

    def take(names: list[str], prefix: str = "") -> None:
        for rel in names:
            name = prefix + rel
            if name in seen or not _in_scope(search, glob, name):
                continue
            pattern = exclude.match(name)
            if pattern is not None and len(results.excluded) < EXCLUDED_KEPT:
                seen.add(name)
                results.excluded.append((display_name(name), pattern))

    rg = _excluded_rg_argv(engine, search, exclude.patterns) if engine.kind == "rg" else None
    if rg is not None:
        source = stream_batches(rg, search.root)
    elif engine.kind == "git" and repo_top(search.root) is not None:
        specs = exclude.git_listing_pathspecs()  # a superset: take() tests each name
        args = ["ls-files", "-z", "--cached", "--others", *([] if search.ignored else ["--exclude-standard"]),
                "--", *specs]
        source = stream_batches(git_argv(args, read_only=True, literal_pathspecs=False), search.root,
                                env=git_env(read_only=True))
    else:
        base = search.root / search.target
        if not os.path.isdir(base):
            return
        async with aclosing(list_batches(engine, base, ignored=search.ignored, glob=None)) as listing:
            async for batch in listing:
                take(batch, search.base)
        return
    async with aclosing(source) as batches:
        async for batch in batches:
            take([name.removeprefix("./") for name in batch])
