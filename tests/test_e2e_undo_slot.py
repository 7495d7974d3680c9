"""An undo or redo holds the session's turn slot over LSP (issue 20: the session host's rule).

While ``toolwire/session/undoTurn`` puts an open buffer back (the editor holds the
``workspace/applyEdit`` answer), a prompt, another undo, a redo and
``toolwire.runAction`` in that session are refused with TurnInProgress carrying the undo's message; once it is
done, they run. Real ``toolwire serve`` over stdio, real git and files.
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from conftest import server_fixture
from undo_helpers import EDITOR_CAPABILITIES, calls_script, make_undo_editor, redo, run_turn, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")

ed = server_fixture("ed", make_undo_editor, EDITOR_CAPABILITIES)

UNDO_RUNNING = "an undo or redo is running in this session; wait for it to end"
TURN_IN_PROGRESS = -31001


async def refused(call) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(call, 30)
    return info.value


async def test_a_prompt_undo_redo_or_action_is_refused_while_an_undo_runs(ed, repo, tmp_path):
    (repo / "a.py").write_bytes(b"x = 1\n")
    uri = ed.open(repo / "a.py", "x = 1\ny = 2  # unsaved\n", version=1)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.py", "old_string": "x = 1", "new_string": "x = 2"})])
    lines = [line for line in script.read_text().splitlines()] + ['{"text": "second turn"}']
    script.write_text("\n".join(lines) + "\n")
    sid, _ = await run_turn(ed, repo, script)
    assert ed.buffers[uri][0] == "x = 2\ny = 2  # unsaved\n"
    ed.edit_arrived.clear()
    ed.hold_edits = asyncio.Event()
    try:
        undoing = asyncio.ensure_future(undo(ed, sid))
        await asyncio.wait_for(ed.edit_arrived.wait(), 30)  # the undo waits for the editor now
        turn = await refused(ed.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "go on"}))
        assert turn.code == TURN_IN_PROGRESS and UNDO_RUNNING in str(turn)
        again = await refused(undo(ed, sid))
        assert again.code == TURN_IN_PROGRESS and f"toolwire/session/undoTurn: {UNDO_RUNNING}" in str(again)
        redoing = await refused(redo(ed, sid))
        assert redoing.code == TURN_IN_PROGRESS and f"toolwire/session/redoTurn: {UNDO_RUNNING}" in str(redoing)
        action = await refused(ed.workspace_execute_command_async(types.ExecuteCommandParams(
            command="toolwire.runAction", arguments=[{
                "uri": uri, "kind": "explain", "sessionId": sid,
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}}])))
        assert action.code == TURN_IN_PROGRESS and UNDO_RUNNING in str(action)
        snapshot = await ed.call("toolwire/session/snapshot", {"sessionId": sid})
        assert snapshot["running"] is False and snapshot["turnId"] == "t1"  # an undo is not a turn
        ed.hold_edits.set()
        done = await asyncio.wait_for(undoing, 30)
    finally:
        ed.hold_edits.set()
        ed.hold_edits = None
    assert done["status"] == "undone" and ed.buffers[uri][0] == "x = 1\ny = 2  # unsaved\n"
    answer = await asyncio.wait_for(ed.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "go on"}), 30)
    assert answer["stopReason"] == "end_turn"  # the slot is free again
    ed.close(uri)
