"""A bare pygls 2 server for ``bench/server.py`` to compare Toolwire against, side by side.

Nothing of Toolwire is imported: pygls' own ``LanguageServer`` and writer, and one
custom request, ``bench/echo``, which sends one small ``bench/update``
notification and answers ``{"chunks": N}`` (N = the length of its ``chunks``
param): the message pattern of a client-fed ``toolwire/toolCalls/merge`` (one
notification and one answer per request) with the least work a server can do.
Its converter leaves custom params as plain dicts, the way Toolwire's does:
pygls' default turns every JSON object of a custom request into a fresh named
tuple, which makes a large request tens of times slower and would flatter any
server compared with it. Started over stdio: ``python bench/echo_server.py``.
"""

from __future__ import annotations

from typing import Any

from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, default_converter


def plain_converter() -> Any:
    """pygls' converter, with custom-method messages kept as plain JSON data."""
    converter = default_converter()
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, lambda obj, cls: cls(**obj))
    return converter


server = LanguageServer("bench-echo", "1.0", converter_factory=plain_converter)


@server.feature("bench/echo")
def echo(ls: LanguageServer, params: Any) -> Any:
    """Send one small notification, then answer how many chunks arrived."""
    count = len(params.get("chunks", ())) if isinstance(params, dict) else 0
    ls.protocol.notify("bench/update", {"sessionUpdate": "echo", "chunks": count})
    return {"chunks": count}


if __name__ == "__main__":
    server.start_io()
