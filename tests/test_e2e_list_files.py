"""list_files through the real server over stdio: the editor's view of the workspace (a file
created in the editor and not saved yet) reaches the model; ignored files do not."""

from __future__ import annotations

import json

import pytest

from conftest import git, new_session, prompt, write_files, write_script
from editor import editor_fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")

editor = editor_fixture("editor")


async def test_a_replayed_turn_lists_an_unsaved_buffer_and_leaves_ignored_files_out(editor, repo, tmp_path):
    write_files(repo, {".gitignore": "build/\n", "src/app.py": "print('app')\n", "build/gen.py": ""})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "tree")
    editor.open(repo / "src" / "draft.py", "# created in the editor, never saved\n")
    assert not (repo / "src" / "draft.py").exists()
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "list_files", "arguments": {"pattern": "**/*.py"}, "id": "g"},
                        {"name": "list_files", "arguments": {}, "id": "d"}]},
        {"text": "looked"},
    ])
    sid = await new_session(editor, repo, script, replayLog=str(log))
    result = await prompt(editor, sid, "look around")
    assert result["stopReason"] == "end_turn"
    statuses = editor.statuses(sid)
    assert statuses["g"] == statuses["d"] == ["generating", "generated", "calling", "done"]
    assert editor.permission_requests[sid] == []  # read-only: never asked
    finals = {cid: snaps[-1]["result"] for cid, snaps in editor.tool_calls(sid).items()}
    assert finals["g"]["content"] == "src/app.py\nsrc/draft.py"
    assert finals["g"]["data"]["matches"] == [
        {"path": "src/app.py", "type": "file"}, {"path": "src/draft.py", "type": "file", "unsaved": True}]
    assert finals["g"]["data"]["engine"] == "rg"  # the test install's own rg
    assert finals["d"]["content"].split("\n") == [
        ".gitignore", "build/ (ignored)", "hello.txt", "src/ (2 entries)"]
    sent = json.loads(log.read_text().splitlines()[-1])["messages"]
    tool_messages = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert tool_messages["g"] == "src/app.py\nsrc/draft.py"  # what the model reads
