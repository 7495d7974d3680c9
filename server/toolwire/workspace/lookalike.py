"""Checks on names a tool is about to create, so nothing new reads as something it is not.

A tool creates a name (a new file, its missing parent folders, a rename
target) only when each new component:

* holds no backslash (it reads as a folder separator; :mod:`toolwire.workspace.paths`
  already turns written ``\\`` into ``/``);
* does not end in a dot or a space, nor start with a space (Windows drops
  trailing dots and spaces, and a person cannot see them);
* holds no control, bidirectional or invisible character, and only valid
  UTF-8 (see :mod:`toolwire.workspace.names`);
* is not a look-alike of another entry of its folder: the same after NFKC
  normalization, without invisible characters, with every non-ASCII letter
  that Unicode lists as confusable with an ASCII one (Unicode Technical
  Standard #39, ``confusables.txt``, as shipped by the ``confusable-homoglyphs``
  package) replaced by it. ASCII characters are compared as they are, so
  ``f00.py`` next to ``foo.py`` is allowed, while ``раth.py`` with Cyrillic
  ``р`` and ``а`` next to ``path.py`` is refused.
"""

from __future__ import annotations

import os
import unicodedata
from functools import cache
from pathlib import Path

from toolwire.workspace.errors import ToolError
from toolwire.workspace.names import display_name, is_suspicious_char, needs_quoting

__all__ = ["skeleton", "check_new_name", "check_new_path"]


@cache
def _to_ascii() -> dict[str, str]:
    """Non-ASCII character → the ASCII character it is confusable with (loaded on first use)."""
    from confusable_homoglyphs.confusables import confusables_data  # 900 KB of JSON: only when creating

    out: dict[str, str] = {}
    for char, glyphs in confusables_data.items():
        for glyph in glyphs:
            other = glyph["c"]
            if len(char) != 1 or len(other) != 1:
                continue
            for ascii_char, lookalike in ((char, other), (other, char)):
                if ascii_char.isascii() and not lookalike.isascii():
                    if lookalike not in out or ascii_char < out[lookalike]:
                        out[lookalike] = ascii_char
    return out


def skeleton(name: str) -> str:
    """The form two look-alike names share (see the module docstring)."""
    table = _to_ascii()
    text = unicodedata.normalize("NFKC", name)
    return "".join(table.get(ch, ch) for ch in text if not is_suspicious_char(ch))


def check_new_name(folder: Path, name: str) -> None:
    """Refuse ``name`` as a new entry of ``folder`` when it would read as something else.

    Args:
        folder: The folder the entry goes in (it need not exist yet).
        name: One path component.

    Raises:
        ToolError: ``invalid_name`` (backslash, trailing dot or space, leading
            space, control/bidi/invisible character, not UTF-8) or ``lookalike``
            (another entry of ``folder`` reads the same), with the reason.
    """
    shown = display_name(name)
    if "\\" in name:
        raise ToolError("invalid_name", f"{shown}: a backslash reads as a folder separator; use / between folders")
    if name.endswith((".", " ")) or name.startswith(" "):
        raise ToolError("invalid_name", f"{shown}: a name must not end in a dot or a space or start with a space "
                                        f"(it reads as {display_name(name.strip(' ').rstrip('.'))!r} and Windows drops them)")
    if needs_quoting(name.lstrip('"')):
        raise ToolError("invalid_name", f"{shown}: the name holds control, invisible or direction-changing "
                                        "characters, or bytes that are not UTF-8")
    try:
        siblings = os.listdir(folder)
    except OSError:
        return
    mine = skeleton(name)
    for other in siblings:
        if other != name and skeleton(other) == mine:
            raise ToolError("lookalike", f"{shown} would look identical to the existing {display_name(other)}; "
                                         f"use {display_name(other)} or a clearly different name",
                            {"existing": display_name(other)})


def check_new_path(root: Path, name: str) -> None:
    """Check every component of the workspace-relative ``name`` that does not exist yet.

    Args:
        root: The workspace folder (resolved).
        name: :attr:`toolwire.workspace.paths.WorkspacePath.name`.

    Raises:
        ToolError: as :func:`check_new_name`.
    """
    cur = root
    for comp in Path(name).parts:
        if not os.path.lexists(cur / comp):
            check_new_name(cur, comp)
        cur = cur / comp
