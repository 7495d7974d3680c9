"""Secrets in the workspace stay out of the model's context (issue 21, modelExclude), over the
real server (stdio): a read of an excluded file is asked about although read_file runs
unasked, the question names the file and its pattern; allowed, it is read for that call
only; rejected or unanswerable, the model reads why and the content appears nowhere (not in
the request body, the snapshot, the updates). git_diff and git_show name an excluded file
but never show its patch unless the call named it and was allowed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from conftest import ToolwireTestClient, git, prompt, server_fixture
from test_irreversible import make_silent
from undo_helpers import calls_script

from conftest import make_client

pytestmark = pytest.mark.asyncio(loop_scope="module")

def make_plain_recording_actions():
    """An LSP client without Toolwire's panel (as test_irreversible's plain editor, which rejects
    every window/showMessageRequest), keeping each question's message and action titles."""
    from lsprotocol import types
    from pytest_lsp.client import register_lsp_features

    from test_irreversible import MessageRequestClient

    editor = MessageRequestClient()
    editor.actions = []
    register_lsp_features(editor)
    editor.feature("toolwire/session/update")(lambda params: editor.on_update(params))

    @editor.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        editor.asked.append(params.message)
        editor.actions.append([a.title for a in params.actions or []])
        return types.MessageActionItem(title="Reject")

    return editor


client = server_fixture("client", make_client)
silent = server_fixture("silent", make_silent)
plain = server_fixture("plain", make_plain_recording_actions)

SECRET = "API_TOKEN=hunter2-s3cr3t-value"
PEM = "-----BEGIN PRIVATE KEY-----\nMIIsecretkeymaterial\n-----END PRIVATE KEY-----\n"


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "config").mkdir(parents=True)
    (root / "keys").mkdir()
    (root / "config" / ".env").write_text(SECRET + "\n")
    (root / "keys" / "server.pem").write_text(PEM)
    (root / ".envrc").write_text("export LAYOUT=python\n")
    (root / "ok.txt").write_text("plain text\n")
    os.symlink("config/.env", root / "notes.txt")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root.resolve()


async def turn(lsp: ToolwireTestClient, root: Path, tmp_path: Path, calls: list[tuple[str, dict[str, Any]]],
               answer: Any = None, **settings: Any) -> tuple[str, dict[str, Any], Path]:
    """One session running ``calls`` (one per response); returns (sessionId, last snapshot per call, request log)."""
    log = tmp_path / f"requests-{len(list(tmp_path.glob('requests-*')))}.jsonl"
    script = calls_script(tmp_path / "s.jsonl", calls)
    result = await lsp.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}",
                                                     "settings": {"replayLog": str(log), **settings}})
    sid = result["sessionId"]
    if answer is not None:
        lsp.answers[sid] = answer
    outcome = await prompt(lsp, sid)
    assert outcome["stopReason"] == "end_turn", outcome
    return sid, {cid: snaps[-1] for cid, snaps in lsp.tool_calls(sid).items()}, log


async def tool_messages(lsp: ToolwireTestClient, sid: str) -> list[str]:
    snapshot = await lsp.call("toolwire/session/snapshot", {"sessionId": sid})
    return [m["content"] for m in snapshot["messages"] if m["role"] == "tool"]


async def nowhere(lsp: ToolwireTestClient, sid: str, log: Path, *secrets: str) -> None:
    """None of ``secrets`` reached the model (every request body), the snapshot or any update."""
    snapshot = json.dumps(await lsp.call("toolwire/session/snapshot", {"sessionId": sid}))
    sent = log.read_text()
    updates = json.dumps(lsp.raw_updates[sid]) + json.dumps(lsp.permission_requests[sid])
    for secret in secrets:
        for where, text in (("request", sent), ("snapshot", snapshot), ("updates", updates)):
            assert secret not in text, f"{secret!r} leaked into the {where}"


READ_ENV = [("read_file", {"path": "config/.env"})]


