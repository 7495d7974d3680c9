"""A session is not opened on a git directory or inside one (real server over stdio, real git).

The tools never write under a ``.git`` component of a workspace path; that guard cannot
hold when the workspace is git's own folder (``hooks/``, ``config`` would be writable
like any file), so ``toolwire/session/new`` refuses such a folder with -32602.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from conftest import git, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def refusal(client, cwd: Path) -> str:
    with pytest.raises(JsonRpcException) as info:
        await client.call("toolwire/session/new", {"cwd": str(cwd)})
    assert info.value.code == -32602, info.value
    return str(info.value)


async def test_a_git_directory_and_folders_inside_it_are_refused(client, repo, tmp_path):
    gitdir = (repo / ".git").resolve()
    message = await refusal(client, repo / ".git")
    assert "invalid params: cwd:" in message and repr(str(repo / ".git")) in message
    assert "is a git directory" in message and "work tree" in message
    for inside in (repo / ".git" / "hooks", repo / ".git" / "refs" / "heads"):
        message = await refusal(client, inside)
        assert f"is inside the git directory {str(gitdir)!r}" in message, message
    # through a link to it, and a bare repository (no folder named .git)
    (tmp_path / "link").symlink_to(repo / ".git" / "hooks")
    assert "is inside the git directory" in await refusal(client, tmp_path / "link")
    bare = tmp_path / "srv" / "project.git"
    bare.mkdir(parents=True)
    git(bare, "init", "-q", "--bare")
    assert "is a git directory" in await refusal(client, bare)
    assert "is inside the git directory" in await refusal(client, bare / "hooks")


async def test_the_work_tree_and_look_alike_names_still_open(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [{"text": "ok"}])
    (tmp_path / "notes.git").mkdir()
    (tmp_path / "notes.git" / "HEAD").write_text("not a repository\n")  # a HEAD alone is not a git directory
    for folder in (repo, repo / "sub", tmp_path / "notes.git", tmp_path / "objects"):
        folder.mkdir(exist_ok=True)
        result = await client.call("toolwire/session/new", {"cwd": str(folder), "model": f"replay:{script}"})
        assert result["sessionId"], folder
        await client.call("toolwire/session/close", {"sessionId": result["sessionId"]})
