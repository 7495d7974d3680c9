"""Issue 26, history and a first run that works, over stdio against the real server: saved
sessions listed (``updatedAt``), loaded without ``cwd``, deleted; ``toolwire/models/list`` from a
local endpoint's ``GET /models`` through the openai SDK (cached, with fallbacks); no API key →
``errorCode: "no_api_key"`` (nothing sent to OpenAI, no placeholder key anywhere); the offline
demo's first answer and its ``demo_finished`` end."""

from __future__ import annotations

import asyncio
import os

import pytest
from pygls.exceptions import JsonRpcException

from conftest import new_session, prompt, write_script
from endpoint import FakeEndpoint, Reply, error_body
from toolwire.lsp.protocol import ModelsListResult, PromptResult, SessionListResult

pytestmark = pytest.mark.asyncio(loop_scope="module")

# the server of this module is started with no key and OpenAI's default endpoint
for _name in ("OPENAI_API_KEY", "TOOLWIRE_API_KEY", "OPENAI_BASE_URL"):
    os.environ.pop(_name, None)


def turn_end(client, sid):
    return [u for u in client.updates[sid] if u["sessionUpdate"] == "turn" and u["state"] == "ended"][-1]


async def test_list_load_without_cwd_and_delete(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [{"text": "One."}, {"text": "Two."}])
    sid = await new_session(client, repo, script)
    await prompt(client, sid, "First question")
    await client.call("toolwire/session/close", {"sessionId": sid})
    listed = await client.call("toolwire/session/list", {"cwd": str(repo)})
    SessionListResult.model_validate(listed)
    (saved,) = listed["sessions"]
    assert saved["updatedAt"] == saved["updated"] and saved["title"] == "First question" and saved["turns"] == 1

    with pytest.raises(JsonRpcException) as unknown:  # not open, and not in the server's (empty) workspace folders
        await client.call("toolwire/session/load", {"sessionId": sid})
    assert unknown.value.code == -31002
    await client.call("toolwire/session/load", {"sessionId": sid, "cwd": str(repo)})
    loaded = await client.call("toolwire/session/load", {"sessionId": sid})  # the open one
    assert loaded["sessionId"] == sid

    assert await client.call("toolwire/session/delete", {"sessionId": sid}) == {"deleted": True}
    assert (await client.call("toolwire/session/list", {"cwd": str(repo)}))["sessions"] == []
    assert await client.call("toolwire/session/delete", {"sessionId": sid, "cwd": str(repo)}) == {"deleted": False}
    with pytest.raises(JsonRpcException) as gone:
        await client.call("toolwire/session/snapshot", {"sessionId": sid})
    assert gone.value.code == -31002


async def test_delete_refuses_a_session_running_a_turn(client, repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [{"text": "slow answer " * 20, "chunk_size": 4, "delay": 1}])
    sid = await new_session(client, repo, script)
    started = asyncio.ensure_future(client.wait_for(
        lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "turn" and p["update"]["state"] == "started"))
    turn = asyncio.ensure_future(prompt(client, sid, "go"))
    await started
    with pytest.raises(JsonRpcException) as running:
        await client.call("toolwire/session/delete", {"sessionId": sid})
    assert running.value.code == -31001
    client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    await turn
    assert await client.call("toolwire/session/delete", {"sessionId": sid}) == {"deleted": True}


async def test_models_list_from_the_endpoint_cached_and_the_fallbacks(client, repo):
    with FakeEndpoint() as endpoint:
        endpoint.models = ["gpt-b", "gpt-a"]
        new = await client.call("toolwire/session/new", {"cwd": str(repo), "model": "openai:gpt-a",
                                                          "settings": {"baseUrl": endpoint.base_url, "apiKey": "sk-test-models-1"}})
        sid = new["sessionId"]
        listed = await client.call("toolwire/models/list", {"sessionId": sid})
        ModelsListResult.model_validate(listed)
        assert listed == {"active": "openai:gpt-a", "models": [
            {"spec": "openai:gpt-a", "name": "gpt-a", "source": "endpoint"},
            {"spec": "openai:gpt-b", "name": "gpt-b", "source": "endpoint"},
            {"spec": "replay", "name": "Offline demo", "source": "builtin"}]}
        assert endpoint.model_gets == ["Bearer sk-test-models-1"]
        assert await client.call("toolwire/models/list", {"sessionId": sid}) == listed
        assert len(endpoint.model_gets) == 1  # kept for the server's life

        endpoint.models = None  # a 404: the configured ones
        new = await client.call("toolwire/session/new", {"cwd": str(repo), "model": "openai:mine",
                                                          "settings": {"baseUrl": endpoint.base_url}})
        listed = await client.call("toolwire/models/list", {"sessionId": new["sessionId"]})
        assert listed["models"] == [{"spec": "openai:mine", "name": "mine", "source": "configured"},
                                    {"spec": "replay", "name": "Offline demo", "source": "builtin"}]
        assert endpoint.model_gets[-1] == ""  # no key: no Authorization at all, never a placeholder
    # the server's settings, no session: the default replay, nothing asked of OpenAI without a key
    assert await client.call("toolwire/models/list", {}) == {
        "active": "replay", "models": [{"spec": "replay", "name": "Offline demo", "source": "builtin"}]}


