"""Issue 21, "Done when", over ACP: the look-around turn (tests/look_around.py) through the
real ``toolwire acp`` over stdio, driven by the ACP SDK's client side with file access (the
client holds an unsaved buffer of src/greet.py and takes the edit). Both new tools are
``kind: "search"``; the read of ``.env`` is asked about naming the file and rejected; the
edit reaches the client (``fs/write_text_file``), not the disk; the final text arrives.

ACP sessions search the disk (protocol.md, the ACP table): the client's unsaved buffer is
reachable one file at a time only, so the search finds nothing in src/greet.py here, while
read_file of it would get the buffer."""

from __future__ import annotations

import json
from pathlib import Path

from look_around import (CALLS, FINAL_TEXT, GLOBBED, LISTED, NOT_SEARCHED, READ_UTIL, RECORDED_SEARCH, ROOT_RULE,
                         SCRIPT, SECRET, SUB_BLOCK, TOOLS, UNSAVED, WORKSPACE, make_workspace, tool_messages)
from test_acp import RecordingClient, open_session, start, text

KEPT = "Kept from the model (modelExclude): .env (pattern '.env'). Allowing shows it to the model for this call only."
KINDS = {"list_files": "search", "search_files": "search", "read_file": "read", "edit_file": "edit"}


def result_text(call: dict) -> str:
    """The text content of a call's last update (what the client shows as its result)."""
    return "".join(c["content"]["text"] for c in call.get("content", []) if c["type"] == "content")


async def test_the_look_around_turn_over_acp(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "ws")
    greet, util = str(root / "src" / "greet.py"), str(root / "sub" / "util.py")
    log = tmp_path / "requests.jsonl"
    client = RecordingClient(answers=["reject", "allow_once"], buffers={greet: UNSAVED})
    async with await start(client, f"replay:{SCRIPT}", settings={"replayLog": str(log)}) as (conn, _):
        sid = await open_session(conn, root, fs=True)
        response = await conn.prompt(session_id=sid,
                                     prompt=text("Look around, then make shout() end with an exclamation mark."))

    assert response.stop_reason == "end_turn"
    assert not client.invalid, client.invalid
    assert list(client.tool_updates()) == CALLS
    finals = {cid: client.final(cid) for cid in CALLS}
    assert {cid: call["kind"] for cid, call in finals.items()} == {cid: KINDS[TOOLS[cid]] for cid in CALLS}
    assert {cid: call["status"] for cid, call in finals.items()} == {**{cid: "completed" for cid in CALLS},
                                                                     "secret": "failed"}
    assert finals["secret"]["raw_output"] == {"canceled": True, "cancelReason": "rejected"}
    assert result_text(finals["list"]) == LISTED
    assert result_text(finals["glob"]) == GLOBBED
    assert result_text(finals[RECORDED_SEARCH]) == f"[]\n\n{NOT_SEARCHED}"  # the disk: greet.py has no TODO there
    assert result_text(finals["ignored"]).startswith("build/gen.py:1: # TODO regenerate")
    assert result_text(finals["ignored"]).endswith(NOT_SEARCHED)

    # asked twice: the read of .env, naming it, and the edit
    assert [p.tool_call_id for p in client.permissions] == ["secret", "edit"]
    asked = client.permissions[0]
    assert asked.title == "read_file .env" and asked.locations[0].path == str(root / ".env")
    assert asked.content[0].content.text == KEPT
    assert client.writes == [(util, WORKSPACE["edited"]["sub/util.py"])]  # the edit went to the client
    assert (root / "sub" / "util.py").read_text() == READ_UTIL  # and not behind its back to the disk
    assert util in client.reads and str(root / ".env") not in client.reads

    bodies = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(body["messages"][0]["content"].endswith("\n" + ROOT_RULE) for body in bodies)
    messages = tool_messages(bodies[-1])
    assert messages["read"] == READ_UTIL + "\n\n" + SUB_BLOCK
    assert SECRET not in log.read_text()
    assert SECRET not in json.dumps([u.model_dump(mode="json") for u in client.updates])
    said = "".join(u.content.text for u in client.updates if u.session_update == "agent_message_chunk")
    assert said.endswith(FINAL_TEXT)
