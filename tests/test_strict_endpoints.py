"""Strict endpoints: optional request fields an endpoint refuses, and the settings that
leave them out (protocol.md, "Request parameters"). The openai SDK against a local HTTP
server on 127.0.0.1; every assertion is on the request bodies the server received."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from endpoint import FakeEndpoint, Reply, refusal
from toolwire.agent.events import RecordingSink
from toolwire.agent.opening import open_session
from toolwire.agent.turn import Turn
from toolwire.llm import endpoints
from toolwire.llm.base import ModelError, ModelRequest
from toolwire.llm.openai_model import OpenAIModel
from toolwire.settings import Settings, parse_settings
from toolwire.workspace.documents import NoOpenDocuments
from opening import user_text

STREAM_OPTIONS = "Unrecognized request argument supplied: stream_options"
TEMPERATURE_VALUE = ("Unsupported value: 'temperature' does not support 0 with this model. "
                     "Only the default (1) value is supported.")
TEMPERATURE_PARAM = "Unsupported parameter: 'temperature' is not supported with this model."
HI = [{"role": "user", "content": "hi"}]
LOGGER = "toolwire.llm.openai_model"


def refuse_stream_options(body: dict):
    """An older Ollama / gateway: every request carrying stream_options is refused."""
    return STREAM_OPTIONS if "stream_options" in body else None


def refuse_temperature(message: str, code: str):
    """An OpenAI reasoning model: any temperature field is refused, naming it in ``param``."""
    def check(body: dict):
        if "temperature" in body:
            return refusal(message, param="temperature", code=code)
        return None
    return check


async def collect(model: OpenAIModel, request: ModelRequest) -> list:
    return [frame async for frame in model.stream(request)]


def refused_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and "refused" in r.getMessage()]


@pytest.mark.asyncio
async def test_a_refused_stream_options_is_sent_again_without_it_and_never_again(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with FakeEndpoint([Reply(), Reply(), Reply()], check=refuse_stream_options) as endpoint:
        first = OpenAIModel("gpt-4o", base_url=endpoint.base_url, api_key="k")
        frames = await collect(first, ModelRequest(messages=HI))
        await collect(first, ModelRequest(messages=HI))  # the next turn of the session
        second = OpenAIModel("gpt-4o", base_url=endpoint.base_url, api_key="k")  # another session, same endpoint
        await collect(second, ModelRequest(messages=HI))
        other = OpenAIModel("other-model", base_url=endpoint.base_url, api_key="k")  # another model: not known
        await collect(other, ModelRequest(messages=HI))
        for model in (first, second, other):
            await model.aclose()
    assert frames and frames[0].payload["choices"][0]["delta"] == {"content": "ok"}
    sent = [("stream_options" in body, body["model"]) for body in endpoint.requests]
    assert sent == [(True, "gpt-4o"), (False, "gpt-4o"), (False, "gpt-4o"), (False, "gpt-4o"),
                    (True, "other-model"), (False, "other-model")]
    assert all(body["temperature"] == 0.0 and body["stream"] is True for body in endpoint.requests)
    warnings = refused_warnings(caplog)
    assert len(warnings) == 2  # once per endpoint and model
    assert "stream_options" in warnings[0] and "streamUsage" in warnings[0] and "gpt-4o" in warnings[0]


@pytest.mark.parametrize("message, code", [(TEMPERATURE_VALUE, "unsupported_value"),
                                           (TEMPERATURE_PARAM, "unsupported_parameter")])
@pytest.mark.asyncio
async def test_a_reasoning_model_refusing_temperature_gets_it_left_out(caplog, message, code):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with FakeEndpoint([Reply(), Reply()], check=refuse_temperature(message, code)) as endpoint:
        model = OpenAIModel("o3-mini", base_url=endpoint.base_url, api_key="k")
        await collect(model, ModelRequest(messages=HI))
        await collect(model, ModelRequest(messages=HI))
        await model.aclose()
    assert [body.get("temperature", "absent") for body in endpoint.requests] == [0.0, "absent", "absent"]
    assert all(body["stream_options"] == {"include_usage": True} for body in endpoint.requests)
    [warning] = refused_warnings(caplog)
    assert "temperature" in warning and "o3-mini" in warning


@pytest.mark.asyncio
async def test_both_fields_refused_one_after_the_other_are_both_left_out():
    def strict(body: dict):
        return refuse_temperature(TEMPERATURE_VALUE, "unsupported_value")(body) or refuse_stream_options(body)

    with FakeEndpoint([Reply()], check=strict) as endpoint:
        model = OpenAIModel("o1", base_url=endpoint.base_url, api_key="k")
        await collect(model, ModelRequest(messages=HI))
        await model.aclose()
    assert [sorted(k for k in body if k in ("temperature", "stream_options")) for body in endpoint.requests] == [
        ["stream_options", "temperature"], ["stream_options"], []]


@pytest.mark.asyncio
async def test_a_400_that_names_no_optional_field_is_not_retried():
    with FakeEndpoint([refusal("'messages' must contain the word 'json'", param="messages"), Reply()]) as endpoint:
        model = OpenAIModel("gpt-4o", base_url=endpoint.base_url, api_key="k")
        with pytest.raises(ModelError) as info:
            await collect(model, ModelRequest(messages=HI))
        await model.aclose()
    assert len(endpoint.requests) == 1 and info.value.status == 400 and not info.value.retryable


@pytest.mark.asyncio
async def test_a_field_refused_again_after_it_was_left_out_ends_the_request():
    """An endpoint that keeps naming temperature although it is gone: no loop."""
    with FakeEndpoint([refusal(TEMPERATURE_VALUE, param="temperature")] * 3) as endpoint:
        model = OpenAIModel("o3", base_url=endpoint.base_url, api_key="k")
        with pytest.raises(ModelError, match="HTTP 400"):
            await collect(model, ModelRequest(messages=HI))
        await model.aclose()
    assert [("temperature" in body) for body in endpoint.requests] == [True, False]


@pytest.mark.asyncio
async def test_null_settings_leave_the_fields_out_from_the_first_request():
    with FakeEndpoint([Reply()]) as endpoint:
        model = OpenAIModel("m", base_url=endpoint.base_url, api_key="k")
        await collect(model, ModelRequest(messages=HI, temperature=None, stream_usage=False))
        await model.aclose()
    [body] = endpoint.requests
    assert "temperature" not in body and "stream_options" not in body
    assert body["stream"] is True and body["model"] == "m"


@pytest.mark.parametrize("raw, temperature, stream_usage", [
    ({"temperature": None}, None, True), ({"streamUsage": None}, 0.0, None), ({"streamUsage": False}, 0.0, False),
    ({"temperature": 1, "streamUsage": True}, 1.0, True), ({}, 0.0, True),
])
def test_the_settings_accept_null(raw, temperature, stream_usage):
    settings, problems = parse_settings(raw)
    assert problems == [] and settings.temperature == temperature and settings.stream_usage == stream_usage


def test_a_bad_stream_usage_is_refused():
    _, problems = parse_settings({"streamUsage": "sometimes"})
    assert problems and problems[0].startswith("setting streamUsage")


def openai_session(root: Path, base_url: str, model: str = "gpt-4o", **settings):
    values = Settings.model_validate({"baseUrl": base_url, "apiKey": "k", "modelRetries": 0, **settings})
    return open_session(root, f"openai:{model}", values, NoOpenDocuments())


@pytest.mark.asyncio
async def test_turns_of_two_sessions_on_a_strict_endpoint(tmp_path, caplog):
    """The turn's requests: the refused field is gone from the retry, from the session's
    next turn and from another session's first turn; logged once."""
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with FakeEndpoint([Reply()] * 3, check=refuse_stream_options) as endpoint:
        one = openai_session(tmp_path, endpoint.base_url)
        two = openai_session(tmp_path, endpoint.base_url)
        outcomes = [await Turn(one, RecordingSink(), None).run("first"),
                    await Turn(one, RecordingSink(), None).run("second"),
                    await Turn(two, RecordingSink(), None).run("third")]
        for session in (one, two):
            await session.model.aclose()
    assert [o.stop_reason for o in outcomes] == ["end_turn"] * 3
    assert [("stream_options" in b, user_text(b["messages"][-1]["content"])) for b in endpoint.requests] == [
        (True, "first"), (False, "first"), (False, "second"), (False, "third")]
    assert len(refused_warnings(caplog)) == 1
    assert endpoints.refused(one.model.endpoint_key) == {"stream_options"}


