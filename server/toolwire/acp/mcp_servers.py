"""The MCP servers an ACP editor sends with ``session/new``, as the entries the core takes.

ACP gives each server as an SDK model (``McpServerStdio``: ``name``, ``command``, ``args``,
``env`` as ``[{name, value}]``; ``HttpMcpServer``: ``name``, ``url``, ``headers`` as
``[{name, value}]``); the core (:meth:`toolwire.agent.host.SessionHost.open`) takes the entries
of the ``mcpServers`` setting, name → ``{"type": "stdio", "command", "args", "env"}`` or
``{"type": "http", "url", "headers"}``, and checks them as it checks the settings'. An SSE
server (ACP's ``McpServerSse``, the older HTTP+SSE transport) and any other transport are
refused here: the agent does not advertise them (``mcpCapabilities.sse: false``), so each is a
warning the user reads, and the session opens without it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from toolwire.agent.host import Session
from toolwire.mcp.tool import McpTool

__all__ = ["marked_read_only", "raw_entries"]


def marked_read_only(session: Session, name: str) -> bool:
    """Whether the tool ``name`` the session offers now is an MCP tool its server marks ``readOnlyHint``."""
    tool = session.registry.get(name)
    return isinstance(tool, McpTool) and tool.hint("readOnlyHint") is True


def raw_entries(servers: Iterable[Any] | None) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str]]]:
    """The servers as ``mcpServers`` entries by name (in the order sent), and the warnings
    about those left out.

    Returns:
        ``(entries, warnings)``: a stdio server (no ``type``, or ``"stdio"``) as ``{"type":
        "stdio", "command", "args", "env": {name: value}}``, an HTTP one as ``{"type": "http",
        "url", "headers": {name: value}}``; per server left out (another transport; a second
        server of the same name), its name and a sentence naming it, never its values.
    """
    entries: dict[str, dict[str, Any]] = {}
    warnings: list[tuple[str, str]] = []
    for server in servers or []:
        name = str(getattr(server, "name", ""))
        kind = getattr(server, "type", None) or "stdio"
        if name in entries:
            warnings.append((name, f"The editor sent two MCP servers named {name!r}: only the first is started."))
        elif kind == "stdio":
            entries[name] = {"type": "stdio", "command": server.command, "args": list(server.args),
                             "env": _pairs(server.env)}
        elif kind == "http":
            entries[name] = {"type": "http", "url": server.url, "headers": _pairs(server.headers)}
        else:
            warnings.append((name, f"MCP server {name!r} uses the {kind} transport, which Toolwire does not "
                                   "support (stdio and HTTP only): it is not started; configure it as an HTTP "
                                   "(streamable HTTP) server if it has one."))
    return entries, warnings


def _pairs(items: Iterable[Any] | None) -> dict[str, str]:
    """ACP's ``[{name, value}]`` (environment variables, headers) as an object; a later name wins."""
    return {str(item.name): str(item.value) for item in items or []}
