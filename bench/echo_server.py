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

import asyncio
import sys
import threading
from typing import Any

from pygls.io_ import StdoutWriter, run_async
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


def start_loop_reader() -> None:
    """Serve stdio with stdin read on the event loop (stdin must be a pipe or a socket)."""
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=1 << 16)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        await run_async(stop_event=server._stop_event, reader=reader, protocol=server.protocol)

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit):
        pass


if __name__ == "__main__":
    if "--loop-reader" in sys.argv[1:]:
        start_loop_reader()
    else:
        server.start_io()
