"""Path confinement: every path a tool touches lies inside the workspace folder.

A path is checked twice, and both checks compare path *components*
(:meth:`pathlib.PurePath.is_relative_to`), never string prefixes, so a sibling
folder ``/ws-evil`` is not inside ``/ws``:

1. as given: joined to the root and normalized lexically (``..`` folded);
2. as finally resolved: every symlink followed, at any component, including a
   dangling link's target.

Edit tools also never touch the repository's ``.git`` folder (or a ``.git``
file of a worktree), wherever it sits in the tree.

Paths as models write them are read as the person means them, or refused
with a message that says why (each rule has a test):

* git's quoted form of a name (``"caf\\351.txt"``, as the tools print names
  that are not UTF-8 or hold control or invisible characters) is the name it
  stands for, unless a file of that literal name exists;
* ``\\`` separates folders (``src\\util.py`` is ``src/util.py``) unless a
  file of that literal name exists; a Windows drive or UNC path is refused;
* ``~`` and ``~user`` are home folders: accepted when that lies inside the
  workspace, otherwise refused as outside it (``./~`` names a folder ``~``);
* a component that is not an entry of its folder but means one is taken as
  that entry: another Unicode normalization form of the name (NFC/NFD), the
  name with trailing dots or spaces (as Windows reads it), or another case
  when the file system itself says it is the same file (case-insensitive
  file systems); two such candidates are refused as ambiguous;
* the part of a path that does not exist yet is taken in Unicode NFC form;
* a ``file://`` URI of this computer (``file:///ws/src/a.py``, ``file://localhost/…``,
  percent-escapes decoded: :func:`file_uri_path`) is the path it names.

New names are checked separately (:mod:`toolwire.workspace.lookalike`).
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from toolwire.workspace.errors import ToolError, clip_quote
from toolwire.workspace.names import display_name, parse_quoted

__all__ = ["WorkspacePath", "file_uri_path", "resolve_path", "is_inside", "GIT_DIR_NAME"]

GIT_DIR_NAME = ".git"


@dataclass(frozen=True, slots=True)
class WorkspacePath:
    """A checked path.

    Attributes:
        rel: POSIX path relative to the root, for messages and results
            (``"."`` for the root itself), in display form
            (:func:`toolwire.workspace.names.display_name`: valid Unicode,
            accepted back by every tool). Lexical: a symlink keeps its own name.
        entry: Absolute path of the directory entry itself: the parent folder
            resolved, the last component kept. For a symlink this is the link,
            which is what delete and rename act on.
        resolved: Absolute path with every symlink followed: what reads and
            writes act on, and the key of per-path locks and open buffers.
        name: The same path as ``rel`` as the file system spells it (a ``str``
            that ``os.fsencode`` turns into its bytes), for git and the OS.
        notes: How the written path was read, when not literally (e.g.
            ``"src\\util.py is read as src/util.py"``).
    """

    rel: str
    entry: Path
    resolved: Path
    name: str = ""
    notes: tuple[str, ...] = ()


def is_inside(path: Path, root: Path) -> bool:
    """True when ``path`` is ``root`` or below it, compared component by component."""
    return path == root or path.is_relative_to(root)


def _touches_git(rel_parts: tuple[str, ...]) -> bool:
    return any(part.casefold() == GIT_DIR_NAME for part in rel_parts)


_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\|//\?/)")


def file_uri_path(uri: str) -> str | None:
    """The local path a ``file://`` URI names (no host, or ``localhost``; percent-escapes decoded,
    bytes that are not UTF-8 as Python's file names keep them), or None for anything else."""
    if not uri[:7].lower() == "file://":
        return None
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        return None
    return unquote(parts.path, errors="surrogateescape")


