"""JSON-RPC plumbing that pygls leaves to us, under every JSON-RPC front-end of Toolwire.

``protocol`` checks every incoming message against JSON-RPC 2.0 and LSP's base
protocol and lifecycle rules, writes (redacted, compact) messages, withdraws
requests sent to the peer (``$/cancelRequest``) and fails them when the
connection ends; ``errors`` holds the error codes, their exception classes and
what an error response may carry; ``transport`` the byte streams (stdio, ``--tcp``)
and the framing reader; ``unix_socket`` the private socket of ``--socket``;
``invalid`` turns pydantic's validation errors into one plain sentence for ``-32602``.

It imports pygls and lsprotocol but none of Toolwire's front-ends or its agent
(``toolwire.lsp``, ``toolwire.acp``, ``toolwire.headless``, ``toolwire.agent``:
tests/test_layers.py). Nothing is imported here: ``toolwire serve`` imports only
what it needs before ``initialize``.
"""
