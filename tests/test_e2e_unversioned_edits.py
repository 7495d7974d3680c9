"""Edits reach the buffers of a client without ``documentChanges`` (Neovim's built-in
client): plain ``WorkspaceEdit.changes`` with the narrowest ranges, checked against the
editor's ``didChange`` (issue 19 §6).

Each test drives a real ``toolwire serve`` over stdio with the test editor of
``editor.py`` declaring ``workspace.applyEdit`` only; it applies plain changes the way
Neovim does (to the buffer as it is, reported in one ``didChange``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

import lsp_text as ref
from conftest import new_session, prompt, write_script
from editor import editor_fixture
from undo_helpers import outcomes, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")

APPLY_ONLY = types.WorkspaceClientCapabilities(apply_edit=True)  # what Neovim 0.10-0.12 declares
plain8 = editor_fixture("plain8", encodings=["utf-8", "utf-16", "utf-32"], workspace=APPLY_ONLY)
plain16 = editor_fixture("plain16", workspace=APPLY_ONLY)

ALLOW = {name: "auto" for name in ("edit_file", "multi_edit", "create_file")}


@pytest.fixture
def editors(plain8, plain16):
    return {"utf-8": plain8, "utf-16": plain16}


def script(tmp_path: Path, *calls: tuple[str, str, dict]) -> Path:
    """One model response per call ``(id, tool, arguments)``, then a closing text."""
    return write_script(tmp_path / "s.jsonl", [
        *({"tool_calls": [{"name": name, "arguments": args, "id": cid}]} for cid, name, args in calls),
        {"text": "ok"},
    ])


async def turn(editor, repo, tmp_path, *calls):
    sid = await new_session(editor, repo, script(tmp_path, *calls), permissions=ALLOW)
    await prompt(editor, sid)
    return sid, {cid: snaps[-1] for cid, snaps in editor.tool_calls(sid).items()}


def sent(editor, uri: str) -> list[tuple[tuple[int, int], tuple[int, int], str]]:
    """The last edit's ranges for ``uri``, as ``((line, char), (line, char), newText)``; it must be
    plain ``changes`` (no ``documentChanges``)."""
    edit = editor.edits[-1].edit
    assert edit.document_changes is None and set(edit.changes or {}) == {uri}, edit
    return [((e.range.start.line, e.range.start.character), (e.range.end.line, e.range.end.character), e.new_text)
            for e in edit.changes[uri]]


def units(text: str, encoding: str) -> int:
    return sum(ref.width(ch, encoding) for ch in text)


def span(line: int, before: str, changed: str, encoding: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """The range of ``changed`` that follows ``before`` on ``line``, in ``encoding`` units
    (counted with the reference model)."""
    start = units(before, encoding)
    return (line, start), (line, start + units(changed, encoding))


# ------------------------------------------------------------------ the edit's form

@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
async def test_edit_file_sends_the_narrowest_plain_change_in_the_negotiated_encoding(encoding, editors, repo, tmp_path):
    editor = editors[encoding]
    assert editor.encoding == encoding
    text = "# café 😀\nx = '😀héllo'  # ñ\n"
    (repo / "p.py").write_text(text)
    uri = editor.open(repo / "p.py", text)
    _, finals = await turn(editor, repo, tmp_path, ("e", "edit_file", {
        "path": "p.py", "old_string": "'😀héllo'", "new_string": "'😀hällo'"}))
    assert finals["e"]["status"] == "done", finals
    assert sent(editor, uri) == [(*span(1, "x = '😀h", "é", encoding), "ä")]
    assert editor.buffers[uri][0] == "# café 😀\nx = '😀hällo'  # ñ\n"
    assert (repo / "p.py").read_text() == text  # the disk is the editor's business
    editor.close(uri)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16"])
async def test_multi_edit_sends_one_narrow_range_per_changed_place_and_nothing_between(encoding, editors, repo, tmp_path):
    editor = editors[encoding]
    text = "ä = 1\nkeep 😀 this\nkeep this too\nö = 2\n"
    (repo / "m.py").write_text(text)
    uri = editor.open(repo / "m.py", text)
    _, finals = await turn(editor, repo, tmp_path, ("m", "multi_edit", {"path": "m.py", "edits": [
        {"old_string": "ä = 1", "new_string": "ä = 10"}, {"old_string": "ö = 2", "new_string": "ö = 20"}]}))
    assert finals["m"]["status"] == "done", finals
    assert sent(editor, uri) == [(*span(0, "ä = 1", "", encoding), "0"), (*span(3, "ö = 2", "", encoding), "0")]
    assert editor.buffers[uri][0] == "ä = 10\nkeep 😀 this\nkeep this too\nö = 20\n"
    editor.close(uri)


async def test_create_file_over_an_open_file_and_two_edits_in_one_turn_reach_the_buffer(plain16, repo, tmp_path):
    editor = plain16
    (repo / "c.py").write_text("old = 1\n")
    uri = editor.open(repo / "c.py", "old = 1\nunsaved = 2\n")
    editor.report_late = True  # like Neovim: the didChange comes after the answer
    try:
        _, finals = await turn(
            editor, repo, tmp_path,
            ("c", "create_file", {"path": "c.py", "content": "new = 1\nunsaved = 2\n# 😀\n", "overwrite": True}),
            ("e1", "edit_file", {"path": "c.py", "old_string": "new = 1", "new_string": "new = 2"}),
            ("e2", "edit_file", {"path": "c.py", "old_string": "new = 2", "new_string": "new = 3"}))
    finally:
        editor.report_late = False
    assert [finals[c]["status"] for c in ("c", "e1", "e2")] == ["done"] * 3, finals
    assert editor.buffers[uri][0] == "new = 3\nunsaved = 2\n# 😀\n"
    assert (repo / "c.py").read_text() == "old = 1\n"
    editor.close(uri)


# ------------------------------------------------------------------ the user typed in between

@pytest.mark.parametrize("late", [True, False], ids=["reported-after-answer", "reported-before-answer"])
async def test_an_edit_that_lands_on_text_the_user_changed_is_stale_naming_the_lines(late, plain16, repo, tmp_path):
    editor = plain16
    text = "a = 1\nb = 2\nc = 3\n"
    (repo / "s.py").write_text(text)
    uri = editor.open(repo / "s.py", text)
    editor.typed_before_edit = ((2, 5), (2, 5), "  # mine")  # the user types on line 3 meanwhile
    editor.report_late = late
    try:
        _, finals = await turn(editor, repo, tmp_path, ("e", "edit_file", {
            "path": "s.py", "old_string": "a = 1", "new_string": "a = 100"}))
    finally:
        editor.report_late = False
        editor.typed_before_edit = None
    final = finals["e"]
    assert final["status"] == "errored" and final["error"]["code"] == "stale", final
    message = final["error"]["message"]
    assert "line 3 of its buffer differs from what the edit meant" in message
    assert "stays in the buffer" in message and "editor's undo removes it" in message
    assert final["result"]["data"] == {"applied": True, "lines": [[3, 3]]}
    assert editor.buffers[uri][0] == "a = 100\nb = 2\nc = 3  # mine\n"  # both: nothing typed is lost
    editor.close(uri)


async def test_an_editor_that_never_reports_the_change_is_trusted_as_for_a_versioned_edit(plain16, repo, tmp_path):
    editor = plain16
    (repo / "q.py").write_text("q = 1\n")
    uri = editor.open(repo / "q.py", "q = 1\n")
    editor.silent_edits = True
    try:
        _, finals = await turn(editor, repo, tmp_path, ("e", "edit_file", {
            "path": "q.py", "old_string": "q = 1", "new_string": "q = 2"}))
    finally:
        editor.silent_edits = False
    assert finals["e"]["status"] == "done", finals  # after the 5 s wait: nothing says otherwise
    assert editor.buffers[uri][0] == "q = 2\n"
    editor.close(uri)


async def test_a_report_that_does_not_fit_the_servers_copy_is_out_of_sync_not_done(plain16, repo, tmp_path):
    editor = plain16
    (repo / "o.py").write_text("o = '😀'\n")
    uri = editor.open(repo / "o.py", "o = '😀'\n")
    editor.typed_before_edit = ((0, 5), (0, 5), "x")
    editor.typed_reported_at = ((0, 6), (0, 6), "x")  # reported inside the emoji's surrogate pair: no place
    try:
        _, finals = await turn(editor, repo, tmp_path, ("e", "edit_file", {
            "path": "o.py", "old_string": "o =", "new_string": "p ="}))
    finally:
        editor.typed_before_edit = None
    final = finals["e"]
    assert final["status"] == "errored" and final["error"]["code"] == "out_of_sync", final
    assert final["error"]["message"].startswith("the edit of o.py was applied, but a change from the editor did not "
                                                "fit the server's copy (")
    assert final["error"]["message"].endswith("); ask the user to close and reopen the file so the server gets its "
                                              "text again, then read it")
    editor.close(uri)


async def test_undo_of_a_plain_buffer_edit_goes_back_through_the_editor(plain8, repo, tmp_path):
    editor = plain8
    (repo / "u.py").write_text("x = 'é'\n")
    uri = editor.open(repo / "u.py", "x = 'é'\ny = 2  # unsaved\n")
    sid, finals = await turn(editor, repo, tmp_path, ("e", "edit_file", {
        "path": "u.py", "old_string": "y = 2", "new_string": "y = 3"}))
    assert finals["e"]["status"] == "done", finals
    done = await undo(editor, sid)
    assert done["status"] == "undone" and outcomes(done) == {"u.py": "restored"}, done
    assert sent(editor, uri) == [((1, 4), (1, 5), "2")]
    assert editor.buffers[uri][0] == "x = 'é'\ny = 2  # unsaved\n"
    assert (repo / "u.py").read_text() == "x = 'é'\n"
    editor.close(uri)


async def test_undo_keeps_a_buffer_the_user_typed_into_while_the_turn_edited_it(plain16, repo, tmp_path):
    editor = plain16
    text = "a = 1\nb = 2\n"
    (repo / "k.py").write_text(text)
    uri = editor.open(repo / "k.py", text)
    editor.typed_before_edit = ((1, 5), (1, 5), "  # mine")
    try:
        sid, finals = await turn(editor, repo, tmp_path, ("e", "edit_file", {
            "path": "k.py", "old_string": "a = 1", "new_string": "a = 9"}))
    finally:
        editor.typed_before_edit = None
    assert finals["e"]["error"]["code"] == "stale", finals
    assert editor.buffers[uri][0] == "a = 9\nb = 2  # mine\n"
    kept = await undo(editor, sid)
    assert outcomes(kept) == {"k.py": "kept"}, kept
    assert "held text the turn did not write (line 2;" in kept["paths"][0]["reason"]
    assert "-b = 2  # mine" in kept["paths"][0]["diff"]
    assert editor.buffers[uri][0] == "a = 9\nb = 2  # mine\n"  # nothing changed
    forced = await undo(editor, sid, force=["k.py"])
    assert outcomes(forced) == {"k.py": "restored"}, forced
    assert editor.buffers[uri][0] == text
    editor.close(uri)


async def test_undo_keeps_such_a_buffer_saved_and_closed_too(plain16, repo, tmp_path):
    editor = plain16
    text = "a = 1\nb = 2\n"
    (repo / "w.py").write_text(text)
    uri = editor.open(repo / "w.py", text)
    editor.typed_before_edit = ((0, 0), (0, 0), "# mine\n")
    try:
        sid, finals = await turn(editor, repo, tmp_path, ("e", "edit_file", {
            "path": "w.py", "old_string": "b = 2", "new_string": "b = 3"}))
    finally:
        editor.typed_before_edit = None
    # the line the user added moved the text: the edit's range landed on the line above its own
    assert editor.buffers[uri][0] == "# mine\na = 3\nb = 2\n"
    assert finals["e"]["error"]["code"] == "stale" and finals["e"]["result"]["data"]["lines"] == [[1, 3]], finals
    assert "lines 1-3 of its buffer differ from" in finals["e"]["error"]["message"]
    (repo / "w.py").write_text(editor.buffers[uri][0])  # :w, then :bd
    editor.close(uri)
    kept = await undo(editor, sid)
    assert outcomes(kept) == {"w.py": "kept"}, kept
    assert "held text the turn did not write (lines 1-3;" in kept["paths"][0]["reason"]
    assert (repo / "w.py").read_text() == "# mine\na = 3\nb = 2\n"
    forced = await undo(editor, sid, force=["w.py"])
    assert outcomes(forced) == {"w.py": "restored"}, forced
    assert (repo / "w.py").read_text() == text
