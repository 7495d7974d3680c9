"""An MCP server over stdio that misbehaves the ways a badly written or hostile server can, for
the tests that Toolwire stays safe and readable with it.

It speaks JSON-RPC by hand (one JSON object a line), since the SDK's own server refuses to
send what this one must: tool lists and results that break the rules. Run as
``python hostile_server.py``. ``TOOLWIRE_HOSTILE`` (comma-separated) says how it misbehaves:

* ``garbage``: writes lines that are not JSON-RPC to stdout before it answers anything.
* ``init_error``: answers ``initialize`` with a JSON-RPC error.
* ``no_tools``: declares no ``tools`` capability (it serves resources only) and answers
  ``tools/list`` with "Method not found", as such servers do.
* ``many``: lists 3000 more tools (``t0000`` … ``t2999``).
* ``odd``: lists tools with odd names (spaces and dots, non-ASCII, 100 characters, a
  duplicate of ``echo``, an empty name, ``get_item`` then ``get.item``), control characters in a
  description.
* ``leaky``: lists a tool ``leaky`` whose description and input schema hold the value of its
  ``HOSTILE_TOKEN`` variable (a server quoting its own configuration).
* ``invalid``: lists two tools MCP's types refuse: an input schema that is not valid JSON
  Schema (``bad_schema``) and one that is not an object's (``no_schema``).

Tools (input schema ``{"type": "object"}`` with the properties named):

* ``echo`` ``{text}``: answers ``"echo: <text>"``.
* ``big`` ``{size}``: answers a text of ``size`` characters.
* ``bogus_image``: answers an ``image/png`` part whose bytes are not an image.
* ``raw_stdout`` ``{size}``: writes a line of ``size`` bytes that is not JSON to stdout, then answers.
* ``bad_utf8``: writes a line that is not UTF-8 to stdout, then answers.
* ``stderr_flood`` ``{size}``: writes ``size`` bytes to stderr, then answers.
* ``storm`` ``{count}``: sends ``notifications/tools/list_changed`` ``count`` times, then answers.
* ``bad_result``: answers a result that is not a ``CallToolResult`` (``content`` is a string).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

MODES = set(filter(None, os.environ.get("TOOLWIRE_HOSTILE", "").split(",")))


def _tool(name: str, description: str, /, **properties: Any) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object", "properties": properties}}


TOOLS = [
    _tool("echo", "Answers with the text.", text={"type": "string"}),
    _tool("big", "A long text.", size={"type": "integer"}),
    _tool("bogus_image", "Bytes labelled image/png."),
    _tool("raw_stdout", "Garbage on stdout.", size={"type": "integer"}),
    _tool("stderr_flood", "Floods stderr.", size={"type": "integer"}),
    _tool("bad_utf8", "Bytes that are not UTF-8 on stdout."),
    _tool("storm", "A list_changed storm.", count={"type": "integer"}),
    _tool("bad_result", "A result of the wrong shape."),
]
if "many" in MODES:
    TOOLS += [_tool(f"t{i:04d}", f"Tool {i}.", **{f"p{i}": {"type": "string"}}) for i in range(3000)]
if "odd" in MODES:
    TOOLS += [
        _tool("has space.and/dots", "odd\x00name\x1b[31m red \u202e"),
        _tool("ünïcode", "non-ASCII"),
        _tool("x" * 100, "a long name"),
        _tool("echo", "a duplicate"),
        _tool("", "an empty name"),
        _tool("get_item", "a plain name"),
        _tool("get.item", "the same name once cleaned"),
    ]
if "leaky" in MODES:
    TOKEN = os.environ.get("HOSTILE_TOKEN", "")
    TOOLS += [{"name": "leaky", "description": f"Connected with token {TOKEN}.",
               "inputSchema": {"type": "object", "properties": {"token": {"type": "string", "default": TOKEN}}}}]
if "invalid" in MODES:
    TOOLS += [
        {"name": "bad_schema", "description": "bad schema", "inputSchema": {"type": "object", "properties": 3}},
        {"name": "no_schema", "description": "no object", "inputSchema": {"type": "string"}},
    ]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    if name == "echo":
        return text(f"echo: {args.get('text', '')}")
    if name == "big":
        return text("x" * int(args.get("size", 1_000_000)))
    if name == "bogus_image":
        return {"content": [{"type": "image", "data": "bm90IGFuIGltYWdl", "mimeType": "image/png"}]}
    if name == "raw_stdout":
        sys.stdout.write("g" * int(args.get("size", 1000)) + "\n")
        return text("wrote")
    if name == "bad_utf8":
        sys.stdout.flush()
        os.write(1, b"\xff\xfe not UTF-8\n")
        return text("wrote")
    if name == "stderr_flood":
        line = "e" * 1023 + "\n"
        for _ in range(int(args.get("size", 1_000_000)) // 1024):
            sys.stderr.write(line)
        sys.stderr.flush()
        return text("flooded")
    if name == "storm":
        for _ in range(int(args.get("count", 100))):
            send({"method": "notifications/tools/list_changed"})
        return text("stormed")
    if name == "bad_result":
        return {"content": "not a list"}
    return text(f"{name} ran")


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """``{"result": …}`` or ``{"error": …}``: the answer to ``request``."""
    method = request.get("method")
    if method == "initialize":
        if "init_error" in MODES:
            return {"error": {"code": -32603, "message": "the hostile server refuses to start"}}
        capabilities = {"resources": {}} if "no_tools" in MODES else {"tools": {"listChanged": True}}
        return {"result": {"protocolVersion": request["params"]["protocolVersion"], "capabilities": capabilities,
                           "serverInfo": {"name": "hostile", "version": "1"}}}
    if method == "tools/list":
        if "no_tools" in MODES:
            return {"error": {"code": -32601, "message": "Method not found"}}
        return {"result": {"tools": TOOLS}}
    if method == "tools/call":
        params = request.get("params") or {}
        return {"result": call(params.get("name", ""), params.get("arguments") or {})}
    if method == "ping":
        return {"result": {}}
    return {"error": {"code": -32601, "message": "Method not found"}}


def main() -> None:
    if "garbage" in MODES:
        sys.stdout.write('hello, this is not JSON-RPC\n{"jsonrpc": 3}\n')
        sys.stdout.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if "id" not in request:
            continue
        send({"id": request["id"], **answer(request)})


if __name__ == "__main__":
    main()
