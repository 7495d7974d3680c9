"""``toolwire run`` as a user runs it, for the CLI tests: without a terminal (``run``), or on a
terminal (``on_a_terminal``: a pty as stdin, the approval question read from stderr)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TOOLWIRE = [sys.executable, "-m", "toolwire"]
QUESTION_END = b"(default: no): "


def run(workspace: Path, script: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([*TOOLWIRE, "run", "--workspace", str(workspace), "--model", f"replay:{script}", *flags, "go"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def final_calls(stdout: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for line in stdout.splitlines()[:-1]:
        update = json.loads(line).get("update", {})
        if update.get("sessionUpdate") == "tool_call":
            out[update["toolCall"]["toolCallId"]] = update["toolCall"]
    return out


@contextmanager
def on_a_terminal(workspace: Path, script: Path, *flags: str) -> Iterator[tuple[subprocess.Popen, int]]:
    """``toolwire run --workspace W <flags> --model replay:S go`` with a pty as its stdin; yields the
    process and the pty's master end (write the answer there). Killed and closed on the way out."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*TOOLWIRE, "run", "--workspace", str(workspace), *flags, "--model", f"replay:{script}", "go"],
                            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    os.close(slave)
    try:
        yield proc, master
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)


def read_question(proc: subprocess.Popen) -> list[str]:
    """stderr up to the end of the approval question (``(default: no): ``), as lines; fails if
    stderr ends first or nothing asks within 60 s."""
    err = b""
    deadline = time.monotonic() + 60
    while QUESTION_END not in err:
        left = deadline - time.monotonic()
        assert left > 0, err.decode()
        ready, _, _ = select.select([proc.stderr.fileno()], [], [], left)
        if ready:
            chunk = os.read(proc.stderr.fileno(), 65536)
            assert chunk, err.decode()
            err += chunk
    return err.decode().strip().splitlines()