def test_toolwire_run_against_a_reasoning_model_and_with_temperature_null(tmp_path):
    """``toolwire run``: a reasoning model refusing temperature still answers; with
    ``temperature: null`` it is never sent; the server log says it once."""
    (tmp_path / "ws").mkdir()
    log = tmp_path / "server.log"
    check = refuse_temperature(TEMPERATURE_VALUE, "unsupported_value")
    with FakeEndpoint([Reply()], check=check) as endpoint:
        done = run(tmp_path / "ws", endpoint.base_url, {}, "--server-log", str(log))
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout and "stop reason: end_turn" in done.stdout
    assert [("temperature" in b) for b in endpoint.requests] == [True, False]
    assert log.read_text().count("refused temperature") == 1
    with FakeEndpoint([Reply()], check=check) as endpoint:
        done = run(tmp_path / "ws", endpoint.base_url, {"temperature": None, "streamUsage": None})
    assert done.returncode == 0, done.stderr
    [body] = endpoint.requests
    assert "temperature" not in body and "stream_options" not in body


def run(workspace: Path, base_url: str, settings: dict, *flags: str) -> subprocess.CompletedProcess:
    settings = {"baseUrl": base_url, "modelRetries": 0, **settings}
    return subprocess.run([sys.executable, "-m", "toolwire", "run", "--workspace", str(workspace), "--model",
                           "openai:o3-mini", "--settings", json.dumps(settings), *flags, "hello"],
                          capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL,
                          env={"OPENAI_API_KEY": "test", "PATH": "/usr/bin:/bin"})


