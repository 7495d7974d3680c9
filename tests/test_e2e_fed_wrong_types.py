"""A fed chunk with a field of the wrong JSON type is refused (-32602) naming the chunk
and the field, in every format the merge accepts; nothing of the batch is merged.

A real server over stdio (``toolwire/toolCalls/merge``). Each row of :data:`WRONG`
is sent after a good chunk of its format in one batch: the answer is InvalidParams
saying ``chunk 1 of the batch: <field> is <type>, not <type>``, no update is pushed,
and the good chunk alone is then merged. Every payload of the recorded corpus
passes the same checks (no real stream is refused).
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from conftest import DATA
from toolwire.streaming.chunk_shapes import wrong_field
from toolwire.streaming.formats.registry import detect_format
from toolwire.streaming.framing import frames_from_bytes

pytestmark = pytest.mark.asyncio(loop_scope="module")

MERGE = "toolwire/toolCalls/merge"


def b64(event: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(event).encode()).decode()


def chat(delta: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}], **extra}


def chat_call(**fields: Any) -> dict[str, Any]:
    return chat({"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                 "function": {"name": "read_file", "arguments": ""}, **fields}]})


#: A good chunk of each format (sent before the wrong one, and alone afterwards).
GOOD = {
    "openai-chat": chat({"content": "hi"}),
    "openai-responses": {"type": "response.output_text.delta", "delta": "hi"},
    "anthropic": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
    "gemini": {"candidates": [{"content": {"parts": [{"text": "hi"}]}}]},
    "bedrock-converse": {"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "hi"}}},
    "bedrock-invoke": {"chunk": {"bytes": b64({"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": "hi"}})}},
    "cohere": {"type": "content-delta", "index": 0, "delta": {"message": {"content": {"text": "hi"}}}},
    "vercel-ui": {"type": "text-delta", "id": "t", "delta": "hi"},
}

#: (format, the wrong chunk, what the message says after "chunk 1 of the batch: ").
WRONG: list[tuple[str, Any, str]] = [
    # the SSE event envelope, as an object and as JSON text
    ("openai-chat", {"event": 5, "data": {}}, "event is a number, not a string"),
    ("openai-chat", {"event": ["message"], "data": chat({"content": "x"})}, "event is an array, not a string"),
    ("openai-chat", '{"event": {"name": "m"}, "data": {}}', "event is an object, not a string"),
    ("openai-chat", {"event": "message", "data": 7}, "data is a number, not an object or the JSON text of one"),
    ("openai-chat", {"event": "message", "data": [1]}, "data is an array, not an object or the JSON text of one"),
    ("openai-chat", {"event": "message", "data": None}, "data is null, not an object or the JSON text of one"),
    ("openai-chat", {"event": "message", "data": {}, "id": 5}, "id is a number, not a string"),
    ("openai-chat", {"event": "message", "data": {}, "retry": "soon"},
     "retry is a string, not a non-negative integer"),
    ("anthropic", {"event": True, "data": GOOD["anthropic"]}, "event is a boolean, not a string"),
    # OpenAI Chat Completions
    ("openai-chat", chat_call(id=5), "choices[0].delta.tool_calls[0].id is a number, not a string"),
    ("openai-chat", chat_call(index="first"), "choices[0].delta.tool_calls[0].index is a string, "
                                              "not a non-negative integer"),
    ("openai-chat", chat_call(index=-1), "choices[0].delta.tool_calls[0].index is a number, "
                                         "not a non-negative integer"),
    ("openai-chat", chat({"tool_calls": [{"index": -2, "function": {"arguments": "{}"}}]}),  # a bare fragment
     "choices[0].delta.tool_calls[0].index is a number, not a non-negative integer"),
    ("openai-chat", chat_call(function={"name": ["read_file"]}),
     "choices[0].delta.tool_calls[0].function.name is an array, not a string"),
    ("openai-chat", chat_call(function={"name": "read_file", "arguments": 12}),
     "choices[0].delta.tool_calls[0].function.arguments is a number, not a string or an object"),
    ("openai-chat", chat_call(function="read_file"),
     "choices[0].delta.tool_calls[0].function is a string, not an object"),
    ("openai-chat", chat({"tool_calls": "read_file"}),
     "choices[0].delta.tool_calls is a string, not an array or an object"),
    ("openai-chat", chat({"content": 5}), "choices[0].delta.content is a number, not a string"),
    ("openai-chat", chat({"reasoning_content": ["x"]}), "choices[0].delta.reasoning_content is an array, "
                                                       "not a string"),
    ("openai-chat", {"choices": [{"index": 0, "delta": {}, "finish_reason": True}]},
     "choices[0].finish_reason is a boolean, not a string"),
    ("openai-chat", {"choices": {"0": {}}}, "choices is an object, not an array"),
    ("openai-chat", {"choices": [], "usage": {"prompt_tokens": "3"}},
     "usage.prompt_tokens is a string, not an integer"),
    # OpenAI Responses
    ("openai-responses", {"type": 5}, "type is a number, not a string"),
    ("openai-responses", {"type": "response.function_call_arguments.delta", "item_id": "fc", "delta": 5},
     "delta is a number, not a string"),
    ("openai-responses", {"type": "response.output_item.added", "output_index": 0,
                          "item": {"type": "function_call", "call_id": 7, "name": "read_file"}},
     "item.call_id is a number, not a string"),
    ("openai-responses", {"type": "response.function_call_arguments.done", "item_id": "fc", "arguments": {}},
     "arguments is an object, not a string"),
    # Anthropic Messages
    ("anthropic", {"type": "content_block_start", "index": 0,
                   "content_block": {"type": "tool_use", "id": 5, "name": "read_file", "input": {}}},
     "content_block.id is a number, not a string"),
    ("anthropic", {"type": "content_block_start", "index": 0,
                   "content_block": {"type": "tool_use", "id": "t", "name": "read_file", "input": "{}"}},
     "content_block.input is a string, not an object"),
    ("anthropic", {"type": "content_block_delta", "index": "0",
                   "delta": {"type": "input_json_delta", "partial_json": "{}"}},
     "index is a string, not a non-negative integer"),
    ("anthropic", {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
                                                                       "partial_json": {"path": "a"}}},
     "delta.partial_json is an object, not a string"),
    ("anthropic", {"type": "message_delta", "delta": {"stop_reason": 1}}, "delta.stop_reason is a number, "
                                                                         "not a string"),
    # Gemini
    ("gemini", {"candidates": [{"content": {"parts": [{"functionCall": {"name": 5, "args": {}}}]}}]},
     "candidates[0].content.parts[0].functionCall.name is a number, not a string"),
    ("gemini", {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": "{}"}}]}}]},
     "candidates[0].content.parts[0].functionCall.args is a string, not an object"),
    ("gemini", {"candidates": [{"content": {"parts": {"text": "x"}}}]},
     "candidates[0].content.parts is an object, not an array"),
    ("gemini", {"candidates": [{"index": "0", "content": {"parts": []}}]},
     "candidates[0].index is a string, not a non-negative integer"),
    # Bedrock ConverseStream, boto3-shaped and as an event envelope
    ("bedrock-converse", {"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {
        "toolUseId": 5, "name": "read_file"}}}}, "contentBlockStart.start.toolUse.toolUseId is a number, "
                                                 "not a string"),
    ("bedrock-converse", {"event": "contentBlockDelta", "data": {"contentBlockIndex": 0,
                                                                 "delta": {"toolUse": {"input": 5}}}},
     "delta.toolUse.input is a number, not a string or an object"),
    ("bedrock-converse", {"contentBlockStop": {"contentBlockIndex": "0"}},
     "contentBlockStop.contentBlockIndex is a string, not a non-negative integer"),
    # Bedrock InvokeModel: the chunk, and the model's event inside it
    ("bedrock-invoke", {"chunk": {"bytes": 5}}, "chunk.bytes is a number, not a string"),
    ("bedrock-invoke", {"chunk": {"bytes": b64({"type": "content_block_start", "index": 0, "content_block": {
        "type": "tool_use", "id": "t", "name": 7, "input": {}}})}},
     "chunk.bytes (decoded): content_block.name is a number, not a string"),
    # Cohere v2
    ("cohere", {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": {
        "id": "c", "function": {"name": 5, "arguments": ""}}}}},
     "delta.message.tool_calls.function.name is a number, not a string"),
    ("cohere", {"type": "tool-call-delta", "index": "zero", "delta": {}},
     "index is a string, not a non-negative integer"),
    # Vercel AI SDK UI message stream
    ("vercel-ui", {"type": "tool-input-start", "toolCallId": "t", "toolName": 5},
     "toolName is a number, not a string"),
    ("vercel-ui", {"type": "tool-input-delta", "toolCallId": 9, "inputTextDelta": "{}"},
     "toolCallId is a number, not a string"),
    ("vercel-ui", {"type": "tool-input-delta", "toolCallId": "t", "inputTextDelta": {"a": 1}},
     "inputTextDelta is an object, not a string"),
]


async def open_session(client: Any, root: Path) -> str:
    return (await client.call("toolwire/session/new", {"cwd": str(root), "model": "replay"}))["sessionId"]


@pytest.mark.parametrize("fmt, wrong, says", WRONG, ids=[f"{fmt}: {says}" for fmt, _, says in WRONG])
async def test_a_field_of_the_wrong_type_is_refused_naming_the_chunk_and_the_field(client, tmp_path, fmt, wrong,
                                                                                   says):
    sid = await open_session(client, tmp_path)
    # once with the format given, once with the good chunk telling it
    for stream, given in (("given", {"format": fmt}), ("detected", {})):
        before = len(client.updates[sid])
        with pytest.raises(JsonRpcInvalidParams) as info:
            await client.call(MERGE, {"sessionId": sid, "streamId": stream, "chunks": [GOOD[fmt], wrong], **given})
        assert str(info.value).endswith(f"{MERGE}: chunk 1 of the batch: {says}"), str(info.value)
        assert len(client.updates[sid]) == before  # nothing of the batch was merged or pushed
        result = await client.call(MERGE, {"sessionId": sid, "streamId": stream, "chunks": [GOOD[fmt]], **given})
        assert result["format"] == fmt


async def test_envelopes_with_every_sse_field_and_a_null_event_name_are_merged(client, tmp_path):
    sid = await open_session(client, tmp_path)
    chunks = [{"event": "message", "data": chat({"content": "one "}), "id": "1", "retry": 3000},
              {"event": None, "data": json.dumps(chat({"content": "two"}))},
              {"event": "message", "data": "[DONE]"}]
    result = await client.call(MERGE, {"sessionId": sid, "streamId": "s", "chunks": chunks, "end": True})
    assert result["format"] == "openai-chat" and result["ended"] is True
    text = "".join(u["content"]["text"] for u in client.updates[sid] if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "one two"


async def test_no_payload_of_the_recorded_corpus_is_refused() -> None:
    checked = 0
    for path in sorted((DATA / "corpus").iterdir()):
        if path.suffix not in {".sse", ".jsonl", ".json", ".eventstream"} or path.name == "expected.json":
            continue
        frames = [f for f in frames_from_bytes(path.read_bytes()) if isinstance(f.payload, dict)]
        fmt = next((found for found in (detect_format(f.payload, f.event) for f in frames) if found), None)
        assert fmt is not None, path.name
        for n, frame in enumerate(frames):
            assert wrong_field(fmt, frame.payload, frame.event) is None, (path.name, n)
            checked += 1
    assert checked > 1100


#: Request params of the wrong JSON type: refused, never converted (``"yes"`` is not ``true``).
WRONG_PARAMS = [
    (MERGE, {"streamId": "p", "chunks": [], "end": "yes"}, "end: Input should be a valid boolean"),
    (MERGE, {"streamId": "p", "chunks": [], "end": 1}, "end: Input should be a valid boolean"),
    (MERGE, {"streamId": "p", "chunks": [], "end": "true"}, "end: Input should be a valid boolean"),
    (MERGE, {"streamId": 5, "chunks": []}, "streamId: Input should be a valid string"),
    (MERGE, {"streamId": "p", "chunks": [], "format": ["openai"]}, "format: Input should be a valid string"),
    (MERGE, {"streamId": "p", "chunks": GOOD["openai-chat"]}, "chunks: Input should be a valid list"),
    (MERGE, {"streamId": "p", "chunks": [], "format": ""}, "unknown stream format ''; known: anthropic"),  # not absent
    (MERGE, {"streamId": "p", "chunks": [GOOD["openai-chat"]], "format": "nope"}, "unknown stream format 'nope'"),
    ("toolwire/toolCalls/run", {"streamId": "p", "toolCallIds": "c1"}, "toolCallIds: Input should be a valid list"),
    ("toolwire/session/undoTurn", {"partial": "yes"}, "partial: Input should be a valid boolean"),
]


@pytest.mark.parametrize("method, params, says", WRONG_PARAMS, ids=[s for _, _, s in WRONG_PARAMS])
async def test_params_of_the_wrong_type_are_refused_not_converted(client, tmp_path, method, params, says):
    sid = await open_session(client, tmp_path)
    with pytest.raises(JsonRpcInvalidParams) as info:
        await client.call(method, {"sessionId": sid, **params})
    assert says in str(info.value), str(info.value)
    if method == MERGE and "end" in params:  # the stream was not ended: it opens and takes chunks
        result = await client.call(MERGE, {"sessionId": sid, "streamId": "p", "chunks": [GOOD["openai-chat"]]})
        assert result["ended"] is False


DEEP = "[" * 5000 + "]" * 5000  # deeper than json.loads goes (RecursionError, about 1000 levels)


async def test_a_chunk_nested_too_deeply_is_refused_not_an_internal_error(client, tmp_path):
    sid = await open_session(client, tmp_path)
    for chunk in (DEEP, {"event": "message", "data": DEEP}):
        with pytest.raises(JsonRpcInvalidParams) as info:
            await client.call(MERGE, {"sessionId": sid, "streamId": "deep", "chunks": [GOOD["openai-chat"], chunk]})
        assert f"{MERGE}: chunk 1 of the batch nests arrays or objects too deeply to be read" in str(info.value)
    result = await client.call(MERGE, {"sessionId": sid, "streamId": "deep", "chunks": [GOOD["openai-chat"]]})
    assert result["format"] == "openai-chat"


async def test_arguments_nested_too_deeply_end_the_call_invalid_json(client, tmp_path):
    """The model's argument text is data: a call whose arguments nest deeper than the parser
    goes ends errored invalid_json (was: -32603, an ERROR traceback 'a bug')."""
    sid = await open_session(client, tmp_path)
    chunk = chat_call(function={"name": "read_file", "arguments": DEEP})
    result = await client.call(MERGE, {"sessionId": sid, "streamId": "args", "chunks": [chunk], "end": True})
    [call] = result["toolCalls"]
    assert call["status"] == "errored" and call["error"]["code"] == "invalid_json"
    assert "arguments are not valid JSON: they nest arrays or objects too deeply" in call["error"]["message"]
