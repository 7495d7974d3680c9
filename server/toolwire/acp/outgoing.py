"""What ``toolwire acp`` writes to the client: every message redacted on its way out.

:class:`RedactingWriter` stands in for the stdout stream writer the SDK writes to:
no secret the process was given reaches the client, whichever path built the
message (session updates, answers, errors and their ``data``, refusals of
malformed lines). See :meth:`toolwire.redaction.Redactor.redact_message` for
what is left exact (``fs/write_text_file``, tool-call arguments).
"""

from __future__ import annotations

import asyncio
import json

from toolwire.redaction import shared as shared_redactor


class RedactingWriter(asyncio.StreamWriter):
    """A stream writer on the same transport as ``writer`` whose messages are redacted.

    The SDK writes one JSON line per ``write`` and insists on a real ``StreamWriter``
    (so this is one, on the same transport, protocol and loop).
    """

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        super().__init__(writer.transport, writer._protocol, writer._reader, writer._loop)  # type: ignore[attr-defined]

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Write one message (a JSON line) redacted; anything else is redacted as text."""
        redactor = shared_redactor()
        try:
            message = json.loads(bytes(data))
        except ValueError:
            super().write(redactor.redact_content(bytes(data).decode("utf-8", "replace")).encode())
            return
        super().write((json.dumps(redactor.redact_message(message), separators=(",", ":")) + "\n").encode())