async def test_a_rejected_read_is_refused_with_the_reason_and_leaks_nothing(client, tmp_path):
    root = workspace(tmp_path)
    sid, calls, log = await turn(client, root, tmp_path, READ_ENV, {"optionId": "reject", "reason": "not that one"})
    (request,) = client.permission_requests[sid]
    assert request["subject"] == {"kind": "tool", "tool": "read_file", "arguments": {
        "path": "config/.env", "start_line": None, "end_line": None},
        "excluded": [{"path": "config/.env", "pattern": ".env"}]}
    assert [o["optionId"] for o in request["options"]] == ["allow_once", "reject"]  # allowed per call only
    assert calls["c0"]["status"] == "canceled" and calls["c0"]["cancelReason"] == "rejected"
    assert await tool_messages(client, sid) == [
        "The user rejected this tool call. Reason: not that one config/.env is kept from the model by the "
        "modelExclude setting (pattern '.env'): the user did not allow it for this call, and nothing of it was "
        "read. Do without it, or ask the user."]
    await nowhere(client, sid, log, "hunter2")


async def test_an_allowed_read_shows_the_file_for_that_call_only(client, tmp_path):
    """allow_always is taken as allowing this call: the next read of the file asks again."""
    root = workspace(tmp_path)
    sid, calls, log = await turn(client, root, tmp_path, READ_ENV * 2 + [("read_file", {"path": "ok.txt"})],
                                 [{"optionId": "allow_always"}, {"optionId": "reject"}])
    assert [r["subject"]["excluded"] for r in client.permission_requests[sid]] == [
        [{"path": "config/.env", "pattern": ".env"}]] * 2  # ok.txt is not asked about
    assert calls["c0"]["status"] == "done" and calls["c0"]["result"]["content"] == SECRET + "\n"
    assert calls["c1"]["cancelReason"] == "rejected" and calls["c2"]["status"] == "done"
    messages = await tool_messages(client, sid)
    assert messages[0] == SECRET + "\n" and "hunter2" not in messages[1] and messages[2] == "plain text\n"


@pytest.mark.parametrize("path, pattern", [("keys/server.pem", "*.pem"), ("notes.txt", ".env"),
                                           ("./config/.env", ".env"), ("CONFIG/../config/.env", ".env")])
async def test_nested_linked_and_respelled_paths_are_asked_about(client, tmp_path, path, pattern):
    """A nested key, a symbolic link to .env (named as written), other spellings of the path."""
    root = workspace(tmp_path)
    (root / "CONFIG").mkdir()
    sid, calls, log = await turn(client, root, tmp_path, [("read_file", {"path": path})], {"optionId": "reject"})
    (request,) = client.permission_requests[sid]
    assert request["subject"]["excluded"][0]["pattern"] == pattern
    assert calls["c0"]["cancelReason"] == "rejected"
    await nowhere(client, sid, log, "hunter2", "MIIsecretkeymaterial")


async def test_a_lookalike_is_read_unasked(client, tmp_path):
    root = workspace(tmp_path)
    sid, calls, log = await turn(client, root, tmp_path, [("read_file", {"path": ".envrc"})])
    assert client.permission_requests[sid] == [] and calls["c0"]["status"] == "done"
    # a question about another file keeps "allow always"
    sid, calls, log = await turn(client, root, tmp_path, [("read_file", {"path": "ok.txt"})],
                                 permissions={"read_file": "ask"})
    assert [o["optionId"] for o in client.permission_requests[sid][0]["options"]] == [
        "allow_once", "allow_always", "reject"]


async def test_nobody_to_ask_ends_errored_excluded_naming_the_pattern(silent, tmp_path):
    root = workspace(tmp_path)
    sid, calls, log = await turn(silent, root, tmp_path, READ_ENV)
    assert calls["c0"]["status"] == "errored" and calls["c0"]["error"]["code"] == "excluded"
    message = ("not run, nothing read: config/.env is kept from the model by the modelExclude setting (pattern "
               "'.env'), and no client answers permission requests to allow it for this call. Do without it, or "
               "tell the user: they can allow it when asked, or take the pattern out of modelExclude.")
    assert calls["c0"]["error"]["message"] == message
    assert await tool_messages(silent, sid) == [f"Error (excluded): {message}"]
    await nowhere(silent, sid, log, "hunter2")


