"""Cancelling one call over ACP: the extension method ``_toolwire/toolCall/cancel``
``{sessionId, toolCallId}`` → ``{"cancelled": true|false}``, as ``toolwire/toolCall/cancel``
(issue 20, "What ACP gains by it"). Real ``toolwire acp`` over stdio, the ACP SDK's
client side (its ``ext_method`` puts the underscore on the wire), real git and files.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from conftest import git
from test_acp import RecordingClient, open_session, script, start, text

METHOD = "toolwire/toolCall/cancel"


class WireClient(RecordingClient):
    """Also records the methods of the requests the client sent, as written on the wire."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sent_methods: list[str] = []

    def observe(self, event: Any) -> None:
        super().observe(event)
        if event.direction.value == "outgoing" and "method" in event.message:
            self.sent_methods.append(event.message["method"])


def blocking_hook(repo: Path) -> None:
    """A pre-commit hook that blocks (the call runs until it is cancelled)."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nsleep 60\n")
    hook.chmod(0o755)


async def test_cancelling_one_running_call_keeps_the_turn_going(repo: Path, tmp_path: Path) -> None:
    blocking_hook(repo)
    (repo / "hello.txt").write_text("hello again\n")
    model = script(tmp_path, [
        {"tool_calls": [{"id": "c_commit", "name": "git_commit",
                         "arguments": {"message": "Blocked", "paths": ["hello.txt"]}}]},
        {"text": "Skipping the commit."},
    ])
    client = WireClient()
    settings = {"permissions": {"git_commit": "auto"}}
    async with await start(client, f"replay:{model}", settings=settings) as (conn, _):
        sid = await open_session(conn, repo)
        turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=text("commit")))
        await client.wait_for(lambda: "c_commit" in client.tool_updates()
                              and client.final("c_commit").get("status") == "in_progress")
        assert await conn.ext_method(METHOD, {"sessionId": sid, "toolCallId": "nope"}) == {"cancelled": False}
        assert await conn.ext_method(METHOD, {"sessionId": sid, "toolCallId": "c_commit"}) == {"cancelled": True}
        response = await turn
        assert response.stop_reason == "end_turn"  # the turn went on to the next model request
        assert await conn.ext_method(METHOD, {"sessionId": sid, "toolCallId": "c_commit"}) == {"cancelled": False}
    final = client.final("c_commit")
    assert final["status"] == "failed"
    assert final["raw_output"] == {"canceled": True, "cancelReason": "call_cancelled"}
    assert git(repo, "log", "--format=%s") == "initial\n"
    texts = "".join(u.content.text for u in client.updates if u.session_update == "agent_message_chunk")
    assert "Skipping the commit." in texts
    assert client.sent_methods.count("_toolwire/toolCall/cancel") == 3  # the underscore is on the wire
    assert not client.invalid, client.invalid


async def test_cancelling_a_call_the_session_does_not_have_or_that_ended(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [{"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "hello.txt"}}]},
                              {"text": "read"}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo)
        assert await conn.ext_method(METHOD, {"sessionId": sid, "toolCallId": "r1"}) == {"cancelled": False}  # idle
        await conn.prompt(session_id=sid, prompt=text("read"))
        assert client.final("r1")["status"] == "completed"
        assert await conn.ext_method(METHOD, {"sessionId": sid, "toolCallId": "r1"}) == {"cancelled": False}


@pytest.mark.parametrize(("params", "data"), [
    ({"sessionId": "nope", "toolCallId": "c1"}, {"sessionId": "unknown session 'nope'"}),
    ({"toolCallId": "c1"}, {"sessionId": "a non-empty string is required"}),
    ({"sessionId": 5, "toolCallId": "c1"}, {"sessionId": "a non-empty string is required"}),
    ({"sessionId": "SID"}, {"toolCallId": "a non-empty string is required"}),
    ({"sessionId": "SID", "toolCallId": ""}, {"toolCallId": "a non-empty string is required"}),
    ({"sessionId": "SID", "toolCallId": ["c1"]}, {"toolCallId": "a non-empty string is required"}),
])
async def test_bad_params_are_invalid_params_naming_the_field(repo: Path, params: dict[str, Any],
                                                             data: dict[str, str]) -> None:
    client = RecordingClient()
    async with await start(client, "replay") as (conn, process):
        sid = await open_session(conn, repo)
        sent = {key: sid if value == "SID" else value for key, value in params.items()}
        with pytest.raises(RequestError) as info:
            await conn.ext_method(METHOD, sent)
        assert info.value.code == -32602 and info.value.data == data
        assert process.returncode is None


async def test_another_extension_method_is_not_found(repo: Path) -> None:
    client = RecordingClient()
    async with await start(client, "replay") as (conn, _):
        sid = await open_session(conn, repo)
        with pytest.raises(RequestError) as info:
            await conn.ext_method("toolwire/toolCall/nope", {"sessionId": sid, "toolCallId": "c1"})
        assert info.value.code == -32601 and info.value.data == {"method": "_toolwire/toolCall/nope"}
        await conn.ext_notification(METHOD, {"sessionId": sid, "toolCallId": "c1"})  # a notification: ignored
        assert (await conn.prompt(session_id=sid, prompt=text("still here"))).stop_reason == "end_turn"
