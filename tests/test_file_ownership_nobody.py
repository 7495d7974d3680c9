"""A file the server's user may not write is refused, even in a folder it may write.

The server runs as ``nobody`` (``setpriv``; the tests run as root, as in CI) over stdio;
the workspace folder belongs to nobody, the file to root with mode 0644. Replacing the
file by rename would succeed (the folder is writable), so only the writability check
stops the edit.
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
BASE = Path(tempfile.gettempdir()) / f"toolwire-nobody-{os.getpid()}"  # tmp_path is private to root
SETPRIV = shutil.which("setpriv") or "setpriv"


def make_nobody_client() -> ToolwireTestClient:
    """The client; first makes the folders the server (as nobody) works in."""
    if os.geteuid() != 0:
        pytest.fail("this test runs the server as another user: run it as root (CI does)")
    if not shutil.which("setpriv"):
        pytest.fail("setpriv (util-linux) is needed: apt-get install util-linux")
    probe = subprocess.run([SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                            sys.executable, "-c", "import toolwire"], capture_output=True, timeout=30)
    if probe.returncode != 0:  # e.g. a checkout under /root (mode 0700)
        pytest.skip(f"user {NOBODY} cannot run {sys.executable} with toolwire: the checkout and its .venv must be "
                    "readable by other users for this test")
    for folder in (BASE, BASE / "state", BASE / "ws"):
        folder.mkdir(exist_ok=True)
    os.chmod(BASE, 0o755)
    for folder in (BASE / "state", BASE / "ws"):
        os.chown(folder, NOBODY, NOBODY)
    return make_client()


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
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
    target.write_text("one\ntwo\n")  # root's, 0644: nobody may read it, not write it
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
    assert target.read_text() == "one\ntwo\n" and (st.st_uid, st.st_gid) == (0, 0)
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt"]  # no temporary file left
