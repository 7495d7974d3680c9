"""Invalid params in plain words: one sentence naming every bad field of a request.

pydantic reports a value that fits no member of a union once per member, under
internal names (``prompt.list[TextBlock].0.type …; prompt.str: …``). Here such a
field is described once, by what it accepts, with the problems inside the shape the
value had; messages lose pydantic's own words (``Value error, ``, ``instance of X``).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic.alias_generators import to_camel

#: Plain words for the models a union may accept (pydantic names them by class).
_MODEL_WORDS = {"TextBlock": 'text content blocks {"type": "text", "text": "…"}'}
_BLOCK_WORDS = ('content blocks ({"type": "text", "text": "…"}, {"type": "resource", "resource": {"uri", "text"}}, '
                '{"type": "resource_link", "uri", "name"})')
_BASIC_WORDS = {"str": "a string", "int": "an integer", "float": "a number", "bool": "true or false",
                "none": "null", "dict": "an object", "list": "a list"}


def _is_union_tag(part: Any) -> bool:
    """True for the part of a pydantic error location that names a union member
    (``str``, ``list[TextBlock]``, ``TextBlock``), not a field or an index."""
    if not isinstance(part, str):
        return False
    return part in _BASIC_WORDS or "[" in part or part[:1].isupper() or part.startswith("function-")


def _union_words(tag: str) -> str:
    """A union member in plain words: ``list[TextBlock]`` → ``a list of text content blocks {…}``."""
    base, _, inner = tag.partition("[")
    inner = inner.removesuffix("]")
    if inner.startswith("tagged-union["):  # the prompt's blocks: one of several tagged by "type"
        return f"a list of {_BLOCK_WORDS}"
    if base == "list" and inner:
        return f"a list of {_MODEL_WORDS.get(inner, _BASIC_WORDS.get(inner, inner))}"
    if base in _BASIC_WORDS:
        return _BASIC_WORDS[base]
    return _MODEL_WORDS.get(tag, f"an object ({tag})")


def _plain(msg: str) -> str:
    """pydantic's message without its internal words (``Value error, ``, ``instance of X``)."""
    msg = msg.removeprefix("Value error, ")
    if msg.startswith(("Input should be a valid dictionary or instance of", "Input should be a valid dictionary or object")):
        return "Input should be an object"
    if msg.startswith("Unable to extract tag using discriminator"):
        return "type: Field required"
    if msg.startswith("Input tag ") and " does not match any of the expected tags: " in msg:
        return "type: Input should be " + msg.partition(" does not match any of the expected tags: ")[2]
    return msg


def describe_validation_error(method: str, exc: ValidationError) -> str:
    """One sentence naming every bad field, e.g. ``toolwire/session/prompt: sessionId: Field required``.

    A field that accepts one of several shapes (a union, e.g. ``prompt``: a string
    or a list of text blocks) is described once, in plain words, with what was wrong
    inside the shape the value had (``prompt: expected a string or a list of text
    content blocks {…}; prompt.0.type: Input should be 'text'``): never pydantic's
    member names (``prompt.list[TextBlock].0.type``)."""
    parts: list[str] = []
    unions: dict[str, tuple[list[str], list[str]]] = {}  # field path → (member words, inner problems)
    for err in exc.errors():
        loc = list(err["loc"])
        tag_at = next((i for i, part in enumerate(loc) if _is_union_tag(part)), None)
        if tag_at is None:
            where = ".".join(to_camel(p) if isinstance(p, str) else str(p) for p in loc) or "(params)"
            parts.append(f"{where}: {_plain(err['msg'])}")
            continue
        head = ".".join(to_camel(p) if isinstance(p, str) else str(p) for p in loc[:tag_at]) or "(params)"
        if head not in unions:
            unions[head] = ([], [])
            parts.append(head)  # placeholder, keeps the order
        members, inner = unions[head]
        words = _union_words(str(loc[tag_at]))
        if words not in members:
            members.append(words)
        rest = loc[tag_at + 1:]
        if rest and not any(_is_union_tag(p) for p in rest):  # the value had this member's shape
            where = ".".join([head, *(to_camel(p) if isinstance(p, str) else str(p) for p in rest)])
            inner.append(f"{where}: {_plain(err['msg'])}")
    for index, part in enumerate(parts):
        if part in unions:
            members, inner = unions[part]
            accepted = ", ".join(members[:-1]) + f" or {members[-1]}" if len(members) > 1 else members[0]
            parts[index] = "; ".join([f"{part}: expected {accepted}", *inner])
    return f"{method}: invalid params: " + "; ".join(parts)
