"""A disk that fills up during a turn never leaves a change done that undo then refuses.

The workspace and the checkpoint store share one small tmpfs (mounted by the test,
which runs as root as in CI), so the store keeps a file's prior content as a hard
link to it (no copy) while there is no room left to copy it. A change that keeps the
file itself (rename_file moves the inode) must not rest on such a link: the copy
made after the tool would fail once the change is made. And a call that failed
without touching its file must not leave that file in the record as not undoable
(which blocked the undo of the whole turn).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from conftest import ToolwireTestClient, git, make_client, prompt
from undo_helpers import calls_script, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")

DISK = Path(tempfile.gettempdir()) / f"toolwire-full-disk-{os.getpid()}"
#: Bytes of the tmpfs, and of the file that leaves too little room to copy it.
SIZE, BIG = 1024 * 1024, 600_000
AUTO = {"edits": "auto", "git": "auto"}


def make_disk_client() -> ToolwireTestClient:
    """The client; first mounts the small tmpfs the workspace and the store share."""
    if os.geteuid() != 0:
        pytest.fail("this test mounts a small tmpfs: run it as root (CI does)")
    DISK.mkdir(exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(DISK)],
                          capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs here ({done.stderr.strip()}): this test needs it")
    (DISK / "state").mkdir()
    return make_client()


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
    server_env={**os.environ, "TOOLWIRE_STATE_DIR": str(DISK / "state")},
    client_factory=make_disk_client))
async def disk(lsp_client: ToolwireTestClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()
    subprocess.run(["umount", str(DISK)], check=False, timeout=30)
    shutil.rmtree(DISK, ignore_errors=True)


def workspace(name: str, big: bool = True) -> tuple[Path, bytes]:
    """A fresh repository on the tmpfs with big.txt (BIG bytes, unless not ``big``) and s.txt; the store emptied."""
    for old in DISK.iterdir():
        if old.name != "state":
            shutil.rmtree(old)
    shutil.rmtree(DISK / "state" / "checkpoints", ignore_errors=True)
    root = DISK / name
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    data = b"".join(b"line %06d of a big file\n" % i for i in range(BIG // 25))[:BIG]
    (root / "s.txt").write_text("small\n")
    if big:
        (root / "big.txt").write_bytes(data)
        assert shutil.disk_usage(DISK).free < BIG  # no room for a copy of big.txt
    return root, data


async def turn(lsp: ToolwireTestClient, root: Path, calls: list) -> tuple[str, dict]:
    script = calls_script(Path(tempfile.mkdtemp()) / "s.jsonl", calls)
    sid = (await lsp.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}",
                                                   "settings": {"permissions": AUTO}}))["sessionId"]
    outcome = await prompt(lsp, sid)
    assert outcome["stopReason"] == "end_turn", outcome
    return sid, {cid: snaps[-1] for cid, snaps in lsp.tool_calls(sid).items()}


async def test_a_rename_whose_content_cannot_be_copied_does_not_run(disk):
    """The store has room for its probe, not for big.txt: rename_file keeps the file's
    inode, so its prior content must be copied before the move. It was linked, the
    move ran (done), the copy after it failed, and undo answered not_undoable."""
    root, data = workspace("rename")
    sid, calls = await turn(disk, root, [("rename_file", {"path": "big.txt", "new_path": "moved.txt"})])
    assert disk.permission_requests[sid] == []  # the store could be written when it was checked
    assert calls["c0"]["status"] == "errored", calls
    assert calls["c0"]["error"]["code"] == "not_undoable"
    assert calls["c0"]["error"]["message"].startswith("not run, nothing changed: its checkpoint could not be taken")
    assert "No space left on device" in calls["c0"]["error"]["message"]
    assert (root / "big.txt").read_bytes() == data and not (root / "moved.txt").exists()
    assert os.stat(root / "big.txt").st_nlink == 1  # the store does not keep sharing it


async def test_a_call_that_failed_on_a_full_disk_does_not_block_the_undo(disk):
    """edit_file of s.txt, then of big.txt, which fails (no room for the new file): big.txt
    is as it was, so the undo restores s.txt and is not blocked by big.txt (it was
    recorded as not undoable, its linked content uncopyable)."""
    root, data = workspace("failed")
    sid, calls = await turn(disk, root, [
        ("edit_file", {"path": "s.txt", "old_string": "small", "new_string": "SMALL"}),
        ("edit_file", {"path": "big.txt", "old_string": "line 000000", "new_string": "LINE"})])
    assert calls["c0"]["status"] == "done" and calls["c1"]["status"] == "errored", calls
    assert calls["c1"]["error"]["code"] == "io_error" and "No space left" in calls["c1"]["error"]["message"]
    assert os.stat(root / "big.txt").st_nlink == 1
    result = await undo(disk, sid)
    assert result["status"] == "undone", result
    assert [(p["path"], p["outcome"]) for p in result["paths"]] == [("s.txt", "restored")]
    assert (root / "s.txt").read_text() == "small\n" and (root / "big.txt").read_bytes() == data


async def test_a_file_that_fills_the_disk_is_undone(disk):
    """create_file writes a file that leaves no room to store its content in the checkpoint
    (the store could be written before it ran): the state it left is kept by its digest,
    which is all undo needs; it was recorded unknown and undo answered not_undoable."""
    root, _ = workspace("fill", big=False)
    content = ("z" * 99 + "\n") * ((shutil.disk_usage(DISK).free - 64 * 1024) // 100)
    sid, calls = await turn(disk, root, [
        ("edit_file", {"path": "s.txt", "old_string": "small", "new_string": "SMALL"}),
        ("create_file", {"path": "fill.txt", "content": content})])
    assert calls["c0"]["status"] == "done" and calls["c1"]["status"] == "done", calls
    assert shutil.disk_usage(DISK).free < len(content)  # no room for a copy of it
    result = await undo(disk, sid)
    assert result["status"] == "undone", result
    assert [(p["path"], p["outcome"]) for p in result["paths"]] == [("fill.txt", "restored"), ("s.txt", "restored")]
    assert sorted(p.name for p in root.iterdir() if p.name != ".git") == ["s.txt"]
    assert (root / "s.txt").read_text() == "small\n"
