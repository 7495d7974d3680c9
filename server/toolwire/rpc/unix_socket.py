"""The Unix socket ``toolwire serve --socket PATH`` listens on, as a transport.

* The socket's folder is the user's own and private (``0700``; created so when
  missing); a folder others may enter or that belongs to someone else is refused.
* A stale socket left by a dead server is replaced; a live server's is never
  touched (:func:`prepare_socket_path`).
* The socket file is created ``0600`` (:func:`listen_unix`).
* Where the server listens is written on stderr in one write (:func:`announce`), after
  which the server may point its standard streams at ``/dev/null``
  (:func:`detach_std_streams`): the process that started it may go away.

What a connection is served with (one client at a time, sessions that outlive it) is
:mod:`toolwire.lsp.persist`.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import stat
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from toolwire.rpc.transport import ListenError

__all__ = ["prepare_socket_path", "listen_unix", "announce", "detach_std_streams"]


def prepare_socket_path(path: Path) -> None:
    """Make ``path``'s folder private and remove a stale socket left by a dead server.

    Raises:
        ListenError: the folder is not the user's own or others may enter it, or a
            live server already listens on ``path``, or ``path`` is not a socket.
    """
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
    except OSError as exc:
        raise ListenError(f"cannot use the folder {folder}: {exc.strerror or exc}") from None
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise ListenError(f"the folder {folder} must belong to you and be private (chmod 700): "
                          "another user could otherwise connect to the server")
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise ListenError(f"{path} exists and is not a socket; remove it or choose another path")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise ListenError(f"cannot check {path}: {exc.strerror or exc}") from None
        path.unlink(missing_ok=True)  # nobody listens: a dead server's socket
        return
    finally:
        probe.close()
    raise ListenError(f"a server already listens on {path}")


async def listen_unix(path: Path,
                      connection: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
                      ) -> asyncio.Server:
    """Prepare ``path`` (:func:`prepare_socket_path`) and listen on it, the socket file ``0600``.

    Args:
        path: Where to listen.
        connection: Serves one connection (``asyncio.start_unix_server``'s callback).

    Raises:
        ListenError: the path cannot be listened on, with the reason in one line.
    """
    prepare_socket_path(path)
    old_umask = os.umask(0o177)  # the socket file is created 0600
    try:
        return await asyncio.start_unix_server(connection, str(path))
    except OSError as exc:
        raise ListenError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old_umask)


def announce(line: str) -> None:
    """Write ``line`` on stderr in one write; a starter that already stopped reading
    (it closes the pipe once it saw the line) is no reason to stop serving."""
    try:
        sys.stderr.flush()
        os.write(2, line.encode())
    except OSError:
        pass


def detach_std_streams() -> None:
    """Point fds 0–2 at /dev/null: the starter's pipes may close at any time."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
