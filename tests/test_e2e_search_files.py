"""search_files through the real server over stdio: a replayed call searches what the
editor shows (an unsaved buffer, a file not saved yet), skips an ignored folder and a
secret file, runs without asking, and its result is what the model gets."""

from __future__ import annotations

import json

import pytest

from conftest import new_session, prompt, write_files, write_script
from editor import editor_fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")


editor = editor_fixture("editor")


async def test_a_replayed_search_sees_unsaved_text_and_skips_ignored_and_secret_files(editor, repo, tmp_path):
    write_files(repo, {".gitignore": "build/\n", "build/gen.py": "token = 1\n", ".env": "token=sk-live-123\n",
                       "app.py": "x = 1\n"})
    editor.open(repo / "app.py", "x = 1\ntoken = load()  # unsaved\n", version=3)
    editor.open(repo / "new_module.py", "def token():\n    pass\n")  # created in the editor, not saved
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "search_files", "arguments": {"query": "token"}, "id": "s"}]},
        {"text": "found it"},
    ])
    sid = await new_session(editor, repo, script, replayLog=str(log))
    result = await prompt(editor, sid, "where is token?")
    assert result["stopReason"] == "end_turn"
    final = editor.tool_calls(sid)["s"][-1]
    assert final["status"] == "done"
    expected = ("app.py:2: token = load()  # unsaved\n\nnew_module.py:1: def token():\n\n"
                "not searched (modelExclude): .env — read_file asks the user")
    assert final["result"]["content"] == expected
    data = final["result"]["data"]
    assert data["total"] == 2 and data["truncated"] is False and data["engine"] == "rg"
    assert data["excluded"] == [{"path": ".env", "pattern": ".env"}]
    assert editor.permission_requests[sid] == []  # read-only: no approval by default
    last = json.loads(log.read_text().splitlines()[-1])
    tool_message = [m for m in last["messages"] if m["role"] == "tool"][-1]
    assert tool_message["content"] == expected and "sk-live" not in json.dumps(last)
    listed = await editor.call("toolwire/tools/list", {})
    names = [t["function"]["name"] for t in listed["tools"]]
    assert names.index("search_files") > names.index("read_file")
