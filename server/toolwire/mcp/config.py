"""MCP server configuration: the ``mcpServers`` setting, ``.vscode/mcp.json``, and the servers
one session uses.

An entry has the shape people write in VS Code's ``mcp.json``: ``{"type": "stdio", "command",
"args", "env", "envFile", "cwd"}`` or ``{"type": "http", "url", "headers"}`` (streamable HTTP),
plus Toolwire's optional ``tools`` allowlist (the server's tool names, in the order they are
offered). ``type`` may be left out when ``command`` (stdio) or ``url`` (http) says it.
Unknown keys and bad values are refused like every other setting.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

__all__ = ["StdioServerConfig", "HttpServerConfig", "ServerConfig", "parse_servers"]


class _Entry(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class StdioServerConfig(_Entry):
    """A server Toolwire starts as a process and talks to over its stdin and stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    env_file: str | None = None
    cwd: str | None = None
    tools: list[str] | None = None


class HttpServerConfig(_Entry):
    """A server reached over streamable HTTP at ``url``."""

    type: Literal["http"]
    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    tools: list[str] | None = None


def _kind(raw: Any) -> str | None:
    if isinstance(raw, BaseModel):
        return getattr(raw, "type", None)
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind is None:
        return "stdio" if "command" in raw else "http" if "url" in raw else None
    return kind if isinstance(kind, str) else None


ServerConfig = Annotated[
    Union[Annotated[StdioServerConfig, Tag("stdio")], Annotated[HttpServerConfig, Tag("http")]],
    Discriminator(_kind),
]


def parse_servers(raw: Any) -> dict[str, StdioServerConfig | HttpServerConfig]:
    """Validate an ``mcpServers`` object (name → entry), keeping its order.

    Raises:
        ValueError: one sentence per refused entry, joined by ``; ``; secrets (``env`` and
            ``headers`` values) are never quoted.
    """
    raise NotImplementedError  # helper "config" writes it
