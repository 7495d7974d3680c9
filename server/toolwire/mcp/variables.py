"""The variables of an MCP server entry, as VS Code's ``mcp.json`` writes them.

``${workspaceFolder}`` (the session's folder), ``${userHome}`` and ``${env:NAME}`` (Toolwire's
environment; an unset NAME is empty) are expanded; any other ``${…}`` stays as written.
``${input:…}`` are VS Code's own prompts: an entry holding one is not started
(:func:`uses_input`), never half-expanded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

__all__ = ["Expander", "uses_input"]

_VARIABLE = re.compile(r"\$\{([^}]*)\}")


class Expander:
    """Expands the variables of one entry's strings, and remembers what ``${env:…}`` gave
    (:attr:`secrets`: they may sit in ``args`` or a URL, where nothing else marks them)."""

    def __init__(self, root: Path, home: str, env: Mapping[str, str]) -> None:
        self.values = {"workspaceFolder": str(root), "userHome": home}
        self.env = env
        self.secrets: list[str] = []

    def _one(self, match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("env:"):
            value = self.env.get(name[4:], "")
            if value:
                self.secrets.append(value)
            return value
        return self.values.get(name, match.group(0))

    def __call__(self, text: str) -> str:
        """``text`` with its variables expanded."""
        return _VARIABLE.sub(self._one, text) if "${" in text else text


def _strings(data: Any) -> Iterable[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for key, value in data.items():
            yield str(key)
            yield from _strings(value)
    elif isinstance(data, list):
        for item in data:
            yield from _strings(item)


def uses_input(config: BaseModel) -> bool:
    """True when any string of ``config`` (a key or a value, at any depth) holds ``${input:``."""
    return any("${input:" in text for text in _strings(config.model_dump()))
