"""Per-hunk review over the real protocol (issue 26): an edit's subject carries its hunks, the
answer may accept some; only those are written, as one edit, and the model is told which.

A real ``toolwire serve`` over stdio, the replay model, real files and git.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import new_session, prompt, server_fixture, write_script
from undo_helpers import EDITOR_CAPABILITIES, make_undo_editor

pytestmark = pytest.mark.asyncio(loop_scope="module")

OLD = "".join(f"line {i}\r\n" for i in range(1, 31))
# three hunks: line 2 changed, line 15 removed, a line added after line 29
OLD_STRING = "line 2\r\n" + "".join(f"line {i}\r\n" for i in range(3, 30))
NEW_STRING = "LINE 2\r\n" + "".join(f"line {i}\r\n" for i in range(3, 30) if i != 15) + "line 29b\r\n"


def edit_script(tmp_path: Path, name: str, count: int = 1) -> Path:
    calls = [{"tool_calls": [{"name": "edit_file", "arguments": {
        "path": "big.txt", "old_string": OLD_STRING.replace("\r\n", "\n"),
        "new_string": NEW_STRING.replace("\r\n", "\n")}}]} for _ in range(count)]
    return write_script(tmp_path / name, [*calls, {"text": "Understood."}])


def tool_messages(log: Path) -> list[str]:
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    return [m["content"] for m in requests[-1]["messages"] if m["role"] == "tool"]


def answer(*accepted: bool, option: str = "allow_once", reasons: dict[int, str] | None = None) -> dict[str, Any]:
    return {"optionId": option, "hunks": [
        {"index": i, "accepted": a, **({"reason": reasons[i]} if reasons and i in reasons else {})}
        for i, a in enumerate(accepted)]}


async def test_subject_hunks_and_a_partial_accept(client, repo, tmp_path):
    (repo / "big.txt").write_bytes(OLD.encode())
    log = tmp_path / "log.jsonl"
    sid = await new_session(client, repo, edit_script(tmp_path, "s.jsonl"), replayLog=str(log))
    client.answers[sid] = answer(True, False, True, reasons={1: "keep line 15"})
    await prompt(client, sid)
    subject = client.permission_requests[sid][0]["subject"]
    hunks = subject["hunks"]
    assert [h["index"] for h in hunks] == [0, 1, 2]
    assert hunks[0]["header"] == "@@ -1,5 +1,5 @@" and "-line 2\n+LINE 2\n" in hunks[0]["diff"]
    assert "-line 15\n" in hunks[1]["diff"] and hunks[1]["header"].startswith("@@ -12,")
    assert "".join(h["header"] + "\n" + h["diff"] for h in hunks) in subject["diff"]
    # on disk: hunks 1 and 3, CRLF kept, line 15 kept
    expected = OLD.replace("line 2\r\n", "LINE 2\r\n").replace("line 29\r\n", "line 29\r\nline 29b\r\n")
    assert (repo / "big.txt").read_bytes() == expected.encode()
    [final] = [snaps[-1] for snaps in client.tool_calls(sid).values()]
    assert final["status"] == "done"
    assert final["result"]["data"]["hunks"] == [{"index": 0, "accepted": True},
                                                {"index": 1, "accepted": False, "reason": "keep line 15"},
                                                {"index": 2, "accepted": True}]
    assert "-line 15" not in final["result"]["data"]["diff"] and "+LINE 2" in final["result"]["data"]["diff"]
    [text] = tool_messages(log)
    assert "accepted 2 of 3 hunks" in text
    assert f"Written: hunk 1 `{hunks[0]['header']}`, hunk 3 `{hunks[2]['header']}`." in text
    assert f"Rejected (not written): hunk 2 `{hunks[1]['header']}` (reason: keep line 15)." in text

    # undo restores what was there before; the checkpoint recorded the partial write
    undone = await client.call("toolwire/session/undoTurn", {"sessionId": sid})
    assert undone["status"] == "undone", undone
    assert (repo / "big.txt").read_bytes() == OLD.encode()


async def test_every_hunk_rejected_is_a_rejection(client, repo, tmp_path):
    (repo / "big.txt").write_bytes(OLD.encode())
    log = tmp_path / "log.jsonl"
    sid = await new_session(client, repo, edit_script(tmp_path, "s.jsonl"), replayLog=str(log))
    client.answers[sid] = answer(False, False, False, reasons={0: "no caps"})
    await prompt(client, sid)
    assert (repo / "big.txt").read_bytes() == OLD.encode()
    [final] = [snaps[-1] for snaps in client.tool_calls(sid).values()]
    assert final["status"] == "canceled" and final["cancelReason"] == "rejected"
    [text] = tool_messages(log)
    assert "rejected" in text and "hunk 1: no caps" in text


async def test_every_hunk_accepted_is_the_whole_edit(client, repo, tmp_path):
    (repo / "big.txt").write_bytes(OLD.encode())
    sid = await new_session(client, repo, edit_script(tmp_path, "s.jsonl"))
    client.answers[sid] = answer(True, True, True)
    await prompt(client, sid)
    assert (repo / "big.txt").read_bytes() == OLD.replace(OLD_STRING, NEW_STRING).encode()


async def test_a_file_changed_after_the_answer_is_stale_and_untouched(client, repo, tmp_path):
    (repo / "big.txt").write_bytes(OLD.encode())
    log = tmp_path / "log.jsonl"
    sid = await new_session(client, repo, edit_script(tmp_path, "s.jsonl"), replayLog=str(log))
    changed = OLD.replace("line 1\r\n", "line one\r\n").encode()
    client.before_permission = lambda params: (repo / "big.txt").write_bytes(changed)
    client.answers[sid] = answer(True, False, True)
    try:
        await prompt(client, sid)
    finally:
        client.before_permission = None
    assert (repo / "big.txt").read_bytes() == changed
    [final] = [snaps[-1] for snaps in client.tool_calls(sid).values()]
    assert final["status"] == "errored" and final["error"]["code"] == "stale"
    assert "nothing was written" in tool_messages(log)[0]


@pytest.mark.parametrize("partial", [True, False])
async def test_allow_always_with_a_rejected_hunk_is_not_remembered(client, repo, tmp_path, partial):
    (repo / "big.txt").write_bytes(OLD.encode())
    first = json.loads(edit_script(tmp_path, "one.jsonl").read_text().splitlines()[0])
    small = {"tool_calls": [{"name": "edit_file", "arguments": {
        "path": "big.txt", "old_string": "line 20\n", "new_string": "LINE 20\n"}}]}
    sid = await new_session(client, repo, write_script(tmp_path / "s.jsonl", [first, small, {"text": "ok"}]))
    client.answers[sid] = [answer(True, not partial, True, option="allow_always"), {"optionId": "allow_once"}]
    await prompt(client, sid)
    # a smaller edit of the same file: asked again after a partial "always", not after a whole one
    assert len(client.permission_requests[sid]) == (2 if partial else 1)
    text = (repo / "big.txt").read_bytes().decode()
    assert "LINE 2\r\n" in text and "LINE 20\r\n" in text and ("line 15\r\n" in text) == partial


@pytest.mark.parametrize("hunks", [
    [{"index": 0, "accepted": True}, {"index": 1, "accepted": False}, {"index": 7, "accepted": True}],
    [{"index": 0, "accepted": True}, {"index": 0, "accepted": False}, {"index": 1, "accepted": True}],
    [{"index": 0, "accepted": True}, {"index": 1, "accepted": False}],
    [{"index": "0", "accepted": True}, {"index": 1, "accepted": False}, {"index": 2, "accepted": True}],
    [{"index": 0, "accepted": 1}, {"index": 1, "accepted": False}, {"index": 2, "accepted": True}],
    [{"index": 0, "accepted": True, "extra": 1}, {"index": 1, "accepted": False}, {"index": 2, "accepted": True}],
    "all",
])
async def test_a_malformed_hunks_answer_cancels_the_call(client, repo, tmp_path, hunks):
    (repo / "big.txt").write_bytes(OLD.encode())
    sid = await new_session(client, repo, edit_script(tmp_path, "s.jsonl"))
    client.answers[sid] = {"optionId": "allow_once", "hunks": hunks}
    await prompt(client, sid)
    assert (repo / "big.txt").read_bytes() == OLD.encode()
    [final] = [snaps[-1] for snaps in client.tool_calls(sid).values()]
    assert final["status"] == "canceled"


ed = server_fixture("ed", make_undo_editor, EDITOR_CAPABILITIES)


async def test_a_partial_accept_on_an_open_buffer_goes_through_the_editor_and_undoes(ed, repo, tmp_path):
    (repo / "big.txt").write_bytes(OLD.encode())
    unsaved = OLD.replace("line 30\r\n", "line 30\r\nmine, unsaved\r\n")
    uri = ed.open(repo / "big.txt", unsaved, version=1)
    log = tmp_path / "log.jsonl"
    sid = await new_session(ed, repo, edit_script(tmp_path, "s.jsonl"), replayLog=str(log))
    ed.answers[sid] = answer(False, True, False, reasons={0: "keep the case", 2: "no new line"})
    try:
        await prompt(ed, sid)
        expected = unsaved.replace("line 15\r\n", "")
        assert ed.buffers[uri][0] == expected  # the buffer, through workspace/applyEdit
        assert (repo / "big.txt").read_bytes() == OLD.encode()  # the disk is the editor's to save
        [text] = tool_messages(log)
        assert "accepted 1 of 3 hunks" in text and "(reason: keep the case)" in text and "(reason: no new line)" in text
        undone = await ed.call("toolwire/session/undoTurn", {"sessionId": sid})
        assert undone["status"] == "undone", undone
        assert ed.buffers[uri][0] == unsaved
    finally:
        ed.close(uri)
