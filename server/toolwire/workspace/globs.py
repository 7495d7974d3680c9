"""The glob rules of list_files and search_files, and their forms for each engine.

Rules (issue 21; protocol.md "Globs"): gitignore-style wildcards, matched against the whole
path *relative to the tool's ``path``* (always anchored there, unlike a ``.gitignore`` line
without a slash):

* ``*`` and ``?`` never cross ``/``; ``[abc]``, ``[a-z]``, ``[!a]`` (or ``[^a]``) are one
  character of a set; ``\\`` makes the next character literal;
* ``**`` as a whole path segment matches any number of folders, none included
  (``**/*.py`` is every ``.py`` file, ``src/**`` everything below ``src``); elsewhere it is ``*``;
* ``{a,b}`` alternates (nested groups and ``{1..3}`` ranges too), at most
  :data:`MAX_ALTERNATIVES` alternatives in all;
* ``*.py`` is only directly under ``path``; a leading ``./`` or ``/`` is dropped; a trailing ``/``
  means everything below (``build/`` is ``build/**``); ``*`` matches names starting with a dot;
* matching is case-sensitive, ``/`` is the only separator.

:func:`compile_glob` turns a pattern into a :class:`Glob`: the exact matcher (a regular
expression that the ``wcmatch`` library translates, one per alternative after ``bracex``
expanded the braces) and the narrowing each engine may use to read fewer files
(:meth:`Glob.rg_args`, :meth:`Glob.pathspecs`, :attr:`Glob.prefix`); the engines' own glob
dialects differ in the corners, so every engine's candidates go through :meth:`Glob.match`.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import bracex
from wcmatch import glob as wcglob

from toolwire.workspace.errors import ToolError, clip_quote

__all__ = ["Glob", "compile_glob", "MAX_ALTERNATIVES", "MAX_PATTERN"]

#: Most alternatives one pattern's ``{a,b}`` groups may expand to.
MAX_ALTERNATIVES = 64
#: Longest pattern (characters).
MAX_PATTERN = 1000

_FLAGS = wcglob.GLOBSTAR | wcglob.DOTGLOB | wcglob.FORCEUNIX
_META = re.compile(r"[*?\[\\]")
_TIP = "write * and ? for names, ** for any folders, {a,b} for alternatives"


def _fail(pattern: str, why: str) -> ToolError:
    return ToolError("invalid_glob", f"invalid glob {clip_quote(pattern)}: {why}; {_TIP} (e.g. **/*.py)")


def _check_brackets(pattern: str, alternative: str) -> None:
    """Refuse an unclosed ``[`` and a ``{`` or ``}`` left over after brace expansion."""
    i, n = 0, len(alternative)
    while i < n:
        ch = alternative[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            j = i + 1
            if j < n and alternative[j] in "!^":
                j += 1
            if j < n and alternative[j] == "]":
                j += 1
            while j < n and alternative[j] != "]":
                j += 2 if alternative[j] == "\\" else 1
            if j >= n:
                raise _fail(pattern, "a [ has no closing ] (write \\[ for a literal bracket)")
            i = j + 1
            continue
        if ch in "{}":
            raise _fail(pattern, f"an unbalanced {ch} or a {{group}} without a comma (write \\{ch} for a literal brace)")
        i += 1


def _normalize(pattern: str) -> str:
    text = pattern.strip()
    while text.startswith("./"):
        text = text[2:]
    if text.startswith("/"):
        text = text.lstrip("/")
    if text.endswith("/"):
        text = text.rstrip("/") + "/**"
    return text


def _unescape(segment: str) -> str:
    return re.sub(r"\\(.)", r"\1", segment)


def _segment_body(pattern: str, segment: str) -> str | None:
    """wcmatch's expression for one path segment without its anchors, or None."""
    try:
        _check_brackets(pattern, segment)
    except ToolError:
        return None  # a [...] holding a /: the whole-pattern translation decides
    sources = wcglob.translate(segment, flags=_FLAGS)[0]
    if len(sources) != 1 or not (sources[0].startswith("^(?s:") and sources[0].endswith(")$")):
        return None
    return sources[0][5:-2]


def _sources(pattern: str, alternative: str) -> list[str]:
    """The expression of one alternative: wcmatch's translation of each name segment, joined
    with ``**`` as ``(?:[^/]+/)*`` (any folders) or, last, ``.*`` (anything below).

    Same matches as wcmatch's translation of the whole alternative for every normalized path
    (no empty, ``.`` or ``..`` segment; tests/test_globs.py checks it), in a fraction of the
    time: wcmatch guards each character a ``**`` takes with a look-ahead against ``.`` and
    ``..`` segments, about 2 us a path, which the listing of a large tree would pay per file.
    """
    parts = [part for i, part in enumerate(alternative.split("/"))
             if not (part == "**" and i and alternative.split("/")[i - 1] == "**")]  # **/** is **
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        body = _segment_body(pattern, part)
        if body is None:
            return wcglob.translate(alternative, flags=_FLAGS)[0]
        out.append(body if last else body + "/")
    return ["^(?s:" + "".join(out) + ")$"]


@dataclass(frozen=True, slots=True)
class Glob:
    """A compiled pattern.

    Attributes:
        pattern: The pattern as written.
        alternatives: The normalized pattern with its ``{a,b}`` groups expanded, each brace-free,
            in the order written (duplicates dropped).
        regex: One regular expression matching exactly the paths the pattern matches
            (relative to the tool's ``path``, ``/`` between folders, no leading ``./``).
        prefix: The literal folders every alternative starts with (``"src/"`` for
            ``src/**/*.py``, ``""`` when they differ): an engine may start there.
        max_depth: Most path segments a match has, or None when some alternative holds ``**``.
        names: Globs the last segment (the file name) must match, one per alternative, or None
            when some alternative ends in ``**``.
        suffixes: When every alternative is ``**/*<literal>`` (``**/*.py``, ``**/*.{ts,tsx}``):
            the literals; a path matches exactly when it ends with one of them, which
            :meth:`filter` tests without the expression. Else None.
    """

    pattern: str
    alternatives: tuple[str, ...]
    regex: re.Pattern[str]
    prefix: str
    max_depth: int | None
    names: tuple[str, ...] | None
    suffixes: tuple[str, ...] | None = None

    def match(self, rel: str) -> bool:
        """True when ``rel`` (a path relative to the tool's ``path``) matches."""
        return self.regex.fullmatch(rel) is not None  # fullmatch: a name ending in a newline is no `*.py`

    def filter(self, paths: Iterable[str]) -> Iterator[str]:
        """The paths of ``paths`` that match, in their order (one C-level test per path: a
        ``str.endswith`` for :attr:`suffixes`, else the expression)."""
        if self.suffixes is not None:
            return filter(operator.methodcaller("endswith", self.suffixes), paths)
        return filter(self.regex.fullmatch, paths)

    def rg_args(self) -> list[str]:
        """ripgrep arguments that narrow a listing or search to a superset of the matches
        without overriding ignore files: ``--max-depth`` when no ``**``, and a file type of
        the name globs (``--type-add twglob:NAME --type twglob``; rg matches type globs against
        the file name only; a name holding ``:`` gets none, as rg refuses it). For rg run in the tool's ``path`` with no path argument (an
        explicit path argument is walked even when it is ignored); the exact test is :meth:`match`.

        ``--glob`` is left out on purpose: ripgrep's ``--glob`` is an override, so a file
        it matches is listed even when ``.gitignore`` ignores it (and an ignored folder it
        matches is walked); :meth:`rg_globs` gives that form for ``ignored: true`` runs.
        """
        args: list[str] = []
        if self.max_depth is not None:
            args += ["--max-depth", str(self.max_depth)]
        if self.names is not None and not any(":" in name for name in self.names):  # rg refuses NAME:a:b
            for name in self.names:
                args += ["--type-add", f"twglob:{name}"]
            args += ["--type", "twglob"]
        return args

    def rg_globs(self) -> list[str]:
        """``--glob`` arguments, one per alternative, anchored with a leading ``/`` (rg reads a
        glob without a slash as a name at any depth, as ``.gitignore`` does). Relative to the
        folder rg runs in. Overrides ignore files: use only when ignored files are wanted
        too, and still test each path with :meth:`match` (rg's glob dialect differs in corners,
        e.g. ``a**b``)."""
        return [arg for alternative in self.alternatives for arg in ("--glob", "/" + alternative)]

    def pathspecs(self, base: str = "") -> list[str]:
        """git pathspecs (``:(glob)`` magic), one per alternative, relative to the folder git
        runs in (``base``, e.g. ``"src/"``, is put in front). A literal pathspec also matches
        everything below a folder of that name: test each path with :meth:`match`."""
        return [f":(glob){base}{alternative}" for alternative in self.alternatives]


@functools.lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Glob:
    """Compile ``pattern`` by the module's rules (the last 256 patterns are kept compiled).

    Raises:
        ToolError: ``invalid_glob`` for an empty or over-long pattern, a ``..`` segment, an
            unclosed ``[``, an unbalanced brace, or more than :data:`MAX_ALTERNATIVES`
            alternatives; the message says how to write it.
    """
    if "\x00" in pattern:
        raise _fail(pattern, "it holds a NUL character")
    if len(pattern) > MAX_PATTERN:
        raise _fail(pattern, f"it is over {MAX_PATTERN} characters")
    text = _normalize(pattern)
    if not text:
        raise _fail(pattern, "it is empty (leave pattern out to list a folder)")
    try:
        expanded = bracex.expand(text, keep_escapes=True, limit=MAX_ALTERNATIVES)
    except bracex.ExpansionLimitException:
        raise _fail(pattern, f"its {{a,b}} groups make more than {MAX_ALTERNATIVES} alternatives") from None
    alternatives = tuple(dict.fromkeys(_normalize(alt) for alt in expanded))
    for alt in alternatives:
        if not alt:
            raise _fail(pattern, "an alternative is empty")
        _check_brackets(pattern, alt)
        if ".." in alt.split("/"):
            raise _fail(pattern, "globs match below path and cannot hold .. (set path to the folder instead)")
    regex = re.compile("|".join(f"(?:{source})" for alt in alternatives for source in _sources(pattern, alt)))
    segments = [alt.split("/") for alt in alternatives]
    common: list[str] = []
    for column in zip(*(parts[:-1] for parts in segments)):
        if len(set(column)) != 1 or _META.search(column[0]) or column[0] == "":
            break
        common.append(column[0])
    prefix = "".join(part + "/" for part in common)
    deep = any("**" in parts for parts in segments)
    max_depth = None if deep else max(len(parts) for parts in segments)
    names = None
    if not any(parts[-1] == "**" for parts in segments):  # ** inside a name is *; rg refuses it there
        names = tuple(dict.fromkeys(re.sub(r"\*\*+", "*", parts[-1]) for parts in segments))
    return Glob(pattern=pattern, alternatives=alternatives, regex=regex, prefix=_unescape(prefix),
                max_depth=max_depth, names=names, suffixes=_suffixes(alternatives))


def _suffixes(alternatives: tuple[str, ...]) -> tuple[str, ...] | None:
    """The literals ``L`` when every alternative is ``**/*L`` with a non-empty ``L`` free of
    wildcards, brackets, escapes and ``/``: ``**/`` takes any folders and ``*`` the rest of the
    name, so such a glob matches a path exactly when the path ends with some ``L``."""
    out = []
    for alt in alternatives:
        if not alt.startswith("**/*"):
            return None
        literal = alt[4:]
        if not literal or "/" in literal or _META.search(literal):
            return None
        out.append(literal)
    return tuple(out)
