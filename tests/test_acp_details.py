"""``toolwire acp``: the details clients rely on — each ``fs`` capability on its own,
``usage_update`` after each model request, ``$/cancel_request`` both ways.

The real agent over stdio with the SDK's client side (and raw lines where the SDK has no
method); every message is validated against the SDK's schema (:class:`RecordingClient`).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import ClientCapabilities, FileSystemCapabilities, RequestPermissionResponse, UsageUpdate
from acp.transports import default_environment

from endpoint import FakeEndpoint, Reply, chat_body, sse_events
from test_acp import RecordingClient, repo, script, text  # noqa: F401 - repo is a fixture

__all__ = ["repo"]


async def start(client: RecordingClient, model: str, settings: dict | None = None, observers: list | None = None):
    """``toolwire acp`` with the SDK's environment (plus PYTHONPATH, so a worktree runs its own code)."""
    args = ["-m", "toolwire", "acp", "--model", model, "--log-level", "WARNING"]
    if settings:
        args += ["--settings", json.dumps(settings)]
    env = default_environment()
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return spawn_agent_process(client, sys.executable, *args, env=env, observers=[client.observe, *(observers or [])])


async def open_with(conn: Any, root: Path, read: bool, write: bool) -> str:
    caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=read, write_text_file=write))
    await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps)
    return (await conn.new_session(cwd=str(root), mcp_servers=[])).session_id


def edit(old: str, new: str) -> list[dict[str, Any]]:
    return [{"tool_calls": [{"id": "e", "name": "edit_file",
                             "arguments": {"path": "a.txt", "old_string": old, "new_string": new}}]},
            {"text": "ok"}]


async def test_a_client_that_only_reads_is_read_from_and_the_edit_goes_to_disk(repo: Path, tmp_path: Path) -> None:
    path = str(repo / "a.txt")
    client = RecordingClient(buffers={path: "hello buffer\n"})
    async with await start(client, f"replay:{script(tmp_path, edit('buffer', 'there'))}") as (conn, _):
        sid = await open_with(conn, repo, read=True, write=False)
        response = await conn.prompt(session_id=sid, prompt=text("edit"))
    assert response.stop_reason == "end_turn"
    assert client.final("e")["status"] == "completed"
    assert path in client.reads and client.writes == []
    assert (repo / "a.txt").read_text() == "hello there\n"  # the client's text, edited, on disk
    assert not client.invalid, client.invalid


async def test_a_client_that_only_writes_is_written_through_and_never_read_from(repo: Path, tmp_path: Path) -> None:
    path = str(repo / "a.txt")
    client = RecordingClient()
    async with await start(client, f"replay:{script(tmp_path, edit('world', 'there'))}") as (conn, _):
        sid = await open_with(conn, repo, read=False, write=True)
        response = await conn.prompt(session_id=sid, prompt=text("edit"))
    assert response.stop_reason == "end_turn"
    assert client.final("e")["status"] == "completed"
    assert client.reads == [] and client.writes == [(path, "hello there\n")]
    assert (repo / "a.txt").read_text() == "hello world\n"  # written by the client, not behind its back
    assert not client.invalid, client.invalid


def without_usage(text: str) -> bytes:
    """A chat stream of ``text`` that reports no token counts."""
    chunk = {"id": "x", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    end = {"id": "x", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    return b"".join(sse_events([chunk, end])) + b"data: [DONE]\n\n"


def with_usage(line: dict[str, Any], prompt: int, completion: int) -> bytes:
    """A chat stream whose last chunk reports ``prompt`` and ``completion`` tokens."""
    return chat_body({**line, "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})


async def test_usage_update_after_each_model_request_and_the_totals_in_meta(repo: Path) -> None:
    read = {"tool_calls": [{"id": "r", "name": "read_file", "arguments": {"path": "a.txt"}}]}
    replies = [Reply(body=with_usage(read, 900, 40)), Reply(body=without_usage("x" * 400))]
    with FakeEndpoint(replies) as endpoint:
        client = RecordingClient()
        settings = {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0, "contextWindow": 50000}
        async with await start(client, "openai:m", settings=settings) as (conn, _):
            sid = await open_with(conn, repo, read=False, write=False)
            response = await conn.prompt(session_id=sid, prompt=text("read a.txt"))
        second = endpoint.requests[1]
    usages = [u for u in client.updates if isinstance(u, UsageUpdate)]
    assert [(u.used, u.size) for u in usages[:1]] == [(940, 50000)]  # the endpoint's counts
    # no usage reported: about 4 characters a token, of the request as sent and of the answer
    chars = sum(len(json.dumps(m, ensure_ascii=False)) for m in second["messages"]) + len(
        json.dumps(second["tools"], ensure_ascii=False))
    assert len(usages) == 2 and usages[1].cost is None
    assert (usages[1].used, usages[1].size) == (-(-chars // 4) + 100, 50000)
    assert response.usage is None  # the unstable field stays empty; the totals are Toolwire's _meta
    assert response.field_meta == {"toolwire": {"usage": {"inputTokens": 900, "outputTokens": 40,
                                                          "totalTokens": 940}}}
    assert not client.invalid, client.invalid


async def test_cancel_request_ends_the_prompt_and_withdraws_the_permission_request(repo: Path, tmp_path: Path) -> None:
    """``$/cancel_request`` for the open prompt: it answers ``cancelled``; the permission request
    Toolwire then withdrew is followed by ``$/cancel_request`` with its id."""
    client = RecordingClient()
    asked = asyncio.Event()
    never = asyncio.Event()

    async def hold(**kwargs: Any) -> RequestPermissionResponse:
        asked.set()
        await never.wait()
        raise AssertionError("unreachable")

    client.request_permission = hold  # type: ignore[method-assign]
    sent: dict[str, Any] = {}  # method -> id of the client's requests
    asked_ids: list[Any] = []
    withdrawn: list[Any] = []

    def watch(event: Any) -> None:
        message = event.message
        if event.direction.value == "outgoing" and "method" in message and "id" in message:
            sent[message["method"]] = message["id"]
        elif event.direction.value == "incoming" and message.get("method") == "session/request_permission":
            asked_ids.append(message["id"])
        elif event.direction.value == "incoming" and message.get("method") == "$/cancel_request":
            withdrawn.append(message["params"]["requestId"])
            client._wake()

    async with await start(client, f"replay:{script(tmp_path, edit('world', 'there'))}", observers=[watch]) as (conn, process):
        sid = await open_with(conn, repo, read=False, write=False)
        prompt = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("edit")))
        await asyncio.wait_for(asked.wait(), 30)
        line = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": sent["session/prompt"]}}
        process.stdin.write(json.dumps(line).encode() + b"\n")
        await process.stdin.drain()
        response = await asyncio.wait_for(prompt, 30)
        await client.wait_for(lambda: bool(withdrawn))
    assert response.stop_reason == "cancelled"
    assert withdrawn == asked_ids and len(asked_ids) == 1
    assert client.final("e")["status"] == "failed" and client.final("e")["raw_output"]["canceled"] is True
    assert (repo / "a.txt").read_text() == "hello world\n"
    assert not client.invalid, client.invalid
