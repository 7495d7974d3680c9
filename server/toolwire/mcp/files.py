"""The files an MCP configuration reads: a workspace's ``.vscode/mcp.json`` and an entry's ``envFile``.

``mcp.json`` is JSON with comments, as VS Code reads it (``//`` and ``/* */`` comments and
trailing commas are allowed). An ``envFile`` has the dotenv shape VS Code reads: ``NAME=value``
lines, ``export`` allowed before the name, ``#`` comments, values optionally in single or
double quotes (``\\n`` in double quotes is a line break; an unquoted value ends at `` #``).
Neither file is expanded: ``${…}`` in them stays as written.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["MAX_BYTES", "WORKSPACE_FILE", "read_env_file", "read_jsonc"]

#: Where a workspace's servers are (relative to its folder), read only when ``mcpWorkspaceServers`` is true.
WORKSPACE_FILE = Path(".vscode") / "mcp.json"
#: Largest file read (bytes): a configuration file, never data.
MAX_BYTES = 1024 * 1024

_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.\-]*)\s*=\s*(.*?)\s*$")
_DOUBLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _read_text(path: Path) -> str:
    """The text of the regular file ``path`` (never a fifo or a device).

    Raises:
        OSError: it is missing, not a regular file, larger than :data:`MAX_BYTES` or unreadable;
            the message says which, without the file's content.
    """
    if not path.is_file():
        raise OSError("it is not a file" if path.exists() else "it does not exist")
    if path.stat().st_size > MAX_BYTES:
        raise OSError(f"it is larger than {MAX_BYTES // 1024} KB")
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise OSError("it is not UTF-8 text") from None


def _string_end(text: str, start: int) -> int:
    """The index just past the JSON string that opens at ``text[start]`` (its ``\\`` escapes
    skipped; the end of ``text`` for a string never closed)."""
    j = start + 1
    while j < len(text) and text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return min(j + 1, len(text))


def _without_comments(text: str) -> str:
    """``text`` with ``//`` and ``/* */`` comments outside strings replaced by a space (and the
    line breaks a comment held)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = _string_end(text, i)
            out.append(text[i:j])
            i = j
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(" " + "\n" * text.count("\n", i, end))  # lines kept: an error's line number stays true
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _without_trailing_commas(text: str) -> str:
    """``text`` without the commas that only white space separates from a ``}`` or ``]``."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = _string_end(text, i)
            out.append(text[i:j])
            i = j
            continue
        if c == ",":
            k = i + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            if k < n and text[k] in "}]":
                i += 1
                continue
        out.append(c)
        i += 1
    return "".join(out)


def read_jsonc(path: Path) -> Any:
    """The JSON value of the JSON-with-comments file ``path``.

    Raises:
        OSError: as :func:`_read_text`.
        ValueError: it is not JSON (the message gives the line and column, not the text), or
            nested too deeply for the parser.
    """
    text = _without_trailing_commas(_without_comments(_read_text(path)))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"it is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise ValueError("it is nested too deeply to be read") from None


def _value(raw: str) -> str:
    """A dotenv value as written after ``=``: unquoted, and without its `` #`` comment."""
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return re.sub(r"\\(.)", lambda m: _DOUBLE_ESCAPES.get(m.group(1), m.group(0)), raw[1:-1])
    comment = re.search(r"\s#", raw)
    return (raw[:comment.start()] if comment else raw).strip()


def read_env_file(path: Path) -> dict[str, str]:
    """The variables of the dotenv file ``path`` (a later line wins); lines of another
    shape (blank, ``#`` comments, anything without ``NAME=``) are skipped.

    Raises:
        OSError: as :func:`_read_text`.
    """
    found: dict[str, str] = {}
    for line in _read_text(path).splitlines():
        if line.lstrip().startswith("#"):
            continue
        match = _ENV_LINE.match(line)
        if match:
            found[match.group(1)] = _value(match.group(2))
    return found