@pytest.mark.parametrize("message", [
    "registry.ollama.ai/library/llama2:latest does not support tools",
    '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    "Unrecognized request argument supplied: tools",
])
@pytest.mark.asyncio
async def test_a_400_refusing_tools_names_the_tool_calling_setting(message):
    """Tools are not an optional field (the turn needs them), but their refusal says what to do."""
    with FakeEndpoint([Reply(400, json.dumps({"error": message}).encode())]) as endpoint:
        model = OpenAIModel("llama2", base_url=endpoint.base_url, api_key="k")
        with pytest.raises(ModelError) as info:
            await collect(model, ModelRequest(messages=HI, tools=[{"type": "function", "function": {"name": "x"}}]))
        await model.aclose()
    assert len(endpoint.requests) == 1
    assert 'set the toolCalling setting to "text"' in str(info.value)


def _json(value) -> bytes:
    return json.dumps(value).encode()


#: Refusals that name a field outside OpenAI's error.message/error.param (llm/error_bodies.py):
#: (id, reply, the field it refuses)
REFUSALS_ELSEWHERE = [
    ("param-only-generic-message", refusal("Invalid request", param="stream_options"), "stream_options"),
    ("azure-code", Reply(400, _json({"error": {"code": "unsupported_parameter", "param": None, "message":
        "Unsupported parameter: 'stream_options' is not supported with this API version."}})), "stream_options"),
    ("litellm-quoting", refusal("litellm.BadRequestError: OpenAIException - Error code: 400 - {'error': {'message': "
                                f"\"{STREAM_OPTIONS}\", 'type': 'invalid_request_error'}}}}", code="400"),
     "stream_options"),
    ("openrouter-wrapped", Reply(400, _json({"error": {"message": "Provider returned error", "code": 400, "metadata": {
        "provider_name": "Azure", "raw": json.dumps({"error": {"message": STREAM_OPTIONS}})}}})), "stream_options"),
    ("openrouter-wrapped-param", Reply(400, _json({"error": {"message": "Provider returned error", "code": 400,
        "metadata": {"raw": json.dumps({"error": {"message": "Invalid request", "param": "stream_options"}})}}})),
     "stream_options"),
    ("plain-text-body", Reply(400, STREAM_OPTIONS.encode(), {"Content-Type": "text/plain"}), "stream_options"),
    ("dotted-param", refusal("Unknown parameter", param="stream_options.include_usage"), "stream_options"),
    ("dotted-message", refusal("Unknown parameter: 'stream_options.include_usage'."), "stream_options"),
    ("fastapi-422-loc", Reply(422, _json({"detail": [{"type": "extra_forbidden", "loc": ["body", "stream_options"],
                                                     "msg": "Extra inputs are not permitted"}]})), "stream_options"),
    ("body-path-param", refusal("Extra inputs are not permitted", param="body.stream_options"), "stream_options"),
    ("bracket-param", refusal("Invalid", param="stream_options[include_usage]"), "stream_options"),
    ("fastapi-detail-string", Reply(400, _json({"detail": STREAM_OPTIONS})), "stream_options"),
    ("temperature-backticks", refusal("`temperature` is not supported by this model"), "temperature"),
    ("temperature-capitalised", refusal("Temperature is not supported for this model"), "temperature"),
    ("temperature-0.0", refusal("Unsupported value: 'temperature' does not support 0.0 with this model. Only the "
                                "default (1) value is supported.", code="unsupported_value"), "temperature"),
]


