"""The live view while arguments stream: path exposure, and the double-encoding rule at validation."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from toolwire.streaming.formats.openai_chat import OpenAIChatNormalizer
from toolwire.streaming.merger import StreamMerger
from toolwire.tools.base import ArgumentsInvalid, Tool, validate_arguments


def chunk(piece: str, *, header: bool = False) -> dict:
    call: dict = {"index": 0, "function": {"arguments": piece}}
    if header:
        call.update(id="call_1", type="function", function={"name": "create_file", "arguments": piece})
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


@pytest.mark.parametrize("key", ["path", "file_path", "filepath", "file"])
@pytest.mark.parametrize("size", [1, 3, 8])
def test_a_path_is_exposed_as_soon_as_its_closing_quote_arrives(key, size):
    text = json.dumps({key: "src/pkg/mod é.py", "content": "x = 1\n" * 400})
    closing = text.index('"', text.index(': "') + 3)  # the quote that ends the path value
    normalizer, merger = OpenAIChatNormalizer(), StreamMerger()
    merger.feed(normalizer.feed(chunk("", header=True)))
    [call] = merger.calls
    fed = 0
    while fed < len(text):
        piece = text[fed:fed + size]
        fed += len(piece)
        merger.feed(normalizer.feed(chunk(piece)))
        if fed <= closing:
            assert call.path is None, (fed, call.path)  # never a half path
        else:
            assert call.path == "src/pkg/mod é.py", fed
            break
    assert call.status.value == "generating"  # the content is still streaming


def test_the_live_view_grows_while_streaming_and_never_raises():
    text = json.dumps({"path": "a.py", "content": "é😀\\u00e9" * 300})
    normalizer, merger = OpenAIChatNormalizer(), StreamMerger(refresh_seconds=0)
    merger.feed(normalizer.feed(chunk("", header=True)))
    seen = []
    for i in range(0, len(text), 5):
        merger.feed(normalizer.feed(chunk(text[i:i + 5])))
        partial = merger.calls[0].partial
        if partial and "content" in partial:
            seen.append(len(partial["content"]))
    assert seen == sorted(seen) and len(set(seen)) > 5
    merger.finish()
    assert merger.calls[0].arguments == json.loads(text)


class Nested(BaseModel):
    path: str
    options: dict[str, int]
    items: list[str]
    note: str


class NestedTool(Tool):
    name = "nested"
    description = "test"
    Args = Nested

    async def run(self, args, ctx):  # pragma: no cover - never run here
        raise AssertionError


def test_double_encoded_object_and_array_are_decoded_where_the_schema_wants_them():
    args = validate_arguments(NestedTool(), {"path": "a", "options": '{"x": 1}', "items": '["a", "b"]',
                                             "note": '{"stays": "a string"}'})
    assert args.options == {"x": 1} and args.items == ["a", "b"]
    assert args.note == '{"stays": "a string"}'  # a string whose content is JSON stays a string


def test_double_encoded_values_that_do_not_validate_are_refused_naming_the_field():
    with pytest.raises(ArgumentsInvalid, match="options"):
        validate_arguments(NestedTool(), {"path": "a", "options": '{"x": "not a number"}', "items": [], "note": ""})


def test_a_duplicate_key_is_refused_so_path_can_never_disagree_with_the_edit():
    text = '{"path": "safe.txt", "old_string": "hello", "new_string": "bye", "path": "secret.txt"}'
    normalizer, merger = OpenAIChatNormalizer(), StreamMerger()
    merger.feed(normalizer.feed(chunk("", header=True)))
    for i in range(0, len(text), 6):
        merger.feed(normalizer.feed(chunk(text[i:i + 6])))
    merger.finish()
    [call] = merger.calls
    assert call.status.value == "errored" and call.error.code == "duplicate_key" and "'path'" in call.error.message
    assert call.arguments_text == text  # kept byte for byte for the model's retry


def test_whole_object_arguments_that_name_a_key_twice_are_refused():
    from toolwire.streaming.framing import frames_from_bytes
    from toolwire.streaming.merge import merge_frames

    gemini = (b'data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "edit_file", "args": '
              b'{"path": "a.txt", "old_string": "x", "new_string": "y", "path": "b.txt"}}}]}, '
              b'"finishReason": "STOP"}]}\r\n\r\n')
    [call] = merge_frames(frames_from_bytes(gemini)).calls
    assert call.status.value == "errored" and call.error.code == "duplicate_key" and "'path'" in call.error.message
    nested_ok = (b'data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": '
                 b'{"a": {"x": 1}, "b": {"x": 2}}}}]}, "finishReason": "STOP"}]}\r\n\r\n')
    [call] = merge_frames(frames_from_bytes(nested_ok)).calls
    assert call.status.value == "generated" and call.arguments == {"a": {"x": 1}, "b": {"x": 2}}
