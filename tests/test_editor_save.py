"""An editor that saves a clean buffer after Toolwire's edit (protocol.md, "Saving after an
editor edit"): that save is Toolwire's own write, never reported as a change made outside
Toolwire; a buffer with the user's unsaved text is not saved by the editor, and when the
user saves it later, that save is the user's change and is reported."""

from __future__ import annotations

import pytest

from conftest import new_session, prompt, write_script
from editor import editor_fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")

editor = editor_fixture("editor")


def _reported(editor, sid: str) -> set[str]:
    return {p for u in editor.updates[sid] if u["sessionUpdate"] == "workspace_change" for p in u["paths"]}


async def _edit_then_save(editor, repo, tmp_path, buffer: str) -> tuple[str, str]:
    """Opens hello.txt with ``buffer``, lets a turn edit it, then saves the buffer to disk
    (as the editor or the user would) and makes one external change as a marker."""
    uri = editor.open(repo / "hello.txt", buffer)
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "hello.txt", "old_string": "hello", "new_string": "hi"},
                         "id": "e"}]},
        {"text": "ok"},
    ])
    sid = await new_session(editor, repo, script, permissions={"edit_file": "auto"})
    await prompt(editor, sid)
    assert editor.tool_calls(sid)["e"][-1]["status"] == "done"
    (repo / "hello.txt").write_text(editor.buffers[uri][0])  # the save
    (repo / "marker.txt").write_text("someone else\n")
    await editor.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "workspace_change"
                          and "marker.txt" in p["update"]["paths"])
    return sid, uri


async def test_the_save_of_a_clean_buffer_after_our_edit_is_not_reported(editor, repo, tmp_path):
    sid, uri = await _edit_then_save(editor, repo, tmp_path, (repo / "hello.txt").read_text())
    assert editor.buffers[uri][0] == "hi\n"
    assert _reported(editor, sid) == {"marker.txt"}


async def test_the_users_save_of_a_buffer_that_had_unsaved_text_is_reported(editor, repo, tmp_path):
    sid, uri = await _edit_then_save(editor, repo, tmp_path, "hello\nthe user's unsaved line\n")
    assert editor.buffers[uri][0] == "hi\nthe user's unsaved line\n"
    assert _reported(editor, sid) == {"hello.txt", "marker.txt"}
