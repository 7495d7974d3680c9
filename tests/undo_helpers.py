"""Helpers of the undo tests: the exact state of a workspace (files, modes, git) and
an editor client that applies versioned workspace edits like VS Code."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from lsprotocol import types

from conftest import ToolwireTestClient, git, prompt, write_script
from editor import EditorClient, make_editor


def tree(root: Path) -> dict[str, tuple[str, bytes, int]]:
    """Every entry below ``root`` except ``.git``: rel → (kind, bytes or link target, mode bits)."""
    out: dict[str, tuple[str, bytes, int]] = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        base = Path(folder)
        for name in dirs:
            rel = (base / name).relative_to(root).as_posix()
            if (base / name).is_symlink():
                out[rel] = ("symlink", os.fsencode(os.readlink(base / name)), 0)
            else:
                out[rel] = ("dir", b"", 0)
        for name in files:
            path = base / name
            rel = path.relative_to(root).as_posix()
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("symlink", os.fsencode(os.readlink(path)), 0)
            else:
                out[rel] = ("file", path.read_bytes(), stat.S_IMODE(st.st_mode))
    return out


def git_state(root: Path) -> dict[str, str]:
    """HEAD (symbolic and commit), every ref, the index entries and the stash list."""
    def quiet(*args: str) -> str:
        try:
            return git(root, *args)
        except Exception as exc:  # an unborn HEAD and the like
            return f"<{type(exc).__name__}>"
    return {
        "head": quiet("symbolic-ref", "-q", "HEAD"),
        "commit": quiet("rev-parse", "-q", "--verify", "HEAD"),
        "refs": quiet("for-each-ref", "--format=%(refname) %(objectname)"),
        "index": quiet("ls-files", "-s"),
        "stash": quiet("stash", "list"),
    }


def state(root: Path) -> dict[str, Any]:
    """Files and git state together."""
    return {"tree": tree(root), "git": git_state(root)}


#: The undo tests' editor: keeps open buffers and applies versioned workspace edits
#: (ranges in the negotiated encoding) like VS Code, refusing stale versions.
UndoEditor = EditorClient
make_undo_editor = make_editor


EDITOR_CAPABILITIES = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
    apply_edit=True, workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)))


def calls_script(path: Path, calls: list[tuple[str, dict[str, Any]]], *, per_response: int = 1) -> Path:
    """A replay script running ``calls`` (name, arguments), ``per_response`` per model response."""
    lines = []
    for start in range(0, len(calls), per_response):
        chunk = calls[start:start + per_response]
        lines.append({"tool_calls": [{"name": n, "arguments": a, "id": f"c{start + i}"} for i, (n, a) in enumerate(chunk)]})
    lines.append({"text": "done"})
    return write_script(path, lines)


async def run_turn(client: ToolwireTestClient, root: Path, script: Path) -> tuple[str, dict[str, Any]]:
    """A new session on ``root`` (every tool allowed) running one turn; returns (sessionId, prompt result)."""
    auto = {name: "auto" for name in ("create_file", "edit_file", "multi_edit", "delete_file", "rename_file",
                                       "git_add", "git_restore", "git_commit", "git_branch")}
    result = await client.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}",
                                                         "settings": {"permissions": auto}})
    sid = result["sessionId"]
    return sid, await prompt(client, sid)


async def undo(client: ToolwireTestClient, sid: str, **params: Any) -> dict[str, Any]:
    return await client.call("toolwire/session/undoTurn", {"sessionId": sid, **params})


async def redo(client: ToolwireTestClient, sid: str, **params: Any) -> dict[str, Any]:
    return await client.call("toolwire/session/redoTurn", {"sessionId": sid, **params})


def outcomes(result: dict[str, Any]) -> dict[str, str]:
    """path → outcome of an undo result."""
    return {p["path"]: p["outcome"] for p in result["paths"]}
