"""Empty answers are not silent successes (protocol.md, "Request parameters"): a response
with no text, no reasoning and no tool call is asked again once (within modelRetries),
then the turn ends ``error`` with "the model returned an empty answer", in the turn's
ended update (the panel) and at the terminal (``toolwire run``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import write_script
from endpoint import TEXT_ONLY, FakeEndpoint, Reply, sse_events
from toolwire.agent.events import RecordingSink, TurnUpdate
from toolwire.agent.opening import open_session
from toolwire.agent.request_rules import EMPTY_ANSWER
from toolwire.agent.turn import Turn
from toolwire.settings import Settings
from toolwire.workspace.documents import NoOpenDocuments

CHOICES_ONLY = b"".join(sse_events([
    {"id": "e", "object": "chat.completion.chunk", "choices": []},
    {"id": "e", "object": "chat.completion.chunk", "choices": [],
     "usage": {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5}},
])) + b"data: [DONE]\n\n"
EMPTY_STOP = b"".join(sse_events([
    {"id": "e", "object": "chat.completion.chunk",
     "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}]},
])) + b"data: [DONE]\n\n"
WHITE_SPACE = b"".join(sse_events([
    {"id": "e", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "\n\n"}}]},
    {"id": "e", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
])) + b"data: [DONE]\n\n"
REASONING_ONLY = b"".join(sse_events([
    {"id": "e", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}}]},
    {"id": "e", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
])) + b"data: [DONE]\n\n"
LENGTH_ONLY = b"".join(sse_events([
    {"id": "e", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
])) + b"data: [DONE]\n\n"
EMPTIES = {"choices-only": CHOICES_ONLY, "empty-stop": EMPTY_STOP, "white-space": WHITE_SPACE}


def session_on(root: Path, base_url: str, **settings):
    values = Settings.model_validate({"baseUrl": base_url, "apiKey": "k", **settings})
    return open_session(root, "openai:m", values, NoOpenDocuments())


def ended(sink: RecordingSink) -> TurnUpdate:
    [update] = [e for e in sink.events if isinstance(e, TurnUpdate) and e.state == "ended"]
    return update


@pytest.mark.parametrize("body", EMPTIES.values(), ids=EMPTIES.keys())
@pytest.mark.asyncio
async def test_an_empty_answer_is_asked_again_once_then_ends_the_turn_error(tmp_path, body):
    with FakeEndpoint([Reply(200, body)] * 4) as endpoint:
        session = session_on(tmp_path, endpoint.base_url)
        sink = RecordingSink()
        outcome = await Turn(session, sink, None).run("hello")
        await session.model.aclose()
    assert len(endpoint.requests) == 2  # the request and one retry, though modelRetries is 3
    assert endpoint.requests[0] == endpoint.requests[1]  # asked again as it was
    assert outcome.stop_reason == "error"
    assert outcome.message.startswith(f"{EMPTY_ANSWER}: no text and no tool call, also when asked again.")
    update = ended(sink)
    assert (update.stop_reason, update.message) == ("error", outcome.message)
    assert [m for m in session.conversation.messages if m["role"] == "assistant" and (m["content"] or "").strip()] == []


@pytest.mark.parametrize("body", EMPTIES.values(), ids=EMPTIES.keys())
@pytest.mark.asyncio
async def test_an_empty_answer_then_a_real_one_ends_normally(tmp_path, body):
    with FakeEndpoint([Reply(200, body), Reply(200, TEXT_ONLY)]) as endpoint:
        session = session_on(tmp_path, endpoint.base_url)
        sink = RecordingSink()
        outcome = await Turn(session, sink, None).run("hello")
        await session.model.aclose()
    assert len(endpoint.requests) == 2
    assert (outcome.stop_reason, outcome.message) == ("end_turn", None)
    assert session.conversation.messages[-1] == {"role": "assistant", "content": "ok"}


@pytest.mark.asyncio
async def test_with_model_retries_0_an_empty_answer_is_not_asked_again(tmp_path):
    with FakeEndpoint([Reply(200, EMPTY_STOP), Reply(200, TEXT_ONLY)]) as endpoint:
        session = session_on(tmp_path, endpoint.base_url, modelRetries=0)
        outcome = await Turn(session, RecordingSink(), None).run("hello")
        await session.model.aclose()
    assert len(endpoint.requests) == 1
    assert outcome.stop_reason == "error" and "not asked again: the modelRetries setting is 0" in outcome.message


@pytest.mark.parametrize("body, stop", [(REASONING_ONLY, "end_turn"), (LENGTH_ONLY, "max_tokens")],
                         ids=["reasoning-only", "length"])
@pytest.mark.asyncio
async def test_reasoning_or_a_token_limit_is_not_an_empty_answer(tmp_path, body, stop):
    with FakeEndpoint([Reply(200, body), Reply(200, TEXT_ONLY)]) as endpoint:
        session = session_on(tmp_path, endpoint.base_url)
        outcome = await Turn(session, RecordingSink(), None).run("hello")
        await session.model.aclose()
    assert len(endpoint.requests) == 1 and outcome.stop_reason == stop


@pytest.mark.asyncio
async def test_an_empty_answer_after_tool_calls_is_asked_again_too(tmp_path):
    """The second request of a turn (after a tool result) gets the same rule."""
    from endpoint import chat_body

    (tmp_path / "a.txt").write_text("hi\n")
    call = chat_body({"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]})
    with FakeEndpoint([Reply(200, call), Reply(200, CHOICES_ONLY), Reply(200, TEXT_ONLY)]) as endpoint:
        session = session_on(tmp_path, endpoint.base_url)
        outcome = await Turn(session, RecordingSink(), None).run("read it")
        await session.model.aclose()
    assert outcome.stop_reason == "end_turn" and len(endpoint.requests) == 3
    assert endpoint.requests[1] == endpoint.requests[2]


@pytest.mark.parametrize("lines, stop, requests", [
    ([{"text": ""}, {"text": ""}, {"text": "late"}], "error", 2),
    ([{"text": ""}, {"text": "hi"}], "end_turn", 2),
], ids=["empty-twice", "empty-then-text"])
@pytest.mark.asyncio
async def test_replay_responses_follow_the_same_rule(tmp_path, lines, stop, requests):
    values = Settings.model_validate({"model": f"replay:{write_script(tmp_path / 's.jsonl', lines)}"})
    session = open_session(tmp_path, None, values, NoOpenDocuments())
    sink = RecordingSink()
    outcome = await Turn(session, sink, None).run("hello")
    assert outcome.stop_reason == stop and len(session.model.requests) == requests
    assert ended(sink).message == (outcome.message if stop == "error" else None)
    if stop == "error":
        assert outcome.message.startswith(EMPTY_ANSWER)


@pytest.mark.parametrize("body", [CHOICES_ONLY, EMPTY_STOP], ids=["choices-only", "empty-stop"])
def test_toolwire_run_shows_the_empty_answer_and_exits_3(tmp_path, body):
    (tmp_path / "ws").mkdir()
    with FakeEndpoint([Reply(200, body)] * 3) as endpoint:
        done = subprocess.run(
            [sys.executable, "-m", "toolwire", "run", "--workspace", str(tmp_path / "ws"), "--model", "openai:m",
             "--settings", json.dumps({"baseUrl": endpoint.base_url}), "--json", "hello"],
            capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
            env={"OPENAI_API_KEY": "test", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 3, done.stderr
    assert len(endpoint.requests) == 2
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    final = lines[-1]
    assert final["stopReason"] == "error" and final["message"].startswith(EMPTY_ANSWER)
    turn_ended = [p["update"] for p in lines[:-1] if p["update"]["sessionUpdate"] == "turn"
                  and p["update"]["state"] == "ended"]
    assert [(u["stopReason"], u["message"]) for u in turn_ended] == [("error", final["message"])]  # what the panel shows
    assert f"toolwire run: the turn failed: {EMPTY_ANSWER}" in done.stderr
    assert "what to do: send the prompt again or rephrase it" in done.stderr


@pytest.mark.asyncio
async def test_the_tokens_of_an_empty_answer_count_in_the_turns_usage(tmp_path):
    with FakeEndpoint([Reply(200, CHOICES_ONLY), Reply(200, CHOICES_ONLY)]) as endpoint:
        session = session_on(tmp_path, endpoint.base_url)
        outcome = await Turn(session, RecordingSink(), None).run("hello")
        await session.model.aclose()
    assert (outcome.stop_reason, outcome.input_tokens, outcome.output_tokens) == ("error", 10, 0)


@pytest.mark.asyncio
async def test_a_tool_calls_finish_without_any_call_is_an_empty_answer_that_says_so(tmp_path):
    body = b"".join(sse_events([{"id": "e", "object": "chat.completion.chunk",
                                 "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}])) + b"data: [DONE]\n\n"
    with FakeEndpoint([Reply(200, body)] * 2) as endpoint:
        session = session_on(tmp_path, endpoint.base_url)
        outcome = await Turn(session, RecordingSink(), None).run("hello")
        await session.model.aclose()
    assert len(endpoint.requests) == 2 and outcome.stop_reason == "error"
    assert outcome.message.startswith(f"{EMPTY_ANSWER}: no text and no tool call (finish reason 'tool_calls'), also")


def _chunk(**fields) -> dict:
    return {"id": "e", "object": "chat.completion.chunk", **fields}


STOP = _chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}])
#: More empty answers (chat): (id, body, what the message must say after EMPTY_ANSWER)
MORE_EMPTIES = [
    ("usage-chunk-only", b"".join(sse_events([_chunk(choices=[], usage={"prompt_tokens": 5, "completion_tokens": 0})]))
     + b"data: [DONE]\n\n", ": no text and no tool call, also"),
    ("role-only", b"".join(sse_events([_chunk(choices=[{"index": 0, "delta": {"role": "assistant"}}])]))
     + b"data: [DONE]\n\n", ": no text and no tool call, also"),
    ("zero-width-space", b"".join(sse_events([_chunk(choices=[{"index": 0, "delta": {"content": "\u200b\ufeff"}}]),
                                              STOP])) + b"data: [DONE]\n\n", ": no text and no tool call, also"),
    ("white-space-reasoning", b"".join(sse_events([_chunk(choices=[{"index": 0, "delta": {
        "content": " \n", "reasoning_content": "\n"}}]), STOP])) + b"data: [DONE]\n\n", ": no text and no tool call, also"),
    ("content-filter", b"".join(sse_events([_chunk(choices=[{"index": 0, "delta": {},
                                                             "finish_reason": "content_filter"}])])) + b"data: [DONE]\n\n",
     ": the endpoint's content filter withheld it (finish reason 'content_filter'), also when asked again. Rephrase"),
]


@pytest.mark.parametrize("body, says", [e[1:] for e in MORE_EMPTIES], ids=[e[0] for e in MORE_EMPTIES])
@pytest.mark.asyncio
async def test_more_empty_answers_are_asked_again_then_end_the_turn_error(tmp_path, body, says):
    with FakeEndpoint([Reply(200, body)] * 3) as endpoint:
        session = session_on(tmp_path, endpoint.base_url)
        outcome = await Turn(session, RecordingSink(), None).run("hello")
        await session.model.aclose()
    assert len(endpoint.requests) == 2 and outcome.stop_reason == "error"
    assert outcome.message.startswith(EMPTY_ANSWER + says), outcome.message


def _events(events: list[dict], named: bool = True) -> str:
    return "".join((f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events)


_CREATED = {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}}
#: Recorded-stream replay lines in other formats: (id, stream file text, what the message says)
EMPTY_STREAMS = [
    ("responses-completed-no-output", _events([_CREATED, {"type": "response.completed", "response": {
        "id": "r", "status": "completed", "output": [], "usage": {"input_tokens": 5, "output_tokens": 0}}}]),
     ": no text and no tool call, also"),  # 'completed' is a normal end: not named as a reason
    ("responses-empty-message-item", _events([_CREATED, {"type": "response.output_item.added", "output_index": 0,
        "item": {"type": "message", "id": "m", "role": "assistant", "content": []}}, {"type": "response.completed",
        "response": {"id": "r", "status": "completed", "output": []}}]), ": no text and no tool call, also"),
    ("responses-incomplete-content-filter", _events([_CREATED, {"type": "response.incomplete", "response": {
        "id": "r", "status": "incomplete", "incomplete_details": {"reason": "content_filter"}, "output": []}}]),
     ": the endpoint's content filter withheld it (finish reason 'content_filter')"),
    ("anthropic-no-content", _events([{"type": "message_start", "message": {"id": "m", "role": "assistant",
        "content": [], "usage": {"input_tokens": 5, "output_tokens": 0}}}, {"type": "message_delta",
        "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 0}}, {"type": "message_stop"}]),
     ": no text and no tool call, also"),
    ("gemini-safety", _events([{"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "SAFETY",
                                                "index": 0}]}], named=False),
     ": the endpoint's content filter withheld it (finish reason 'SAFETY')"),
]


@pytest.mark.parametrize("stream, says", [e[1:] for e in EMPTY_STREAMS], ids=[e[0] for e in EMPTY_STREAMS])
@pytest.mark.asyncio
async def test_empty_recorded_streams_of_other_formats_follow_the_rule(tmp_path, stream, says):
    (tmp_path / "s.sse").write_text(stream)
    script = write_script(tmp_path / "s.jsonl", [{"stream": "s.sse"}, {"stream": "s.sse"}, {"text": "late"}])
    session = open_session(tmp_path, None, Settings.model_validate({"model": f"replay:{script}"}), NoOpenDocuments())
    outcome = await Turn(session, RecordingSink(), None).run("hello")
    assert outcome.stop_reason == "error" and len(session.model.requests) == 2
    assert outcome.message.startswith(EMPTY_ANSWER + says), outcome.message


def test_toolwire_run_advises_on_a_filtered_answer(tmp_path):
    (tmp_path / "ws").mkdir()
    body = MORE_EMPTIES[-1][1]
    with FakeEndpoint([Reply(200, body)] * 3) as endpoint:
        done = subprocess.run(
            [sys.executable, "-m", "toolwire", "run", "--workspace", str(tmp_path / "ws"), "--model", "openai:m",
             "--settings", json.dumps({"baseUrl": endpoint.base_url}), "hello"],
            capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
            env={"OPENAI_API_KEY": "test", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 3, done.stderr
    assert "content filter withheld it" in done.stderr
    assert "what to do: rephrase the prompt, or check the filter settings" in done.stderr


@pytest.mark.asyncio
async def test_a_model_call_whose_arguments_nest_too_deeply_is_sent_back_and_the_turn_goes_on(tmp_path):
    """Not an empty answer, and not a crash: the call ends invalid_json, the model hears it."""
    deep = "[" * 5000 + "]" * 5000
    script = write_script(tmp_path / "s.jsonl", [{"tool_calls": [{"name": "read_file", "arguments": deep}]},
                                                  {"text": "sorry"}])
    session = open_session(tmp_path, None, Settings.model_validate({"model": f"replay:{script}"}), NoOpenDocuments())
    outcome = await Turn(session, RecordingSink(), None).run("hello")
    assert outcome.stop_reason == "end_turn" and len(session.model.requests) == 2
    result = next(m for m in session.model.requests[1].messages if m["role"] == "tool")
    assert "too deeply" in result["content"]
