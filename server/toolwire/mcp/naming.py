"""The names MCP tools are offered under, and the shape of ``mcp__`` permission keys.

A tool ``t`` of the server ``s`` is offered to the model as ``mcp__s__t``: every character
outside ``[A-Za-z0-9_-]`` becomes ``_`` (the providers' rule for function names), and a name
longer than 64 characters is cut and ends with ``_`` and 8 hex digits of a hash of the
original server and tool names, so the same tool keeps the same name and two long names
that share a prefix stay apart. A tool whose name another tool of the session already has
(``get.item`` after ``get_item``) ends with the hash too.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["PREFIX", "MAX_NAME", "clean", "offered_name", "server_key", "split_key"]

#: Every MCP tool name starts with it.
PREFIX = "mcp__"
#: The providers' limit on a function name.
MAX_NAME = 64
_HASH = 8
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


def clean(part: str) -> str:
    """``part`` with each character outside ``[A-Za-z0-9_-]`` replaced by ``_``."""
    return _OUTSIDE.sub("_", part)


def offered_name(server: str, tool: str, *, hashed: bool = False) -> str:
    """The name the model calls the tool ``tool`` of ``server`` by (at most :data:`MAX_NAME` characters);
    ``hashed``: ending with the hash even when not cut (for a name another tool has already)."""
    name = f"{PREFIX}{clean(server)}__{clean(tool)}"
    if len(name) <= MAX_NAME and not hashed:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode("utf-8", "surrogatepass")).hexdigest()[:_HASH]
    return f"{name[:MAX_NAME - _HASH - 1]}_{digest}"


def server_key(server: str) -> str:
    """The permission key naming every tool of ``server``: ``mcp__<server>`` (cleaned)."""
    return f"{PREFIX}{clean(server)}"


def split_key(key: str) -> tuple[str, str | None] | None:
    """``mcp__<server>`` → ``(server, None)``, ``mcp__<server>__<tool>`` → ``(server, tool)``
    (the cleaned names as written); None when ``key`` does not have that shape."""
    if not key.startswith(PREFIX):
        return None
    rest = key[len(PREFIX):]
    server, sep, tool = rest.partition("__")
    if not server or _OUTSIDE.search(server):
        return None
    if not sep:
        return server, None
    if not tool:
        return None
    return server, tool
