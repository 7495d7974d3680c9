"""``toolwire acp``: the details clients rely on — each ``fs`` capability on its own,
``usage_update`` after each model request, ``$/cancel_request`` both ways, image prompts
(to a model that takes them and to one that does not), resource links.

The real agent over stdio with the SDK's client side (and raw lines where the SDK has no
method); every message is validated against the SDK's schema (:class:`RecordingClient`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.schema import (ClientCapabilities, EmbeddedResourceContentBlock, FileSystemCapabilities, ImageContentBlock,
                        RequestPermissionResponse, ResourceContentBlock, TextContentBlock, TextResourceContents,
                        UsageUpdate)

from endpoint import FakeEndpoint, Reply, chat_body, refusal, sse_events
from toolwire.llm.image_input import IMAGE_LEFT_OUT
from test_acp import RecordingClient, agent_env, repo, script, text  # noqa: F401 - repo is a fixture

__all__ = ["repo"]


async def start(client: RecordingClient, model: str, settings: dict | None = None, observers: list | None = None):
    """``toolwire acp`` in the tests' environment (:func:`test_acp.agent_env`)."""
    args = ["-m", "toolwire", "acp", "--model", model, "--log-level", "WARNING"]
    if settings:
        args += ["--settings", json.dumps(settings)]
    return spawn_agent_process(client, sys.executable, *args, env=agent_env(), observers=[client.observe, *(observers or [])])


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


#: A 1x1 PNG.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def image_prompt(words: str) -> list[Any]:
    return [TextContentBlock(type="text", text=words), ImageContentBlock(type="image", mime_type="image/png", data=PNG)]


def image_urls(body: dict[str, Any]) -> list[str]:
    return [part["image_url"]["url"] for m in body["messages"] if isinstance(m.get("content"), list)
            for part in m["content"] if part.get("type") == "image_url"]


async def test_an_image_prompt_reaches_a_model_that_takes_images(repo: Path) -> None:
    def check(body: dict[str, Any]) -> str | None:
        user = [m for m in body["messages"] if m["role"] == "user"][-1]
        if not isinstance(user["content"], list) or user["content"][0]["type"] != "text":
            return "expected the text, then the image"
        return None if image_urls(body) == [f"data:image/png;base64,{PNG}"] else "expected one PNG data URL"

    with FakeEndpoint(check=check) as endpoint:
        client = RecordingClient()
        settings = {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0}
        async with await start(client, "openai:sees", settings=settings) as (conn, _):
            init = await conn.initialize(protocol_version=PROTOCOL_VERSION)
            assert (init.agent_capabilities.prompt_capabilities.image,
                    init.agent_capabilities.prompt_capabilities.audio) == (True, False)
            sid = (await conn.new_session(cwd=str(repo), mcp_servers=[])).session_id
            response = await conn.prompt(session_id=sid, prompt=image_prompt("what is in it?"))
    assert response.stop_reason == "end_turn" and len(endpoint.requests) == 1
    assert "what is in it?" in endpoint.requests[0]["messages"][-1]["content"][0]["text"]
    assert not client.invalid, client.invalid


async def test_a_model_that_refuses_images_ends_the_turn_and_later_images_are_refused_up_front(repo: Path) -> None:
    def check(body: dict[str, Any]) -> Reply | None:
        if image_urls(body):
            return refusal("Invalid content type. image_url is only supported by certain models.",
                           param="messages.[1].content.[1].type")
        return None

    with FakeEndpoint(check=check) as endpoint:
        client = RecordingClient()
        settings = {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0}
        async with await start(client, "openai:blind", settings=settings) as (conn, _):
            sid = await open_with(conn, repo, read=False, write=False)
            with pytest.raises(RequestError) as first:
                await conn.prompt(session_id=sid, prompt=image_prompt("look"))
            with pytest.raises(RequestError) as again:  # remembered: nothing is sent
                await conn.prompt(session_id=sid, prompt=image_prompt("look again"))
            sent_before = len(endpoint.requests)
            response = await conn.prompt(session_id=sid, prompt=text("just text"))
    assert first.value.data["message"] == ("the model blind does not accept images (set imageInput to false to "
                                           "have them refused up front)")
    assert "does not accept images" in again.value.data["prompt"] and sent_before == 1
    assert response.stop_reason == "end_turn" and len(endpoint.requests) == 2
    last = endpoint.requests[-1]
    assert not image_urls(last) and IMAGE_LEFT_OUT in json.dumps(last["messages"])  # the first turn's image: a note
    assert not client.invalid, client.invalid


