"""The repository's ignore rules in Python, for the walk engine (no rg, no git binary).

gitignore(5): the global excludes file (``core.excludesFile``, default
``$XDG_CONFIG_HOME/git/ignore``), ``.git/info/exclude``, then every ``.gitignore`` from the
repository's top down to the file's folder; within them the last matching line decides
(``!`` re-includes), a line with a slash other than a trailing one is anchored to its file's
folder, a trailing slash matches folders only, and nothing below an ignored folder is
re-included. Outside a repository nothing is ignored (as ripgrep and git behave). The
patterns go through the same ``wcmatch`` translation as the tools' globs.

Not read: ``core.excludesFile`` set in the repository's own config or in a system config
(git reads them; ripgrep does not either), and ``.gitignore`` files that are tracked but
deleted from the working tree.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from wcmatch import glob as wcglob

__all__ = ["IgnoreRules", "repo_top", "global_excludes_file"]

_FLAGS = wcglob.GLOBSTAR | wcglob.DOTGLOB | wcglob.FORCEUNIX


def repo_top(path: Path) -> Path | None:
    """The nearest folder at or above ``path`` holding a ``.git`` entry, or None."""
    for folder in (path, *path.parents):
        if os.path.lexists(folder / ".git"):
            return folder
    return None


def _config_files() -> list[Path]:
    env = os.environ.get("GIT_CONFIG_GLOBAL")
    if env:
        return [Path(env)]
    home = Path(os.path.expanduser("~"))
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    return [xdg / "git" / "config", home / ".gitconfig"]


_EXCLUDES = re.compile(r"^\s*excludesfile\s*=\s*(.*?)\s*$", re.IGNORECASE)


def global_excludes_file() -> Path | None:
    """The global excludes file git would read: ``core.excludesFile`` of the global config
    (``GIT_CONFIG_GLOBAL``, else ``~/.gitconfig`` and ``$XDG_CONFIG_HOME/git/config``), else
    ``$XDG_CONFIG_HOME/git/ignore``. A plain reading of ``[core]`` sections (no includes)."""
    found: str | None = None
    for config in _config_files():
        try:
            lines = config.read_text("utf-8", "replace").splitlines()
        except OSError:
            continue
        section = ""
        for line in lines:
            stripped = line.strip()
            if stripped.startswith("["):
                section = stripped.strip("[]").strip().lower()
                continue
            m = _EXCLUDES.match(line)
            if section == "core" and m:
                found = m.group(1).strip('"')
    if found:
        return Path(os.path.expanduser(found))
    home = Path(os.path.expanduser("~"))
    return Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git" / "ignore"


@dataclass(frozen=True, slots=True)
class _Rule:
    regex: re.Pattern[str]
    negate: bool
    dir_only: bool


def _parse(text: str) -> list[_Rule]:
    rules = []
    for raw in text.splitlines():
        line = re.sub(r"(?<!\\)\s+$", "", raw)
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate or line.startswith("\\!") or line.startswith("\\#"):
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        line = line.lstrip("/") if anchored else "**/" + line
        try:
            sources = wcglob.translate(line, flags=_FLAGS)[0]
            regex = re.compile("|".join(f"(?:{s})" for s in sources))
        except (re.error, ValueError):
            continue
        rules.append(_Rule(regex, negate, dir_only))
    return rules


def _read_rules(path: Path) -> list[_Rule]:
    try:
        return _parse(path.read_text("utf-8", "replace"))
    except OSError:
        return []


@dataclass(slots=True)
class IgnoreRules:
    """The ignore rules of one repository, each ``.gitignore`` read once.

    Args:
        top: The repository's top folder (holding ``.git``).
    """

    top: Path
    _base: list[_Rule] = field(default_factory=list)
    _files: dict[str, list[_Rule]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        excludes = global_excludes_file()
        self._base = (_read_rules(excludes) if excludes else []) + _read_rules(self.top / ".git" / "info" / "exclude")

    def _rules_of(self, folder: str) -> list[_Rule]:
        rules = self._files.get(folder)
        if rules is None:
            rules = self._files[folder] = _read_rules(self.top / folder / ".gitignore")
        return rules

    def _decides(self, rel: str, is_dir: bool) -> bool | None:
        """The last rule matching ``rel`` alone: True ignored, False re-included, None none."""
        parts = rel.split("/")
        verdict: bool | None = None
        for rule in self._base:
            if (is_dir or not rule.dir_only) and rule.regex.match(rel):
                verdict = not rule.negate
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            sub = "/".join(parts[depth:])
            for rule in self._rules_of(folder):
                if (is_dir or not rule.dir_only) and rule.regex.match(sub):
                    verdict = not rule.negate
        return verdict

    def ignored(self, rel: str, is_dir: bool) -> bool:
        """True when ``rel`` (relative to :attr:`top`, ``/`` between folders) is ignored,
        itself or through a folder above it."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            if self._decides("/".join(parts[:depth]), True):
                return True
        return bool(self._decides(rel, is_dir))

    def ignored_here(self, rel: str, is_dir: bool) -> bool:
        """True when ``rel`` itself is ignored, its folders known not to be (a walk that
        prunes ignored folders asks this)."""
        return bool(self._decides(rel, is_dir))