@pytest.mark.parametrize("reply, field", [r[1:] for r in REFUSALS_ELSEWHERE], ids=[r[0] for r in REFUSALS_ELSEWHERE])
@pytest.mark.asyncio
async def test_a_refusal_naming_the_field_anywhere_in_its_body_leaves_it_out(reply, field):
    with FakeEndpoint([reply, Reply()]) as endpoint:
        model = OpenAIModel("strict-" + field, base_url=endpoint.base_url, api_key="k")
        frames = await collect(model, ModelRequest(messages=HI))
        await model.aclose()
    assert frames[0].payload["choices"][0]["delta"] == {"content": "ok"}
    assert [sorted(k for k in body if k in ("temperature", "stream_options")) for body in endpoint.requests] == [
        ["stream_options", "temperature"], sorted({"stream_options", "temperature"} - {field})]


@pytest.mark.asyncio
async def test_an_error_body_without_a_message_field_is_shown_to_the_user():
    """A streamed request's SDK message is only 'Error code: 400': the body's detail must be in the turn's error."""
    with FakeEndpoint([Reply(400, _json({"detail": "model 'nope' not found on this server"}))]) as endpoint:
        model = OpenAIModel("nope", base_url=endpoint.base_url, api_key="k")
        with pytest.raises(ModelError) as info:
            await collect(model, ModelRequest(messages=HI))
        await model.aclose()
    assert "HTTP 400" in str(info.value) and "model 'nope' not found on this server" in str(info.value)


