"""SHA-256 of file contents, hashed once per content even when several parts ask.

One edit of a large file has its new bytes hashed by the file watcher (to know
its own write when the event comes back), by the checkpoint taken after the
tool (which reads the file back) and by the checkpoint store. Hashing 10 MB
takes about 10 ms; comparing two 10 MB byte strings that are equal takes about
one. :func:`sha256_hex` keeps the last few large contents it hashed, with their
digests, and answers a content equal to one of them by that comparison: the
digest of equal bytes is the same digest, so the answer is exact.
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from typing import Final

__all__ = ["sha256_hex", "MEMO_MIN_BYTES", "MEMO_ENTRIES"]

#: Contents smaller than this are hashed every time (hashing them is cheaper than keeping them).
MEMO_MIN_BYTES: Final = 256 * 1024
#: Large contents kept with their digests (each kept alive until pushed out).
MEMO_ENTRIES: Final = 2

_recent: deque[tuple[bytes, str]] = deque(maxlen=MEMO_ENTRIES)
_lock = threading.Lock()


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data``, hex (64 characters).

    A content of at least :data:`MEMO_MIN_BYTES` equal to one of the last
    :data:`MEMO_ENTRIES` hashed is answered from them (a length check, then one
    memory comparison); otherwise it is hashed and kept.
    """
    if len(data) < MEMO_MIN_BYTES:
        return hashlib.sha256(data).hexdigest()
    with _lock:
        recent = list(_recent)
    for kept, digest in recent:
        if kept is data or (len(kept) == len(data) and kept == data):
            return digest
    digest = hashlib.sha256(data).hexdigest()
    with _lock:
        _recent.appendleft((bytes(data), digest))
    return digest
