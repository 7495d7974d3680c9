"""``toolwire/session/setModel`` over stdio against the real server (issue 26, "the panel header
shows the active model and switches it"): the next turn of the session goes to the new model at
the local endpoint, with the session's ``baseUrl`` and key; the saved session records it and a
second server process loads it on that model; an unusable spec is -32602 with the factory's words
(as ``toolwire/session/new`` gives them, secrets redacted) and changes nothing; a running turn is
-31001."""

from __future__ import annotations

import asyncio

import pytest
from pygls.exceptions import JsonRpcException

from conftest import make_client, prompt, server_fixture
from endpoint import FakeEndpoint, Stall, chat_stream
from toolwire.lsp.protocol import SessionSetModelResult

pytestmark = pytest.mark.asyncio(loop_scope="module")

# a second server process sharing the state folder: what a restart of the editor's server sees
later = server_fixture("later", make_client)

KEY = "sk-setmodel-test-key-0123456789"


async def open_on(client, repo, endpoint, model="openai:model-a"):
    new = await client.call("toolwire/session/new", {"cwd": str(repo), "model": model,
                                                      "settings": {"baseUrl": endpoint.base_url, "apiKey": KEY}})
    return new["sessionId"]


async def test_the_next_turn_uses_the_new_model_and_a_later_server_loads_it(client, later, repo):
    with FakeEndpoint() as endpoint:
        sid = await open_on(client, repo, endpoint)
        await prompt(client, sid, "first")
        answer = await client.call("toolwire/session/setModel", {"sessionId": sid, "model": "openai:model-b"})
        SessionSetModelResult.model_validate(answer)
        assert answer == {"model": "openai:model-b"}
        assert (await client.call("toolwire/models/list", {"sessionId": sid}))["active"] == "openai:model-b"
        assert (await client.call("toolwire/session/snapshot", {"sessionId": sid}))["model"] == "openai:model-b"
        await prompt(client, sid, "second")
        assert [r["model"] for r in endpoint.requests] == ["model-a", "model-b"]
        assert endpoint.authorizations == [f"Bearer {KEY}"] * 2  # the session's key and baseUrl, kept

        # saved with the change: another server process opens it on model-b
        await client.call("toolwire/session/close", {"sessionId": sid})
        loaded = await later.call("toolwire/session/load", {"sessionId": sid, "cwd": str(repo)})
        assert loaded["model"] == "openai:model-b"
        await prompt(later, sid, "third")
        assert endpoint.requests[-1]["model"] == "model-b"
        assert [m["content"] for m in endpoint.requests[-1]["messages"] if m["role"] == "user"][-1].endswith("third")
        await later.call("toolwire/session/close", {"sessionId": sid})

        # and the first server too, from the file the later one saved
        again = await client.call("toolwire/session/load", {"sessionId": sid, "cwd": str(repo)})
        assert again["model"] == "openai:model-b"


async def test_a_session_before_its_first_turn_switches_too(client, repo):
    with FakeEndpoint() as endpoint:
        sid = await open_on(client, repo, endpoint)
        assert await client.call("toolwire/session/setModel", {"sessionId": sid, "model": "openai:model-c"}) == \
            {"model": "openai:model-c"}
        await prompt(client, sid)
        assert [r["model"] for r in endpoint.requests] == ["model-c"]


async def test_an_unusable_spec_is_invalid_params_with_the_factorys_words(client, repo, tmp_path):
    with FakeEndpoint() as endpoint:
        sid = await open_on(client, repo, endpoint)
        for spec, shown in (("nope:x", "nope:x"), (f"bogus:{KEY}", "bogus:***"),
                            (f"replay:{tmp_path / 'missing.jsonl'}", "missing.jsonl")):
            with pytest.raises(JsonRpcException) as refused:
                await client.call("toolwire/session/setModel", {"sessionId": sid, "model": spec})
            assert refused.value.code == -32602
            message = refused.value.message
            assert message.startswith("toolwire/session/setModel: invalid params: model: "), message
            assert shown in message and KEY not in message
            with pytest.raises(JsonRpcException) as as_new:  # the same words as session/new's
                await client.call("toolwire/session/new", {"cwd": str(repo), "model": spec,
                                                            "settings": {"apiKey": KEY}})
            assert as_new.value.message.split(": invalid params: ", 1)[1] == message.split(": invalid params: ", 1)[1]
        with pytest.raises(JsonRpcException) as empty:
            await client.call("toolwire/session/setModel", {"sessionId": sid, "model": ""})
        assert empty.value.code == -32602 and "model" in empty.value.message
        with pytest.raises(JsonRpcException) as unknown:
            await client.call("toolwire/session/setModel", {"sessionId": "nope", "model": "openai:model-b"})
        assert unknown.value.code == -31002
        await prompt(client, sid)  # nothing changed
        assert [r["model"] for r in endpoint.requests] == ["model-a"]


async def test_refused_while_a_turn_runs(client, repo):
    events = chat_stream({"text": "slow answer"})
    stall = Stall(events[:1], tail=events[1:])
    with FakeEndpoint([stall]) as endpoint:
        sid = await open_on(client, repo, endpoint)
        turn = asyncio.ensure_future(prompt(client, sid, "go"))
        await asyncio.get_running_loop().run_in_executor(None, stall.sent.wait)
        with pytest.raises(JsonRpcException) as running:
            await client.call("toolwire/session/setModel", {"sessionId": sid, "model": "openai:model-b"})
        assert running.value.code == -31001
        assert "turn is running" in running.value.message
        stall.release()
        assert (await turn)["stopReason"] == "end_turn"
        await prompt(client, sid)
        assert [r["model"] for r in endpoint.requests] == ["model-a", "model-a"]
        assert await client.call("toolwire/session/setModel", {"sessionId": sid, "model": "openai:model-b"}) == \
            {"model": "openai:model-b"}
