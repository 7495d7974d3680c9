"""Wire models of MCP servers (protocol.md, "MCP servers"): the ``mcp_server`` update, the
source and hints of an MCP tool, and the ``mcp`` subject of a permission request. Method
names, the shared ``Wire`` base and a server's status (:class:`~toolwire.lsp.protocol.McpServerStatusWire`,
``toolwire/session/new`` carries it) are in :mod:`toolwire.lsp.protocol`; the update and
subject unions in :mod:`toolwire.lsp.messages`."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict
from pydantic.alias_generators import to_camel

from toolwire.lsp.protocol import McpServerState, Wire


class McpToolSource(Wire):
    """Where an MCP tool comes from: the server's name and the tool's own name there."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    mcp_server: str
    tool: str


class McpServerUpdate(Wire):
    """``sessionUpdate: "mcp_server"``: a server of the session changed state (``starting``
    when it starts or restarts, ``ready``, ``failed`` with ``error``, ``stopped``)."""

    session_update: Literal["mcp_server"]
    name: str
    state: McpServerState
    error: str | None = None


class McpHints(Wire):
    """The server's hints about a tool (MCP ``ToolAnnotations``), as it gives them: shown
    to the user, never used to allow a call."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    open_world_hint: bool | None = None


class McpSubject(Wire):
    """An MCP tool's call: the name the model called (``tool``), the server and the tool's
    name there (``serverTool``), the arguments, the server's hints, and ``undo`` ("Toolwire
    cannot undo what this tool does") unless the tool is marked read-only."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    kind: Literal["mcp"]
    tool: str
    server: str
    server_tool: str
    arguments: dict[str, Any] | None
    hints: McpHints
    undo: str | None = None
