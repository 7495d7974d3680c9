"""Context-length-exceeded 400s (protocol.md, "Request parameters"): each provider's
wording lowers the window, the shrinking rule drops old tool results, the request is
sent once more; a request that still does not fit ends the turn with its size.
The openai SDK against a local HTTP server on 127.0.0.1; assertions are on the
request bodies the server received."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from endpoint import FakeEndpoint, Reply, chat_body, error_body, refusal
from toolwire.agent.conversation import DROPPED_PREFIX
from toolwire.agent.events import RecordingSink
from toolwire.agent.opening import open_session
from toolwire.agent.request_rules import estimate_tokens
from toolwire.agent.turn import Turn
from toolwire.llm import endpoints
from toolwire.llm.base import ContextLengthError, ModelRequest
from toolwire.llm.context_errors import context_sizes
from toolwire.llm.openai_model import OpenAIModel
from toolwire.settings import Settings
from toolwire.workspace.documents import NoOpenDocuments

_OPENAI_WINDOW = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
#: The opening chunk some servers stream before they check the request.
_ROLE_OPENING = (b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":'
                 b'"assistant","content":""},"finish_reason":null}]}\n\n')

#: (id, HTTP 400 reply, window stated, request size stated)
WORDINGS = [
    ("openai", refusal("This model's maximum context length is 16385 tokens. However, your messages resulted in "
                       "17000 tokens. Please reduce the length of the messages.", param="messages",
                       code="context_length_exceeded"), 16385, 17000),
    ("vllm", refusal("This model's maximum context length is 16384 tokens. However, you requested 122946 tokens "
                     "(112946 in the messages, 10000 in the completion). Please reduce the length of the messages "
                     "or completion.", type="BadRequestError", code=400), 16384, 112946),
    ("vllm-new", refusal("This model's maximum context length is 16384 tokens and your request has 20000 input "
                         "tokens. Please reduce the length of the input messages.", type="BadRequestError",
                         code=400), 16384, 20000),
    ("llama.cpp", refusal("request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it",
                          type="exceed_context_size_error", code=400, n_prompt_tokens=13392, n_ctx=8192), 8192, 13392),
    ("llama.cpp-old", refusal("the request exceeds the available context size, try increasing it",
                              type="invalid_request_error", code=400), None, None),
    ("ollama", Reply(400, b'{"error":"the input length exceeds the context length"}'), None, None),
    ("ollama-old", refusal("prompt too long; exceeded max context length by 1200 tokens", type="api_error"), None, None),
    ("llama.cpp-500", refusal("Context size has been exceeded.", status=500, type="server_error", code=500), None, None),
    ("llama.cpp-in-stream", Reply(200, b'data: {"error": {"code": 400, "message": "request (9000 tokens) exceeds the '
                                       b'available context size (8192 tokens), try increasing it", "type": '
                                       b'"exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}}\n\n'
                                       b'data: [DONE]\n\n'), 8192, 9000),
    ("llama.cpp-error-line", Reply(200, b'error: {"code": 400, "message": "the request exceeds the available context '
                                        b'size. try increasing the context size or enable context shift", "type": '
                                        b'"invalid_request_error"}\n\ndata: [DONE]\n\n'), None, None),
    ("sglang-in-stream", Reply(200, b'data: {"error": {"object": "error", "message": "Requested token count exceeds '
                                    b'the model\'s maximum context length of 4096 tokens. You requested a total of '
                                    b'9000 tokens: 8000 tokens from the input messages and 1000 tokens for the '
                                    b'completion.", "type": "BadRequestError", "code": 400}}\n\ndata: [DONE]\n\n'),
     4096, 8000),
    ("input-length", refusal("Input length (265330) exceeds model's maximum context length (262144)."), 262144, 265330),
    ("google", refusal("The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)"),
     1048575, 1196265),
    ("xai", refusal("This model's maximum prompt length is 131072 but the request contains 537812 tokens."),
     131072, 537812),
    ("bedrock", refusal("Input is too long for requested model."), None, None),
    ("http-413", Reply(413, b'{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the '
                            b'maximum size"}}'), None, None),
    ("openrouter", refusal("This endpoint's maximum context length is 163840 tokens. However, you requested about "
                           "172900 tokens (4429 of text input, 4631 of tool input, 163840 in the output).", code=400),
     163840, 172900),
    ("anthropic-gateway", refusal("prompt is too long: 215000 tokens > 200000 maximum"), 200000, 215000),
    ("together", refusal("The input (516368 tokens) is longer than the model's context length (131072 tokens)."),
     131072, 516368),
    ("lm-studio", refusal("Input length 6491 exceeds context length 1500"), 1500, 6491),
    ("fireworks", refusal("The prompt is too long: 140000, model maximum context length: 131072"), 131072, 140000),
    ("cohere", refusal("too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 5000. "
                       "Try using a shorter prompt, or enabling prompt truncating."), 4081, 5000),
    ("tgi", Reply(422, json.dumps({"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= "
                                            "4096. Given: 5000 `inputs` tokens and 100 `max_new_tokens`",
                                   "error_type": "validation"}).encode()), 4096, 5000),
    ("lm-studio-loaded", refusal("Trying to keep the first 5000 tokens when context the overflows. However, the model "
                                 "is loaded with context length of only 4096 tokens, which is not enough."), 4096, None),
    ("ollama-new", Reply(400, b'{"error":"input length (5000 tokens) exceeds the model\'s context length (4096 tokens)"}'),
     4096, 5000),
    ("tokens-in-the-prompt", refusal("The number of tokens in the prompt (5000) exceeds the maximum context length "
                                     "(4096)"), 4096, 5000),
    ("maximum-input-length", refusal("prompt length 5000 exceeds maximum input length 4096"), 4096, 5000),
    ("maximum-allowed", refusal("Prompt length (5000) exceeds the maximum allowed (4096)"), 4096, 5000),
    # Beyond OpenAI's error object: the texts wherever the body holds them (llm/error_bodies.py)
    ("openrouter-wrapped", Reply(400, json.dumps({"error": {"message": "Provider returned error", "code": 400,
        "metadata": {"provider_name": "DeepInfra", "raw": json.dumps({"error": {"message": _OPENAI_WINDOW}})}}}).encode()),
     8192, 9000),
    ("fastapi-detail", Reply(400, json.dumps({"detail": _OPENAI_WINDOW}).encode()), 8192, 9000),
    ("plain-text", Reply(400, _OPENAI_WINDOW.encode(), {"Content-Type": "text/plain"}), 8192, 9000),
    ("http-413-html", Reply(413, b"<html><body><h1>413 Request Entity Too Large</h1></body></html>",
                            {"Content-Type": "text/html"}), None, None),
    ("in-stream-after-role", Reply(200, _ROLE_OPENING + b'data: {"error": {"message": "' + _OPENAI_WINDOW.encode()
                                   + b'"}}\n\ndata: [DONE]\n\n'), 8192, 9000),
    ("error-event-plain-text", Reply(200, b"event: error\ndata: " + _OPENAI_WINDOW.encode() + b"\n\n"), 8192, 9000),
]


@pytest.mark.parametrize("reply, window, requested", [w[1:] for w in WORDINGS], ids=[w[0] for w in WORDINGS])
@pytest.mark.asyncio
async def test_each_wording_is_a_context_length_error_with_the_sizes_it_states(reply, window, requested):
    with FakeEndpoint([reply]) as endpoint:
        model = OpenAIModel("m", base_url=endpoint.base_url, api_key="k")
        with pytest.raises(ContextLengthError) as info:
            async for _ in model.stream(ModelRequest(messages=[{"role": "user", "content": "hi"}])):
                pass
        await model.aclose()
    assert (info.value.limit, info.value.requested) == (window, requested)
    assert not info.value.retryable  # the same request would be refused again: only the shrunk one is sent
    assert len(endpoint.requests) == 1  # no optional field is blamed for it


@pytest.mark.parametrize("message", [
    "Unsupported value: 'temperature' does not support 0 with this model.",
    "Invalid 'messages[1].content': string too long.",  # a limit on one message, not the window
    "'messages' must contain the word 'json' in some form",
])
def test_other_400s_are_not_context_errors(message):
    assert context_sizes({"message": message, "type": "invalid_request_error"}, message) is None


def big_file_turn_replies(tmp_path: Path) -> list:
    """A turn that reads a large file, then a small one, then answers: the third request
    carries the large result, which the shrinking rule may drop (it is no longer the
    latest call's result)."""
    (tmp_path / "big.txt").write_text("big line of text\n" * 3000)  # 51 000 characters
    (tmp_path / "small.txt").write_text("small\n")
    return [Reply(200, chat_body({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]}, 1)),
            Reply(200, chat_body({"tool_calls": [{"name": "read_file", "arguments": {"path": "small.txt"}}]}, 2))]


