"""Text files as the tools see them: UTF-8, BOM kept aside, line endings kept.

The text handed to the edit logic is the file minus its UTF-8 byte-order mark,
with line endings exactly as on disk (LF, CRLF or a mix), so that every byte an
edit does not replace is written back unchanged. :func:`newline_view` gives the
LF-only view that searches run on, with a map back to positions in the text.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate, repeat
from operator import add
from dataclasses import dataclass
from typing import Final

from toolwire.workspace.diffing import unified_diff as _unified_diff
from toolwire.workspace.errors import ToolError
from toolwire.workspace.positions import newline_counts

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
    """The line ending new lines in ``text`` should get: ``"\\r"`` when bare CR line
    endings outnumber both others, ``"\\r\\n"`` when CRLF outnumbers bare LF,
    else ``"\\n"`` (a text without line endings gets LF)."""
    if "\r" not in text:  # one scan in C; the counts below take three
        return "\n"
    counts = newline_counts(text)
    if counts["\r"] > counts["\n"] and counts["\r"] > counts["\r\n"]:
        return "\r"
    return "\r\n" if counts["\r\n"] > counts["\n"] else "\n"


class NewlineView:
    """An LF-only view of a text and the map from view offsets back to the text.

    Every line ending (the LSP rule: ``\\r\\n``, ``\\r`` or ``\\n``) is one LF in the
    view; a bare CR becomes an LF in place, so only CRLFs shift offsets.

    Attributes:
        text: The original text (any line endings).
        view: ``text`` with every CRLF and every bare CR turned into LF.
    """

    __slots__ = ("text", "view", "_crlf")

    def __init__(self, text: str) -> None:
        self.text = text
        self.view = text
        # One past the view offset of each CRLF's LF, ascending; built by C-level passes
        # only (split, len, accumulate), never a Python loop per line.
        self._crlf: list[int] = []
        if "\r" not in text:  # LF only (the usual case): the view is the text, no copy
            return
        self.view = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\r\n" in text:
            parts = text.split("\r\n")
            parts.pop()  # the text after the last CRLF
            self._crlf = list(accumulate(map(add, map(len, parts), repeat(1))))

    def to_text(self, offset: int) -> int:
        """Offset in :attr:`text` of view offset ``offset`` (a CRLF counts as one LF:
        the offset of a CRLF's LF in the view maps to its CR in the text)."""
        return offset + bisect_left(self._crlf, offset + 1)

    def line_of(self, offset: int) -> int:
        """1-based line number of view offset ``offset``."""
        return self.view.count("\n", 0, offset) + 1


def unified_diff(old: str | None, new: str | None, rel: str, *, new_rel: str | None = None) -> str:
    """A unified diff from ``old`` to ``new``; see :func:`toolwire.workspace.diffing.unified_diff`."""
    return _unified_diff(old, new, rel, new_rel=new_rel)