async def test_an_empty_setting_turns_the_rule_off(silent, tmp_path):
    root = workspace(tmp_path)
    sid, calls, log = await turn(silent, root, tmp_path, READ_ENV, modelExclude=[])
    assert calls["c0"]["status"] == "done" and calls["c0"]["result"]["content"] == SECRET + "\n"


async def test_the_setting_s_own_patterns_apply(silent, tmp_path):
    root = workspace(tmp_path)
    sid, calls, log = await turn(silent, root, tmp_path, [("read_file", {"path": "ok.txt"}), *READ_ENV],
                                 modelExclude=["ok.*"])
    assert calls["c0"]["error"]["code"] == "excluded" and "(pattern 'ok.*')" in calls["c0"]["error"]["message"]
    assert calls["c1"]["status"] == "done"  # .env is no longer in the list


async def test_a_bad_glob_is_a_settings_error(client, tmp_path):
    root = workspace(tmp_path)
    with pytest.raises(JsonRpcInvalidParams, match=r"setting modelExclude: '!\.env\.example' negates"):
        await client.call("toolwire/session/new", {"cwd": str(root), "model": "replay",
                                                   "settings": {"modelExclude": ["!.env.example"]}})


async def test_a_denied_read_tool_is_policy_denied(client, tmp_path):
    root = workspace(tmp_path)
    sid, calls, log = await turn(client, root, tmp_path, READ_ENV, permissions={"read_file": "deny"})
    assert client.permission_requests[sid] == [] and calls["c0"]["cancelReason"] == "policy_denied"
    await nowhere(client, sid, log, "hunter2")


async def test_an_edit_under_auto_is_asked_about(client, tmp_path):
    """edit_file's match errors tell what a file holds: an excluded file's edit asks even under auto."""
    root = workspace(tmp_path)
    edit = [("edit_file", {"path": "config/.env", "old_string": "API_TOKEN=hunter2", "new_string": "API_TOKEN=x"})]
    sid, calls, log = await turn(client, root, tmp_path, edit, {"optionId": "reject"}, permissions={"edits": "auto"})
    (request,) = client.permission_requests[sid]
    assert request["subject"]["kind"] == "edit" and request["subject"]["excluded"] == [
        {"path": "config/.env", "pattern": ".env"}]
    assert (root / "config" / ".env").read_text() == SECRET + "\n"
    sid, calls, log = await turn(client, root, tmp_path, edit, {"optionId": "allow_once"}, permissions={"edits": "auto"})
    assert calls["c0"]["status"] == "done" and (root / "config" / ".env").read_text() == "API_TOKEN=x-s3cr3t-value\n"


async def test_git_diff_and_show_name_an_excluded_file_without_its_patch(client, tmp_path):
    root = workspace(tmp_path)
    (root / "config" / ".env").write_text("API_TOKEN=changed-hunter3\n")
    (root / "ok.txt").write_text("plain text, changed\n")
    sid, calls, log = await turn(client, root, tmp_path, [("git_diff", {}), ("git_diff", {"paths": ["config"]})])
    assert client.permission_requests[sid] == []  # no path names the file: nothing to ask, it is left out
    for cid in ("c0", "c1"):
        content = calls[cid]["result"]["content"]
        assert ("config/.env is kept from the model by the modelExclude setting (pattern '.env'): changed (+1 -1), "
                "diff not shown (a git_diff naming it in paths asks the user)") in content
    assert "+plain text, changed" in calls["c0"]["result"]["content"]
    assert [f.get("excluded") for f in calls["c0"]["result"]["data"]["files"]] == [".env", None]
    await nowhere(client, sid, log, "hunter2", "hunter3")

    # Named and allowed: the diff shows it, for that call.
    sid, calls, log = await turn(client, root, tmp_path, [("git_diff", {"paths": ["config/.env"]})],
                                 {"optionId": "allow_once"})
    assert client.permission_requests[sid][0]["subject"]["excluded"] == [{"path": "config/.env", "pattern": ".env"}]
    assert "+API_TOKEN=changed-hunter3" in calls["c0"]["result"]["content"]

    git(root, "commit", "-q", "-am", "rotate the token")
    sid, calls, log = await turn(client, root, tmp_path, [("git_show", {"rev": "HEAD"}),
                                                          ("git_show", {"rev": "HEAD~1"})])
    assert "config/.env is kept from the model" in calls["c0"]["result"]["content"]
    assert "keys/server.pem is kept from the model by the modelExclude setting (pattern '*.pem')" in \
        calls["c1"]["result"]["content"]
    await nowhere(client, sid, log, "hunter2", "hunter3", "MIIsecretkeymaterial")


