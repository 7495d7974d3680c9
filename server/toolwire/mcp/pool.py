"""The MCP servers of the process, shared by sessions with the same configuration.

:class:`McpPool` (one per ``SessionHost``) starts each server a session needs, in the
background, unless one with an equal :attr:`~toolwire.mcp.config.ServerSpec.key` runs
already (sessions of one workspace with the same configuration share it); the last session
to leave a server stops it (its whole process group). :class:`SessionServers` is one
session's view: its servers in configuration order, their tools under each server's ``tools``
allowlist, their statuses, the restart of failed servers between turns, and the bounded wait
(:data:`RELIST_WAIT`) a model request makes for the ``tools/list`` a ``tools/list_changed`` asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from toolwire.mcp.naming import clean, split_key
from toolwire.mcp.status import ServerStatus, ToolsChanged
from toolwire.mcp.tool import McpTool
from toolwire.redaction import Redactor

if TYPE_CHECKING:
    import mcp_types

    from toolwire.mcp.connection import Change, McpConnection

    from toolwire.mcp.config import ServerSpec

__all__ = ["McpPool", "SessionServers", "RELIST_WAIT"]

#: Seconds a model request waits at most for the re-lists its servers have pending (a
#: ``tools/list_changed`` received, its ``tools/list`` not answered yet); past it, the request
#: offers the tools listed so far and the next one offers the new list (protocol.md, "MCP servers").
RELIST_WAIT = 2.0

Listener = Callable[[ServerStatus | ToolsChanged], None]


class SessionServers:
    """One session's servers (a handle from :meth:`McpPool.attach`).

    Attributes:
        connections: The session's servers, in configuration order.
    """

    def __init__(self, connections: tuple[McpConnection, ...]) -> None:
        self.connections = connections
        self._listeners: list[Listener] = []
        self._unwatch = [connection.watch(self._changed) for connection in connections]

    @property
    def revision(self) -> int:
        """Grows whenever a server's tools or state change: compare it between model requests."""
        return sum(connection.revision for connection in self.connections)

    def tools(self) -> list[McpTool]:
        """The tools of the ready servers, in configuration order, each server's allowlist applied;
        a tool whose offered name an earlier one has (``get.item`` after ``get_item``) is named with its hash."""
        tools: list[McpTool] = []
        taken: set[str] = set()
        for connection in self.connections:
            for listed in _allowed(connection):
                tool = McpTool(connection, listed)
                if tool.name in taken:
                    tool = McpTool(connection, listed, hashed=True)
                taken.add(tool.name)
                tools.append(tool)
        return tools

    def statuses(self) -> list[ServerStatus]:
        """Each server's status (``offered`` 0: the session sets it)."""
        return [_status(connection) for connection in self.connections]

    def unavailable(self, name: str) -> str | None:
        """Why the tool ``name`` (``mcp__<server>__…``) is not offered when its server is not
        ready (``the MCP server git is not available (failed: exited (code 1))``); None otherwise."""
        parts = split_key(name)
        for connection in self.connections:
            if parts is not None and clean(connection.name) == parts[0] and connection.state != "ready":
                why = f"{connection.state}: {connection.error}" if connection.error else connection.state
                return f"the MCP server {connection.name} is not available ({why})"
        return None

    def missing_allowed(self) -> list[str]:
        """``"server/tool"`` for each allowlisted name a ready server does not list."""
        missing = []
        for connection in self.connections:
            allow = connection.spec.config.tools
            if connection.state == "ready" and allow is not None:
                listed = {tool.name for tool in connection.tools}
                missing += [f"{connection.name}/{name}" for name in allow if name not in listed]
        return missing

    async def wait_started(self, timeout: float) -> None:
        """Return when no server is ``starting``, or after ``timeout`` seconds."""
        with anyio.move_on_after(timeout):
            for connection in self.connections:
                await connection.wait_started()

    async def wait_relisted(self, timeout: float = RELIST_WAIT) -> None:
        """Return when no server has a re-list pending (:attr:`McpConnection.relisting`), or after
        ``timeout`` seconds; at once when none has."""
        pending = [connection for connection in self.connections if connection.relisting]
        if not pending:
            return
        with anyio.move_on_after(timeout):
            for connection in pending:
                await connection.wait_relisted()

    def prepare_turn(self) -> None:
        """Start again each failed server whose backoff (1 s, doubling to 60 s) has passed."""
        for connection in self.connections:
            connection.restart_if_due()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with a :class:`ServerStatus` on each state change of a server and a
        :class:`ToolsChanged` when its tools change; returns the unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def close(self) -> None:
        """Stop listening to the servers (the pool stops them)."""
        for unwatch in self._unwatch:
            unwatch()
        self._unwatch = []
        self._listeners = []

    def _changed(self, connection: McpConnection, change: Change) -> None:
        event = _status(connection) if change == "state" else ToolsChanged(connection.name)
        for listener in list(self._listeners):
            listener(event)


