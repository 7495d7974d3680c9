"""MCP servers that break the rules (tests/data/mcp/hostile_server.py): Toolwire keeps running,
and what it tells the user about them is true and readable."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from mcp_servers import hostile_server
from toolwire.mcp.config import parse_servers, register_secrets, resolve_servers
from toolwire.mcp.connection import McpCallError, McpConnection
from toolwire.mcp.naming import offered_name
from toolwire.mcp.pool import McpPool, SessionServers
from toolwire.mcp.process import TAIL_BYTES
from toolwire.mcp.results import CARD_TEXT_LIMIT, to_result
from toolwire.redaction import shared
from toolwire.tools import default_registry
from toolwire.tools.selection import MAX_NAMED, select_tools

NET = 60  # seconds: the safety net of every wait, never what a test measures


async def started(root, *modes: str) -> McpConnection:
    specs, _ = resolve_servers(parse_servers({"h": hostile_server(*modes)}), root=root, workspace_file=False)
    connection = McpConnection(specs[0], start_timeout=NET)
    connection.start()
    with anyio.fail_after(NET):
        await connection.wait_started()
    return connection


@asynccontextmanager
async def ready_servers(specs) -> AsyncIterator[SessionServers]:
    """The servers of ``specs`` attached to a pool of their own, started; the pool closed after."""
    pool = McpPool()
    servers = pool.attach("s1", specs, start_timeout=NET)
    try:
        with anyio.fail_after(NET):
            await servers.wait_started(NET)
        yield servers
    finally:
        await pool.aclose()


async def test_a_failed_start_says_which_request_failed_and_why_not_that_the_server_exited(tmp_path):
    refused = await started(tmp_path, "init_error")
    assert (refused.state, refused.error) == ("failed", "initialize failed: the hostile server refuses to start")
    invalid = await started(tmp_path, "invalid")
    assert invalid.state == "failed" and re.fullmatch(
        r"tools/list answered an invalid ListToolsResult \(2 problems\): tools\.\d+\.inputSchema\.properties: "
        r"Input should be a valid dictionary", invalid.error or ""), invalid.error
    for connection in (refused, invalid):
        await connection.stop()


async def test_a_server_without_tools_is_ready_with_none(tmp_path):
    resources_only = await started(tmp_path, "no_tools")  # its tools/list answers "Method not found"
    assert (resources_only.state, resources_only.error, resources_only.tools) == ("ready", None, ())
    await resources_only.stop()


async def test_tools_whose_names_clean_to_the_same_are_all_offered_under_distinct_names(tmp_path):
    specs, _ = resolve_servers(parse_servers({"h": hostile_server("odd")}), root=tmp_path, workspace_file=False)
    async with ready_servers(specs) as servers:
        names = {tool.original: tool.name for tool in servers.tools()}
        assert names["get_item"] == "mcp__h__get_item"
        assert names["get.item"] == offered_name("h", "get.item", hashed=True) != "mcp__h__get_item"
        assert names["has space.and/dots"] == "mcp__h__has_space_and_dots" and len(names["x" * 100]) == 64
        assert len(set(names.values())) == len(names)


async def test_stdout_lines_that_are_not_json_rpc_or_not_utf8_are_skipped_and_the_server_keeps_answering(tmp_path):
    connection = await started(tmp_path, "garbage")  # not JSON-RPC before its first answer
    try:
        with anyio.fail_after(NET):
            assert (await connection.call("bad_utf8", {}, timeout=NET)).content[0].text == "wrote"
            answer = await connection.call("echo", {"text": "still here"}, timeout=NET)
        assert answer.content[0].text == "echo: still here" and connection.state == "ready"
    finally:
        await connection.stop()


async def test_thousands_of_tools_left_out_are_counted_in_the_warning_not_all_named(tmp_path):
    specs, _ = resolve_servers(parse_servers({"h": hostile_server("many")}), root=tmp_path, workspace_file=False)
    async with ready_servers(specs) as servers:
        selection = select_tools([*default_registry().tools(), *servers.tools()], 20)
        message = selection.left_out_message() or ""
        left_out = len(selection.left_out)
        assert left_out > 3000 and len(selection.left_out) == len(set(selection.left_out))  # names keeps them all
        named = ", ".join(selection.left_out[:MAX_NAMED])
        assert message == (f"{left_out} of {left_out + 20} tools are not offered to the model (the maxTools setting "
                           f"is 20): {named} and {left_out - MAX_NAMED} more. Raise maxTools to offer them.")


async def test_floods_storms_and_malformed_answers_leave_a_bounded_result_and_a_server_that_answers(tmp_path):
    connection = await started(tmp_path)
    changed = anyio.Event()
    connection.watch(lambda c, change: changed.set() if change == "tools" else None)
    try:
        with anyio.fail_after(NET):
            big = to_result(await connection.call("big", {"size": 2_000_000}, timeout=NET), limit=5000, show_images=True)
            assert len(big.content) < 6000 and len(big.data["content"][0]["text"]) <= CARD_TEXT_LIMIT + 200
            image = to_result(await connection.call("bogus_image", {}, timeout=NET), limit=5000, show_images=True)
            assert image.images == () and "it is not a PNG, JPEG, GIF or WebP image" in image.content
            assert (await connection.call("raw_stdout", {"size": 5_000_000}, timeout=NET)).content[0].text == "wrote"
            await connection.call("stderr_flood", {"size": 5_000_000}, timeout=NET)
            await connection.call("storm", {"count": 500}, timeout=NET)
            await changed.wait()  # re-listed, and still answering
            with pytest.raises(McpCallError) as refused:
                await connection.call("bad_result", {}, timeout=NET)
            answer = await connection.call("echo", {"text": "still here"}, timeout=NET)
        assert refused.value.code == "mcp_error" and "gave an invalid answer" in refused.value.message
        assert len(refused.value.message) <= 300
        assert answer.content[0].text == "echo: still here" and connection.state == "ready"
        assert len(connection.stderr_tail(10_000)) <= TAIL_BYTES
    finally:
        await connection.stop()


async def test_a_secret_a_server_quotes_in_a_tool_s_description_or_schema_never_reaches_the_model(tmp_path):
    secret = "tw-secret-quoted-0123456789"
    specs, _ = resolve_servers(parse_servers({"h": hostile_server("leaky", HOSTILE_TOKEN=secret)}), root=tmp_path,
                               workspace_file=False)
    register_secrets(shared(), specs)  # as a session opening does
    async with ready_servers(specs) as servers:
        [leaky] = [tool for tool in servers.tools() if tool.original == "leaky"]
        definition = json.dumps(leaky.definition())
        assert "Connected with token ***." in definition and secret not in definition
