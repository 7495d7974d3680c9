"""Which workspace files are kept out of the model's context (the ``modelExclude`` setting).

Secrets lying in the workspace (``.env``, private keys, ``.npmrc`` tokens) are listed like
any file but never read, searched or shown to the model unless the user allows it for
that one call (protocol.md, "Files kept from the model"). This module only answers "is
this workspace-relative path excluded, and by which pattern"; the tools and the
scheduler decide what follows.

Patterns are gitignore-style globs (https://git-scm.com/docs/gitignore, "PATTERN
FORMAT"), matched with `wcmatch <https://facelessuser.github.io/wcmatch/glob/>`_:

* a pattern without ``/`` (other than a trailing one) matches a name at any depth:
  ``.env`` matches ``.env`` and ``config/.env``; ``*.pem`` matches ``keys/server.pem``;
* a pattern with a ``/`` in it is anchored at the workspace root (a leading ``/`` only
  anchors): ``config/*.env`` matches ``config/a.env``, not ``x/config/a.env``;
* ``*`` and ``?`` never cross ``/``, ``**`` matches any number of folders, ``{a,b}``
  alternates, ``[abc]`` is a class; a trailing ``/`` matches folders only;
* a folder that matches excludes everything below it (``secrets/`` excludes
  ``secrets/db/prod.json``);
* matching ignores case (a ``Server.PEM`` is a key too, and macOS and Windows file
  systems ignore case);
* ``.env.*`` does not match ``.envrc`` (no dot after ``.env``) nor ``.env`` itself.

Negation (``!pattern``) is refused: a pattern list only ever excludes; drop a default
from the list to let such files through.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import bracex
from wcmatch import glob

from toolwire.workspace.paths import WorkspacePath

__all__ = ["DEFAULT_PATTERNS", "ModelExclude", "pattern_problem", "excluded_of", "withheld"]

#: The ``modelExclude`` default.
DEFAULT_PATTERNS: Final[tuple[str, ...]] = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", ".npmrc", ".netrc")

#: Gitignore-style matching: ``**``, ``{a,b}``, dot files matched by ``*``, a pattern
#: without a slash matched against the name, ``/`` as the only separator, any case.
_FLAGS: Final = glob.GLOBSTAR | glob.BRACE | glob.DOTGLOB | glob.MATCHBASE | glob.FORCEUNIX | glob.IGNORECASE

#: A pattern may expand (braces) to at most this many patterns.
_EXPANSION_LIMIT: Final = 100


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: str  # as written in the setting
    folders_only: bool
    anchored: bool
    body: str  # without the leading and trailing slash


def _table(rules: list[tuple[int, _Rule]]) -> re.Pattern[str] | None:
    """One regular expression for ``rules`` (wcmatch's translation of each, braces expanded),
    each alternative a named group ``r<index>``: one match tells whether any rule matches, and
    the first alternative that matches is the first such rule in the setting's order."""
    if not rules:
        return None
    alternatives = []
    for index, rule in rules:
        include, _ = glob.translate(rule.body, flags=_FLAGS & ~glob.MATCHBASE, limit=_EXPANSION_LIMIT)
        alternatives.append(f"(?P<r{index}>{'|'.join(f'(?:{r})' for r in include)})")
    return re.compile("|".join(alternatives))


def _shown(pattern: str) -> str:
    return repr(pattern) if len(pattern) <= 60 else repr(pattern[:60] + "…")


def pattern_problem(pattern: object) -> str | None:
    """Why ``pattern`` is not a valid ``modelExclude`` entry, or None.

    A problem is a sentence fragment naming the rule broken, e.g. ``"'!x' negates:
    patterns only exclude; remove a pattern from the list to let its files through"``.
    """
    if not isinstance(pattern, str):
        return f"each pattern must be a string, not {type(pattern).__name__}"
    if not pattern.strip():
        return "a pattern must not be empty"
    if pattern.startswith("!"):
        return (f"{_shown(pattern)} negates: patterns only exclude; remove a pattern from the list to let its files "
                "through")
    if "\x00" in pattern or "\n" in pattern or "\r" in pattern:
        return f"{_shown(pattern)} holds a NUL or a line break"
    body = pattern.strip("/")
    if not body:
        return f"{_shown(pattern)} names the whole workspace"
    if any(part in (".", "..") for part in body.split("/")):
        return f"{_shown(pattern)} has a '.' or '..' folder: patterns are relative to the workspace root"
    try:
        glob.compile(body, flags=_FLAGS, limit=_EXPANSION_LIMIT)
    except Exception as exc:  # noqa: BLE001 - wcmatch raises several kinds (limit, bad pattern)
        return f"{_shown(pattern)} is not a valid glob ({exc})"
    return None


class ModelExclude:
    """The compiled ``modelExclude`` patterns.

    Args:
        patterns: Gitignore-style globs (see the module docstring); ``[]`` excludes
            nothing.

    Raises:
        ValueError: naming the first invalid pattern (:func:`pattern_problem`).
    """

    __slots__ = ("patterns", "_rules", "_tables")

    def __init__(self, patterns: Iterable[str] = DEFAULT_PATTERNS) -> None:
        self.patterns: tuple[str, ...] = tuple(patterns)
        rules = []
        for pattern in self.patterns:
            problem = pattern_problem(pattern)
            if problem is not None:
                raise ValueError(problem)
            body = pattern.strip("/")
            rules.append(_Rule(pattern, pattern.endswith("/"), "/" in body or pattern.startswith("/"), body))
        self._rules: tuple[_Rule, ...] = tuple(rules)
        # (anchored?, folders only?, table): an anchored rule is matched against each leading part
        # of the path, any other against each name in it (gitignore's rule for a pattern without /).
        tables = []
        for anchored in (False, True):
            for folders_only in (False, True):
                table = _table([(i, r) for i, r in enumerate(rules)
                                if r.anchored == anchored and r.folders_only == folders_only])
                if table is not None:
                    tables.append((anchored, folders_only, table))
        self._tables: tuple[tuple[bool, bool, re.Pattern[str]], ...] = tuple(tables)

    def __bool__(self) -> bool:
        return bool(self._rules)

    def __repr__(self) -> str:
        return f"ModelExclude({list(self.patterns)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelExclude) and other.patterns == self.patterns

    def __hash__(self) -> int:
        return hash(self.patterns)

    def match(self, rel_path: str, *, is_dir: bool = False) -> str | None:
        """The pattern (as written in the setting) that excludes ``rel_path``, or None.

        Args:
            rel_path: A workspace-relative path with ``/`` between folders
                (``config/.env``); a leading ``./`` and trailing ``/`` are ignored.
            is_dir: ``rel_path`` is a folder (folder-only patterns such as
                ``secrets/`` then match it too). Its parent folders are always
                checked as folders: a file below an excluded folder is excluded.
        """
        if not self._rules:
            return None
        path = rel_path.replace("\\", "/").removeprefix("./").strip("/")
        if not path or path == ".":
            return None
        parts = path.split("/")
        anchored = any(table[0] for table in self._tables)
        for end in range(1, len(parts) + 1):
            folder = is_dir or end < len(parts)
            prefix = "/".join(parts[:end]) if anchored else ""
            hits = []
            for is_anchored, folders_only, table in self._tables:
                if folders_only and not folder:
                    continue
                found = table.match(prefix if is_anchored else parts[end - 1])
                if found is not None:
                    hits.append(next(int(name[1:]) for name, value in found.groupdict().items() if value is not None))
            if hits:
                return self._rules[min(hits)].pattern
        return None

    def rg_globs(self) -> list[str]:
        """ripgrep arguments that leave the excluded files out of a search run from the
        workspace root: ``["--iglob", "!.env", "--iglob", "!.env.*", …]`` (ripgrep's
        globs follow gitignore rules, as these patterns do; ``--iglob`` ignores case).
        ripgrep applies the globs to folders too, so an excluded folder is not entered."""
        out: list[str] = []
        for rule in self._rules:
            out += ["--iglob", "!" + ("/" + rule.body if rule.anchored else rule.body) + ("/" if rule.folders_only
                                                                                         else "")]
        return out

    def git_pathspecs(self) -> list[str]:
        """git pathspecs that leave the excluded files out of ``git ls-files`` / ``git grep``
        run from the workspace root: ``[":(exclude,glob,icase)**/.env",
        ":(exclude,glob,icase)**/.env/**", …]`` (a name at any depth and everything below
        a folder of that name; anchored patterns without the ``**/``). Add them after the
        pathspecs that include (git needs at least one positive pathspec, e.g. ``.``)."""
        out: list[str] = []
        for rule in self._rules:  # git has no {a,b}: one pair per alternative
            for body in dict.fromkeys(bracex.expand(rule.body, keep_escapes=True, limit=_EXPANSION_LIMIT)):
                base = body if rule.anchored else "**/" + body
                if not rule.folders_only:
                    out.append(f":(exclude,glob,icase){base}")
                out.append(f":(exclude,glob,icase){base}/**")
        return out

    def git_listing_pathspecs(self) -> list[str]:
        """git pathspecs for ``git ls-files`` run from the workspace root that name a superset of
        the excluded files (test each name with :meth:`match`): one ``:(icase)`` wildcard
        pathspec per pattern, ``*<body>*`` (``<body>*`` anchored), in which ``*`` crosses ``/``,
        so a file at any depth, and everything below a folder, is named. git matches these
        with plain ``fnmatch``, about half the CPU of the ``:(glob)`` pairs of
        :meth:`git_pathspecs` on a large index. A pattern with ``{a,b}`` (not git's syntax)
        makes it fall back to those pairs (braces expanded) without ``exclude``."""
        if any("{" in rule.body for rule in self._rules):  # expanded there
            return [spec.replace("exclude,", "", 1) for spec in self.git_pathspecs()]
        return [f":(icase){'' if rule.anchored else '*'}{rule.body}*" for rule in self._rules]

    def match_target(self, root: Path, target: WorkspacePath, *, is_dir: bool = False) -> str | None:
        """The pattern that excludes a checked path (:func:`toolwire.workspace.paths.resolve_path`),
        or None: the path as written (its file-system spelling) and, for a symbolic link,
        the file it leads to (``notes.txt -> .env`` is ``.env``). ``is_dir``: as :meth:`match`."""
        if not self._rules:
            return None
        pattern = self.match(target.name or target.rel, is_dir=is_dir)
        if pattern is None and target.resolved != target.entry:
            try:
                pattern = self.match(target.resolved.relative_to(root).as_posix(), is_dir=is_dir)
            except ValueError:  # outside the workspace: the tools refuse it
                pattern = None
        return pattern


def withheld(shown: str, pattern: str) -> str:
    """How the model is told that ``shown`` (a workspace-relative path in display form) was
    kept from it: ``"config/.env is kept from the model by the modelExclude setting
    (pattern '.env')"``."""
    return f"{shown} is kept from the model by the modelExclude setting (pattern '{pattern}')"


def excluded_of(exclude: ModelExclude, rel_paths: Sequence[str]) -> list[tuple[str, str]]:
    """``(path, pattern)`` for each of ``rel_paths`` that ``exclude`` withholds, in order."""
    out = []
    for rel in rel_paths:
        pattern = exclude.match(rel)
        if pattern is not None:
            out.append((rel, pattern))
    return out
