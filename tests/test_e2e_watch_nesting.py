"""Sessions on nested folders, through the real server over stdio: each gets every
change under its own folder once, and never Toolwire's own writes (one watcher
serves both; ``tests/test_watch_nesting.py`` counts the watchers)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from conftest import git, new_session, prompt, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")


def reported(client, sid: str) -> Counter[str]:
    return Counter(p for u in client.updates[sid] if u["sessionUpdate"] == "workspace_change" for p in u["paths"])


async def test_inner_then_outer_session_each_get_each_change_once(client, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    repo = ws / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    script = write_script(tmp_path / "inner.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "ours.txt", "content": "mine\n"}, "id": "c"}]},
        {"text": "created"},
    ])
    inner = await new_session(client, repo, script, permissions={"create_file": "auto"})
    outer = await new_session(client, ws, write_script(tmp_path / "outer.jsonl", [{"text": "ok"}]))  # takes over

    await prompt(client, inner)  # an own write after the handover
    (repo / "theirs.txt").write_text("user's\n")
    (repo / "noise.log").write_text("ignored by the repository\n")
    await client.wait_for(lambda p: p["sessionId"] == inner and "theirs.txt" in p["update"].get("paths", []))
    (repo / "marker.txt").write_text("last\n")
    await client.wait_for(lambda p: p["sessionId"] == outer and "repo/marker.txt" in p["update"].get("paths", []))
    if "marker.txt" not in reported(client, inner):
        await client.wait_for(lambda p: p["sessionId"] == inner and "marker.txt" in p["update"].get("paths", []))

    assert reported(client, inner) == Counter({"theirs.txt": 1, "marker.txt": 1})
    assert reported(client, outer) == Counter({"repo/theirs.txt": 1, "repo/noise.log": 1, "repo/marker.txt": 1})
    await client.call("toolwire/session/close", {"sessionId": outer})
    (repo / "after.txt").write_text("x\n")
    await client.wait_for(lambda p: p["sessionId"] == inner and "after.txt" in p["update"].get("paths", []))