def _written(real_root: Path, path: str, notes: list[str]) -> tuple[str, str | None]:
    """The path the written form stands for, and the home folder when ``~`` was expanded.

    Raises:
        ToolError: ``invalid_path`` for a Windows drive or UNC path, an unknown ``~user``, and a
            ``file:`` URI of another computer.
    """
    literal_exists = os.path.lexists(path if os.path.isabs(path) else real_root / path)
    if path[:5].lower() == "file:" and not literal_exists:
        local = file_uri_path(path)
        if local is None:
            raise ToolError("invalid_path", f"{_shown(path)}: only a file URI of this computer (file:///path) "
                                            "names a file; or give the path relative to the workspace folder")
        notes.append(f"{_shown(path)} is read as {display_name(local)}")
        return local, None
    quoted = None if literal_exists else parse_quoted(path)
    if quoted is not None:
        notes.append(f"{path} is git's quoted form of {display_name(quoted)}")
        return quoted, None
    if _WINDOWS_ABSOLUTE.match(path):
        raise ToolError("invalid_path", f"{path} is a Windows path; give the path relative to the workspace "
                                        "folder, with / between folders")
    home = None
    if path.startswith("~") and not literal_exists:
        head = re.split(r"[/\\]", path, maxsplit=1)[0]
        expanded = os.path.expanduser(head)
        if expanded == head:
            raise ToolError("invalid_path", f"{path}: {head} names no home folder; paths are relative to the "
                                            f"workspace folder (write ./{head} for a folder of that name)")
        home, path = expanded, expanded + path[len(head):]
    if "\\" in path and not literal_exists:
        fixed = path.replace("\\", "/")
        notes.append(f"{display_name(path)} is read as {display_name(fixed)} (\\ separates folders)")
        path = fixed
    return path, home


def _key(name: str) -> str:
    """What a name reads as: NFC, without trailing dots and spaces."""
    return unicodedata.normalize("NFC", name).rstrip(" .")


def _canonical(root: Path, parts: tuple[str, ...], notes: list[str]) -> list[str]:
    """``parts`` with each component that means an existing entry replaced by that entry's name.

    Raises:
        ToolError: ``ambiguous_path`` when a component could mean two entries.
    """
    out: list[str] = []
    cur = root
    for i, comp in enumerate(parts):
        try:
            names = os.listdir(cur)
        except OSError:
            return out + list(parts[i:])
        if comp not in names:
            exact = cur / comp
            if os.path.lexists(exact):  # the file system says it is there: case- or form-insensitive
                st = os.lstat(exact)
                cands = [n for n in names if os.path.samestat(os.lstat(cur / n), st)]
            else:
                cands = [n for n in names if _key(n) == _key(comp)] if _key(comp) else []
            if len(cands) > 1:
                shown = " and ".join(display_name(c) for c in sorted(cands))
                raise ToolError("ambiguous_path", f"{display_name(comp)} could mean {shown}; give the exact name")
            if not cands:  # a new name: created in NFC, the form a person's keyboard gives
                rest = [unicodedata.normalize("NFC", p) for p in parts[i:]]
                if rest != list(parts[i:]):
                    notes.append(f"{display_name('/'.join(parts[i:]))} is written in Unicode NFC form")
                return out + rest
            notes.append(f"{display_name(comp)} is the existing {display_name(cands[0])}")
            comp = cands[0]
        out.append(comp)
        cur = cur / comp
    return out


#: Longest path (bytes) and longest name in a path (bytes) the file system takes, when it cannot say.
PATH_MAX = 4096
NAME_MAX = 255


def _shown(written: str) -> str:
    """A path the model wrote as error messages quote it: display form, clipped to about 80 characters."""
    return clip_quote(display_name(written))


def _size(text: str) -> int:
    """Bytes of ``text`` as the file system spells it."""
    try:
        return len(os.fsencode(text))
    except UnicodeEncodeError:  # a lone surrogate that is no escaped byte
        return len(text.encode("utf-8", "surrogatepass"))


@functools.lru_cache(maxsize=64)
def _name_max(root: str) -> int:
    """The file system's ``NAME_MAX`` at ``root`` (asked once per workspace folder)."""
    try:
        return os.pathconf(root, "PC_NAME_MAX")
    except (OSError, ValueError):
        return NAME_MAX


