"""ACP ``resource_link`` blocks that try to reach past the workspace or its kept files, over the
real ``toolwire acp``: a symbolic link to a kept file (``notes.txt -> .env``), a link escaping the
folder, ``..`` in the URI (plain and percent-encoded), NUL, bytes that are not UTF-8, another host,
through the client's ``fs/read_text_file`` and from the disk. None of their content reaches the model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from acp.schema import ResourceContentBlock, TextContentBlock

from test_acp import RecordingClient, repo  # noqa: F401 - repo is a fixture
from test_acp_details import open_with, start


@pytest.mark.parametrize("through_client", [True, False])
async def test_links_never_leak_kept_or_outside_files(repo: Path, tmp_path: Path, through_client: bool) -> None:
    (repo / ".env").write_text("TOKEN=kept-secret\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("outside-secret\n")
    os.symlink(repo / ".env", repo / "notes.txt")
    os.symlink(outside, repo / "escape.txt")
    (repo / "sub").mkdir()
    uris = [f"file://{repo}/notes.txt", f"file://{repo}/escape.txt", f"file://{repo}/sub/../../{outside.name}",
            f"file://{repo}/sub/%2E%2E/%2E%2E/{outside.name}", f"file://{repo}/a.txt%00.env", f"file://{repo}/%ff%fe",
            f"file://otherhost{outside}", f"file://{repo}/sub/../.env"]
    log = tmp_path / "requests.jsonl"
    buffers = {str(repo / name): text for name, text in ((".env", "TOKEN=kept-secret\n"), ("notes.txt", "TOKEN=kept-secret\n"))}
    buffers[str(outside)] = "outside-secret\n"
    client = RecordingClient(buffers=buffers if through_client else {})
    blocks = [TextContentBlock(type="text", text="look"),
              *(ResourceContentBlock(type="resource_link", uri=uri, name="n") for uri in uris)]
    async with await start(client, "replay", settings={"replayLog": str(log)}) as (conn, _):
        sid = await open_with(conn, repo, read=through_client, write=False)
        response = await conn.prompt(session_id=sid, prompt=blocks)
    assert response.stop_reason == "end_turn"
    [entry] = [json.loads(line) for line in log.read_text().splitlines()]
    said = json.dumps(entry["messages"][-1]["content"])
    assert "secret" not in said, said
    assert said.count("(not read: ") == len(uris), said
    assert not any(Path(p).resolve() in (outside.resolve(), (repo / ".env").resolve()) for p in client.reads), client.reads
