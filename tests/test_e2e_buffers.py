"""Open buffers win: tools read the editor's text and edit it through ``workspace/applyEdit``."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from conftest import ToolwireTestClient, make_client, new_session, prompt, server_fixture, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")


class EditorClient(ToolwireTestClient):
    """Behaves like VS Code for open documents: applies versioned workspace edits to its
    buffers (refusing a stale version), then reports the change with ``didChange``."""

    def __init__(self) -> None:
        super().__init__()
        self.buffers: dict[str, tuple[str, int]] = {}
        self.refuse_edits = False
        self.edits_seen = 0

    def open(self, path: Path, text: str, version: int = 1) -> str:
        uri = path.as_uri()
        self.buffers[uri] = (text, version)
        self.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
        return uri

    def type_into(self, uri: str, text: str) -> None:
        _, version = self.buffers[uri]
        self.buffers[uri] = (text, version + 1)
        self.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.edits_seen += 1
        if self.refuse_edits:
            return types.ApplyWorkspaceEditResult(applied=False, failure_reason="refused by the test")
        for change in params.edit.document_changes or []:
            uri = change.text_document.uri
            text, version = self.buffers[uri]
            if change.text_document.version != version:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version moved")
            [edit] = change.edits
            assert (edit.range.start.line, edit.range.start.character) == (0, 0)
            self.type_into(uri, edit.new_text)
        return types.ApplyWorkspaceEditResult(applied=True)


def make_editor() -> EditorClient:
    client = make_client(EditorClient)
    client.feature(types.WORKSPACE_APPLY_EDIT)(lambda params: client.apply_edit(params))
    return client


editor = server_fixture("editor", make_editor, types.ClientCapabilities(
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True, workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True))))


async def test_edit_goes_to_the_open_buffer_not_the_disk(editor, repo, tmp_path):
    disk = b"x = 1\n"
    (repo / "a.py").write_bytes(disk)
    uri = editor.open(repo / "a.py", "x = 1\ny = 2  # unsaved\n", version=5)
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}, "id": "r"}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "a.py", "old_string": "y = 2", "new_string": "y = 3"}, "id": "e"}]},
        {"text": "ok"},
    ])
    sid = await new_session(editor, repo, script)
    result = await prompt(editor, sid)
    assert result["stopReason"] == "end_turn"
    finals = {cid: snaps[-1] for cid, snaps in editor.tool_calls(sid).items()}
    assert "unsaved" in finals["r"]["result"]["content"]  # the tool saw the buffer
    assert finals["e"]["status"] == "done"
    assert editor.buffers[uri] == ("x = 1\ny = 3  # unsaved\n", 6)
    assert (repo / "a.py").read_bytes() == disk  # the disk is the editor's business


async def test_a_refused_workspace_edit_is_stale_and_nothing_is_written(editor, repo, tmp_path):
    (repo / "b.py").write_bytes(b"keep\n")
    uri = editor.open(repo / "b.py", "keep\nedit me\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "b.py", "old_string": "edit me", "new_string": "edited"}, "id": "e"}]},
        {"text": "ok"},
    ])
    sid = await new_session(editor, repo, script)
    editor.refuse_edits = True
    try:
        await prompt(editor, sid)
    finally:
        editor.refuse_edits = False
    final = editor.tool_calls(sid)["e"][-1]
    assert final["status"] == "errored" and final["error"]["code"] == "stale"
    assert editor.buffers[uri] == ("keep\nedit me\n", 1)
    assert (repo / "b.py").read_bytes() == b"keep\n"


async def test_typing_between_approval_and_run_makes_the_approved_edit_stale(editor, repo, tmp_path):
    (repo / "c.py").write_bytes(b"")
    uri = editor.open(repo / "c.py", "alpha\nbeta\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "c.py", "old_string": "beta", "new_string": "gamma"}, "id": "e"}]},
        {"text": "ok"},
    ])
    sid = await new_session(editor, repo, script)

    editor.before_permission = lambda params: editor.type_into(uri, "alpha\nbeta\nuser typed this\n")
    try:
        await prompt(editor, sid)
    finally:
        editor.before_permission = None
    final = editor.tool_calls(sid)["e"][-1]
    assert final["status"] == "errored" and final["error"]["code"] == "stale"
    assert editor.buffers[uri][0] == "alpha\nbeta\nuser typed this\n"  # the user's text is untouched


async def test_external_changes_are_reported_and_named_to_the_model_but_our_writes_are_not(editor, repo, tmp_path):
    import json

    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "create_file", "arguments": {"path": "ours.txt", "content": "mine\n"}, "id": "c"}]},
        {"text": "created"},
        {"text": "noted"},
    ])
    sid = await new_session(editor, repo, script, replayLog=str(log), permissions={"create_file": "auto"})
    await prompt(editor, sid, "create it")
    (repo / "theirs.txt").write_text("user's file\n")  # an external change
    await editor.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "workspace_change"
                          and "theirs.txt" in p["update"]["paths"])
    reported = [p for u in editor.updates[sid] if u["sessionUpdate"] == "workspace_change" for p in u["paths"]]
    assert "ours.txt" not in reported  # our own write is never reported back
    await prompt(editor, sid, "next")
    last = json.loads(log.read_text().splitlines()[-1])
    user = [m for m in last["messages"] if m["role"] == "user"][-1]["content"]
    assert user.startswith("next") and "theirs.txt" in user and "ours.txt" not in user


async def test_files_the_repository_ignores_are_not_reported(editor, repo, tmp_path):
    from conftest import git

    (repo / ".gitignore").write_text("*.log\nout/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignore")
    script = write_script(tmp_path / "s.jsonl", [{"text": "ok"}])
    sid = await new_session(editor, repo, script)
    (repo / "server.log").write_text("noise\n")
    (repo / "out").mkdir()
    (repo / "out" / "gen.txt").write_text("built\n")
    (repo / "real.txt").write_text("user\n")
    await editor.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "workspace_change"
                          and "real.txt" in p["update"]["paths"])
    reported = {p for u in editor.updates[sid] if u["sessionUpdate"] == "workspace_change" for p in u["paths"]}
    assert reported == {"real.txt"}


async def test_git_tools_say_which_files_have_unsaved_editor_changes(editor, repo, tmp_path):
    uri = editor.open(repo / "hello.txt", "hello\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {"path": "hello.txt", "old_string": "hello", "new_string": "hi"}, "id": "e"}]},
        {"tool_calls": [{"name": "git_diff", "arguments": {}, "id": "d"}]},
        {"text": "ok"},
    ])
    sid = await new_session(editor, repo, script, permissions={"edit_file": "auto"})
    await prompt(editor, sid)
    assert editor.buffers[uri][0] == "hi\n" and (repo / "hello.txt").read_text() == "hello\n"
    diff = editor.tool_calls(sid)["d"][-1]["result"]
    assert "hello.txt has unsaved changes in the editor" in diff["content"]
    assert diff["data"]["unsaved_in_editor"] == ["hello.txt"]


async def test_a_user_edit_right_after_a_git_restore_is_reported_but_the_restore_is_not(editor, repo, tmp_path):
    (repo / "hello.txt").write_text("local change\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "git_restore", "arguments": {"paths": ["hello.txt"]}, "id": "g"}]},
        {"text": "restored"},
    ])
    sid = await new_session(editor, repo, script, permissions={"git_restore": "auto"})
    await prompt(editor, sid)
    assert (repo / "hello.txt").read_text() == "hello\n"
    (repo / "mine.txt").write_text("typed just now\n")  # inside the quiet window of the restore
    await editor.wait_for(lambda p: p["sessionId"] == sid and p["update"]["sessionUpdate"] == "workspace_change"
                          and "mine.txt" in p["update"]["paths"])
    reported = {p for u in editor.updates[sid] if u["sessionUpdate"] == "workspace_change" for p in u["paths"]}
    assert reported == {"mine.txt"}