def _check_lengths(root: Path, written: str, parts: list[str]) -> None:
    """Refuse a path no file system entry can have: one longer than ``PATH_MAX`` bytes,
    or with a name longer than the file system's ``NAME_MAX`` (the OS would answer
    "File name too long" with the whole absolute path in its message).

    Args:
        root: The workspace folder (asked for its ``NAME_MAX``).
        written: The path as the model wrote it (quoted in the message).
        parts: The components relative to ``root``, as the file system spells them.
    """
    name_max = _name_max(str(root))
    size = sum(_size(part) + 1 for part in parts)
    if size > PATH_MAX:
        raise ToolError("invalid_path", f"{_shown(written)} is {size} bytes long, over the {PATH_MAX}-byte limit of paths")
    for part in parts:
        length = _size(part)
        if length > name_max:
            raise ToolError("invalid_path", f"{_shown(written)} holds a name of {length} bytes, over the file "
                                            f"system's {name_max}-byte limit: {clip_quote(part, 40)}")


def resolve_path(root: Path, path: str, *, allow_git: bool = False) -> WorkspacePath:
    """Check that ``path`` lies inside ``root`` as given and as resolved.

    Args:
        root: The workspace folder; absolute. It is resolved here, so a root that
            is itself reached through a symlink works; absolute argument paths
            are compared with the resolved root.
        path: The path from the tool arguments, relative to ``root`` or
            absolute. It need not exist (files to create, deleted files).
        allow_git: Let the path lie in a ``.git`` folder (never for edit tools).
            The written form is read as the module docstring says.

    Returns:
        The checked :class:`WorkspacePath`.

    Raises:
        ToolError: ``invalid_path`` for an empty path, a NUL byte, a symlink
            loop, a Windows drive path or an unknown ``~user``;
            ``ambiguous_path`` when a name could mean two entries;
            ``outside_workspace`` when the path, lexically or after
            following symlinks, leaves ``root``, or touches ``.git`` while
            ``allow_git`` is False. Nothing is created or changed.
    """
    if not path or "\x00" in path:
        raise ToolError("invalid_path", f"invalid path {_shown(path)}")
    written = path
    real_root = Path(os.path.realpath(root))
    notes: list[str] = []
    path, home = _written(real_root, path, notes)
    given = Path(path)
    joined = given if given.is_absolute() else real_root / given  # ".." kept: the OS resolves it after links
    lexical = Path(os.path.normpath(joined))
    if not is_inside(lexical, real_root):
        if home is not None:
            raise ToolError("outside_workspace", f"{_shown(written)}: ~ is the home folder {home}, outside the "
                                                 "workspace; paths are relative to the workspace folder")
        raise ToolError("outside_workspace", f"{_shown(written)} is outside the workspace")
    parts = lexical.relative_to(real_root).parts
    fixed = _canonical(real_root, parts, notes)
    _check_lengths(real_root, written, fixed)
    if list(parts) != fixed:
        lexical = real_root.joinpath(*fixed)
        # Keep ".." for the OS only when nothing was renamed; a renamed path is taken as corrected.
        joined = lexical
    try:
        if joined.is_symlink():
            joined.resolve(strict=False)  # raises RuntimeError on a symlink loop
        resolved = Path(os.path.realpath(joined))
        last = joined.name
        if lexical == real_root or last in ("", ".", ".."):
            entry = resolved
        else:
            entry = Path(os.path.realpath(joined.parent)) / last
    except (OSError, RuntimeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        if isinstance(exc, RuntimeError):
            reason = "a symbolic link loop"
        raise ToolError("invalid_path", f"cannot resolve {_shown(written)}: {reason}") from None
    for candidate in (resolved, entry):
        if not is_inside(candidate, real_root):
            raise ToolError(
                "outside_workspace",
                f"{_shown(written)} resolves to {clip_quote(display_name(str(candidate)))}, outside the workspace "
                "(through a symlink)",
            )
    rels = [p.relative_to(real_root) for p in (lexical, entry, resolved)]
    if not allow_git and any(_touches_git(rel.parts) for rel in rels):
        raise ToolError("outside_workspace", f"{_shown(written)} is inside .git, which tools never touch")
    name = rels[0].as_posix()
    return WorkspacePath(rel=display_name(name), entry=entry, resolved=resolved, name=name, notes=tuple(notes))
