"""Approvals only for what can happen (issue 25): a file tool whose plan fails ends ``errored``
with the plan's code and no permission request, over the real server in every front-end (LSP
over stdio, ``toolwire acp``, ``toolwire run``); the model reads the error, for ``no_match``
naming the nearest line. A done file tool's result carries its diff and diffstat for the card.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli_run import final_calls, run
from conftest import ToolwireTestClient, git, make_client, prompt, server_fixture, write_script
from test_acp import RecordingClient, open_session, start, text
from undo_helpers import calls_script

pytestmark = pytest.mark.asyncio(loop_scope="module")

client = server_fixture("client", make_client)

SOURCE = "import os\n\ndef load(path, *, strict=True):\n    return open(path).read()\n\nx = 1\nx = 1\n"
NEAREST = ("old_string was not found in app.py; nearest match: line 3: def load(path, *, strict=True): "
           "(read the file again around line 3 and copy the text exactly)")

#: Calls whose plans fail, each with the code it ends with, then one that can happen.
FAILING = [
    ("edit_file", {"path": "app.py", "old_string": "def load(path, strict):\n    return x", "new_string": "y"}),
    ("edit_file", {"path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}),
    ("multi_edit", {"path": "app.py", "edits": [{"old_string": "import os", "new_string": "import sys"},
                                                 {"old_string": "nothing like it", "new_string": "z"}]}),
    ("delete_file", {"path": "missing.txt"}),
    ("create_file", {"path": "app.py", "content": "new\n"}),
    ("rename_file", {"path": "missing.txt", "new_path": "b.txt"}),
    ("edit_file", {"path": "../outside.py", "old_string": "a", "new_string": "b"}),
]
CODES = ["no_match", "ambiguous_match", "no_match", "not_found", "exists", "not_found", "outside_workspace"]
GOOD = ("edit_file", {"path": "app.py", "old_string": "import os\n", "new_string": "import os\nimport sys\n"})


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "app.py").write_text(SOURCE)
    (root / "config").mkdir()
    (root / "config" / ".env").write_text("API_TOKEN=hunter2\n")
    git(root, "init", "-q", "-b", "main")
    return root.resolve()


async def lsp_turn(lsp: ToolwireTestClient, root: Path, tmp_path: Path, calls: list[tuple[str, dict[str, Any]]],
                   answer: Any = None, **settings: Any) -> tuple[str, dict[str, dict[str, Any]]]:
    script = calls_script(tmp_path / f"s{len(list(tmp_path.glob('s*.jsonl')))}.jsonl", calls)
    result = await lsp.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}",
                                                     "settings": settings})
    sid = result["sessionId"]
    if answer is not None:
        lsp.answers[sid] = answer
    outcome = await prompt(lsp, sid)
    assert outcome["stopReason"] == "end_turn", outcome
    return sid, {cid: snaps[-1] for cid, snaps in lsp.tool_calls(sid).items()}


async def tool_messages(lsp: ToolwireTestClient, sid: str) -> list[str]:
    snapshot = await lsp.call("toolwire/session/snapshot", {"sessionId": sid})
    return [m["content"] for m in snapshot["messages"] if m["role"] == "tool"]


async def test_lsp_a_failing_plan_is_never_asked_about_and_the_model_reads_why(client, tmp_path):
    root = workspace(tmp_path)
    sid, calls = await lsp_turn(client, root, tmp_path, [*FAILING, GOOD])
    good = f"c{len(FAILING)}"
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests[sid]] == [good]
    for i, code in enumerate(CODES):
        call = calls[f"c{i}"]
        assert call["status"] == "errored" and call["error"]["code"] == code, call
        assert call["result"]["ok"] is False and call["result"]["errorCode"] == code
        assert "Allow" not in json.dumps(call)
    assert calls["c0"]["result"]["data"] == {"nearest": {"line": 3, "text": "def load(path, *, strict=True):"}}
    assert calls["c0"]["error"]["message"] == NEAREST
    assert calls["c2"]["error"]["message"].startswith("edit 2 of 2: old_string was not found in app.py")
    messages = await tool_messages(client, sid)
    assert messages[0] == f"Error (no_match): {NEAREST}"
    assert messages[1].startswith("Error (ambiguous_match): old_string occurs 2 times in app.py (lines 6, 7)")
    # The one that could happen was asked about, with its diffstat, and its result carries the diff.
    (request,) = client.permission_requests[sid]
    subject = request["subject"]
    assert subject["diffstat"] == {"added": 1, "removed": 0} and "+import sys" in subject["diff"]
    done = calls[good]
    assert done["status"] == "done"
    assert done["result"]["data"]["diff"] == subject["diff"]
    assert done["result"]["data"]["diffstat"] == {"added": 1, "removed": 0}
    assert (root / "app.py").read_text() == SOURCE.replace("import os\n", "import os\nimport sys\n")


async def test_lsp_an_auto_approved_change_carries_its_diff_and_a_long_one_is_cut(client, tmp_path):
    root = workspace(tmp_path)
    big = "".join(f"line {i} {'x' * 60}\n" for i in range(6000))  # about 400 KiB
    sid, calls = await lsp_turn(client, root, tmp_path, [
        ("create_file", {"path": "big.txt", "content": big}),
        ("rename_file", {"path": "big.txt", "new_path": "moved.txt"}),
        ("delete_file", {"path": "moved.txt"})], permissions={"edits": "auto"})
    assert client.permission_requests[sid] == []
    created, renamed, deleted = (calls[c]["result"]["data"] for c in ("c0", "c1", "c2"))
    assert created["diffstat"] == {"added": 6000, "removed": 0} and created["added"] == 6000
    diff = created["diff"]
    assert len(diff.encode()) <= 256 * 1024 + 100 and diff.startswith("--- /dev/null\n+++ b/big.txt\n")
    last = diff.rstrip("\n").split("\n")[-1]
    assert last.startswith("[diff cut: ") and last.endswith(" shown]"), last
    assert diff.split("\n")[-3].startswith("+line ")  # whole lines only before the marker
    assert renamed["diff"].startswith("rename from big.txt\nrename to moved.txt")
    assert renamed["diffstat"] == {"added": 0, "removed": 0}
    assert deleted["diffstat"] == {"added": 0, "removed": 6000}
    assert not (root / "moved.txt").exists()


async def test_lsp_a_failing_plan_on_a_file_kept_from_the_model_asks_about_showing_it(client, tmp_path):
    """Its error could tell what the file holds (a near match): the question is only about that."""
    root = workspace(tmp_path)
    edit = [("edit_file", {"path": "config/.env", "old_string": "API_TOKEN=guess", "new_string": "x"})]
    sid, calls = await lsp_turn(client, root, tmp_path, edit, {"optionId": "reject"})
    (request,) = client.permission_requests[sid]
    assert request["subject"] == {"kind": "tool", "tool": "edit_file", "arguments": {
        "path": "config/.env", "old_string": "API_TOKEN=guess", "new_string": "x", "replace_all": False},
        "excluded": [{"path": "config/.env", "pattern": ".env"}]}
    assert calls["c0"]["cancelReason"] == "rejected"
    assert "hunter2" not in json.dumps(await tool_messages(client, sid))
    sid, calls = await lsp_turn(client, root, tmp_path, edit, {"optionId": "allow_once"})
    assert calls["c0"]["status"] == "errored" and calls["c0"]["error"]["code"] == "no_match"
    assert "nearest match: line 1: API_TOKEN=hunter2" in calls["c0"]["error"]["message"]


async def test_acp_a_failing_plan_is_never_asked_about(tmp_path):
    root = workspace(tmp_path)
    script = calls_script(tmp_path / "acp.jsonl", [*FAILING[:2], GOOD], per_response=3)
    acp = RecordingClient(answers=["allow_once"])
    async with await start(acp, f"replay:{script}") as (conn, _process):
        sid = await open_session(conn, root)
        response = await conn.prompt(session_id=sid, prompt=text("edit"))
    assert response.stop_reason == "end_turn"
    assert [p.tool_call_id for p in acp.permissions] == ["c2"]
    for cid, code in (("c0", "no_match"), ("c1", "ambiguous_match")):
        final = acp.final(cid)
        assert final["status"] == "failed" and final["raw_output"]["error"]["code"] == code
    assert acp.final("c0")["content"][0]["content"]["text"] == f"Error (no_match): {NEAREST}"
    assert acp.final("c2")["status"] == "completed"
    assert acp.final("c2")["raw_output"]["data"]["diffstat"] == {"added": 1, "removed": 0}
    assert not acp.invalid, acp.invalid


async def test_toolwire_run_a_failing_plan_is_an_error_not_a_rejection(tmp_path):
    """With ``--approve no`` every question is answered no: a failing plan is asked nothing, so it
    ends errored with its code while the change that could happen is rejected."""
    root = workspace(tmp_path)
    script = write_script(tmp_path / "run.jsonl", [
        {"tool_calls": [{"name": n, "arguments": a, "id": f"c{i}"} for i, (n, a) in enumerate([*FAILING[:2], GOOD])]},
        {"text": "done"}])
    done = run(root, script, "--json", "--approve", "no")
    assert done.returncode == 0, done.stderr
    calls = final_calls(done.stdout)
    assert (calls["c0"]["status"], calls["c0"]["error"]["code"]) == ("errored", "no_match")
    assert (calls["c1"]["status"], calls["c1"]["error"]["code"]) == ("errored", "ambiguous_match")
    assert (calls["c2"]["status"], calls["c2"]["cancelReason"]) == ("canceled", "rejected")
    assert (root / "app.py").read_text() == SOURCE