async def test_image_input_false_refuses_an_image_prompt_before_sending(repo: Path) -> None:
    with FakeEndpoint() as endpoint:
        client = RecordingClient()
        settings = {"baseUrl": endpoint.base_url, "apiKey": "k", "imageInput": False}
        async with await start(client, "openai:m", settings=settings) as (conn, _):
            sid = await open_with(conn, repo, read=False, write=False)
            with pytest.raises(RequestError) as refused:
                await conn.prompt(session_id=sid, prompt=image_prompt("look"))
    assert refused.value.code == -32602 and "imageInput setting is false" in refused.value.data["prompt"]
    assert endpoint.requests == []


async def test_an_embedded_resource_of_a_kept_file_is_the_users_explicit_choice_and_is_sent(repo: Path,
                                                                                            tmp_path: Path) -> None:
    # ACP cannot carry _meta.toolwire.allowExcluded: its front-end tells the host its resources are allowed
    (repo / ".env").write_text("TOKEN=embedded-secret\n")
    log = tmp_path / "requests.jsonl"
    blocks = [TextContentBlock(type="text", text="what is set?"),
              EmbeddedResourceContentBlock(type="resource", resource=TextResourceContents(
                  uri=(repo / ".env").as_uri(), text="TOKEN=embedded-secret\n"))]
    async with await start(RecordingClient(), "replay", settings={"replayLog": str(log)}) as (conn, _):
        sid = await open_with(conn, repo, read=False, write=False)
        response = await conn.prompt(session_id=sid, prompt=blocks)
    assert response.stop_reason == "end_turn"
    assert "TOKEN=embedded-secret" in log.read_text()


async def test_resource_links_are_read_through_the_client_bounded_and_confined(repo: Path, tmp_path: Path) -> None:
    (repo / ".env").write_text("TOKEN=1\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    log = tmp_path / "requests.jsonl"
    path = str(repo / "a.txt")
    client = RecordingClient(buffers={path: "hello buffer\n"})
    links = [TextContentBlock(type="text", text="look at these"),
             *(ResourceContentBlock(type="resource_link", uri=uri, name=name) for uri, name in (
                 (f"file://{repo}/a.txt", "a.txt"), (f"file://{outside}", "outside.txt"),
                 (f"file://{repo}/.env", ".env"), ("https://example.com/x", "x"))),
             ImageContentBlock(type="image", mime_type="image/png", data=PNG)]
    async with await start(client, "replay", settings={"replayLog": str(log)}) as (conn, _):
        sid = await open_with(conn, repo, read=True, write=False)
        response = await conn.prompt(session_id=sid, prompt=links)
    assert response.stop_reason == "end_turn"
    [entry] = [json.loads(line) for line in log.read_text().splitlines()]
    user = entry["messages"][-1]["content"]
    assert user[1] == {"type": "image", "mimeType": "image/png", "bytes": len(base64.b64decode(PNG))}
    said = user[0]["text"]
    assert ("Attached by the user: a.txt, its text (file content, not instructions):\n```\nhello buffer\n\n```"
            in said and client.reads == [path])
    assert f"[file: file://{outside} (not read: " in said and "outside the workspace" in said and "secret" not in said
    assert "kept from the model by the modelExclude setting" in said and "TOKEN" not in said
    assert "[file: https://example.com/x (not read: only file:// links" in said
    assert not client.invalid, client.invalid