def session_on(root: Path, base_url: str, model: str):
    settings = Settings.model_validate({"baseUrl": base_url, "apiKey": "k", "modelRetries": 0, "resultLimit": 60000})
    return open_session(root, f"openai:{model}", settings, NoOpenDocuments())


def request_tokens(body: dict) -> int:
    return estimate_tokens(body["messages"], body.get("tools", []))


@pytest.mark.parametrize("reply, window, requested", [w[1:] for w in WORDINGS], ids=[w[0] for w in WORDINGS])
@pytest.mark.asyncio
async def test_a_context_error_shrinks_the_request_and_retries_once(tmp_path, reply, window, requested):
    replies = [*big_file_turn_replies(tmp_path), reply, Reply(200, chat_body({"text": "done"}, 3))]
    with FakeEndpoint(replies) as endpoint:
        session = session_on(tmp_path, endpoint.base_url, f"ctx-{id(reply)}")
        sink = RecordingSink()
        outcome = await Turn(session, sink, None).run("read them")
        await session.model.aclose()
    assert outcome.stop_reason == "end_turn", outcome.message
    refused, retried = endpoint.requests[2], endpoint.requests[3]
    dropped = [m for m in retried["messages"] if m["role"] == "tool" and m["content"].startswith(DROPPED_PREFIX)]
    assert len(dropped) == 1 and "big line" not in json.dumps(retried)
    assert "big line" in json.dumps(refused)
    assert request_tokens(retried) < request_tokens(refused)
    estimated = request_tokens(refused)
    if window is None:
        expected = int(0.75 * estimated)
    else:  # the stated window, scaled down when the endpoint counted the request larger than the estimate
        expected = int(window * estimated / requested) if requested and requested > estimated else window
    assert expected < estimated
    assert endpoints.context_window(session.model.endpoint_key, 128_000) == expected
    assert len(endpoint.requests) == 4