class McpPool:
    """Every MCP server the process runs, each shared by the sessions (owners) using it."""

    def __init__(self, *, redactor: Redactor | None = None) -> None:
        self._redactor = redactor
        self._running: dict[str, McpConnection] = {}
        self._owners: dict[str, set[str]] = {}  # spec key → owners
        self._attached: dict[str, SessionServers] = {}

    def attach(self, owner: str, specs: list[ServerSpec], *, start_timeout: float) -> SessionServers:
        """The servers of ``specs`` for ``owner``, started in the background when none runs with
        the same key (a failed shared one is left to :meth:`SessionServers.prepare_turn`).

        Raises:
            ValueError: ``owner`` is attached already.
        """
        if owner in self._attached:
            raise ValueError(f"{owner!r} is attached already")
        from toolwire.mcp.connection import McpConnection  # the MCP SDK, loaded once a session has servers

        connections = []
        for spec in specs:
            connection = self._running.get(spec.key)
            if connection is None:
                connection = McpConnection(spec, start_timeout=start_timeout, redactor=self._redactor)
                self._running[spec.key] = connection
                connection.start()
            self._owners.setdefault(spec.key, set()).add(owner)
            connections.append(connection)
        servers = SessionServers(tuple(connections))
        self._attached[owner] = servers
        return servers

    async def detach(self, owner: str) -> None:
        """``owner`` no longer uses its servers: stop each one no other owner uses."""
        servers = self._attached.pop(owner, None)
        if servers is None:
            return
        servers.close()
        leaving = []
        for connection in servers.connections:
            owners = self._owners.get(connection.spec.key, set())
            owners.discard(owner)
            if not owners and self._running.get(connection.spec.key) is connection:
                del self._running[connection.spec.key]
                self._owners.pop(connection.spec.key, None)
                leaving.append(connection)
        await _stop_all(leaving)

    async def aclose(self) -> None:
        """Stop every server (the process is ending)."""
        for servers in self._attached.values():
            servers.close()
        leaving = list(self._running.values())
        self._attached.clear()
        self._owners.clear()
        self._running.clear()
        await _stop_all(leaving)


async def _stop_all(connections: list[McpConnection]) -> None:
    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as tg:
            for connection in connections:
                tg.start_soon(connection.stop)


def _allowed(connection: McpConnection) -> list[mcp_types.Tool]:
    """A ready server's tools under its allowlist (only those names, in the allowlist's order)."""
    if connection.state != "ready":
        return []
    allow = connection.spec.config.tools
    if allow is None:
        return list(connection.tools)
    by_name = {tool.name: tool for tool in connection.tools}
    return [by_name[name] for name in dict.fromkeys(allow) if name in by_name]


def _status(connection: McpConnection) -> ServerStatus:
    return ServerStatus(connection.name, connection.state, tools=len(_allowed(connection)), error=connection.error)
