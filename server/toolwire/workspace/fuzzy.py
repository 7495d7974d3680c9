"""Fuzzy matching of file paths, as a file picker matches what the user types (``srvhst`` finds
``server/host.py``): the query's characters in order, anywhere in the path, case-insensitive,
spaces ignored. Scored so that the file the user means comes first: the query inside the file's
name beats the query spread over folders; consecutive characters, characters at the start of a
word (after ``/``, ``_``, ``-``, ``.``, a space, or a lower-to-upper case change) and matches in the
file's name count more; a shorter path wins a tie.

A subsequence scorer rather than an edit-distance library (rapidfuzz and the like): those rank
whole strings by similarity, not a few typed letters against a long path.
"""

from __future__ import annotations

_SEPARATORS = frozenset("/_-. ")
#: Longest query whose characters are moved to a later word start (the rest must still fit after it: a
#: scan of the query per character, quadratic); a longer one (nobody types it) takes each first occurrence.
LOOKAHEAD_QUERY = 64


def _word_starts(path: str) -> list[bool]:
    starts = []
    previous = "/"
    for char in path:
        starts.append(previous in _SEPARATORS or (previous.islower() and char.isupper()))
        previous = char
    return starts


def _fits(text: str, rest: str, start: int) -> bool:
    """True when ``rest``'s characters occur in order in ``text`` from ``start``."""
    at = start - 1
    for char in rest:
        at = text.find(char, at + 1)
        if at < 0:
            return False
    return True


def score(query: str, path: str) -> float | None:
    """How well ``path`` matches ``query`` (higher is better), or None when it does not.

    ``query`` must already be folded (:func:`fold`); an empty query matches every path with 0.
    """
    if not query:
        return 0.0
    lower = path.lower()
    name_start = lower.rfind("/") + 1
    name = lower[name_start:]
    found = name.find(query)
    if found >= 0:  # the query whole in the file's name: the best kind
        whole = found == 0 and name[len(query):len(query) + 1] in ("", ".")  # the name itself, but its extension
        return 1000.0 + (50.0 if found == 0 else 0.0) + (30.0 if whole else 0.0) - found - len(path) * 0.01
    found = lower.find(query)
    if found >= 0:
        return 500.0 - found * 0.1 - len(path) * 0.01
    starts = _word_starts(path)
    lookahead = len(query) <= LOOKAHEAD_QUERY  # the look-ahead costs len(query) finds per character
    total = 0.0
    at = -1
    for index, char in enumerate(query):
        position = lower.find(char, at + 1)
        if position < 0:
            return None
        if not starts[position] and lookahead:  # a later occurrence at a word start, when the rest still matches after it
            later = position
            while (later := lower.find(char, later + 1)) >= 0 and not starts[later]:
                pass
            if later >= 0 and _fits(lower, query[index + 1:], later + 1):
                position = later
        gain = 1.0
        if position == at + 1:
            gain += 5.0
        if starts[position]:
            gain += 8.0
        if position >= name_start:
            gain += 4.0
        total += gain
        at = position
    return total - len(path) * 0.01


def fold(query: str) -> str:
    """The query as :func:`score` compares it: lower case, without spaces."""
    return "".join(query.split()).lower()


__all__ = ["LOOKAHEAD_QUERY", "fold", "score"]
