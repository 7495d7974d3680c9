"""The server ``toolwire serve`` runs: the light server of :mod:`toolwire.lsp.boot`, with
the handlers of :mod:`toolwire.lsp.server` loaded right after ``initialize`` is answered.

The light start imports nothing of the handlers; this module is the one that knows
both, so neither imports the other's module at start (and no import cycle joins them).
"""

from __future__ import annotations

from toolwire.lsp.boot import Handlers, ToolwireServer


def load_handlers() -> Handlers:
    """Import the handlers (registering every other feature on the server) and return them."""
    from toolwire.lsp import server as handlers

    return handlers  # the module is the Handlers


def make_server() -> ToolwireServer:
    """The light server of boot, set to load the handlers after ``initialize``."""
    from toolwire.lsp import boot

    boot.server.loader = load_handlers
    return boot.server


server = make_server()

__all__ = ["load_handlers", "server"]
