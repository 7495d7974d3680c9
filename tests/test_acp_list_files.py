"""list_files over ACP (``toolwire acp`` over stdio): kind ``search``, no approval asked,
and the disk is what is listed (a client's unsaved buffer of a file not on disk is not:
ACP reaches buffers one file at a time; protocol.md's ACP table)."""

from __future__ import annotations

from pathlib import Path

from test_acp import RecordingClient, open_session, repo, script, start, text  # noqa: F401  (repo: a fixture)


async def test_list_files_is_a_search_of_the_disk(repo: Path, tmp_path: Path) -> None:
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("")
    model = script(tmp_path, [
        {"tool_calls": [{"id": "l", "name": "list_files", "arguments": {"pattern": "**/*.py"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(buffers={str(repo / "src" / "draft.py"): "only in the client\n"})
    async with await start(client, f"replay:{model}") as (conn, _process):
        sid = await open_session(conn, repo, fs=True)
        response = await conn.prompt(session_id=sid, prompt=text("look"))
    assert response.stop_reason == "end_turn"
    final = client.final("l")
    assert final["kind"] == "search" and final["status"] == "completed"
    assert final["content"][-1]["content"]["text"] == "src/app.py"
    assert final["raw_output"]["data"]["matches"] == [{"path": "src/app.py", "type": "file"}]
    assert client.permissions == []
    assert not client.invalid, client.invalid