@pytest.mark.parametrize("raw, says", [
    ({"temperature": "0.5"}, "setting temperature: Input should be a valid number (got '0.5')"),
    ({"temperature": True}, "setting temperature: Input should be a valid number (got True)"),
    ({"streamUsage": 1}, "setting streamUsage: Input should be a valid boolean (got 1)"),
    ({"streamUsage": "false"}, "setting streamUsage: Input should be a valid boolean (got 'false')"),
    ({"maxModelRequests": 3.0}, "setting maxModelRequests: Input should be a valid integer (got 3.0)"),
])
def test_a_setting_of_the_wrong_json_type_is_refused_not_converted(raw, says):
    """temperature: true was sent as 1.0, streamUsage: "false" turned usage on: never converted."""
    settings, problems = parse_settings({**raw, "contextWindow": 4096})
    assert problems == [says]
    assert settings.context_window == 4096  # the valid entries apply
    assert (settings.temperature, settings.stream_usage, settings.max_model_requests) == (0.0, True, 25)  # defaults
    assert parse_settings({"temperature": 1}) == (Settings(temperature=1.0), [])  # a JSON integer is a number


#: HTTP 200 streams that open with an error refusing a field (a gateway that starts the stream
#: before the provider answers), before any part of an answer: (id, body, the field refused)
REFUSED_IN_STREAM = [
    ("data-error", b"data: " + _json({"error": {"message": STREAM_OPTIONS, "code": 400}}) + b"\n\n", "stream_options"),
    ("after-role-opening", b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
                           b'{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
                           + b"data: " + _json({"error": {"message": "Provider returned error", "metadata": {
                               "raw": json.dumps({"error": {"message": TEMPERATURE_VALUE, "param": "temperature"}})}}})
                           + b"\n\n", "temperature"),
    ("event-error", b"event: error\ndata: " + _json({"message": STREAM_OPTIONS}) + b"\n\n", "stream_options"),
]


@pytest.mark.parametrize("body, field", [r[1:] for r in REFUSED_IN_STREAM], ids=[r[0] for r in REFUSED_IN_STREAM])
@pytest.mark.asyncio
async def test_a_stream_that_opens_with_a_refusal_is_sent_again_without_the_field(tmp_path, body, field, caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    with FakeEndpoint([Reply(200, body), Reply(), Reply()]) as endpoint:
        session = openai_session(tmp_path, endpoint.base_url, model=f"gateway-{field}")
        outcomes = [await Turn(session, RecordingSink(), None).run(prompt) for prompt in ("one", "two")]
        await session.model.aclose()
    assert [(o.stop_reason, o.message) for o in outcomes] == [("end_turn", None)] * 2
    assert [field in b for b in endpoint.requests] == [True, False, False]  # and never again
    [warning] = refused_warnings(caplog)
    assert field in warning and "an error event of an HTTP 200 stream" in warning


@pytest.mark.asyncio
async def test_an_error_event_after_the_answer_began_is_not_taken_for_a_refusal(tmp_path):
    body = (b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hal"},'
            b'"finish_reason":null}]}\n\n' + b"data: " + _json({"error": {"message": STREAM_OPTIONS}}) + b"\n\n")
    with FakeEndpoint([Reply(200, body), Reply()]) as endpoint:
        session = openai_session(tmp_path, endpoint.base_url, model="mid-stream")
        outcome = await Turn(session, RecordingSink(), None).run("one")
        await session.model.aclose()
    assert len(endpoint.requests) == 1 and outcome.stop_reason == "error" and STREAM_OPTIONS in outcome.message


@pytest.mark.asyncio
async def test_a_wrapped_provider_error_is_shown_with_the_providers_words_once():
    body = _json({"error": {"message": "Provider returned error", "code": 400, "metadata": {
        "raw": json.dumps({"error": {"message": "messages: at least one message is required"}})}}})
    with FakeEndpoint([Reply(400, body)]) as endpoint:
        model = OpenAIModel("wrapped", base_url=endpoint.base_url, api_key="k")
        with pytest.raises(ModelError) as info:
            await collect(model, ModelRequest(messages=HI))
        await model.aclose()
    assert str(info.value).endswith("answered HTTP 400: Error code: 400 - Provider returned error - messages: at least "
                                    "one message is required"), str(info.value)
