"""File names as text: a form that is always valid Unicode, reads as what it is,
and comes back into the tools unchanged.

File names on POSIX are bytes. Python gives names that are not UTF-8 as
``str`` holding lone surrogates (``os.fsdecode``, PEP 383), which no JSON
encoder, model API or log sink accepts. Names may also hold characters that
make them read as another name: control characters (a newline splits a
listing), bidirectional controls (U+202E turns ``evil\\u202etxt.exe`` into
what reads as ``evilexe.txt``) and invisible characters (zero-width space).

:func:`display_name` gives such names in git's C-quoted form (``core.quotePath``
rules of git-config(1), restricted to the characters above): the name between
double quotes, ``\\t \\n \\r \\" \\\\`` and friends for the usual escapes, and
``\\ooo`` octal for every other offending byte; letters of any script stay as
they are. :func:`parse_quoted` turns that form back into the name, so a name a
tool printed can be passed to any tool that takes a path.

:func:`display_text` is the same rule for any text shown to a person on a
terminal (a model's message, a diff, an argument text): the same characters
are shown as escapes (``\\x1b``, ``\\u202e``), so what a model wrote can
neither move the cursor, clear the screen, retitle the window, nor reorder
what the reader sees.
"""

from __future__ import annotations

import os
import re
from typing import Final

__all__ = ["display_name", "display_path", "display_text", "parse_quoted", "prefixed", "needs_quoting", "has_unusual", "is_suspicious_char", "valid_text"]

_ESCAPES: Final = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}
_UNESCAPES: Final = {v: k for k, v in _ESCAPES.items()}

#: Characters that change how the rest of a name reads or cannot be seen:
#: C0/C1 controls and DEL, the bidirectional formatting characters (Unicode
#: UAX #9: LRM, RLM, ALM, LRE…RLO, LRI…PDI), zero-width and other invisible
#: format characters, the line and paragraph separators.
_SUSPICIOUS: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\u3164\ufeff\uffa0\ufff9-\ufffb\U0001d173-\U0001d17a\U000e0000-\U000e007f]"
)
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_UNUSUAL: Final = re.compile("[\ud800-\udfff" + _SUSPICIOUS.pattern[1:])


def has_unusual(text: str) -> bool:
    """True when ``text`` holds a lone surrogate or a character :func:`display_name` escapes
    (one scan; lets a caller skip per-name work for output with only plain names)."""
    return _UNUSUAL.search(text) is not None


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (surrogate pairs joined).

    Returns ``text`` itself when it is already valid (the common case: one scan).
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def is_suspicious_char(ch: str) -> bool:
    """True for a character :func:`display_name` escapes (controls, bidi, invisible)."""
    return bool(_SUSPICIOUS.match(ch))


_SHORT_ESCAPES: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def display_text(text: str, keep: str = "") -> str:
    """``text`` made visible and inert for a terminal: every character
    :func:`display_name` escapes, and every lone surrogate, shown as a
    Python-style escape.

    Args:
        text: Any text a model (or a file, or a provider) produced.
        keep: Characters to leave as they are, e.g. ``"\\n\\t"`` for text
            shown on several lines (a diff, a message).

    Returns:
        ``text`` itself when nothing needs escaping (one scan); otherwise ``\\t
        \\n \\r`` for those three, ``\\xNN`` for the other C0/C1 controls and
        DEL (ESC is ``\\x1b``), ``\\uNNNN`` for bidirectional, zero-width and
        other invisible format characters, the line and paragraph separators
        and lone surrogates, ``\\UNNNNNNNN`` above U+FFFF (tag characters).
        A backslash already in ``text`` stays as it is. Always encodable as UTF-8.
    """
    if _UNUSUAL.search(text) is None:
        return text
    if not keep:
        return _UNUSUAL.sub(_escape, text)
    return _UNUSUAL.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)


def needs_quoting(name: str) -> bool:
    """True when ``name`` holds undecodable bytes (lone surrogates), a control,
    bidirectional or invisible character, or starts with a double quote."""
    return name.startswith('"') or _UNUSUAL.search(name) is not None


def display_name(name: str | bytes) -> str:
    """The name as valid Unicode text that reads as what it is.

    Args:
        name: A file name or relative path, as bytes or as ``os.fsdecode`` gives it.

    Returns:
        ``name`` itself when it is plain (the common case); otherwise git's
        quoted form: ``"caf\\351.txt"`` for the Latin-1 name ``caf\\xe9.txt``,
        ``"a\\nb"`` for a name with a newline, ``"evil\\342\\200\\256txt.exe"``
        for one with U+202E. Always encodable as UTF-8.
    """
    text = os.fsdecode(name) if isinstance(name, bytes) else name
    if not needs_quoting(text):
        return text
    out = ['"']
    for ch in text:
        if _SURROGATE.match(ch) or _SUSPICIOUS.match(ch) or ch in '"\\':
            for byte in os.fsencode(ch):
                out.append(f"\\{_ESCAPES[byte]}" if byte in _ESCAPES else f"\\{byte:03o}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def prefixed(prefix: str, shown: str) -> str:
    """``prefix`` (``a/``, ``b/``) before a name in display form, as git's patch headers
    print it: inside the quotes when the name is quoted (``"a/evil\\342\\200\\256txt.exe"``,
    not ``a/"evil…"``, which git and patch would read as a name holding quotes)."""
    return f'"{prefix}{shown[1:]}' if shown.startswith('"') else prefix + shown


def display_path(written: str) -> str:
    """A path argument as a model wrote it, in display form, read as the name it stands for.

    A model often writes git's quoted form it saw in a result (``"invoice\\342\\200\\256fdp.exe"``),
    which the tools take as that name (unless an entry of the literal name exists:
    :func:`toolwire.workspace.paths.resolve_path`). :func:`display_name` of the written text
    would quote it again (``"\\"invoice\\\\342…\\""``), a name with literal quotes and
    backslashes that is not the file the tool acts on; this gives the form the approval
    subject shows for both spellings. For a front-end that cannot resolve paths (the VS
    Code panel); one that can shows :func:`toolwire.workspace.shown_paths.call_path`.
    """
    quoted = parse_quoted(written)
    return display_name(quoted if quoted is not None else written)


_QUOTED: Final = re.compile(r'"(?:[^"\\]|\\(?:[abtnvfr"\\]|[0-3][0-7]{2}))*"', re.S)


def parse_quoted(text: str) -> str | None:
    """The name a quoted form stands for, or None when ``text`` is not one.

    Args:
        text: A path argument, e.g. ``"caf\\351.txt"`` (with the quotes).

    Returns:
        The name as ``os.fsdecode`` would give it (lone surrogates for bytes
        that are not UTF-8), ready for the file system and for git.
    """
    if len(text) < 2 or not _QUOTED.fullmatch(text):
        return None
    raw = bytearray()
    i, body = 0, text[1:-1]
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            raw += ch.encode("utf-8", "surrogateescape")
            i += 1
        elif body[i + 1] in _UNESCAPES:
            raw.append(_UNESCAPES[body[i + 1]])
            i += 2
        else:
            raw.append(int(body[i + 1 : i + 4], 8))
            i += 4
    return os.fsdecode(bytes(raw))
