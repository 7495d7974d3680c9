"""A small MCP server (the official SDK's low-level ``Server`` over stdio) for what the
registry servers cannot show: which ``notifications/cancelled`` reached the server, a server
dying in the middle of a call, a server ignoring a cancel, and a tool list changed on request.

Run as ``python probe_server.py``. With ``TOOLWIRE_PROBE_RECORD`` set to a path (a regular
file or a fifo the test reads), the server appends one JSON object per line there:
``{"event": "started", "tool", "requestId", "pid"}`` when ``block`` or ``crash`` begins,
``{"event": "cancelled", "requestId", "reason"}`` for every ``notifications/cancelled``
received, ``{"event": "added", "tool"}`` when ``add_tool`` has announced a new tool, and
``{"event": "listed", "tools": [name, ...]}`` as it answers a ``tools/list`` (written before
the answer, with no await in between, so a later call's answer follows that one).

Tools (every one a plain ``{"type": "object"}`` input schema with the properties below):

* ``echo`` ``{text: string}``: answers ``"echo: <text>"``.
* ``block`` ``{ignore_cancel?: boolean}``: never answers. A cancel ends it, unless
  ``ignore_cancel`` is true: then it keeps running as a server that ignores cancels does.
* ``crash`` ``{code?: integer}``: writes ``probe server: crashing with code N`` to stderr and
  exits at once with that code (default 3) while the call is running.
* ``fail`` ``{message: string}``: answers ``isError: true`` with the message as its text.
* ``add_tool`` ``{name: string}``: adds a tool ``name`` (it answers ``"<name> ran"``) and
  sends ``notifications/tools/list_changed``.

With ``TOOLWIRE_PROBE_PAGE_SIZE`` set to N, ``tools/list`` answers N tools a page (the next
page through a cursor).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

RECORD = os.environ.get("TOOLWIRE_PROBE_RECORD")
PAGE_SIZE = int(os.environ.get("TOOLWIRE_PROBE_PAGE_SIZE") or 0)


def _schema(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


TOOLS: dict[str, types.Tool] = {
    "echo": types.Tool(name="echo", description="Answers with the text it is given.",
                       input_schema=_schema({"text": {"type": "string"}}, ("text",)),
                       annotations=types.ToolAnnotations(read_only_hint=True)),
    "block": types.Tool(name="block", description="Never answers; a cancel ends it unless ignore_cancel is true.",
                        input_schema=_schema({"ignore_cancel": {"type": "boolean"}})),
    "crash": types.Tool(name="crash", description="Exits the server process during the call.",
                        input_schema=_schema({"code": {"type": "integer"}})),
    "fail": types.Tool(name="fail", description="Answers isError: true with the message.",
                       input_schema=_schema({"message": {"type": "string"}}, ("message",))),
    "add_tool": types.Tool(name="add_tool", description="Adds a tool and sends tools/list_changed.",
                           input_schema=_schema({"name": {"type": "string"}}, ("name",))),
}


def record_now(**event: Any) -> None:
    """:func:`record` without leaving the event loop (a short line to a fifo with a reader)."""
    if RECORD is not None:
        with open(RECORD, "a", encoding="utf-8") as out:
            out.write(json.dumps(event) + "\n")


async def record(**event: Any) -> None:
    """Append ``event`` as one JSON line to ``TOOLWIRE_PROBE_RECORD`` (nothing when unset)."""
    if RECORD is None:
        return
    line = json.dumps(event) + "\n"

    def append() -> None:
        with open(RECORD, "a", encoding="utf-8") as out:
            out.write(line)

    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(append)


def text(value: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)], is_error=error)


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    tools = list(TOOLS.values())
    if PAGE_SIZE:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + PAGE_SIZE
        page = types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)
    else:
        page = types.ListToolsResult(tools=tools)
    record_now(event="listed", tools=[tool.name for tool in page.tools])
    return page


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    name = params.name
    if name == "echo":
        return text(f"echo: {args.get('text', '')}")
    if name == "block":
        await record(event="started", tool=name, requestId=ctx.request_id, pid=os.getpid())
        with anyio.CancelScope(shield=bool(args.get("ignore_cancel"))):
            await anyio.sleep_forever()
    if name == "crash":
        await record(event="started", tool=name, requestId=ctx.request_id, pid=os.getpid())
        code = int(args.get("code", 3))
        print(f"probe server: crashing with code {code}", file=sys.stderr, flush=True)
        os._exit(code)
    if name == "fail":
        return text(str(args.get("message", "")), error=True)
    if name == "add_tool":
        added = str(args["name"])
        TOOLS[added] = types.Tool(name=added, description=f"Added by add_tool; answers '{added} ran'.",
                                  input_schema=_schema({}))
        await ctx.session.send_tool_list_changed()
        await record(event="added", tool=added)
        return text(f"added {added}")
    if name in TOOLS:
        return text(f"{name} ran")
    return text(f"unknown tool: {name}", error=True)


async def cancelled(ctx: Any, params: types.CancelledNotificationParams) -> None:
    await record(event="cancelled", requestId=params.request_id, reason=params.reason)


async def main() -> None:
    server = Server("toolwire-probe", version="1", on_list_tools=list_tools, on_call_tool=call_tool)
    server.add_notification_handler("notifications/cancelled", types.CancelledNotificationParams, cancelled)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
