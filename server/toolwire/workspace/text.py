"""Text files as the tools see them: UTF-8, BOM kept aside, line endings kept.

The text handed to the edit logic is the file minus its UTF-8 byte-order mark,
with line endings exactly as on disk (LF, CRLF or a mix), so that every byte an
edit does not replace is written back unchanged. :func:`newline_view` gives the
LF-only view that searches run on, with a map back to positions in the text.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from dataclasses import dataclass
from typing import Final

from toolwire.workspace.errors import ToolError

__all__ = ["BOM", "TextFile", "decode_text", "encode_text", "dominant_newline", "NewlineView", "unified_diff"]

BOM: Final = b"\xef\xbb\xbf"
_SNIFF: Final = 8192


@dataclass(frozen=True, slots=True)
class TextFile:
    """A decoded text file.

    Attributes:
        text: The content without the BOM; line endings as in the file.
        bom: True when the file started with a UTF-8 BOM.
    """

    text: str
    bom: bool


def decode_text(data: bytes, label: str) -> TextFile:
    """Decode file bytes for the tools.

    Raises:
        ToolError: ``binary`` when a NUL byte appears in the first 8 KiB (this
            includes UTF-16 and UTF-32 files); ``not_utf8`` when the bytes are
            not valid UTF-8.
    """
    bom = data.startswith(BOM)
    body = data[len(BOM) :] if bom else data
    if b"\x00" in body[:_SNIFF]:
        raise ToolError("binary", f"{label} is a binary file; the file tools only handle UTF-8 text")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            "not_utf8",
            f"{label} is not valid UTF-8 (byte {exc.start}); the file tools only handle UTF-8 text",
        ) from None
    return TextFile(text=text, bom=bom)


def encode_text(text: str, *, bom: bool) -> bytes:
    """The bytes to write for ``text``: UTF-8, with the BOM first when ``bom``."""
    data = text.encode("utf-8")
    return BOM + data if bom else data


def dominant_newline(text: str) -> str:
    """``"\\r\\n"`` when CRLF line breaks outnumber bare LF ones, else ``"\\n"``."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf > text.count("\n") - crlf else "\n"


class NewlineView:
    """An LF-only view of a text and the map from view offsets back to the text.

    Attributes:
        text: The original text (any line endings).
        view: ``text`` with every CRLF turned into LF.
    """

    __slots__ = ("text", "view", "_crlf")

    def __init__(self, text: str) -> None:
        self.text = text
        self.view = text.replace("\r\n", "\n")
        crlf: list[int] = []
        start = 0
        while (i := text.find("\r\n", start)) != -1:
            crlf.append(i - len(crlf))  # the LF's offset in the view
            start = i + 2
        self._crlf = crlf

    def to_text(self, offset: int) -> int:
        """Offset in :attr:`text` of view offset ``offset`` (a CRLF counts as one LF)."""
        return offset + bisect_left(self._crlf, offset)

    def line_of(self, offset: int) -> int:
        """1-based line number of view offset ``offset``."""
        return self.view.count("\n", 0, offset) + 1


def _split_for_diff(text: str) -> list[str]:
    lines = text.replace("\r\n", "\n").splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def unified_diff(old: str | None, new: str | None, rel: str, *, new_rel: str | None = None) -> str:
    """A unified diff (``git diff`` style headers) from ``old`` to ``new``.

    Args:
        old: Text before, or None when the file is created.
        new: Text after, or None when the file is deleted.
        rel: Workspace-relative path.
        new_rel: Path after a rename, when it differs.

    Returns:
        The diff text; empty when nothing changed. CRLF is shown as LF.
    """
    target = new_rel or rel
    a = "/dev/null" if old is None else f"a/{rel}"
    b = "/dev/null" if new is None else f"b/{target}"
    lines = difflib.unified_diff(_split_for_diff(old or ""), _split_for_diff(new or ""), a, b, n=3)
    body = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if new_rel and new_rel != rel:
        head = f"rename from {rel}\nrename to {new_rel}\n"
        return head + body
    return body