@pytest.mark.asyncio
async def test_the_lowered_window_is_kept_for_the_endpoint_and_model(tmp_path):
    """The next session on the same endpoint and model shrinks before it sends."""
    limit = refusal("request (9000 tokens) exceeds the available context size (4000 tokens), try increasing it",
                    type="exceed_context_size_error", code=400, n_prompt_tokens=9000, n_ctx=4000)
    replies = [*big_file_turn_replies(tmp_path), limit, Reply(200, chat_body({"text": "done"}, 3)),
               *big_file_turn_replies(tmp_path), Reply(200, chat_body({"text": "done"}, 3))]
    with FakeEndpoint(replies) as endpoint:
        first = session_on(tmp_path, endpoint.base_url, "kept-window")
        await Turn(first, RecordingSink(), None).run("read them")
        second = session_on(tmp_path, endpoint.base_url, "kept-window")
        outcome = await Turn(second, RecordingSink(), None).run("read them")
        for session in (first, second):
            await session.model.aclose()
    assert outcome.stop_reason == "end_turn"
    assert len(endpoint.requests) == 7  # the second session needed no refused request
    third = endpoint.requests[6]
    assert "big line" not in json.dumps(third) and DROPPED_PREFIX in json.dumps(third)


def test_a_request_that_still_does_not_fit_ends_the_turn_with_its_size(tmp_path):
    """``toolwire run`` with a prompt larger than the window: one retry, then `error`
    naming the request's estimated size, the window and what to do, at the terminal."""
    (tmp_path / "ws").mkdir()
    prompt = "please summarize: " + "word " * 20000
    body = error_body("This model's maximum context length is 4096 tokens. However, you requested 25000 tokens "
                      "(24000 in the messages, 1000 in the completion).", code="context_length_exceeded")
    with FakeEndpoint(check=lambda _: Reply(400, body)) as endpoint:
        done = subprocess.run(
            [sys.executable, "-m", "toolwire", "run", "--workspace", str(tmp_path / "ws"), "--model", "openai:small",
             "--settings", json.dumps({"baseUrl": endpoint.base_url}), "--json", prompt],
            capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
            env={"OPENAI_API_KEY": "test", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 3, done.stderr
    assert len(endpoint.requests) == 2  # the request, then once more after shrinking (nothing to drop)
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["stopReason"] == "error"
    size = request_tokens(endpoint.requests[1])
    match = re.search(r"about (\d+) tokens \(estimated; 24000 by the endpoint's count\) against a window of 4096 tokens",
                      final["message"])
    assert match and int(match.group(1)) == size, final["message"]
    assert "contextWindow" in final["message"] and "new session" in final["message"]
    assert "the turn failed: the request does not fit the model's context window" in done.stderr
    assert "what to do: start a new session" in done.stderr


@pytest.mark.asyncio
async def test_an_error_line_that_is_not_about_the_context_is_reported_not_taken_for_an_empty_answer(tmp_path):
    body = b'error: {"code": 500, "message": "slot unavailable", "type": "server_error"}\n\ndata: [DONE]\n\n'
    with FakeEndpoint([Reply(200, body)] * 3) as endpoint:
        session = session_on(tmp_path, endpoint.base_url, "error-line")
        outcome = await Turn(session, RecordingSink(), None).run("hello")
        await session.model.aclose()
    assert len(endpoint.requests) == 1
    assert outcome.stop_reason == "error" and "slot unavailable" in outcome.message, outcome.message


def test_toolwire_run_advises_on_the_context_for_a_500_over_the_window(tmp_path):
    """llama.cpp's HTTP 500 'Context size has been exceeded.': the advice is about the context,
    not 'the endpoint failed on its side' (the turn's message quotes 'HTTP 500')."""
    (tmp_path / "ws").mkdir()
    reply = refusal("Context size has been exceeded.", status=500, type="server_error", code=500)
    with FakeEndpoint(check=lambda _: reply) as endpoint:
        done = subprocess.run(
            [sys.executable, "-m", "toolwire", "run", "--workspace", str(tmp_path / "ws"), "--model", "openai:small",
             "--settings", json.dumps({"baseUrl": endpoint.base_url}), "hello"],
            capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
            env={"OPENAI_API_KEY": "test", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 3, done.stderr
    assert len(endpoint.requests) == 2
    assert "the turn failed: the request does not fit the model's context window" in done.stderr
    assert "what to do: start a new session or shorten the prompt" in done.stderr, done.stderr
