"""Running a search on each engine: ripgrep, ``git grep``, or a walk in a worker thread.

Every engine runs from the workspace root, so the paths it prints are workspace-relative
and the ``modelExclude`` globs and pathspecs (rooted there) apply as written. The
options are the same on each (each has a test):

* literal unless ``regex`` (``rg -F`` / ``git grep -F``); the case as decided by the tool
  (``-i`` / ``-s``); ``context`` lines (``-C``);
* hidden files searched (``rg --hidden``), ``.git`` never (``--glob !.git``);
* files ignored by the repository left out unless ``ignored`` (``rg --no-ignore``,
  ``git grep --untracked --no-exclude-standard``); ``.ignore``/``.rgignore`` files are
  not git's and are not read (``rg --no-ignore-dot``); no user config (``--no-config``);
* binary files that match reported as such (``rg --binary``; git prints "Binary file
  x matches"); symbolic links not followed (both engines' default); files read as bytes
  (``rg -E none``: a UTF-16 file is binary, as git and read_file take it, not transcoded);
* files in path order (``rg --sort path``; git's index order), so a bounded result is
  the same on every run.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path

from toolwire.tools.searchfeed import BufferHit, Feed
from toolwire.tools.searchparse import End, GitGrepParser, Line, PyMatcher, RgParser
from toolwire.workspace.globs import Glob
from toolwire.workspace.paths import WorkspacePath

__all__ = ["Search", "rg_argv", "git_grep_args", "feed_rg", "feed_git_grep", "rg_buffer_hit", "search_text"]


@dataclass(frozen=True, slots=True)
class Search:
    """One search_files call, as the engines need it.

    Attributes:
        root: The workspace folder, resolved.
        scope: The ``path`` argument, checked.
        query: The text or expression.
        regex: ``query`` is a regular expression.
        ignore_case: Match regardless of case (smart case already decided).
        include: The glob, or None.
        context: Context lines around each match.
        ignored: Search files the repository ignores too.
    """

    root: Path
    scope: WorkspacePath
    query: str
    regex: bool
    ignore_case: bool
    include: str | None
    context: int
    ignored: bool

    @property
    def target(self) -> str:
        """The folder or file searched, workspace-relative, as the file system spells it, with
        every symbolic link followed: the engines search the real paths, so the ``modelExclude``
        and ignore rules apply to what is read (a link to ``conf/`` does not open up
        ``conf/secret.json``) and results name the files where they are."""
        rel = self.scope.resolved.relative_to(self.root).as_posix()
        return "." if rel in ("", ".") else rel

    @property
    def base(self) -> str:
        """:attr:`target` with a trailing ``/`` (``""`` for the root): the part before the
        path ``include`` is matched against."""
        return "" if self.target == "." else self.target + "/"


def _target(search: Search, glob: Glob | None) -> str:
    """Where the engine starts: the scope, and the glob's literal folders below it."""
    target = search.base + (glob.prefix if glob is not None else "")
    return target.rstrip("/") or "."


def rg_argv(rg: str, search: Search, glob: Glob | None, exclude_globs: Iterable[str], *,
            stdin: bool = False) -> list[str]:
    """The ripgrep command line (run from the root; ``stdin``: search the text fed on stdin)."""
    argv = [rg, "--json", "--no-config", "--no-messages", "--binary", "--hidden", "--no-ignore-dot", "-E", "none",
            "-i" if search.ignore_case else "-s"]
    if not search.regex:
        argv.append("--fixed-strings")
    if search.context:
        argv += ["--context", str(search.context)]
    if stdin:
        return argv + ["-e", search.query, "-"]
    argv += ["--sort", "path", "--glob", "!.git"]
    if search.ignored:
        argv.append("--no-ignore")
    argv += list(exclude_globs)
    if glob is not None:
        argv += glob.rg_args()
    return argv + ["-e", search.query, "--", _target(search, glob)]


def git_grep_args(search: Search, glob: Glob | None, exclude_pathspecs: Iterable[str], *, repository: bool,
                  pcre: bool = True) -> list[str]:
    """``git grep`` arguments (after ``git`` and its ``-c`` settings; pathspec magic on)."""
    args = ["grep", "-z", "--column", "-n", "--no-color"]
    if repository:
        args.append("--untracked")
        if search.ignored:
            args.append("--no-exclude-standard")
    else:
        args.append("--no-index")
    args.append(("-P" if pcre else "-E") if search.regex else "-F")
    if search.ignore_case:
        args.append("-i")
    if search.context:
        args += ["-C", str(search.context)]
    if glob is not None and not os.path.isfile(search.root / search.target):
        specs = glob.pathspecs(search.base)
    else:  # no glob, or a file as path (its name is matched against the glob afterwards)
        specs = [f":(literal){search.target}"] if search.target != "." else ["."]
    return args + ["-e", search.query, "--", *specs, *exclude_pathspecs]


def search_text(matcher: PyMatcher, name: str, text: str, context: int) -> BufferHit:
    """One text (an open buffer, a file of the walk) searched in Python."""
    return BufferHit(name, tuple(matcher.lines(text, context)), binary="\0" in text,
                     size=len(text.encode("utf-8", "surrogatepass")))


async def feed_rg(lines: AsyncIterator[bytes], feed: Feed) -> None:
    """``rg --json`` output into ``feed`` until it ends or the results are done. Past the
    limit, match lines are counted without being parsed."""
    parser = RgParser()
    results = feed.results
    async for raw in lines:
        if results.counting and not raw.startswith(('{"type":"begin"', '{"type":"end"')):
            if raw.startswith('{"type":"match"'):
                feed.count_match()
        else:
            for event in parser.feed(raw):
                feed.event(event)
        if results.done:
            break


async def feed_git_grep(lines: AsyncIterator[bytes], feed: Feed) -> None:
    """``git grep -z --column -n`` output into ``feed`` until it ends or the results are done."""
    parser = GitGrepParser()
    results = feed.results
    async for raw in lines:
        for event in parser.feed(raw):
            feed.event(event)
        if results.done:
            return
    for event in parser.close():
        feed.event(event)


def rg_buffer_hit(name: str, text: str, output: Iterable[bytes]) -> BufferHit:
    """The result of ``rg --json ... -`` run on one buffer's ``text``."""
    parser = RgParser()
    lines: list[Line] = []
    binary = False
    for raw in output:
        for event in parser.feed(raw):
            if isinstance(event, Line):
                lines.append(event)
            elif isinstance(event, End):
                binary = event.binary
    return BufferHit(name, tuple(lines), binary=binary or "\0" in text,
                     size=len(text.encode("utf-8", "surrogatepass")))
