"""``toolwire/session/list`` and ``toolwire/session/load`` over stdio against the real server: a
closed session is listed with its title and opened again from its saved file (issue 24, "Sessions
that survive a restart"); the ACP side and a restart are in tests/test_acp_sessions.py."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from conftest import new_session, prompt, write_script
from toolwire.lsp.messages import SnapshotResult
from toolwire.lsp.protocol import SessionListResult, SessionNewResult

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def test_a_closed_session_is_listed_and_loaded_from_its_file(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "r1"}]},
        {"text": "It says hello."}, {"text": "Second."}])
    sid = await new_session(client, repo, script)
    assert (await client.call("toolwire/session/list", {"cwd": str(repo)})) == {"sessions": []}
    await prompt(client, sid, "What does hello.txt say?\nThanks")
    assert await client.call("toolwire/session/close", {"sessionId": sid}) == {"closed": True}

    listed = await client.call("toolwire/session/list", {"cwd": str(repo)})
    SessionListResult.model_validate(listed)
    (saved,) = listed["sessions"]
    assert (saved["sessionId"], saved["cwd"], saved["title"], saved["turns"]) == \
        (sid, str(repo.resolve()), "What does hello.txt say?", 1)
    assert sid in [s["sessionId"] for s in (await client.call("toolwire/session/list", {}))["sessions"]]

    loaded = await client.call("toolwire/session/load", {"sessionId": sid, "cwd": str(repo)})
    SessionNewResult.model_validate(loaded)
    assert loaded["sessionId"] == sid and "read_file" in loaded["tools"]
    snap = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    SnapshotResult.model_validate(snap)
    assert [m.get("userText") for m in snap["messages"] if m["role"] == "user"] == ["What does hello.txt say?\nThanks"]
    assert [t["turnId"] for t in snap["turns"]] in ([], ["t1"])  # a turn that changed nothing keeps no checkpoint
    await prompt(client, sid, "again")
    assert [u.get("turnId") for u in client.updates[sid] if u["sessionUpdate"] == "turn"][-1] == "t2"

    with pytest.raises(JsonRpcException) as unknown:
        await client.call("toolwire/session/load", {"sessionId": "nope", "cwd": str(repo)})
    assert unknown.value.code == -31002
    with pytest.raises(JsonRpcException) as relative:
        await client.call("toolwire/session/list", {"cwd": "relative"})
    assert relative.value.code == -32602
