"""Live partial parsing of streamed argument text, and the strict final parse.

Partial parsing is delegated to ``jiter`` (the parser inside pydantic-core): it
accepts a prefix of a JSON document and returns what is complete so far. We never
write our own JSON parser. Both functions here take the whole text; callers decide
how often to call them (see :class:`toolwire.streaming.merger.StreamMerger`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import jiter

#: Argument names that name the file a call will touch, in order of preference.
PATH_KEYS = ("path", "file_path", "filepath", "file")

_SURROGATE = re.compile("[\ud800-\udfff]")


def fix_surrogates(text: str) -> str:
    """Join UTF-16 surrogate halves that arrived in separate JSON strings.

    A provider may split ``"\\ud83d\\ude00"`` between two deltas; each half
    decodes to a lone surrogate, and Python keeps them as two code points. This
    re-pairs them into one character. A half that has no partner becomes
    U+FFFD, so the result is always valid Unicode (encodable as UTF-8).

    Args:
        text: Any ``str``.

    Returns:
        The same text with surrogate pairs joined; ``text`` itself when it holds
        no surrogates (the common case costs one regex scan).
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def parse_partial(text: str) -> dict[str, Any] | None:
    """Best-effort view of incomplete argument JSON.

    Args:
        text: A prefix of a JSON object, possibly cut anywhere (inside a string,
            an escape, a number, a literal).

    Returns:
        The object parsed so far, with a trailing unfinished string kept as far
        as it goes; None when nothing object-shaped can be read yet. Never raises.
    """
    if not text:
        return None
    if "\ud800" <= text[-1] <= "\udbff":
        text = text[:-1]  # the other half of the pair is still on its way
    text = fix_surrogates(text)
    try:
        value = jiter.from_json(text.encode("utf-8", "surrogatepass"), partial_mode="trailing-strings")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def complete_path(text: str) -> str | None:
    """The value of a path-like argument, only once its closing quote arrived.

    Args:
        text: A prefix of a JSON object.

    Returns:
        The first of :data:`PATH_KEYS` whose string value is complete, or None.
        Never raises.
    """
    try:
        value = jiter.from_json(text.encode("utf-8", "surrogatepass"), partial_mode="on")
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    for key in PATH_KEYS:
        found = value.get(key)
        if isinstance(found, str) and found:
            return found
    return None


class ArgumentsError(ValueError):
    """Argument text is not a JSON object.

    Attributes:
        code: ``invalid_json`` (a syntax error inside the text), ``incomplete_json``
            (the text is a correct beginning of a JSON document that stops too
            early: a cut-off stream) or ``not_object`` (valid JSON, not an object).
        position: Character offset of the problem in the text.
        detail: The parser's own words, e.g. ``Unterminated string starting at
            line 6 column 1 (char 219)``.
    """

    def __init__(self, code: str, message: str, position: int = 0, detail: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.position = position
        self.detail = detail or message


def snippet(text: str, around: int, width: int = 40) -> str:
    """A short excerpt of ``text`` near position ``around``, for error messages."""
    start = max(0, around - width)
    piece = text[start : around + 10]
    return ("…" if start else "") + piece.replace("\n", "\\n")


def is_incomplete(text: str, json_message: str) -> bool:
    """True when ``text`` (which failed a strict parse) is a correct beginning of a JSON document.

    Uses jiter's partial mode: it accepts any correct prefix. ``Extra data``
    (text after a complete document) is never a prefix.
    """
    if json_message.startswith("Extra data") or not text.strip():
        return False
    try:
        jiter.from_json(text.encode("utf-8", "surrogatepass"), partial_mode="trailing-strings")
    except ValueError:
        return False
    return True


#: Key that :func:`loads_marking_duplicates` adds to an object that named a key twice.
DUPLICATE_KEYS = "__toolwire_duplicate_keys__"


def _mark_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    twice = []
    for key, value in pairs:
        if key in out:
            twice.append(key)
        out[key] = value
    if twice:
        out[DUPLICATE_KEYS] = twice
    return out


def loads_marking_duplicates(text: str) -> Any:
    """``json.loads``, but an object that names a key twice keeps a note of it
    under :data:`DUPLICATE_KEYS` (a plain parse silently keeps the last value)."""
    return json.loads(text, object_pairs_hook=_mark_duplicates)


def duplicate_keys(value: Any) -> list[str]:
    """Keys named twice anywhere in ``value`` (marked by :func:`loads_marking_duplicates`)."""
    if isinstance(value, dict):
        found = list(value.get(DUPLICATE_KEYS, []))
        for item in value.values():
            found += duplicate_keys(item)
        return found
    if isinstance(value, list):
        return [key for item in value for key in duplicate_keys(item)]
    return []


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def parse_strict(text: str) -> dict[str, Any]:
    """Parse complete argument text.

    Empty or whitespace-only text means "no arguments" and gives ``{}``
    (OpenAI-compatible servers send ``""`` for parameterless tools).

    Args:
        text: The whole argument text.

    Returns:
        The arguments object.

    Raises:
        ArgumentsError: ``invalid_json`` with the position and a snippet,
            ``incomplete_json`` when the text is a correct but unfinished
            document, ``duplicate_key`` when an object names a key twice (RFC 8259
            §4: names SHOULD be unique; receivers disagree on which value wins), or
            ``not_object`` when the JSON is valid but not an object.
    """
    if not text.strip():
        return {}
    try:
        value = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as exc:
        raise ArgumentsError(
            "duplicate_key",
            f"arguments name {exc.key!r} more than once; which value is meant is ambiguous "
            f"(e.g. two different paths), so the call is refused",
        ) from None
    except RecursionError:  # [[[[…]]]] deeper than the parser goes (about 1000 levels)
        raise ArgumentsError("invalid_json", "arguments are not valid JSON: they nest arrays or objects too deeply "
                             f"to be read, starting {snippet(text, 0)!r}") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno} (char {exc.pos} of {len(text)})"
        detail = f"{exc.msg} {where}" if exc.msg.endswith(" at") else f"{exc.msg} at {where}"
        if is_incomplete(text, exc.msg):
            raise ArgumentsError(
                "incomplete_json",
                f"arguments stop before the JSON is complete ({detail}), ending {snippet(text, len(text))!r}",
                exc.pos,
                detail,
            ) from None
        raise ArgumentsError(
            "invalid_json",
            f"arguments are not valid JSON: {detail}, near {snippet(text, exc.pos)!r}",
            exc.pos,
            detail,
        ) from None
    if not isinstance(value, dict):
        raise ArgumentsError(
            "not_object", f"arguments must be a JSON object, got {type(value).__name__}: {snippet(text, 0)!r}"
        )
    return value
