"""modelExclude over ACP (``toolwire acp``, the SDK's client side): a read of an excluded file
is asked about with ``session/request_permission`` whose content opens with the file and its
pattern; rejected, the file is never fetched from the client (``fs/read_text_file``) and its
text is in no update; allowed, it is read for that call."""

from __future__ import annotations

import json
from pathlib import Path

from test_acp import RecordingClient, open_session, repo, script, start, text  # noqa: F401 (repo: a fixture)

SECRET = "DB_PASSWORD=correct-horse-battery"


def read_env(tmp_path: Path) -> Path:
    return script(tmp_path, [{"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "config/.env"}}]},
                             {"text": "ok"}])


async def test_request_permission_names_the_file_and_a_rejection_fetches_nothing(repo: Path, tmp_path: Path) -> None:
    (repo / "config").mkdir()
    env = repo / "config" / ".env"
    env.write_text(SECRET + "\n")
    client = RecordingClient(answers=["reject"], buffers={str(env): SECRET + " (unsaved)\n"})
    offered: list[list[str]] = []
    answer = client.request_permission

    async def record_options(options, session_id, tool_call, **kwargs):
        offered.append([o.option_id for o in options])
        return await answer(options, session_id, tool_call, **kwargs)

    client.request_permission = record_options  # type: ignore[method-assign]
    async with await start(client, f"replay:{read_env(tmp_path)}") as (conn, _):
        sid = await open_session(conn, repo, fs=True)
        await conn.prompt(session_id=sid, prompt=text("read the env"))
    (asked,) = client.permissions
    assert asked.content[0].content.text == ("Kept from the model (modelExclude): config/.env (pattern '.env'). "
                                             "Allowing shows it to the model for this call only.")
    assert offered == [["allow_once", "reject"]]  # allowed per call only: no "always"
    assert client.final("r1")["raw_output"] == {"canceled": True, "cancelReason": "rejected"}
    assert str(env) not in client.reads  # not even fetched to build the question
    dumped = json.dumps([u.model_dump(mode="json") for u in client.updates])
    assert "correct-horse" not in dumped
    assert not client.invalid, client.invalid


async def test_an_allowed_read_gets_the_client_s_text(repo: Path, tmp_path: Path) -> None:
    (repo / "config").mkdir()
    env = repo / "config" / ".env"
    env.write_text(SECRET + "\n")
    client = RecordingClient(answers=["allow_once"], buffers={str(env): SECRET + " (unsaved)\n"})
    async with await start(client, f"replay:{read_env(tmp_path)}") as (conn, _):
        sid = await open_session(conn, repo, fs=True)
        await conn.prompt(session_id=sid, prompt=text("read the env"))
    assert len(client.permissions) == 1
    final = client.final("r1")
    assert final["status"] == "completed" and final["raw_output"]["data"]["source"] == "editor", final
    assert final["content"][0]["content"]["text"] == SECRET + " (unsaved)\n"
    assert not client.invalid, client.invalid
