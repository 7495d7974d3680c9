"""A subprocess's output as a stream of record batches (:func:`stream_batches`), for the list
and search engines (:mod:`toolwire.tools.engine`, :mod:`toolwire.tools.searchrun`): stdout is
read in chunks and handed on as lists of records, nothing blocks the event loop, and the
process (its whole group) is killed at once and reaped when the reader stops early, fails or
is cancelled.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

__all__ = ["CHUNK", "REAP_GRACE", "Outcome", "stream_batches"]

#: Bytes read from a process's stdout at a time.
CHUNK = 256 * 1024


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    try:
        if os.name == "nt":
            proc.kill()
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


#: Seconds a killed process's output may take to reach its end before the pipe is closed.
REAP_GRACE = 5.0


async def _reap(proc: asyncio.subprocess.Process) -> None:
    """Wait for a process that ended or was killed, reading what is left of its stdout first.

    asyncio (3.11) answers ``wait()`` only once every pipe of the process is closed, and a
    reader that stopped early leaves stdout paused with unread data: the pipe never sees its
    end and ``wait()`` never returns (a cancelled search hung its turn for good, one run in a
    few on a loaded machine). Draining is bounded: the process group is dead, so only what
    the pipe holds is left; after :data:`REAP_GRACE` seconds the transport is closed instead.
    """
    if proc.stdout is not None and not proc.stdout.at_eof():
        with anyio.move_on_after(REAP_GRACE):
            while await proc.stdout.read(CHUNK):
                pass
        if not proc.stdout.at_eof():
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
    await proc.wait()


@dataclass(slots=True)
class Outcome:
    """What :func:`stream_batches` tells about its process.

    Attributes:
        pid: The process id, once it started.
        returncode: The exit status once it ended by itself; None while it runs and when it
            was killed (the reader stopped early or was cancelled).
        stderr: Its error output (at most 64 KiB), decoded, once it ended by itself.
    """

    pid: int | None = None
    returncode: int | None = None
    stderr: str = ""


async def stream_batches(argv: Sequence[str], cwd: Path, *, sep: str = "\0", env: dict[str, str] | None = None,
                         outcome: Outcome | None = None, stdin: bytes | None = None) -> AsyncIterator[list[str]]:
    """Run ``argv`` in ``cwd`` and yield its stdout as lists of complete records.

    Records are decoded as UTF-8 with ``surrogateescape`` (``os.fsdecode``'s form of names that
    are not UTF-8) and split on ``sep``; the last record needs no ``sep`` after it. Use it inside
    ``contextlib.aclosing``: when the loop stops early, fails or is cancelled, the process and
    its group are killed at once and reaped (shielded).

    Args:
        argv: The command.
        cwd: Its working folder.
        sep: The record separator (``"\\0"`` or ``"\\n"``).
        env: Its environment (default the server's).
        outcome: Filled with the pid, and with the exit status and stderr once the process ended.
        stdin: Bytes it reads on stdin (from a temporary file), else stdin is closed.

    Raises:
        FileNotFoundError: the executable is missing.
    """
    err = tempfile.TemporaryFile()
    feed = tempfile.TemporaryFile() if stdin is not None else None
    proc: asyncio.subprocess.Process | None = None
    try:
        if feed is not None:  # a file, not a pipe: no writer task beside the reader
            feed.write(stdin or b"")
            feed.seek(0)
        with anyio.CancelScope(shield=True):
            proc = await asyncio.create_subprocess_exec(
                *argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=err,
                stdin=feed if feed is not None else subprocess.DEVNULL,
                start_new_session=os.name != "nt",
            )
        if outcome is not None:
            outcome.pid = proc.pid
        assert proc.stdout is not None
        rest = ""
        while chunk := await proc.stdout.read(CHUNK):
            records = (rest + chunk.decode("utf-8", "surrogateescape")).split(sep)
            rest = records.pop()
            if records:
                yield records
        if rest:
            yield [rest]
        code = await proc.wait()
        if outcome is not None:
            err.seek(0)
            outcome.returncode = code
            outcome.stderr = err.read(65536).decode("utf-8", "replace").strip()
    finally:
        if proc is not None and proc.returncode is None:
            _kill(proc)
        if proc is not None:
            with anyio.CancelScope(shield=True):
                await _reap(proc)
        err.close()
        if feed is not None:
            feed.close()
