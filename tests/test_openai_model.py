"""The openai SDK against a local HTTP server on 127.0.0.1 serving real recorded streams.

The stream is ``tests/data/corpus/openai__chat-parallel-two-tools.sse``, recorded by
the openai-python project (Apache-2.0); see ``tests/data/corpus/SOURCES.md``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from endpoint import FakeEndpoint
from toolwire.llm.base import ModelError, ModelRequest
from toolwire.llm.openai_model import OpenAIModel
from toolwire.headless.mirror import CallMirror
from toolwire.streaming.merge import merge_frames

CORPUS = Path(__file__).parent / "data" / "corpus"
STREAM = CORPUS / "openai__chat-parallel-two-tools.sse"
EXPECTED = [
    ("GetWeatherArgs", "call_JMW1whyEaYG438VE1OIflxA2", {"city": "Edinburgh", "country": "GB", "units": "c"}),
    ("get_stock_price", "call_DNYTawLBoN8fj3KN6qU9N1Ou", {"ticker": "AAPL", "exchange": "NASDAQ"}),
]


async def collect(model: OpenAIModel, request: ModelRequest) -> list:
    return [frame async for frame in model.stream(request)]


@pytest.mark.asyncio
async def test_recorded_stream_through_the_sdk_merges_to_the_expected_calls():
    with FakeEndpoint([(200, STREAM.read_bytes())]) as endpoint:
        model = OpenAIModel("gpt-4o", base_url=endpoint.base_url, api_key="test-key")
        frames = await collect(model, ModelRequest(messages=[{"role": "user", "content": "hi"}],
                                                   tools=[{"type": "function", "function": {"name": "x", "parameters": {}}}]))
        await model.aclose()
    merger = merge_frames(frames, "openai-chat")
    assert [(c.name, c.id, c.arguments) for c in merger.calls] == EXPECTED
    assert [c.status.value for c in merger.calls] == ["generated", "generated"]
    assert merger.finish_reasons == ["tool_calls"]
    sent = endpoint.requests[0]
    assert sent["stream"] is True and sent["temperature"] == 0.0 and sent["model"] == "gpt-4o"


@pytest.mark.asyncio
async def test_http_errors_become_model_errors_with_retryability():
    with FakeEndpoint([(400, b'{"error": {"message": "bad request"}}')]) as endpoint:
        model = OpenAIModel("gpt-4o", base_url=endpoint.base_url, api_key="k", max_retries=0)
        with pytest.raises(ModelError) as info:
            await collect(model, ModelRequest(messages=[{"role": "user", "content": "hi"}]))
        await model.aclose()
    assert info.value.status == 400 and info.value.retryable is False


def test_openai_is_imported_only_when_an_openai_model_is_used():
    code = (
        "import sys; import toolwire.cli, toolwire.lsp.server, toolwire.llm.factory as f;"
        "f.make_model('replay'); assert 'openai' not in sys.modules, 'openai imported';"
        "f.make_model('openai:m'); assert 'openai' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_full_turn_over_stdio_with_the_sdk(tmp_path):
    """``toolwire run`` → ``toolwire serve`` → openai SDK → 127.0.0.1: the recorded calls
    are unknown tools here, so they end ``errored`` and the next request carries both errors."""
    (tmp_path / "ws").mkdir()
    with FakeEndpoint([(200, STREAM.read_bytes())]) as endpoint:
        env = {"OPENAI_BASE_URL": endpoint.base_url, "OPENAI_API_KEY": "test", "PATH": "/usr/bin:/bin"}
        done = subprocess.run(
            [sys.executable, "-m", "toolwire", "run", "--workspace", str(tmp_path / "ws"), "--model", "openai:gpt-4o",
             "--approve", "no", "--json", "What's the weather?"],
            capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1]["stopReason"] == "end_turn"
    finals = {}
    mirror = CallMirror()  # --json prints the updates as sent: argument pieces, fields when changed
    for params in lines[:-1]:
        if params["update"]["sessionUpdate"] == "tool_call":
            call = mirror.apply(params["update"]["toolCall"])
            finals[call["toolCallId"]] = call
    assert [(c["name"], cid, c["arguments"]) for cid, c in finals.items()] == EXPECTED
    assert {c["status"] for c in finals.values()} == {"errored"}
    assert {c["error"]["code"] for c in finals.values()} == {"unknown_tool"}
    second = endpoint.requests[1]["messages"]
    results = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == [e[1] for e in EXPECTED]
    assert all("unknown_tool" in m["content"] for m in results)


@pytest.mark.asyncio
async def test_a_complete_stream_without_finish_reason_is_not_an_error():
    """Some servers send ``[DONE]`` but no ``finish_reason``: complete, not cut off."""
    body = (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function",'
        b'"function":{"name":"read_file","arguments":"{\\"path\\": \\"a\\"}"}}]}}]}\n\n'
        b"data: [DONE]\n\n"
    )
    with FakeEndpoint([(200, body)]) as endpoint:
        model = OpenAIModel("m", base_url=endpoint.base_url, api_key="k")
        frames = await collect(model, ModelRequest(messages=[{"role": "user", "content": "hi"}]))
        await model.aclose()
    merger = merge_frames(frames, "openai-chat")
    assert [(c.name, c.arguments, c.status.value) for c in merger.calls] == [("read_file", {"path": "a"}, "generated")]


@pytest.mark.asyncio
async def test_a_body_cut_before_done_and_finish_is_an_error():
    body = b'data: {"choices":[{"index":0,"delta":{"content":"hel"}}]}\n\n'
    with FakeEndpoint([(200, body)]) as endpoint:
        model = OpenAIModel("m", base_url=endpoint.base_url, api_key="k")
        with pytest.raises(ModelError, match="no \\[DONE\\]"):
            await collect(model, ModelRequest(messages=[{"role": "user", "content": "hi"}]))
        await model.aclose()


@pytest.mark.asyncio
async def test_an_answer_that_is_not_an_event_stream_fails_once_and_says_so():
    from endpoint import Reply

    body = b'{"id": "x", "object": "chat.completion", "choices": []}'
    with FakeEndpoint([Reply(200, body, {"Content-Type": "application/json"})]) as endpoint:
        model = OpenAIModel("m", base_url=endpoint.base_url, api_key="k")
        with pytest.raises(ModelError, match="not an event stream") as info:
            await collect(model, ModelRequest(messages=[{"role": "user", "content": "hi"}]))
        await model.aclose()
    assert info.value.retryable is False


@pytest.mark.asyncio
async def test_a_provider_error_event_then_a_close_keeps_the_providers_message():
    body = (b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
            b'event: error\ndata: {"error": {"message": "upstream overloaded", "type": "overloaded_error"}}\n\n')
    with FakeEndpoint([(200, body)]) as endpoint:
        model = OpenAIModel("m", base_url=endpoint.base_url, api_key="k")
        frames = await collect(model, ModelRequest(messages=[{"role": "user", "content": "hi"}]))
        await model.aclose()
    merger = merge_frames(frames, "openai-chat")
    assert [e.message for e in merger.errors] == ["upstream overloaded"]
