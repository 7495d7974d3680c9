"""Mode as an ACP config option (protocol.md, "Agent Client Protocol front-end"): ``configOptions``
holds a ``mode`` selector (``category: "mode"``) beside the model's; choosing a mode there is
``session/set_mode``: both send ``current_mode_update`` then ``config_option_update`` and apply
from the next call. Real ``toolwire acp`` over stdio, the SDK's client side, every message validated."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp import RequestError

from test_acp import RecordingClient, initialize, script, start, text

MODES = ["ask", "accept_edits", "read_only"]


def options(config: list) -> dict[str, dict]:
    return {option.id: option.model_dump(by_alias=True, exclude_none=True) for option in config}


async def test_mode_is_a_config_option_beside_the_model(repo: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [
        {"tool_calls": [{"id": "e", "name": "edit_file",
                         "arguments": {"path": "hello.txt", "old_string": "hello", "new_string": "bye"}}]},
        {"text": "Tried."}])
    client = RecordingClient()
    async with await start(client, f"replay:{model}") as (conn, _):
        await initialize(conn)
        session = await conn.new_session(cwd=str(repo), mcp_servers=[])
        sid = session.session_id
        await client.wait_for(lambda: any(u.session_update == "available_commands_update" for u in client.updates))
        opened = options(session.config_options)
        assert list(opened) == ["mode", "model"]
        mode = opened["mode"]
        assert (mode["type"], mode["category"], mode["currentValue"]) == ("select", "mode", "ask")
        assert [o["value"] for o in mode["options"]] == MODES
        assert [o["name"] for o in mode["options"]] == [m.name for m in session.modes.available_modes]
        assert opened["model"]["category"] == "model"

        before = len(client.updates)
        answer = await conn.set_config_option(config_id="mode", session_id=sid, value="read_only")
        assert options(answer.config_options)["mode"]["currentValue"] == "read_only"
        told = client.updates[before:]
        assert [u.session_update for u in told] == ["current_mode_update", "config_option_update"]
        assert told[0].current_mode_id == "read_only"
        assert options(told[1].config_options) == options(answer.config_options)

        await conn.prompt(session_id=sid, prompt=text("change hello.txt"))  # the mode applies
        assert client.final("e")["raw_output"] == {"canceled": True, "cancelReason": "policy_denied"}

        before = len(client.updates)
        await conn.set_session_mode(session_id=sid, mode_id="accept_edits")  # the same two updates
        told = client.updates[before:]
        assert [u.session_update for u in told] == ["current_mode_update", "config_option_update"]
        assert options(told[1].config_options)["mode"]["currentValue"] == "accept_edits"

        with pytest.raises(RequestError) as info:
            await conn.set_config_option(config_id="mode", session_id=sid, value="yolo")
        assert info.value.code == -32602
        loaded = await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
        assert options(loaded.config_options)["mode"]["currentValue"] == "accept_edits"
        assert loaded.modes.current_mode_id == "accept_edits"
    assert (repo / "hello.txt").read_text() == "hello\n"
    assert not client.invalid, client.invalid
