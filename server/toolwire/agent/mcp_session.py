"""A hosted session's MCP servers (:mod:`toolwire.mcp`), as the host runs them for every front-end.

* Opening (:meth:`McpLink.open`): the servers of the session's settings (``mcpServers``), of
  ``.vscode/mcp.json`` when ``mcpWorkspaceServers`` is true, and a front-end's own entries (ACP's
  ``session/new``), resolved and expanded by :func:`toolwire.mcp.config.resolve_servers`; their
  ``env`` and header values join the redactor's secrets; the process's pool starts them in the
  background (sessions with the same configuration share a server). Settings that change
  while the session is open (:meth:`McpLink.settings_changed`, when it is idle) are resolved
  again the same way: servers no longer named are left (the pool stops those no other session
  uses), new ones start.
* While the session is open (:class:`McpLink`): every state change of a server is an
  :class:`~toolwire.agent.events.McpServerChanged` on the session's outlet; a failure is also told
  once per session and server (a ``mcp_server_failed`` warning); when a server's tool list arrives,
  each allowlist name it does not list and each ``mcp__`` key of ``permissions`` that names no
  server or tool of the session is told once (a ``mcp_config`` warning), as are the entries
  :func:`resolve_servers` skipped.
* A turn's start (:meth:`toolwire.agent.session.Session.wait_for_servers`): servers that failed
  or exited are restarted once their backoff has passed, and the first model request waits at
  most ``mcpStartTimeout`` for servers still starting; between the requests of a turn the
  session offers the tools the servers list then (:meth:`~toolwire.agent.session.Session.refresh_tools`).
* ``toolwire/tools/list`` (:func:`tool_listing`): the tools offered, where each comes from, and
  the servers' states.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from toolwire.agent.events import McpServerChanged, SessionWarning, Sink
from toolwire.agent.session import Session
from toolwire.mcp.config import register_secrets, resolve_servers
from toolwire.mcp.naming import PREFIX, clean, offered_name, split_key
from toolwire.mcp.status import ServerStatus, ToolsChanged
from toolwire.mcp.tool import McpTool
from toolwire.redaction import Redactor
from toolwire.tools import session_tools
from toolwire.tools.editor_intel import EditorFeatures
from toolwire.tools.selection import select_tools

if TYPE_CHECKING:
    from toolwire.mcp.pool import McpPool

__all__ = ["McpLink", "statuses", "tool_listing"]

log = logging.getLogger(__name__)


class McpLink:
    """What the host keeps of one session's MCP servers: the events they cause, the warnings told.

    Open it with :meth:`open`, tell it of changed settings with :meth:`settings_changed`, close it
    with :meth:`close`.

    Args:
        session: The session; its servers are ``session.mcp`` (None: it has none).
        pool: The process's servers (``session.mcp`` is this session's handle on them).
        redactor: Learns the servers' secrets before anything about them is told.
        extra: Raw entries from the front-end (ACP's ``mcpServers``, converted), or None.
        outlet: The session's sink outside a turn, recording into its log.

    Attributes:
        warnings: Every warning told about the session's servers, oldest first (snapshots carry them).
    """

    def __init__(self, session: Session, pool: McpPool, redactor: Redactor, extra: Mapping[str, Any] | None,
                 outlet: Sink) -> None:
        self.session = session
        self.pool = pool
        self.redactor = redactor
        self.extra = dict(extra) if extra else None
        self.outlet = outlet
        self.warnings: list[SessionWarning] = []
        self._told: set[tuple[str, ...]] = set()
        self._states: dict[str, tuple[str, str | None]] = {}
        self._unsubscribe: Callable[[], None] | None = None
        self._owner: str | None = None  # the session's name in the pool (a new one per set of servers)
        self._sets = 0

    @classmethod
    def open(cls, session: Session, pool: McpPool, redactor: Redactor, extra: Mapping[str, Any] | None,
             outlet: Sink) -> "McpLink":
        """Resolve the new ``session``'s servers, attach them to ``pool`` (``session.mcp``; left None
        when it has none) and listen to them. Their states at opening are in the answers, not
        events; the entries skipped (``${input:…}``, a bad ``mcp.json``, a name used twice) are
        told on ``outlet`` at once, as ``mcp_config`` warnings."""
        link = cls(session, pool, redactor, extra, outlet)
        link._attach(announce=False)
        return link

    def settings_changed(self) -> str | None:
        """The idle session's settings changed (``mcpServers``, ``mcpWorkspaceServers``, ``permissions``):
        when its servers are not the same any more, attach the ones named now (each change of state an
        :class:`McpServerChanged`, ``stopped`` for those gone) and offer their tools.

        Returns:
            The pool owner of the servers it had before, for the caller to detach (it stops those no
            other session uses), or None when they stay.
        """
        stale = self._attach(announce=True)
        if stale is not None:
            self.session.budget_tools()
        return stale

    async def close(self) -> None:
        """The session closes: stop listening, and let the pool stop the servers no other session uses."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._owner is not None:
            await self.pool.detach(self._owner)

    def _attach(self, *, announce: bool) -> str | None:
        """Attach the servers the session's settings name now, unless they are the ones it has."""
        session, settings = self.session, self.session.settings
        specs, problems = resolve_servers(settings.mcp_servers, root=session.root,
                                          workspace_file=settings.mcp_workspace_servers, extra=self.extra)
        register_secrets(self.redactor, specs)
        for problem in problems:
            self.warn("mcp_config", problem)
        had = [c.spec.key for c in session.mcp.connections] if session.mcp is not None else []
        if had == [spec.key for spec in specs]:
            self._check_tools()
            return None
        stale = self._owner
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        session.mcp, self._owner, before = None, None, dict(self._states)
        self._states = {}
        if specs:
            self._sets += 1
            self._owner = session.id if self._sets == 1 else f"{session.id}/{self._sets}"
            servers = session.mcp = self.pool.attach(self._owner, specs, start_timeout=settings.mcp_start_timeout)
            for status in servers.statuses():
                error = self.redactor.redact(status.error) if status.error is not None else None
                self._states[status.name] = state = (status.state, error)
                if announce and before.get(status.name) != state:
                    self.outlet.emit(McpServerChanged(status.name, status.state, error))
                if status.state == "failed":
                    self._failed(status)
            self._unsubscribe = servers.subscribe(self._on_event)
        for name in before.keys() - self._states.keys() if announce else ():
            self.outlet.emit(McpServerChanged(name, "stopped", None))
        self._check_tools()  # a server shared with another session may be ready already
        return stale

    def warn(self, code: str, message: str, names: tuple[str, ...] = ()) -> None:
        """Tell ``message`` once (per ``code`` and ``names``, or the message when it names nothing)."""
        key = (code, *names) if names else (code, message)
        if key in self._told:
            return
        self._told.add(key)
        warning = SessionWarning(code, self.redactor.redact(message), names)
        log.warning("session %s: %s", self.session.id, warning.message)
        self.warnings.append(warning)
        self.outlet.emit(warning)

    # ------------------------------------------------------------ events
    def _on_event(self, event: ServerStatus | ToolsChanged) -> None:
        """A server's event (called from its connection's task: a failure here is logged, never raised there)."""
        try:
            self._handle(event)
        except Exception:  # noqa: BLE001 - the server's task must go on
            log.exception("session %s: MCP server event %r not handled", self.session.id, event)

    def _handle(self, event: ServerStatus | ToolsChanged) -> None:
        if isinstance(event, ToolsChanged):
            self._check_tools()
            return
        error = self.redactor.redact(event.error) if event.error is not None else None
        if self._states.get(event.name) != (event.state, error):
            self._states[event.name] = (event.state, error)
            self.outlet.emit(McpServerChanged(event.name, event.state, error))
        if event.state == "failed":
            self._failed(event)
        elif event.state == "ready":
            self._check_tools()

    def _failed(self, status: ServerStatus) -> None:
        why = status.error or "it stopped"
        self.warn("mcp_server_failed", f"MCP server {status.name} is not available: {why}. Its tools are not offered; "
                  "Toolwire starts it again before a later prompt.", (status.name,))

    def _check_tools(self) -> None:
        """A server's tool list arrived: allowlist names and permission keys that name nothing."""
        servers = self.session.mcp
        for entry in servers.missing_allowed() if servers is not None else []:
            server, _, tool = entry.partition("/")
            self.warn("mcp_config", f"The tools allowlist of MCP server {server} names {tool}, which the server does "
                      "not list: it is not offered.", (entry,))
        self._check_permissions()

    def _check_permissions(self) -> None:
        """Each ``mcp__`` key of ``permissions`` that names no server of the session, or a tool its
        ready server does not list, told once (at opening, when a tool list arrives, when the
        session's settings changed)."""
        servers = self.session.mcp
        connections = {clean(c.name): c for c in servers.connections} if servers is not None else {}
        for key in self.session.settings.permissions:
            parts = split_key(key) if key.startswith(PREFIX) else None
            if parts is None:
                continue
            server, tool = parts
            connection = connections.get(server)
            if connection is None:
                self.warn("mcp_config", f"The permissions key {key} names no MCP server of this session: it applies "
                          "to nothing.", (key,))
            elif tool is not None and connection.state == "ready" and not any(
                    clean(listed.name) == tool or offered_name(connection.name, listed.name) == key
                    for listed in connection.tools):
                self.warn("mcp_config", f"The permissions key {key} names a tool MCP server {connection.name} does "
                          "not list: it applies to nothing.", (key,))


