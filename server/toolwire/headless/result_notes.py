"""What a status line of ``toolwire run`` shows of a list_files or search_files result
beyond its first line: how many there are, and the notes that say what was left out.

A terminal user sees one line per finished call; a search that answers ``[]`` because the
only match is in a file kept from the model must still say ``not searched (modelExclude):
.env — read_file asks the user``, and a listing cut at ``limit`` its ``[N more not shown;
...]`` line. The rows themselves (entries, matching lines) are not repeated: no flooding.
"""

from __future__ import annotations

from typing import Any

__all__ = ["count_summary", "note_lines"]


def _is_listing(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("matches"), list) and isinstance(data.get("total"), int)


def count_summary(data: Any) -> str:
    """`` (N entries)`` / `` (N matches in F files)`` when a listing or search found more than
    one, else ``""``."""
    if not _is_listing(data) or data["total"] <= 1:
        return ""
    total = data["total"]
    if isinstance(data.get("files"), int):  # search_files
        more = "more than " if data.get("total_is_lower_bound") else ""
        files = data["files"]
        return f" ({more}{total} matches in {files} {'file' if files == 1 else 'files'})"
    return f" ({total} entries)"


def note_lines(content: str, data: Any) -> list[str]:
    """The note lines of a list_files or search_files result after its first line: list_files'
    bracketed ``[...]`` lines; search_files' last paragraph when it is not a file's block (its
    lines do not start with the path of a shown match)."""
    if not _is_listing(data):
        return []
    lines = content.split("\n")
    if not isinstance(data.get("files"), int):  # list_files
        return [line for line in lines[1:] if line.startswith("[") and line.endswith("]")]
    _, sep, tail = content.rpartition("\n\n")
    if not sep:
        return []
    paths = {m.get("path") for m in data["matches"] if isinstance(m, dict)}
    rows = tail.split("\n")
    if any(row.startswith((f"{p}:", f"{p}-")) for row in rows for p in paths if p):
        return []
    return [row for row in rows if row]