async def test_no_key_for_openai_ends_with_no_api_key_and_sends_nothing(client, repo):
    new = await client.call("toolwire/session/new", {"cwd": str(repo), "model": "openai:gpt-4o-mini"})
    sid = new["sessionId"]
    result = await prompt(client, sid, "hello")
    PromptResult.model_validate(result)
    assert result["stopReason"] == "error" and result["errorCode"] == "no_api_key"
    assert "no API key" in result["message"] and "api.openai.com" in result["message"]
    end = turn_end(client, sid)
    assert end["stopReason"] == "error" and end["errorCode"] == "no_api_key"


async def test_an_endpoint_answering_401_is_no_api_key(client, repo):
    with FakeEndpoint([Reply(401, error_body("Incorrect API key provided"))]) as endpoint:
        new = await client.call("toolwire/session/new", {"cwd": str(repo), "model": "openai:m",
                                                          "settings": {"baseUrl": endpoint.base_url}})
        result = await prompt(client, new["sessionId"], "hello")
        assert endpoint.authorizations == [""]  # no key: none sent
    assert result["stopReason"] == "error" and result["errorCode"] == "no_api_key" and "HTTP 401" in result["message"]
    assert turn_end(client, new["sessionId"])["errorCode"] == "no_api_key"


async def test_the_offline_demo_says_what_it_is_then_finishes(client, repo):
    new = await client.call("toolwire/session/new", {"cwd": str(repo), "model": "replay"})
    sid = new["sessionId"]

    def text_since(count):
        return "".join(u["content"]["text"] for u in client.updates[sid][count:]
                       if u["sessionUpdate"] == "agent_message_chunk")

    first = await prompt(client, sid, "hi")
    assert first["stopReason"] == "end_turn" and "notice" not in first
    assert "offline demo" in text_since(0)
    seen = len(client.updates[sid])
    second = await prompt(client, sid, "and now?")
    assert second == {**second, "stopReason": "end_turn", "notice": "demo_finished"}
    assert turn_end(client, sid)["notice"] == "demo_finished"
    text = text_since(seen)
    assert "offline demo" in text and "choose a real model" in text and "no more responses" not in text


async def test_toolwire_run_names_the_variables_for_no_api_key(repo):
    import json
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "TOOLWIRE_API_KEY", "OPENAI_BASE_URL")}
    done = await asyncio.to_thread(subprocess.run, [sys.executable, "-m", "toolwire", "run", "--workspace", str(repo), "--model",
                           "openai:gpt-4o-mini", "--json", "hello"], capture_output=True, text=True, timeout=90,
                          stdin=subprocess.DEVNULL, env=env)
    assert done.returncode == 3, done.stderr
    final = json.loads(done.stdout.splitlines()[-1])
    assert final["stopReason"] == "error" and final["errorCode"] == "no_api_key"
    assert "TOOLWIRE_API_KEY" in done.stderr and "OPENAI_API_KEY" in done.stderr


async def test_acp_words_no_api_key_and_offers_the_endpoints_models(repo):
    from acp import RequestError

    from test_acp import RecordingClient, initialize, start, text

    client = RecordingClient()
    with FakeEndpoint([Reply(401, error_body("Incorrect API key provided"))]) as endpoint:
        endpoint.models = ["m1", "m2"]
        async with await start(client, "openai:m1", settings={"baseUrl": endpoint.base_url}) as (conn, _):
            await initialize(conn)
            session = await conn.new_session(cwd=str(repo), mcp_servers=[])
            sid = session.session_id

            def model_values(config):
                option = next(o for o in config if o.id == "model")
                return [(c.value, c.name) for c in option.options]

            await client.wait_for(lambda: any(u.session_update == "config_option_update" for u in client.updates))
            told = [u for u in client.updates if u.session_update == "config_option_update"][-1]
            assert model_values(told.config_options) == [("openai:m1", "m1"), ("openai:m2", "m2"),
                                                         ("replay", "Offline demo")]
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=sid, prompt=text("hello"))
            assert failed.value.data["errorCode"] == "no_api_key"
            assert "OPENAI_API_KEY" in failed.value.data["message"]