def statuses(session: Session) -> list[ServerStatus]:
    """The session's servers now, each with how many of its tools the session offers."""
    servers = session.mcp
    if servers is None:
        return []
    offered: dict[str, int] = {}
    for tool in session.registry.tools():
        if isinstance(tool, McpTool):
            offered[tool.server] = offered.get(tool.server, 0) + 1
    return [ServerStatus(s.name, s.state, s.tools, offered.get(s.name, 0), s.error) for s in servers.statuses()]


def tool_listing(session: Session | None, max_tools: int, features: EditorFeatures | None) -> dict[str, Any]:
    """The ``toolwire/tools/list`` answer: the tools ``session``'s model requests offer and its MCP
    servers, or (None) what a new session would offer under ``max_tools`` with the editor ``features``
    (no MCP tools). ``{tools: [{type, function, source, annotations?}], count, maxTools, leftOut,
    mcpServers}``; ``source`` is ``"builtin"`` or ``{"mcpServer", "tool"}``, ``annotations`` the MCP
    tool's, when it has some."""
    selection = session.tool_selection if session is not None else None
    if selection is None:
        selection = select_tools(session_tools(features), max_tools)
    tools = []
    for tool, definition in zip(selection.registry.tools(), selection.registry.definitions()):
        entry = {**definition, "source": "builtin"}
        if isinstance(tool, McpTool):
            entry["source"] = tool.source()
            if tool.annotations is not None:
                entry["annotations"] = tool.annotations
        tools.append(entry)
    servers = statuses(session) if session is not None else []
    return {"tools": tools, "count": selection.count, "maxTools": selection.max_tools,
            "leftOut": list(selection.left_out), "mcpServers": [s.to_wire() for s in servers]}
