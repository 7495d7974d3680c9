"""A stdio server's process: its stderr tail, its exit, and its process group.

The SDK's ``stdio_client`` starts the server in a session of its own (``start_new_session``:
its pid is its process group) and stops it when the client leaves (stdin closed, 2 s to exit,
then SIGTERM and SIGKILL to the group). It keeps the process to itself, and Toolwire needs
it for three things the SDK does not do:

* the exit code, for the server's status (``exited (code 1)``);
* noticing the exit when a child of the server still holds its stdout open (a shell
  wrapper killed while its server runs on), through a pidfd (Linux; elsewhere the end of
  stdout is the only sign);
* stopping what is left of the group after the server itself exited (no orphans).

:func:`spawned` learns the process the SDK starts in the calling task. The server's stderr
goes to a pipe whose last :data:`TAIL_BYTES` are kept (:class:`StderrTail`) for the log,
never for the model.
"""

from __future__ import annotations

import contextvars
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

import anyio
import mcp.client.stdio as sdk_stdio
from mcp.os.posix.utilities import terminate_posix_process_tree

__all__ = ["TAIL_BYTES", "StderrTail", "spawned", "wait_exit", "stop_group"]

#: How much of a server's stderr is kept (the end of it).
TAIL_BYTES = 16 * 1024
#: Seconds the group left behind by an exited server has between SIGTERM and SIGKILL.
GROUP_GRACE = 2.0

_SPAWNED: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("toolwire_mcp_spawned", default=None)


def _remember_spawns() -> None:
    """Wrap the SDK's spawn so the task that called ``stdio_client`` learns the process.

    Should an SDK lose that function, servers run as before, without exit codes, the pidfd
    watch or the group's stop (tests/test_mcp_runtime.py then fails: it reads the pid).
    """
    original = getattr(sdk_stdio, "_create_platform_compatible_process", None)
    if original is None or getattr(original, "toolwire_remembers", False):
        return

    async def spawn(*args: Any, **kwargs: Any) -> Any:
        process = await original(*args, **kwargs)
        sink = _SPAWNED.get()
        if sink is not None:
            sink.append(process)
        return process

    spawn.toolwire_remembers = True  # type: ignore[attr-defined]
    sdk_stdio._create_platform_compatible_process = spawn


_remember_spawns()


@contextmanager
def spawned() -> Iterator[list[Any]]:
    """Within the block, the processes ``stdio_client`` starts in this task are appended to the list."""
    sink: list[Any] = []
    token = _SPAWNED.set(sink)
    try:
        yield sink
    finally:
        _SPAWNED.reset(token)


class StderrTail:
    """A pipe for a server's stderr, and the last :data:`TAIL_BYTES` written to it.

    Give :attr:`errlog` to ``stdio_client``, call :meth:`spawned` once the process runs (the
    parent's write end is closed, so the pipe ends with the last process holding it), and run
    :meth:`pump` in a task until the server is stopped.
    """

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd: int | None = read_fd
        self.errlog: IO[str] = open(write_fd, "w", encoding="utf-8", errors="replace")
        self._kept = bytearray()

    def spawned(self) -> None:
        """The process has its copy of the write end: close ours."""
        self.errlog.close()

    async def pump(self) -> None:
        """Keep the tail until the pipe ends (or the task is cancelled); closes the pipe."""
        fd = self._read_fd
        assert fd is not None, "pump runs once"
        try:
            while True:
                await anyio.wait_readable(fd)
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not chunk:
                    return
                self._kept += chunk
                del self._kept[:-TAIL_BYTES]
        finally:
            self.close()

    def close(self) -> None:
        """Close both ends (idempotent)."""
        self.errlog.close()
        if self._read_fd is not None:
            os.close(self._read_fd)
            self._read_fd = None

    def text(self, lines: int) -> str:
        """The last ``lines`` lines kept (decoded, invalid bytes replaced)."""
        return "\n".join(self._kept.decode("utf-8", "replace").splitlines()[-lines:])


async def wait_exit(pid: int) -> None:
    """Return when the process ``pid`` has exited (at once when it is already gone).

    Waits on a pidfd, which leaves the reaping to asyncio. Where pidfds are missing
    (not Linux, an old kernel, a sandbox refusing them) it never returns: the end of
    the server's stdout then tells that it went away.
    """
    if not hasattr(os, "pidfd_open"):
        await anyio.sleep_forever()
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:
        await anyio.sleep_forever()
    try:
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


async def stop_group(process: Any) -> None:
    """Stop every process left in the server's group (SIGTERM, SIGKILL after :data:`GROUP_GRACE`).

    The SDK signals the group only when the server itself outlives its grace; children of a
    server that exited would otherwise run on. Shielded: it runs while the server's task ends.
    """
    if sys.platform == "win32":  # the SDK's job object already holds the tree
        return
    with anyio.CancelScope(shield=True), suppress(OSError):
        await terminate_posix_process_tree(process, GROUP_GRACE)
