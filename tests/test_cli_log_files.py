"""A log file the command cannot write is one line on stderr and exit code 2 (README, "The `toolwire` command").

Real subprocesses: ``toolwire serve``/``acp --log-file`` and ``toolwire run --server-log``
with a missing folder, a folder, and a read-only file; nothing starts, no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TOOLWIRE = [sys.executable, "-m", "toolwire"]


def bad_logs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    readonly = tmp_path / "readonly.log"
    readonly.write_text("")
    readonly.chmod(0o444)
    out = {"missing folder": (tmp_path / "nope" / "x.log", "No such file or directory"),
           "a folder": (tmp_path, "Is a directory")}
    if os.geteuid() != 0:
        out["read-only"] = (readonly, "Permission denied")
    else:  # root writes a 0444 file anyway; no one may append to a file of /proc
        out["not writable"] = (Path("/proc/version"), "Invalid argument")
    return out


@pytest.mark.parametrize("command", [["serve", "--log-file"], ["serve", "--socket", "{socket}", "--log-file"],
                                     ["acp", "--log-file"]], ids=["serve", "serve-socket", "acp"])
def test_an_unwritable_log_file_is_one_line_and_exit_2(tmp_path, command):
    for what, (path, reason) in bad_logs(tmp_path).items():
        argv = [a.replace("{socket}", str(tmp_path / "s.sock")) for a in command]
        done = subprocess.run([*TOOLWIRE, *argv, str(path)], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 2, (what, done.stderr)
        assert done.stderr == f"toolwire {argv[0]}: cannot write the log file {path}: {reason}\n", (what, done.stderr)
        assert done.stdout == ""
    assert not (tmp_path / "s.sock").exists()


def test_run_with_an_unwritable_server_log_is_one_line_and_exit_2(repo, tmp_path):
    for what, (path, reason) in bad_logs(tmp_path).items():
        done = subprocess.run([*TOOLWIRE, "run", "--workspace", str(repo), "--server-log", str(path), "hi"],
                              capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode == 2, (what, done.stderr)
        assert done.stderr == f"toolwire run: cannot write --server-log {path}: {reason}\n", (what, done.stderr)
        assert done.stdout == ""


def test_a_writable_server_log_gets_the_servers_log(repo, tmp_path):
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    done = subprocess.run([*TOOLWIRE, "run", "--workspace", str(repo), "--server-log", str(log), "--log-level", "INFO",
                           "hi"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert "INFO" in log.read_text()
