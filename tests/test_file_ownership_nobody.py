"""A file the server's user may not write is refused, even in a folder it may write.

The server runs over stdio as root without any capability (``setpriv`` empties its
bounding set; the tests run as root, as in CI), so file permissions apply to it as to
any user: the workspace folder is root's, the file belongs to ``nobody`` with mode
0644. Replacing the file by rename would succeed (the folder is writable), so only the
writability check stops the edit.
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

from conftest import ToolwireTestClient, make_client, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")

NOBODY = 65534
BASE = Path(tempfile.gettempdir()) / f"toolwire-nocaps-{os.getpid()}"
SETPRIV = shutil.which("setpriv") or "setpriv"


def make_nobody_client() -> ToolwireTestClient:
    """The client; first makes the folders the server works in (root's, as the server is)."""
    if os.geteuid() != 0:
        pytest.fail("this test runs the server as root without capabilities: run it as root (CI does)")
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) is needed: apt-get install util-linux")
    for folder in (BASE, BASE / "state", BASE / "ws"):
        folder.mkdir(exist_ok=True)
    secret = BASE / "probe"
    secret.write_text("x")
    os.chown(secret, NOBODY, NOBODY)
    os.chmod(secret, 0o600)
    probe = subprocess.run([SETPRIV, "--bounding-set=-all", "--inh-caps=-all", sys.executable, "-c",
                            f"import os, sys; sys.exit(os.access({str(secret)!r}, os.R_OK))"], timeout=30)
    secret.unlink()
    if probe.returncode != 0:
        pytest.fail("setpriv could not drop the capabilities of root: this test cannot run here")
    return make_client()


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[SETPRIV, "--bounding-set=-all", "--inh-caps=-all",
                    sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
    server_env={**os.environ, "TOOLWIRE_STATE_DIR": str(BASE / "state"), "HOME": str(BASE / "state")},
    client_factory=make_nobody_client))
async def nobody(lsp_client: ToolwireTestClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()
    shutil.rmtree(BASE, ignore_errors=True)


async def test_a_file_the_server_user_may_not_write_is_refused(nobody):
    ws = BASE / "ws"
    target = ws / "a.txt"
    target.write_text("one\ntwo\n")
    os.chown(target, NOBODY, NOBODY)  # nobody's, 0644: root without capabilities may read it, not write it
    os.chmod(target, 0o644)
    script = write_script(BASE / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "two",
                                                            "new_string": "TWO"}, "id": "e1"}]},
        {"text": "done"}])
    os.chmod(script, 0o644)
    sid = (await nobody.call("toolwire/session/new", {"cwd": str(ws), "model": f"replay:{script}",
                                                      "settings": {"permissions": {"edit_file": "auto"}}}))["sessionId"]
    result = await nobody.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "edit"})
    assert result["stopReason"] == "end_turn"
    [call] = [snaps[-1] for snaps in nobody.tool_calls(sid).values()]
    assert call["status"] == "errored" and call["error"]["code"] == "read_only", call
    assert "not writable by the user the server runs as" in call["error"]["message"]
    st = os.stat(target)
    assert target.read_text() == "one\ntwo\n" and (st.st_uid, st.st_gid) == (NOBODY, NOBODY)
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt"]  # no temporary file left


async def test_a_file_the_server_user_may_not_read_is_asked_about_as_irreversible(nobody):
    """rename_file of a file the server cannot read (nobody's, mode 0200): the turn cannot
    record its content, so the rename is asked about even under auto, marked irreversible."""
    ws = BASE / "ws"
    target = ws / "secret.txt"
    target.write_text("hidden\n")
    os.chown(target, NOBODY, NOBODY)
    os.chmod(target, 0o200)
    script = write_script(BASE / "r.jsonl", [
        {"tool_calls": [{"name": "rename_file", "arguments": {"path": "secret.txt", "new_path": "moved.txt"},
                         "id": "r1"}]},
        {"text": "done"}])
    os.chmod(script, 0o644)
    sid = (await nobody.call("toolwire/session/new", {"cwd": str(ws), "model": f"replay:{script}",
                                                      "settings": {"permissions": {"edits": "auto"}}}))["sessionId"]
    nobody.answers[sid] = {"optionId": "reject"}
    await nobody.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "rename"})
    [asked] = nobody.permission_requests[sid]
    assert asked["subject"]["irreversible"] == {"reason": "secret.txt: cannot read it: Permission denied"}, asked
    [call] = [snaps[-1] for snaps in nobody.tool_calls(sid).values()]
    assert call["cancelReason"] == "rejected", call
    assert target.exists() and not (ws / "moved.txt").exists()
    target.unlink()
