"""Issue 27: `toolwire run` and ACP on the Responses API wire (``openai-responses:MODEL``), against the
local Responses endpoint that enforces the API's rules (:mod:`responses_endpoint`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from responses_endpoint import ResponsesEndpoint, ResponsesRules
from test_acp import RecordingClient, open_session, start, text

EDIT = ("edit_file", {"path": "hello.txt", "old_string": "hello", "new_string": "goodbye"})


def test_toolwire_run_edits_with_approval_on_the_responses_wire(repo: Path) -> None:
    rules = ResponsesRules()
    replies = [rules.reply([EDIT], "Editing.", summary="Change the greeting."), rules.reply([], "Done.")]
    with ResponsesEndpoint(rules, replies) as endpoint:
        settings = {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0}
        done = subprocess.run([sys.executable, "-m", "toolwire", "run", "--workspace", str(repo), "--model",
                               "openai-responses:gpt-5", "--settings", json.dumps(settings), "--approve", "yes",
                               "--json", "change it"], capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)
        bodies = list(endpoint.requests)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["stopReason"] == "end_turn"
    assert (repo / "hello.txt").read_text() == "goodbye\n"
    assert len(bodies) == 2 and bodies[1]["input"][-1]["type"] == "function_call_output"


@pytest.mark.asyncio
async def test_acp_runs_a_turn_with_reasoning_as_thought_chunks(repo: Path) -> None:
    rules = ResponsesRules()
    replies = [rules.reply([EDIT], "Editing.", summary="Change the greeting."), rules.reply([], "Done.")]
    client = RecordingClient(answers=["allow_once"])
    with ResponsesEndpoint(rules, replies) as endpoint:
        settings = {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0}
        async with await start(client, "openai-responses:gpt-5", settings=settings) as (conn, _):
            sid = await open_session(conn, repo)
            response = await conn.prompt(session_id=sid, prompt=text("change it"))
        bodies = list(endpoint.requests)
    assert response.stop_reason == "end_turn"
    assert (repo / "hello.txt").read_text() == "goodbye\n"
    assert len(bodies) == 2
    thoughts = "".join(u.content.text for u in client.updates if u.session_update == "agent_thought_chunk")
    assert "Change the greeting." in thoughts
    assert not client.invalid, client.invalid