async def test_a_plain_editor_s_question_opens_with_the_file_and_pattern(plain, tmp_path):
    root = workspace(tmp_path)
    sid, calls, log = await turn(plain, root, tmp_path, READ_ENV)
    (asked,) = plain.asked
    assert asked.startswith("Kept from the model (modelExclude): config/.env (pattern '.env'). Allowing shows it "
                            "to the model for this call only.\nToolwire wants to run read_file"), asked
    assert plain.actions == [["Allow once", "Reject"]]
    assert calls["c0"]["cancelReason"] == "rejected"
    await nowhere(plain, sid, log, "hunter2")


async def test_a_pending_edit_of_an_excluded_file_is_previewed_for_the_user(client, tmp_path):
    """toolwire/toolCall/preview goes to the user's diff view, as the approval's diff does."""
    from test_e2e_snapshot import hold_turn_at_permission, release

    root = workspace(tmp_path)
    sid, turn = await hold_turn_at_permission(client, root, tmp_path, [
        {"name": "edit_file", "arguments": {"path": "config/.env", "old_string": "hunter2", "new_string": "rotated"},
         "id": "e1"}])
    client.answers[sid] = {"optionId": "reject"}
    try:
        preview = await client.call("toolwire/toolCall/preview", {"sessionId": sid, "toolCallId": "e1"})
        assert preview == {"path": "config/.env", "before": SECRET + "\n",
                           "after": SECRET.replace("hunter2", "rotated") + "\n"}
    finally:
        await release(client, turn)
    assert (root / "config" / ".env").read_text() == SECRET + "\n"


async def test_renaming_an_excluded_file_is_asked_about_even_under_auto(client, silent, tmp_path):
    """rename .env → env.txt, then a read of env.txt would show it unasked: the rename asks first."""
    root = workspace(tmp_path)
    rename = [("rename_file", {"path": "config/.env", "new_path": "env.txt"}), ("read_file", {"path": "env.txt"})]
    sid, calls, log = await turn(client, root, tmp_path, rename, {"optionId": "reject"}, permissions={"edits": "auto"})
    (request,) = client.permission_requests[sid]
    assert request["subject"]["excluded"] == [{"path": "config/.env", "pattern": ".env"}]
    assert calls["c0"]["cancelReason"] == "rejected" and calls["c1"]["error"]["code"] == "not_found"
    await nowhere(client, sid, log, "hunter2")
    sid, calls, log = await turn(silent, root, tmp_path, rename, permissions={"edits": "auto"})
    assert calls["c0"]["error"]["code"] == "excluded" and (root / "config" / ".env").exists()
    await nowhere(silent, sid, log, "hunter2")
    # renaming another file is not asked about
    sid, calls, log = await turn(client, root, tmp_path, [("rename_file", {"path": "ok.txt", "new_path": "ok2.txt"})],
                                 permissions={"edits": "auto"})
    assert client.permission_requests[sid] == [] and calls["c0"]["status"] == "done"
