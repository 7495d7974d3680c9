"""A turn's ``errorCode`` and ``notice`` in ``toolwire/session/snapshot``'s ``turns``, over stdio against
the real server: a turn that ended ``no_api_key`` and the offline demo's ``demo_finished`` turn carry
them as their ``ended`` update did, in the open session and after ``toolwire/session/load`` in a second
server process sharing the state folder (``TOOLWIRE_STATE_DIR``), so a reopened panel words them again."""

from __future__ import annotations

import os

import pytest

from conftest import make_client, prompt, server_fixture
from toolwire.lsp.messages import SnapshotResult

pytestmark = pytest.mark.asyncio(loop_scope="module")

# the servers of this module are started with no key and OpenAI's default endpoint
for _name in ("OPENAI_API_KEY", "TOOLWIRE_API_KEY", "OPENAI_BASE_URL"):
    os.environ.pop(_name, None)

# a second server process sharing the state folder: what a restart of the editor's server sees
later = server_fixture("later", make_client)


async def turns_of(client, sid):
    snapshot = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    SnapshotResult.model_validate(snapshot)
    return snapshot["turns"]


async def test_no_api_key_is_in_the_snapshot_and_after_a_load_elsewhere(client, later, repo):
    sid = (await client.call("toolwire/session/new", {"cwd": str(repo), "model": "openai:gpt-4o-mini"}))["sessionId"]
    assert (await prompt(client, sid, "hello"))["errorCode"] == "no_api_key"
    (turn,) = await turns_of(client, sid)
    assert turn["stopReason"] == "error" and turn["errorCode"] == "no_api_key" and "notice" not in turn
    assert "no API key" in turn["message"]

    await client.call("toolwire/session/close", {"sessionId": sid})
    await later.call("toolwire/session/load", {"sessionId": sid, "cwd": str(repo)})
    (reopened,) = await turns_of(later, sid)
    assert reopened["turnId"] == turn["turnId"] and reopened["stopReason"] == "error"
    assert reopened["errorCode"] == "no_api_key" and "notice" not in reopened
    await later.call("toolwire/session/close", {"sessionId": sid})


async def test_demo_finished_is_in_the_snapshot_and_after_a_load_elsewhere(client, later, repo):
    sid = (await client.call("toolwire/session/new", {"cwd": str(repo), "model": "replay"}))["sessionId"]
    await prompt(client, sid, "hi")
    assert (await prompt(client, sid, "and now?"))["notice"] == "demo_finished"
    first, second = await turns_of(client, sid)
    assert "notice" not in first and "errorCode" not in first
    assert second["stopReason"] == "end_turn" and second["notice"] == "demo_finished" and "errorCode" not in second

    await client.call("toolwire/session/close", {"sessionId": sid})
    await later.call("toolwire/session/load", {"sessionId": sid, "cwd": str(repo)})
    turns = await turns_of(later, sid)
    assert [t["turnId"] for t in turns] == [first["turnId"], second["turnId"]]
    assert [t["stopReason"] for t in turns] == ["end_turn", "end_turn"]
    assert "notice" not in turns[0] and turns[1]["notice"] == "demo_finished"
    await later.call("toolwire/session/close", {"sessionId": sid})
