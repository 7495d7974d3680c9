"""What the ``force`` entries of an undo or redo (:mod:`toolwire.agent.undo`) name: the
recorded paths and index entries of the turn they force, and the entries naming
neither (``unmatchedForce``)."""

from __future__ import annotations

import os
from pathlib import Path

from toolwire.agent.checkpoint_records import TurnCheckpoint
from toolwire.workspace.errors import ToolError
from toolwire.workspace.paths import resolve_path

__all__ = ["forced_paths", "forced_index", "unmatched_force"]


def forced_paths(record: TurnCheckpoint, root: Path, force: list[str]) -> set[str]:
    """The record keys (:attr:`PathChange.fs_name`) that ``force`` names.

    An entry names a recorded path when it is that path as results show it
    (display form) or as the file system spells it; otherwise it is read as
    a tool reads a path argument and names the recorded entry it resolves
    to: the entry itself (a link, its folder resolved) if the turn changed
    that, else the file it leads to. So ``link/a.txt``, ``./x/../a.txt`` or
    git's quoted form of a name force the file the turn really changed.
    """
    keys = {c.fs_name for c in record.paths.values()}
    shown = {c.path: c.fs_name for c in record.paths.values()}
    real = Path(os.path.realpath(root))
    out: set[str] = set()
    for entry in force:
        if entry in keys or entry in shown:
            out.add(shown.get(entry, entry))
            continue
        try:
            wp = resolve_path(real, entry)
        except ToolError:
            continue
        for candidate in (wp.entry, wp.resolved):
            rel = candidate.relative_to(real).as_posix()
            if rel in keys:
                out.add(rel)
                break
    return out


def forced_index(root: Path, force: list[str]) -> set[str]:
    """``force`` as index paths: each entry as written and as git tools pass it (``git_paths``)."""
    out = set(force)
    for entry in force:
        try:
            out.add(resolve_path(root, entry).name)
        except ToolError:
            pass
    return out


def unmatched_force(record: TurnCheckpoint, root: Path, force: list[str]) -> list[str]:
    """The ``force`` entries that name neither a recorded path (:func:`forced_paths`) nor
    an index entry of the turn's ``index`` git actions (:func:`forced_index`), in order, each once."""
    index_names = {n for g in record.git if g.action == "index" for n in (*g.before, *g.after)}
    out: list[str] = []
    for entry in dict.fromkeys(force):
        if forced_paths(record, root, [entry]):
            continue
        if not forced_index(root, [entry]) & index_names:
            out.append(entry)
    return out
