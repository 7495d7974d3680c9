"""Format names, aliases and automatic detection (formats/registry.py)."""

from __future__ import annotations

import pytest

from toolwire.streaming.formats.registry import ALIASES, FORMATS, UnknownFormat, detect_format, make_normalizer
from toolwire.streaming.merge import merge_payloads


@pytest.mark.parametrize(
    ("payload", "event", "fmt"),
    [
        ({"choices": []}, None, "openai-chat"),
        ({"error": {"message": "x"}}, "error", "openai-chat"),
        ({"type": "response.created"}, None, "openai-responses"),
        ({"sequence_number": 1}, "response.created", "openai-responses"),
        ({"type": "message_start"}, None, "anthropic"),
        ({"type": "error", "error": {"type": "overloaded_error"}}, None, "anthropic"),
        ({"type": "tool-call-start", "index": 0}, None, "cohere"),
        ({"type": "tool-input-start"}, None, "vercel-ui"),
        ({"type": "error", "errorText": "x"}, None, "vercel-ui"),
        ({"candidates": []}, None, "gemini"),
        ([{"candidates": []}], None, "gemini"),
        ({"contentBlockIndex": 0}, "contentBlockDelta", "bedrock-converse"),
        ({"messageStop": {}}, None, "bedrock-converse"),
        ({"bytes": "e30=", "p": "ab"}, "chunk", "bedrock-invoke"),
        ({"type": "ping"}, None, None),
        ("text", None, None),
    ],
)
def test_detect(payload: object, event: str | None, fmt: str | None) -> None:
    assert detect_format(payload, event) == fmt


def test_every_format_and_alias_makes_a_normalizer() -> None:
    for name in [*FORMATS, *ALIASES]:
        normalizer = make_normalizer(name)
        assert normalizer.format in FORMATS and isinstance(normalizer.explicit_ends, bool)
        assert normalizer.close() == []
    with pytest.raises(UnknownFormat, match="known: anthropic"):
        make_normalizer("nope")


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_non_object_payloads_never_raise(name: str) -> None:
    events = make_normalizer(name).feed(["not", "an", "object"] if name != "gemini" else "text")
    assert events and events[0].code == "malformed_chunk"


def test_payloads_before_the_telling_one_are_replayed() -> None:
    m = merge_payloads([{"type": "ping"}, {"type": "message_start", "message": {}},
                        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}}},
                        {"type": "content_block_stop", "index": 0}])  # fmt: skip
    assert m.calls[0].name == "f"


def test_nothing_telling_raises_unknown_format() -> None:
    with pytest.raises(UnknownFormat):
        merge_payloads([{"type": "ping"}])
