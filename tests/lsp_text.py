"""A reference model of LSP text positions, written straight from the LSP 3.17 text
("Text Documents": only ``\\n``, ``\\r\\n`` and ``\\r`` end a line; ``character``
counts code units of the negotiated encoding; a character past the line's end means
the end of the line). It walks the text one code point at a time and shares no
code with ``toolwire.workspace.positions``; the property tests compare the two,
and the test editors apply the server's edits with it.
"""

from __future__ import annotations


class NoSuchPlace(ValueError):
    """A position inside a character, or an offset inside a ``\\r\\n``."""


def width(ch: str, encoding: str) -> int:
    """Code units of one code point in ``encoding``."""
    cp = ord(ch)
    if encoding == "utf-32":
        return 1
    if encoding == "utf-16":
        return 2 if cp > 0xFFFF else 1
    assert encoding == "utf-8", encoding
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def lines(text: str) -> list[tuple[str, str]]:
    """``(content, line ending)`` of every line; the last line's ending is ``""``."""
    out: list[tuple[str, str]] = []
    current: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\r" and text[i + 1 : i + 2] == "\n":
            out.append(("".join(current), "\r\n"))
            current, i = [], i + 2
        elif ch in "\r\n":
            out.append(("".join(current), ch))
            current, i = [], i + 1
        else:
            current.append(ch)
            i += 1
    out.append(("".join(current), ""))
    return out


def offset_at(text: str, line: int, character: int, encoding: str) -> int:
    """Code-point offset of a position (past the end of a line: the line's end;
    past the last line: the end of the text)."""
    table = lines(text)
    if line >= len(table):
        return len(text)
    offset = sum(len(c) + len(e) for c, e in table[:line])
    content = table[line][0]
    unit = 0
    for k, ch in enumerate(content):
        if unit == character:
            return offset + k
        w = width(ch, encoding)
        if unit < character < unit + w:
            raise NoSuchPlace(f"({line}, {character}) is inside {ch!r}")
        unit += w
    return offset + len(content)


def position_at(text: str, offset: int, encoding: str) -> tuple[int, int]:
    """The position of a code-point offset."""
    start = 0
    for number, (content, ending) in enumerate(lines(text)):
        if offset <= start + len(content):
            return number, sum(width(ch, encoding) for ch in content[: offset - start])
        if offset < start + len(content) + len(ending):
            raise NoSuchPlace(f"offset {offset} is inside a line ending")
        start += len(content) + len(ending)
    raise NoSuchPlace(f"offset {offset} is past the end")


def end_of(text: str, encoding: str) -> tuple[int, int]:
    """The position just past the last character."""
    table = lines(text)
    return len(table) - 1, sum(width(ch, encoding) for ch in table[-1][0])


def apply(text: str, start: tuple[int, int], end: tuple[int, int], new_text: str, encoding: str) -> str:
    """Replace a range (swapped when its end comes first), as an editor does."""
    a, b = offset_at(text, *start, encoding), offset_at(text, *end, encoding)
    a, b = min(a, b), max(a, b)
    return text[:a] + new_text + text[b:]
