"""From an engine's events to the bounded results: which files count, in which order.

:class:`Feed` sits between an engine (:mod:`toolwire.tools.searchparse` events, files
in path order) and :class:`~toolwire.tools.searchresult.Results`. For each file it
decides: outside the ``include`` glob (the engines' narrowing is a superset), shadowed
by an open buffer (the buffer's own lines are fed instead, at the same place in the
order), binary (named), over the read limit (named), or kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from toolwire.tools.searchparse import Begin, End, Event, Line
from toolwire.tools.searchresult import Results
from toolwire.workspace.fs import MAX_FILE_BYTES
from toolwire.workspace.globs import Glob
from toolwire.workspace.names import display_name

__all__ = ["BufferHit", "Feed", "path_key"]


def path_key(name: str) -> list[str]:
    """Sort key of a workspace-relative path: folder by folder (ripgrep's ``--sort path``)."""
    return name.split("/")


@dataclass(slots=True, frozen=True)
class BufferHit:
    """The search result of one open buffer.

    Attributes:
        name: Workspace-relative path as the file system spells it.
        lines: Its matching and context lines.
        binary: The buffer holds a NUL character.
        size: Its size in bytes (UTF-8).
    """

    name: str
    lines: tuple[Line, ...]
    binary: bool = False
    size: int = 0


class Feed:
    """Feeds one engine run into ``results``.

    Args:
        results: Where kept lines and counts go.
        root: The workspace folder (resolved); engine paths are relative to it.
        base: The search folder, workspace-relative with a trailing ``/`` (``""`` for
            the root): ``include`` is matched against the path below it.
        glob: The compiled ``include``, or None.
        buffers: The results of the open buffers searched instead of their files.
        shadowed: Workspace-relative names whose disk copy is not searched (open
            buffers, searched or not).
    """

    def __init__(self, results: Results, root: Path, base: str, glob: Glob | None,
                 buffers: Iterable[BufferHit], shadowed: frozenset[str]) -> None:
        self.results = results
        self.root = root
        self._prefix = os.path.join(root, "")  # a str: one stat per matching file, no Path built
        self.base = base
        self.glob = glob
        self.shadowed = shadowed
        self._buffers = sorted(buffers, key=lambda b: path_key(b.name), reverse=True)
        self._skip = True  # the current file's lines are not wanted
        self._large = False  # the current file is over the read limit
        self._name = ""

    def wanted(self, name: str) -> bool:
        """True when the engine's file ``name`` (workspace-relative) is one to report."""
        if name in self.shadowed or name.startswith(".git/") or "/.git/" in name:
            return False  # .git never (rg searches a .git it is given as its path whatever --glob !.git says)
        if self.glob is None:
            return True
        if self.base and name.startswith(self.base):
            return self.glob.match(name[len(self.base):])
        return self.glob.match(name.rsplit("/", 1)[-1] if self.base else name)  # a file as path: its name

    def _flush_buffers(self, before: str | None) -> None:
        """Feed the buffers that sort before ``before`` (all of them for None)."""
        while self._buffers and (before is None or path_key(self._buffers[-1].name) < path_key(before)):
            hit = self._buffers.pop()
            if self.results.done:
                return
            self._feed_buffer(hit)

    def _feed_buffer(self, hit: BufferHit) -> None:
        if not any(line.match for line in hit.lines):
            return
        shown = display_name(hit.name)
        if hit.binary:
            self.results.binary.append(shown)
        elif hit.size > MAX_FILE_BYTES:
            self.results.too_large.append(shown)
        else:
            self.results.add_file(shown, list(hit.lines), hit.name)

    def begin(self, name: str) -> None:
        """The engine starts file ``name`` (workspace-relative, no leading ``./``)."""
        self._flush_buffers(name)
        self._name = name
        self._skip = not self.wanted(name)
        self._large = False
        if self._skip:
            return
        try:  # past the limit too: a big file's matches are not counted, and it is named
            self._large = os.stat(self._prefix + name).st_size > MAX_FILE_BYTES
        except OSError:
            pass
        self._skip = self._large
        self.results.begin(display_name(name), name)

    def line(self, line: Line) -> None:
        """A line of the current file."""
        if not self._skip:
            self.results.line(line)

    def count_match(self) -> None:
        """A match line of the current file past the limit (not parsed: only counted)."""
        if not self._skip:
            self.results.count_match()

    def end(self, binary: bool) -> None:
        """The engine is done with the current file; ``binary`` when it held a NUL."""
        name, self._name = self._name, ""
        if self._skip:
            if self._large:
                self.results.too_large.append(display_name(name))
            self._skip = self._large = False
            return
        self._skip = True
        if binary:  # an engine reports a file only when it matches: a binary file that matches
            self.results.drop()
            self.results.binary.append(display_name(name))
            return
        self.results.end()

    def event(self, event: Event) -> None:
        """One engine event (paths as the engine printed them, relative to the root)."""
        if isinstance(event, Line):
            self.line(event)
        elif isinstance(event, Begin):
            self.begin(event.path.removeprefix("./"))
        elif isinstance(event, End):
            self.end(event.binary)

    def finish(self) -> None:
        """The engine is done: feed the buffers left, order the files."""
        if self._name:
            self.end(False)
        self._flush_buffers(None)
        self.results.sort()
