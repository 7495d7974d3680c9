"""Editor documents stay byte-exact: ranges in the negotiated position encoding, the
LSP line rule, the URI the editor opened, and the editor's answer (issue 10 §1).

Each test drives a real ``toolwire serve`` over stdio with the test editor of
``editor.py``, which applies the server's edits with the reference model."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from lsprotocol import types

from conftest import new_session, prompt, write_script
from editor import editor_fixture

pytestmark = pytest.mark.asyncio(loop_scope="module")

utf8 = editor_fixture("utf8", encodings=["utf-8", "utf-16"])
utf16 = editor_fixture("utf16")
utf32 = editor_fixture("utf32", encodings=["utf-32"])
no_apply_edit = editor_fixture("no_apply_edit", workspace=types.WorkspaceClientCapabilities())


@pytest.fixture
def editors(utf8, utf16, utf32):
    """The editors of each position encoding by name (one server each, started once per module)."""
    return {"utf8": utf8, "utf16": utf16, "utf32": utf32}


def edit_script(tmp_path: Path, path: str, old: str, new: str, *more: dict) -> Path:
    return write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": path, "old_string": old, "new_string": new},
                         "id": "e"}]},
        *more,
        {"text": "ok"},
    ])


async def run_edit(editor, repo, tmp_path, path, old, new, **settings):
    sid = await new_session(editor, repo, edit_script(tmp_path, path, old, new),
                            permissions={"edit_file": "auto"}, **settings)
    result = await prompt(editor, sid)
    return sid, result, editor.tool_calls(sid)["e"][-1]


# ------------------------------------------------------------------ position encodings

async def test_utf8_is_negotiated_and_the_edit_range_counts_bytes(utf8, repo, tmp_path):
    assert utf8.encoding == "utf-8"
    (repo / "p.py").write_text("print('héllo')")
    uri = utf8.open(repo / "p.py", "print('héllo')")
    _, result, final = await run_edit(utf8, repo, tmp_path, "p.py", "'héllo'", "'hello wörld'")
    assert final["status"] == "done", final
    assert utf8.buffers[uri][0] == "print('hello wörld')"
    assert (repo / "p.py").read_text() == "print('héllo')"  # the disk is the editor's business


HARD = "# café 😀 e\u0301 👩\u200d💻 ok\nx = '😀😀'  # ñ\r\nlast 𐍈 line"


@pytest.mark.parametrize(("old", "new"), [
    ("'😀😀'", "'🎉'"),                       # emoji before and after the change
    ("ñ", "n\u0303 🙂"),                      # combining mark inserted, after an astral character
    ("𐍈 line", "line"),                        # a change at the end of a text with no final newline
    ("# café 😀 e\u0301", "# cafe"),          # the first line
    ("ok\nx", "ok\r\ny"),                       # across a line ending
])
@pytest.mark.parametrize("which", ["utf8", "utf16", "utf32"])
async def test_every_encoding_keeps_astral_and_combining_text_exact(which, old, new, editors, repo, tmp_path):
    editor = editors[which]
    assert editor.encoding == which.replace("utf", "utf-")
    (repo / "h.py").write_bytes(HARD.encode())
    uri = editor.open(repo / "h.py", HARD)
    _, _, final = await run_edit(editor, repo, tmp_path, "h.py", old, new)
    assert final["status"] == "done", final
    text = editor.buffers[uri][0]
    expected = HARD.replace(old, new) if "\n" not in new else HARD.replace(old, new.replace("\r\n", "\n"))
    assert text == expected
    editor.close(uri)


# ------------------------------------------------------------------ the LSP line rule

@pytest.mark.parametrize("odd", ["\f", "\u2028", "\u2029", "\v", "\x1c", "\x1d", "\x1e", "\x85"])
@pytest.mark.parametrize("which", ["utf8", "utf16"])
async def test_a_user_change_after_an_odd_separator_survives_the_agent_edit(which, odd, editors, repo, tmp_path):
    editor = editors[which]
    text = f"import os\n{odd}\ndef f():\n    return 1\n"
    (repo / "m.py").write_text(text)
    uri = editor.open(repo / "m.py", text)
    editor.change(uri, (3, 11), (3, 12), "2")  # the user replaces 1 with 2
    _, _, final = await run_edit(editor, repo, tmp_path, "m.py", "import os", "import sys")
    assert final["status"] == "done", final
    assert editor.buffers[uri][0] == f"import sys\n{odd}\ndef f():\n    return 2\n"
    editor.close(uri)


@pytest.mark.parametrize("text", ["a\r\nb\rc\nd", "one\r\rtwo\n\r\nthree\r\n", "\r\n\r\n", "\u2028\x85\r\n😀"])
async def test_mixed_line_endings_incremental_typing_and_an_edit_at_the_end(utf16, repo, tmp_path, text):
    (repo / "mix.txt").write_text("")
    uri = utf16.open(repo / "mix.txt", text)
    utf16.change(uri, (99, 0), (99, 0), "\rTAIL")  # past the last line: the end of the text
    _, _, final = await run_edit(utf16, repo, tmp_path, "mix.txt", "TAIL", "tail")
    assert final["status"] == "done", final
    assert utf16.buffers[uri][0] == text + "\rtail"
    utf16.close(uri)


@pytest.mark.parametrize("which", ["utf8", "utf16", "utf32"])
async def test_a_whole_buffer_replacement_of_mixed_line_endings_is_exact(which, editors, repo, tmp_path):
    editor = editors[which]
    text = "α\r\nβ\rγ\n\u2028δ\f😀"
    (repo / "w.txt").write_text("on disk\n")
    uri = editor.open(repo / "w.txt", text)
    sid = await new_session(editor, repo, write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "w.txt", "content": "Z", "overwrite": True},
                         "id": "c"}]},
        {"text": "ok"}]), permissions={"create_file": "auto"})
    await prompt(editor, sid)
    assert editor.tool_calls(sid)["c"][-1]["status"] == "done"
    assert editor.buffers[uri][0] == "Z"
    edit = editor.edits[-1].edit.document_changes[0].edits[0]
    assert (edit.range.start.line, edit.range.start.character) == (0, 0)
    assert (edit.range.end.line, edit.range.end.character) == {"utf8": (3, 10), "utf16": (3, 5), "utf32": (3, 4)}[which]
    editor.close(uri)


# ------------------------------------------------------------------ which document is open

async def test_the_edit_goes_to_the_uri_the_editor_opened_through_a_symlink(utf16, repo, tmp_path):
    (repo / "real.py").write_text("value = 1\n")
    os.symlink("real.py", repo / "link.py")
    uri = utf16.open(repo / "link.py", "value = 1\n")
    before = len(utf16.edits)
    _, _, final = await run_edit(utf16, repo, tmp_path, "sub/../real.py", "value = 1", "value = 2")
    assert final["status"] == "done", final
    assert [c.text_document.uri for e in utf16.edits[before:] for c in e.edit.document_changes] == [uri]
    assert utf16.buffers[uri][0] == "value = 2\n" and (repo / "real.py").read_text() == "value = 1\n"
    utf16.close(uri)


async def test_a_uri_spelled_differently_and_a_hard_link_name_the_same_open_document(utf16, repo, tmp_path):
    (repo / "same.py").write_text("a = 1\n")
    os.link(repo / "same.py", repo / "alias.py")
    for uri in (f"file://{repo}/./sub/../s%61me.py", (repo / "alias.py").as_uri()):
        utf16.open(uri, "a = 1\n")
        before = len(utf16.edits)
        _, _, final = await run_edit(utf16, repo, tmp_path, "same.py", "a = 1", "a = 2")
        assert final["status"] == "done", final
        assert [c.text_document.uri for e in utf16.edits[before:] for c in e.edit.document_changes] == [uri]
        assert utf16.buffers[uri][0] == "a = 2\n"
        utf16.close(uri)
    assert (repo / "same.py").read_text() == "a = 1\n"


async def test_no_editor_edit_for_a_file_that_is_not_open(utf16, repo, tmp_path):
    (repo / "open.py").write_text("x = 1\n")
    (repo / "closed.py").write_text("x = 1\n")
    uri = utf16.open(repo / "open.py", "x = 1\n")
    before = len(utf16.edits)
    _, _, final = await run_edit(utf16, repo, tmp_path, "closed.py", "x = 1", "x = 2")
    assert final["status"] == "done" and final["result"]["data"]["source"] == "disk"
    assert utf16.edits[before:] == [] and (repo / "closed.py").read_text() == "x = 2\n"
    assert utf16.buffers[uri][0] == "x = 1\n"
    utf16.close(uri)


async def test_a_file_open_under_two_names_is_refused_and_nothing_is_sent(utf16, repo, tmp_path):
    (repo / "twice.py").write_text("t = 1\n")
    os.symlink("twice.py", repo / "again.py")
    one = utf16.open(repo / "twice.py", "t = 1\n")
    two = utf16.open(repo / "again.py", "t = 1  # unsaved\n")
    before = len(utf16.edits)
    _, _, final = await run_edit(utf16, repo, tmp_path, "twice.py", "t = 1", "t = 2")
    assert final["status"] == "errored" and final["error"]["code"] == "open_twice"
    assert one in final["error"]["message"] and two in final["error"]["message"]
    assert utf16.edits[before:] == [] and (repo / "twice.py").read_text() == "t = 1\n"
    utf16.close(one), utf16.close(two)


async def test_a_change_that_names_no_place_puts_the_buffer_out_of_sync_until_reopened(utf16, repo, tmp_path):
    (repo / "o.py").write_text("s = '😀'\n")
    uri = utf16.open(repo / "o.py", "s = '😀'\n")
    _, version = utf16.buffers[uri]
    utf16.text_document_did_change(types.DidChangeTextDocumentParams(  # inside the surrogate pair
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(0, 6), end=types.Position(0, 6)), text="x")]))
    _, _, final = await run_edit(utf16, repo, tmp_path, "o.py", "s =", "t =")
    assert final["status"] == "errored" and final["error"]["code"] == "out_of_sync"
    assert final["error"]["message"].startswith("o.py is open in the editor, but a change from the editor did not fit")
    assert final["error"]["message"].endswith("; ask the user to close and reopen the file so the server gets its "
                                              "text again, then read it")
    utf16.close(uri)


# ------------------------------------------------------------------ the editor's answer

async def test_a_refused_edit_is_reported_as_refused_with_the_editors_reason(utf16, repo, tmp_path):
    (repo / "b.py").write_bytes(b"keep\n")
    uri = utf16.open(repo / "b.py", "keep\nedit me\n")
    utf16.refuse_edits = "the file is read-only in this editor"
    try:
        _, _, final = await run_edit(utf16, repo, tmp_path, "b.py", "edit me", "edited")
    finally:
        utf16.refuse_edits = None
    assert final["status"] == "errored" and final["error"]["code"] == "editor_refused"
    assert "the file is read-only in this editor" in final["error"]["message"]
    assert "changed since it was read" not in final["error"]["message"]
    assert utf16.buffers[uri] == ("keep\nedit me\n", 1) and (repo / "b.py").read_bytes() == b"keep\n"
    utf16.close(uri)


async def start_held_edit(editor, repo, tmp_path, **settings):
    (repo / "h.py").write_text("held = 1\n")
    uri = editor.open(repo / "h.py", "held = 1\n")
    editor.hold_edits, editor.edit_arrived = asyncio.Event(), asyncio.Event()
    sid = await new_session(editor, repo, edit_script(tmp_path, "h.py", "held = 1", "held = 2"),
                            permissions={"edit_file": "auto"}, **settings)
    turn = asyncio.ensure_future(prompt(editor, sid))
    await asyncio.wait_for(editor.edit_arrived.wait(), 20)
    return sid, uri, turn


async def finish_held(editor, uri, turn):
    result = await asyncio.wait_for(turn, 20)  # the turn ends although the editor never answered
    withdrawn = editor.edits[-1]
    editor.hold_edits.set()
    editor.hold_edits = None
    editor.close(uri)
    return result, withdrawn


async def test_cancelling_the_call_ends_it_while_the_editor_never_answers(utf16, repo, tmp_path):
    sid, uri, turn = await start_held_edit(utf16, repo, tmp_path)
    assert utf16.tool_calls(sid)["e"][-1]["status"] == "calling"
    assert (await utf16.call("toolwire/toolCall/cancel", {"sessionId": sid, "toolCallId": "e"}))["cancelled"]
    result, _ = await finish_held(utf16, uri, turn)
    final = utf16.tool_calls(sid)["e"][-1]
    assert result["stopReason"] == "end_turn"
    assert final["status"] == "canceled" and final["cancelReason"] == "call_cancelled"
    assert utf16.cancelled, "the applyEdit request was not withdrawn with $/cancelRequest"


async def test_cancelling_the_turn_ends_it_while_the_editor_never_answers(utf16, repo, tmp_path):
    sid, uri, turn = await start_held_edit(utf16, repo, tmp_path)
    assert utf16.tool_calls(sid)["e"][-1]["status"] == "calling"
    utf16.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    result, _ = await finish_held(utf16, uri, turn)
    final = utf16.tool_calls(sid)["e"][-1]
    assert result["stopReason"] == "cancelled"
    assert final["status"] == "canceled" and final["cancelReason"] == "turn_cancelled"


async def test_the_tool_timeout_ends_a_call_whose_edit_the_editor_never_answers(utf16, repo, tmp_path):
    sid, uri, turn = await start_held_edit(utf16, repo, tmp_path, toolTimeout=1)
    result, _ = await finish_held(utf16, uri, turn)
    final = utf16.tool_calls(sid)["e"][-1]
    assert result["stopReason"] == "end_turn"
    assert final["status"] == "errored" and final["error"]["code"] == "timeout"
    assert "never answered the edit of h.py" in final["error"]["message"]


async def test_a_client_without_apply_edit_is_told_what_it_lacks(no_apply_edit, repo, tmp_path):
    editor = no_apply_edit
    (repo / "c.py").write_text("c = 1\n")
    uri = editor.open(repo / "c.py", "c = 1  # unsaved\n")
    _, _, final = await run_edit(editor, repo, tmp_path, "c.py", "c = 1", "c = 2")
    assert final["status"] == "errored" and final["error"]["code"] == "editor_unsupported"
    assert "workspace.applyEdit" in final["error"]["message"]
    assert "documentChanges" not in final["error"]["message"]  # plain changes would do
    assert editor.edits == [] and editor.buffers[uri][0] == "c = 1  # unsaved\n"
    assert (repo / "c.py").read_text() == "c = 1\n"


async def test_ignored_files_whose_names_hold_odd_separators_are_not_reported(utf16, repo, tmp_path):
    from conftest import git

    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore logs")
    sid = await new_session(utf16, repo, write_script(tmp_path / "s.jsonl", [{"text": "ok"}]))
    for name in ("a\u2028b.log", "c\x1cd.log", "e\x85f.log"):
        (repo / name).write_text("noise\n")
    (repo / "real.txt").write_text("user\n")
    await utf16.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "workspace_change"
                         and "real.txt" in p["update"]["paths"])
    reported = {p for u in utf16.updates[sid] if u["sessionUpdate"] == "workspace_change" for p in u["paths"]}
    assert reported == {"real.txt"}


async def test_the_next_edit_sees_the_first_even_when_the_editor_reports_it_after_answering(utf16, repo, tmp_path):
    (repo / "late.py").write_text("x = 1\n")
    uri = utf16.open(repo / "late.py", "x = 1\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "late.py", "old_string": "x = 1", "new_string": "x = 2"}, "id": "e1"}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "late.py", "old_string": "x = 2", "new_string": "x = 3"}, "id": "e2"}]},
        {"text": "ok"},
    ])
    sid = await new_session(utf16, repo, script, permissions={"edit_file": "auto"})
    utf16.report_late = True
    try:
        await prompt(utf16, sid)
    finally:
        utf16.report_late = False
    finals = {cid: snaps[-1] for cid, snaps in utf16.tool_calls(sid).items()}
    assert finals["e1"]["status"] == "done" and finals["e2"]["status"] == "done", finals
    assert utf16.buffers[uri][0] == "x = 3\n"
    utf16.close(uri)
