"""Issue 21, "Done when", over the real LSP server (stdio): the look-around turn
(tests/look_around.py) lists, searches (an open buffer's unsaved text, an ignored folder
with and without ``ignored: true``, an excluded ``.env`` named as not searched), reads
``.env`` only as the user allows (asked, naming the file; rejected here), reads and edits a
normal file. Each call's status sequence, the exact text the model reads (from the update
and from the replayed request), the approvals asked for, the edit on the disk. Under each
engine the tools can run (ripgrep, git, the walk; ``TOOLWIRE_ENGINE`` in the server's
environment), with the same results."""

from __future__ import annotations

import json

import pytest

from conftest import prompt
from editor import editor_fixture
from look_around import (CALLS, FINAL_TEXT, FOUND, FOUND_IGNORED, GLOBBED, LISTED, READ_UTIL, RECORDED_SEARCH,
                         ROOT_RULE, SCRIPT, SECRET, SUB_BLOCK, TOOLS, UNSAVED, WORKSPACE, make_workspace,
                         tool_messages)

pytestmark = pytest.mark.asyncio(loop_scope="module")

editor_rg = editor_fixture("editor_rg", env={"TOOLWIRE_ENGINE": "rg"})
editor_git = editor_fixture("editor_git", env={"TOOLWIRE_ENGINE": "git"})
editor_walk = editor_fixture("editor_walk", env={"TOOLWIRE_ENGINE": "walk"})

#: What the model reads after the user rejects the read of .env.
REJECTED = ("The user rejected this tool call. .env is kept from the model by the modelExclude setting "
            "(pattern '.env'): the user did not allow it for this call, and nothing of it was read. Do without "
            "it, or ask the user.")


async def test_the_look_around_turn_over_stdio_with_ripgrep(editor_rg, tmp_path):
    await look_around(editor_rg, tmp_path, "rg")


async def test_the_look_around_turn_over_stdio_with_git(editor_git, tmp_path):
    await look_around(editor_git, tmp_path, "git")


async def test_the_look_around_turn_over_stdio_with_the_walk(editor_walk, tmp_path):
    await look_around(editor_walk, tmp_path, "walk")


async def look_around(editor, tmp_path, engine: str) -> None:
    root = make_workspace(tmp_path / "ws")
    editor.open(root / "src" / "greet.py", UNSAVED, version=4)  # the disk copy has no TODO
    log = tmp_path / "requests.jsonl"
    new = await editor.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{SCRIPT}",
                                                     "settings": {"replayLog": str(log)}})
    sid = new["sessionId"]
    editor.answers[sid] = [{"optionId": "reject"}, {"optionId": "allow_once"}]  # .env, then the edit
    result = await prompt(editor, sid, "Look around, then make shout() end with an exclamation mark.")

    assert result["stopReason"] == "end_turn"
    statuses = editor.statuses(sid)
    assert list(statuses) == CALLS
    finals = {cid: snaps[-1] for cid, snaps in editor.tool_calls(sid).items()}
    assert {cid: call["name"] for cid, call in finals.items()} == TOOLS
    ran = ["generating", "generated", "calling", "done"]
    assert statuses == {**{cid: ran for cid in CALLS}, "secret": ["generating", "generated", "canceled"]}
    assert finals["secret"]["cancelReason"] == "rejected"
    content = {cid: call["result"]["content"] for cid, call in finals.items() if "content" in (call.get("result") or {})}
    assert content["list"] == LISTED
    assert content["glob"] == GLOBBED
    assert content[RECORDED_SEARCH] == FOUND  # the buffer's unsaved line; build/ not searched; .env named
    assert content["ignored"] == FOUND_IGNORED  # build/ only with ignored: true
    assert content["read"] == READ_UTIL
    assert finals["read"]["result"]["instructions"] == SUB_BLOCK  # sub/AGENTS.md with the first call in sub/
    assert all("instructions" not in (call.get("result") or {}) for cid, call in finals.items() if cid != "read")
    search = finals[RECORDED_SEARCH]["result"]["data"]
    assert search["excluded"] == [{"path": ".env", "pattern": ".env"}] and search["total"] == 1
    assert finals["ignored"]["result"]["data"]["total"] == 2
    assert {finals[cid]["result"]["data"]["engine"] for cid in ("list", "glob", RECORDED_SEARCH, "ignored")} == {engine}

    # asked twice: the read of .env (naming it, although read_file runs unasked) and the edit
    asked = editor.permission_requests[sid]
    assert [r["toolCall"]["toolCallId"] for r in asked] == ["secret", "edit"]
    assert asked[0]["subject"]["excluded"] == [{"path": ".env", "pattern": ".env"}]
    assert (root / "sub" / "util.py").read_text() == WORKSPACE["edited"]["sub/util.py"]  # not open: on the disk
    assert (root / "src" / "greet.py").read_text() == WORKSPACE["committed"]["src/greet.py"]

    # what the model read: the replayed requests
    bodies = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(bodies) == len(CALLS) + 1
    assert all(body["messages"][0]["content"].endswith("\n" + ROOT_RULE) for body in bodies)
    messages = tool_messages(bodies[-1])
    assert list(messages) == CALLS
    for cid in ("list", "glob", RECORDED_SEARCH, "ignored"):
        assert messages[cid] == content[cid]
    assert messages["secret"] == REJECTED
    assert messages["read"] == READ_UTIL + "\n\n" + SUB_BLOCK
    assert sum(m.count("LOOK-AROUND-SUB-RULE") for m in messages.values()) == 1
    assert SECRET not in log.read_text() and SECRET not in json.dumps(editor.raw_updates[sid])
    said = "".join(u["content"]["text"] for u in editor.updates[sid] if u["sessionUpdate"] == "agent_message_chunk")
    assert said.endswith(FINAL_TEXT)
