"""Issue 21: the first request of a session carries the system prompt written for the model
and the workspace overview; later requests carry that same first message and no new
overview. The real server over stdio, against a local OpenAI-compatible endpoint."""

from __future__ import annotations

import json

import pytest

from conftest import git
from endpoint import FakeEndpoint, Reply, chat_body
from toolwire.agent.overview import HEADER
from toolwire.agent.system_prompt import base_prompt, offered_names

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_the_first_request_carries_the_prompt_and_the_overview(client, repo):
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print('hi')\n")
    (repo / ".gitignore").write_text("build/\n")
    (repo / "build").mkdir()
    (repo / "hello.txt").write_text("changed\n")
    replies = [
        Reply(200, chat_body({"tool_calls": [{"name": "read_file", "arguments": json.dumps({"path": "hello.txt"})}]}, 1)),
        Reply(200, chat_body({"text": "It says changed."}, 2)),
        Reply(200, chat_body({"text": "Still."}, 3)),  # the second prompt
    ]
    with FakeEndpoint(replies) as endpoint:
        result = await client.call("toolwire/session/new", {
            "cwd": str(repo), "model": "openai:m",
            "settings": {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0}})
        sid = result["sessionId"]
        first = await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "what does hello say?"})
        (repo / "later.txt").write_text("made after the first turn\n")
        git(repo, "checkout", "-q", "-b", "feature")
        second = await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "again"})
        bodies = list(endpoint.requests)
    assert first["stopReason"] == "end_turn" and second["stopReason"] == "end_turn", (first, second)
    assert len(bodies) == 3

    opening = bodies[0]["messages"]
    system = opening[0]
    assert system["role"] == "system"
    assert system["content"].startswith(base_prompt(offered_names(bodies[0]["tools"])))
    assert "no shell" in system["content"] and "Nothing is committed unless the user asks" in system["content"]

    user = opening[1]
    assert user["role"] == "user" and user["content"].endswith("]\n\nwhat does hello say?")
    overview = user["content"].split("\n")
    assert overview[:3] == [HEADER, "Git: branch main, 3 changed (1 unstaged, 2 untracked).",
                            "Top-level entries (4):"]
    assert overview[3:7] == [".gitignore", "build/ (0 entries, ignored)", "hello.txt", "src/ (1 entry)]"]

    # the same opening in every later request of the session: no new overview
    for body in bodies[1:]:
        assert body["messages"][:2] == opening
    users = [m for m in bodies[2]["messages"] if m["role"] == "user"]
    assert [u["content"].startswith(HEADER) for u in users] == [True, False]
    assert users[1]["content"].startswith("again")
    assert "feature" not in json.dumps(bodies[2]["messages"])  # the branch switch brought no new overview


async def test_the_prompt_names_only_the_tools_a_small_budget_offers(client, repo):
    import re

    with FakeEndpoint([Reply(200, chat_body({"text": "Hi."}, 1))]) as endpoint:
        result = await client.call("toolwire/session/new", {
            "cwd": str(repo), "model": "openai:m",
            "settings": {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0, "maxTools": 2}})
        outcome = await client.call("toolwire/session/prompt", {"sessionId": result["sessionId"], "prompt": "hi"})
        body = endpoint.requests[0]
    assert outcome["stopReason"] == "end_turn", outcome
    offered = offered_names(body["tools"])
    assert len(offered) == 2
    system = body["messages"][0]["content"]
    named = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", system))
    assert named and named <= set(offered), (named, offered)
    assert "edit_file" not in system and "git_diff" not in system
