"""Project rules in ACP sessions (issue 21, "Project rules"; the LSP side is
tests/test_project_rules.py): the same core reads them, the model gets the same text, and
the client learns the list from ``session/new``'s ``_meta.toolwire.instructions`` and from
``session_info_update`` (``_meta.toolwire.instructions``) when it changes. Real ``toolwire acp``
over stdio, the SDK's client side, the real watcher; the replay model logs the requests."""

from __future__ import annotations

import json
from pathlib import Path

from test_acp import RecordingClient, initialize, script, start, text


def infos(client: RecordingClient) -> list[list[dict]]:
    return [u.field_meta["toolwire"]["instructions"] for u in client.updates
            if u.session_update == "session_info_update" and u.field_meta]  # not the title's


async def test_acp_sessions_get_the_rules_and_their_list(repo: Path, tmp_path: Path) -> None:
    (repo / "AGENTS.md").write_text("ROOT-RULE\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").write_text("SUB-RULE\n")
    (repo / "sub" / "f.txt").write_text("f\n")
    log = tmp_path / "requests.jsonl"
    model = script(tmp_path, [{"tool_calls": [{"id": "r", "name": "read_file", "arguments": {"path": "sub/f.txt"}}]},
                              {"text": "read"}, {"text": "again"}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}", settings={"replayLog": str(log)}) as (conn, _):
        await initialize(conn, fs=False)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=text("one"))
        (repo / "AGENTS.md").write_text("ROOT-RULE-2, longer\n")
        changed = [{"path": "AGENTS.md", "bytes": 20, "truncated": False},
                   {"path": "sub/AGENTS.md", "bytes": 9, "truncated": False}]
        await client.wait_for(lambda: changed in infos(client))  # the watcher's report, before the next turn
        await conn.prompt(session_id=sid, prompt=text("two"))
        told = infos(client)
        loaded = await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
    assert loaded.field_meta == {"toolwire": {"instructions": changed}}  # a reloaded client learns the list too
    assert session.field_meta == {"toolwire": {"instructions": [{"path": "AGENTS.md", "bytes": 10,
                                                                 "truncated": False}]}}
    assert told == [[{"path": "AGENTS.md", "bytes": 10, "truncated": False},
                     {"path": "sub/AGENTS.md", "bytes": 9, "truncated": False}], changed]
    assert infos(client) == told + told  # session/load tells them again, as they were told
    requests = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["messages"][0]["content"].endswith(end) for r, end in zip(requests, (
        "\nROOT-RULE", "\nROOT-RULE", "\nROOT-RULE-2, longer"))] == [True, True, True]
    tool = next(m for m in requests[1]["messages"] if m["role"] == "tool")
    assert tool["content"].endswith("\n\nInstructions from sub/AGENTS.md (apply to files under sub/):\nSUB-RULE")
    assert not client.invalid, client.invalid
