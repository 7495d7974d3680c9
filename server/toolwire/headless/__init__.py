"""The headless client behind ``toolwire run``: a JSON-RPC peer of ``toolwire serve``.

``client`` starts the server, speaks the protocol over its stdio, follows the turn
and answers permission requests; ``terminal`` is what it prints and asks there;
``mirror`` rebuilds each tool call from its ``tool_call`` updates (the reference
reducer of protocol.md, "ToolCall updates").

It imports the JSON-RPC plumbing (:mod:`toolwire.rpc`) and, of the LSP front-end,
only its wire models (``toolwire.lsp.protocol``, ``toolwire.lsp.messages``); never
the agent or another front-end (tests/test_layers.py).
"""
