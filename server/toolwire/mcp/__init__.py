"""MCP servers the user plugs in: their tools go through the same pipeline as the built-in ones.

The layer sits beside :mod:`toolwire.tools` (it may import ``tools`` and ``workspace``, never
``agent`` or a front-end); it is the only package that imports the ``mcp`` SDK.

* :mod:`toolwire.mcp.config`: the ``mcpServers`` setting, ``.vscode/mcp.json``, variable
  expansion, and the servers one session uses (:class:`~toolwire.mcp.config.ServerSpec`);
  :mod:`toolwire.mcp.variables` (``${workspaceFolder}``, ``${userHome}``, ``${env:NAME}``) and
  :mod:`toolwire.mcp.files` (``mcp.json`` with comments, ``envFile``) serve it.
* :mod:`toolwire.mcp.naming`: the name a tool is offered under (``mcp__<server>__<tool>``)
  and the shape of ``mcp__`` permission keys.
* :mod:`toolwire.mcp.status`: a server's state and the events a server sends its sessions.
* :mod:`toolwire.mcp.connection`: one running server (the SDK's client session over stdio
  or streamable HTTP), its calls, cancellation, crash and restart.
* :mod:`toolwire.mcp.failures`: why a server failed, in the sentence its status carries.
* :mod:`toolwire.mcp.process`: a stdio server's process (stderr tail, exit, process group).
* :mod:`toolwire.mcp.pool`: the servers of the process, shared by sessions of one workspace
  with the same configuration, stopped with the last of them.
* :mod:`toolwire.mcp.tool`: an MCP tool as a :class:`~toolwire.tools.base.Tool`
  (validation against its input schema, approval hints, run).
* :mod:`toolwire.mcp.results`: what the model and the card get of a ``tools/call`` result.

docs/mcp.md describes the behaviour; protocol.md the wire.
"""
