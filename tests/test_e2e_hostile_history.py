"""Hostile and odd input to the history wire over stdio against two real servers (two editor
windows sharing the state folder): ``toolwire/session/delete`` of a session open in another folder,
in another server, of an unknown or path-like id, with a relative ``cwd``; ``toolwire/session/load``
with the same. Every refusal is a JSON-RPC error naming the field, and the servers keep running."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException

from conftest import make_client, new_session, prompt, server_fixture, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")

other = server_fixture("other", make_client)


async def listed(client, root) -> list[str]:
    return [s["sessionId"] for s in (await client.call("toolwire/session/list", {"cwd": str(root)}))["sessions"]]


async def test_delete_naming_another_folder_leaves_the_open_session(client, repo, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sid = await new_session(client, repo, write_script(tmp_path / "s.jsonl", [{"text": "One."}, {"text": "Two."}]))
    await prompt(client, sid, "keep me")
    assert await client.call("toolwire/session/delete", {"sessionId": sid, "cwd": str(elsewhere)}) == {"deleted": False}
    assert await client.call("toolwire/session/delete", {"sessionId": sid, "cwd": "/nonexistent"}) == {"deleted": False}
    assert sid in await listed(client, repo)
    assert (await prompt(client, sid, "still here"))["stopReason"] == "end_turn"  # still open
    assert await client.call("toolwire/session/delete", {"sessionId": sid, "cwd": str(repo)}) == {"deleted": True}


@pytest.mark.parametrize("params", [
    {"sessionId": "no-such-session"},
    {"sessionId": "../../etc/passwd"},
    {"sessionId": "x/../y", "cwd": "/"},
    {"sessionId": "\u202eevil"},
    {"sessionId": "x" * 20000},
])
async def test_delete_of_an_unknown_or_path_like_id_deletes_nothing(client, params):
    assert await client.call("toolwire/session/delete", params) == {"deleted": False}
    with pytest.raises(JsonRpcException) as unknown:
        await client.call("toolwire/session/load", params)
    assert unknown.value.code == -31002 and len(unknown.value.message) <= 1000


@pytest.mark.parametrize("cwd", ["..", ".", "relative/dir", "a\x00b"])
async def test_a_relative_cwd_is_refused_naming_it(client, cwd):
    for method in ("toolwire/session/delete", "toolwire/session/load"):
        with pytest.raises(JsonRpcException) as bad:
            await client.call(method, {"sessionId": "s", "cwd": cwd})
        assert bad.value.code == -32602 and f"{method}: invalid params: cwd" in bad.value.message, bad.value.message


async def test_deleting_a_session_open_in_another_server(client, other, repo, tmp_path):
    """Another window's open session: its saved file goes (it leaves that window's history); the window
    that has it open keeps it, and its next turn saves it again."""
    sid = await new_session(client, repo, write_script(tmp_path / "s.jsonl", [{"text": "One."}, {"text": "Two."}]))
    await prompt(client, sid, "open in the first window")
    assert sid in await listed(other, repo)
    assert await other.call("toolwire/session/delete", {"sessionId": sid}) == {"deleted": True}
    assert sid not in await listed(other, repo)
    assert await other.call("toolwire/session/delete", {"sessionId": sid}) == {"deleted": False}
    assert (await prompt(client, sid, "go on"))["stopReason"] == "end_turn"
    assert sid in await listed(other, repo)  # saved again by the window that has it open
    assert (await client.call("toolwire/session/snapshot", {"sessionId": sid}))["sessionId"] == sid
