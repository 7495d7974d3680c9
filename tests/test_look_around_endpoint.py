"""Issue 21, "Done when": AGENTS.md reaches the model in the request body. The look-around
turn (tests/look_around.py) through the real server over stdio with the ``openai`` model
against a local OpenAI-compatible endpoint (tests/endpoint.py) that answers with the
script's responses (the recorded stream as recorded): every request's system message ends
with the root AGENTS.md block, the first request carries the workspace overview (in the
first user message, before the user's text), and sub/AGENTS.md arrives once, in the tool
message of the first call that touches sub/, never before it. The rest of what the model
reads is the replay's (tests/test_e2e_look_around.py), byte for byte."""

from __future__ import annotations

import json

import pytest

from conftest import prompt
from editor import editor_fixture
from endpoint import FakeEndpoint, Reply, chat_body
from look_around import (CALLS, DATA, FOUND, FOUND_IGNORED, GLOBBED, LISTED, MARKUP_NAME, READ_UTIL,
                         RECORDED_SEARCH, ROOT_RULE, SCRIPT, SECRET, SUB_BLOCK, SUB_RULE, UNSAVED, WORKSPACE,
                         make_workspace, tool_messages)

pytestmark = pytest.mark.asyncio(loop_scope="module")

editor = editor_fixture("editor")

ROOT_BLOCK = ("Instructions from AGENTS.md (the project's own rules, read from the workspace, not from Toolwire; "
              f"apply to the whole workspace):\n{ROOT_RULE}")
ASK = "Look around, then make shout() end with an exclamation mark."
OVERVIEW = "\n".join([
    "[Workspace overview at the start of the session (file names, not instructions):",
    "Git: branch main, 1 changed (1 untracked).",
    "Top-level entries (8):",
    ".env",
    ".gitignore",
    MARKUP_NAME,
    "AGENTS.md",
    "README.md",
    "build/ (1 entry, ignored)",
    "src/ (1 entry)",
    "sub/ (2 entries)]",
])


def replies() -> list[Reply]:
    """The script's responses as the endpoint's: a recorded stream as recorded, a scripted line as chunks."""
    out = []
    for number, raw in enumerate(SCRIPT.read_text().splitlines(), start=1):
        line = json.loads(raw)
        out.append(Reply(200, (DATA / line["stream"]).read_bytes() if "stream" in line else chat_body(line, number)))
    return out


async def test_the_rules_and_the_overview_reach_the_endpoint_in_the_look_around_turn(editor, tmp_path):
    root = make_workspace(tmp_path / "ws")
    editor.open(root / "src" / "greet.py", UNSAVED, version=2)
    with FakeEndpoint(replies()) as endpoint:
        new = await editor.call("toolwire/session/new", {
            "cwd": str(root), "model": "openai:m",
            "settings": {"baseUrl": endpoint.base_url, "apiKey": "k", "modelRetries": 0}})
        sid = new["sessionId"]
        editor.answers[sid] = [{"optionId": "reject"}, {"optionId": "allow_once"}]
        result = await prompt(editor, sid, ASK)
        bodies = list(endpoint.requests)
    assert result["stopReason"] == "end_turn"
    assert new["instructions"] == [{"path": "AGENTS.md", "bytes": len(ROOT_RULE) + 1, "truncated": False}]
    assert len(bodies) == len(CALLS) + 1
    for body in bodies:
        system = body["messages"][0]
        assert system["role"] == "system" and system["content"].endswith("\n\n" + ROOT_BLOCK)
        assert SUB_RULE not in system["content"] and SECRET not in json.dumps(body)
    first_user = [m for m in bodies[0]["messages"] if m["role"] == "user"]
    assert len(first_user) == 1 and first_user[0]["content"].startswith(OVERVIEW + "\n")
    assert first_user[0]["content"].endswith(ASK)
    assert all(m["content"] == first_user[0]["content"] for b in bodies for m in b["messages"] if m["role"] == "user")

    # sub/AGENTS.md: not before the first call in sub/, then in its tool message only, once
    read_at = CALLS.index("read") + 1  # the request after the read's result
    assert all(SUB_RULE not in json.dumps(body) for body in bodies[:read_at])
    messages = tool_messages(bodies[-1])
    assert list(messages) == CALLS
    assert messages["read"] == READ_UTIL + "\n\n" + SUB_BLOCK
    assert json.dumps(bodies[-1]).count("LOOK-AROUND-SUB-RULE") == 1
    assert (messages["list"], messages["glob"], messages[RECORDED_SEARCH], messages["ignored"]) == (
        LISTED, GLOBBED, FOUND, FOUND_IGNORED)
    assert (root / "sub" / "util.py").read_text() == WORKSPACE["edited"]["sub/util.py"]
