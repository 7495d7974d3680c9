"""Changes that cannot be undone are asked about first, never found out at undo time
(issue 19, section 1): every writing tool and every git action, over the real server
(stdio) on real git repositories, for a file over the checkpoint size limit, a
checkpoint store that cannot be written (a regular file where its folder should be,
which stops root too) and a store that fails after the question was answered.

Two servers: one whose client answers permission requests (and records them), one
whose client answers none (MethodNotFound for ``toolwire/session/requestPermission``
and ``window/showMessageRequest``).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcMethodNotFound

from conftest import ToolwireTestClient, git, make_client, prompt, server_fixture
from endpoint import FakeEndpoint, Reply, chat_body
from undo_helpers import calls_script, state

from toolwire.agent.checkpoint_store import CheckpointStore

pytestmark = pytest.mark.asyncio(loop_scope="module")

AUTO = {"edits": "auto", "git": "auto"}
#: Bytes of f.txt; the tests' checkpointMaxBytes is below it.
BIG = "alpha\n" + "filler line\n" * 200
LIMIT = 1024


class NoAnswerClient(ToolwireTestClient):
    """A client that answers no permission request: both questions get MethodNotFound."""

    def report_server_error(self, error: Exception, source: Any) -> None:
        if isinstance(error, JsonRpcMethodNotFound):
            return
        super().report_server_error(error, source)


def make_silent() -> NoAnswerClient:
    from pytest_lsp.client import register_lsp_features

    client = NoAnswerClient()
    register_lsp_features(client)
    client.feature("toolwire/session/update")(lambda params: client.on_update(params))
    return client


class MessageRequestClient(NoAnswerClient):
    """An LSP client without Toolwire's panel: approvals come as window/showMessageRequest."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []


def make_plain_editor() -> MessageRequestClient:
    from lsprotocol import types
    from pytest_lsp.client import register_lsp_features

    client = MessageRequestClient()
    register_lsp_features(client)
    client.feature("toolwire/session/update")(lambda params: client.on_update(params))

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        client.asked.append(params.message)
        return types.MessageActionItem(title="Reject")

    return client


client = server_fixture("client", make_client)
silent = server_fixture("silent", make_silent)
plain = server_fixture("plain", make_plain_editor)


def setup(root: Path, tool: str) -> None:
    """f.txt committed (and changed in the work tree for the git tools that take it), a branch ``other``."""
    (root / "f.txt").write_text(BIG)
    git(root, "add", "f.txt")
    git(root, "commit", "-q", "-m", "f")
    git(root, "branch", "other")
    if tool in ("git_add", "git_restore", "git_commit"):
        (root / "f.txt").write_text(BIG.replace("alpha", "beta"))


#: (tool, arguments, is it over the size limit too?) — git_add, git_commit and git_branch
#: record index entries and HEAD, never file contents, so the size limit is no reason for them.
CASES = [
    ("create_file", {"path": "f.txt", "content": "new\n", "overwrite": True}, True),
    ("edit_file", {"path": "f.txt", "old_string": "alpha", "new_string": "omega"}, True),
    ("multi_edit", {"path": "f.txt", "edits": [{"old_string": "alpha", "new_string": "omega"}]}, True),
    ("delete_file", {"path": "f.txt"}, True),
    ("rename_file", {"path": "f.txt", "new_path": "g.txt"}, True),
    ("git_restore", {"paths": ["f.txt"]}, True),
    ("git_add", {"paths": ["f.txt"]}, False),
    ("git_commit", {"message": "change f", "paths": ["f.txt"]}, False),
    ("git_branch", {"action": "create", "name": "fresh"}, False),
    ("git_branch", {"action": "switch", "name": "other"}, False),
]
IDS = [f"{tool}-{args.get('action', '')}".rstrip("-") for tool, args, _ in CASES]


def workspace(tmp_path: Path, tool: str) -> Path:
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    setup(root, tool)
    return root.resolve()


def break_store(root: Path) -> Path:
    """Put a regular file where the workspace's checkpoint folder should be (stops root too)."""
    folder = CheckpointStore(root).folder
    if folder.is_dir():
        shutil.rmtree(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("not a folder\n")
    return folder


async def turn(lsp: ToolwireTestClient, root: Path, script: Path, answer: dict | None = None,
               **settings: Any) -> tuple[str, dict[str, Any]]:
    """One session on ``root`` running one turn; returns (sessionId, the last snapshot of each call)."""
    result = await lsp.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}",
                                                     "settings": settings})
    sid = result["sessionId"]
    if answer is not None:
        lsp.answers[sid] = answer
    outcome = await prompt(lsp, sid)
    assert outcome["stopReason"] in ("end_turn", "repeated_tool_failure"), outcome
    return sid, {cid: snaps[-1] for cid, snaps in lsp.tool_calls(sid).items()}


def subjects(lsp: ToolwireTestClient, sid: str) -> list[dict[str, Any]]:
    return [p["subject"] for p in lsp.permission_requests[sid]]


@pytest.mark.parametrize(("tool", "args", "over"), CASES, ids=IDS)
async def test_a_file_over_the_size_limit(client, silent, tmp_path, tool, args, over):
    root = workspace(tmp_path, tool)
    before = state(root)
    script = calls_script(tmp_path / "s.jsonl", [(tool, args)])
    limits = {"permissions": AUTO, "checkpointMaxBytes": LIMIT}

    # The policy says auto, yet the call is asked about, marked; a rejection leaves it all as it was.
    sid, calls = await turn(client, root, script, {"optionId": "reject", "reason": "no"}, **limits)
    if over:
        (subject,) = subjects(client, sid)
        assert subject["irreversible"] == {"reason": "f.txt: 2.3 KiB is over the 1 KiB checkpoint limit (the "
                                           "checkpointMaxBytes setting)"}, subject
        assert calls["c0"]["status"] == "canceled" and calls["c0"]["cancelReason"] == "rejected"
        assert state(root) == before

        # Nobody to ask: errored not_undoable, naming the setting, nothing changed.
        sid, calls = await turn(silent, root, script, **limits)
        assert calls["c0"]["status"] == "errored", calls
        assert calls["c0"]["error"]["code"] == "not_undoable"
        assert calls["c0"]["error"]["message"] == (
            "not run, nothing changed: this change cannot be undone and no client answers permission requests to "
            "confirm it. Why: f.txt: 2.3 KiB is over the 1 KiB checkpoint limit (the checkpointMaxBytes setting). "
            "Tell the user: the setting allowIrreversible: true lets the permission policy run such calls without "
            "asking.")
        assert state(root) == before
    else:  # index entries and HEAD are recorded whatever the size: it runs unasked
        assert subjects(client, sid) == []
        assert calls["c0"]["status"] == "done", calls
        root = workspace(tmp_path / "again", tool)

    # allowIrreversible: the policy covers it again; it runs without asking.
    sid, calls = await turn(silent, root, script, allowIrreversible=True, **limits)
    assert calls["c0"]["status"] == "done", calls


async def test_a_70_mb_file_with_the_default_limit(client, silent, tmp_path):
    """The issue's input: delete_file on a 70 MB file (sparse) under the default 64 MiB limit."""
    root = tmp_path / "ws"
    root.mkdir()
    with open(root / "big.bin", "wb") as fh:
        fh.truncate(70 * 1024 * 1024)
    script = calls_script(tmp_path / "s.jsonl", [("delete_file", {"path": "big.bin"})])
    sid, calls = await turn(client, root, script, {"optionId": "reject"}, permissions=AUTO)
    (subject,) = subjects(client, sid)
    assert subject["irreversible"]["reason"] == ("big.bin: 70 MiB is over the 64 MiB checkpoint limit "
                                                 "(the checkpointMaxBytes setting)")
    assert (root / "big.bin").stat().st_size == 70 * 1024 * 1024
    sid, calls = await turn(silent, root, script, permissions=AUTO)
    assert calls["c0"]["error"]["code"] == "not_undoable"
    assert (root / "big.bin").stat().st_size == 70 * 1024 * 1024
    # Asked and allowed knowingly: it runs, and undo says what it said before.
    sid, calls = await turn(client, root, script, {"optionId": "allow_once"})
    assert "irreversible" in subjects(client, sid)[0]
    assert calls["c0"]["status"] == "done" and not (root / "big.bin").exists()
    undone = await client.call("toolwire/session/undoTurn", {"sessionId": sid})
    assert [(p["path"], p["outcome"]) for p in undone["paths"]] == [("big.bin", "not_undoable")]


@pytest.mark.parametrize(("tool", "args", "over"), CASES, ids=IDS)
async def test_a_store_that_cannot_be_written(client, silent, tmp_path, tool, args, over):
    root = workspace(tmp_path, tool)
    blocker = break_store(root)
    try:
        before = state(root)
        script = calls_script(tmp_path / "s.jsonl", [(tool, args)])
        sid, calls = await turn(client, root, script, {"optionId": "reject"}, permissions=AUTO)
        (subject,) = subjects(client, sid)
        reason = subject["irreversible"]["reason"]
        assert reason.startswith("the checkpoint store cannot be written (") and str(blocker) in reason, reason
        assert calls["c0"]["cancelReason"] == "rejected" and state(root) == before

        sid, calls = await turn(silent, root, script, permissions=AUTO)
        assert calls["c0"]["error"]["code"] == "not_undoable", calls
        assert "allowIrreversible: true" in calls["c0"]["error"]["message"]
        assert state(root) == before

        sid, calls = await turn(silent, root, script, permissions=AUTO, allowIrreversible=True)
        assert calls["c0"]["status"] == "done", calls
    finally:
        blocker.unlink()


@pytest.mark.parametrize(("tool", "args", "over"), CASES, ids=IDS)
async def test_a_store_that_fails_after_the_question(client, tmp_path, tool, args, over):
    """The store works when the call is asked about (not marked), then fails before it runs:
    the call ends errored not_undoable and nothing is changed."""
    root = workspace(tmp_path, tool)
    before = state(root)
    script = calls_script(tmp_path / "s.jsonl", [(tool, args)])
    broken: list[Path] = []
    client.before_permission = lambda params: broken.append(break_store(root))
    try:
        sid, calls = await turn(client, root, script, {"optionId": "allow_once"})
    finally:
        client.before_permission = None
        for blocker in broken:
            blocker.unlink()
    (subject,) = subjects(client, sid)
    assert "irreversible" not in subject
    assert calls["c0"]["status"] == "errored", calls
    assert calls["c0"]["error"]["code"] == "not_undoable"
    assert "the checkpoint store cannot be written" in calls["c0"]["error"]["message"]
    assert calls["c0"]["error"]["message"].startswith("not run, nothing changed: its checkpoint could not be taken")
    assert calls["c0"]["error"]["message"].endswith("). Tell the user before calling it again."), calls
    assert state(root) == before


@pytest.mark.parametrize(("tool", "args", "over"), CASES, ids=IDS)
async def test_a_store_that_fails_mid_turn_under_auto(silent, tmp_path, tool, args, over):
    """Call 1 runs with a working store; the store then fails (the endpoint breaks it when
    the second model request arrives); call 2, which the policy runs unasked, is asked
    about, and with no client to answer ends errored not_undoable, changing nothing."""
    root = workspace(tmp_path, tool)
    (root / "first.txt").write_text("one\n")
    broken: list[Path] = []

    def check(body: dict[str, Any]) -> None:
        if any(m["role"] == "tool" for m in body["messages"]) and not broken:
            broken.append(break_store(root))

    replies = [Reply(200, chat_body({"tool_calls": [{"name": "edit_file", "id": "a", "arguments": {
                   "path": "first.txt", "old_string": "one", "new_string": "two"}}]}, 1)),
               Reply(200, chat_body({"tool_calls": [{"name": tool, "id": "b", "arguments": args}]}, 2))]
    try:
        with FakeEndpoint(replies, check=check) as endpoint:
            result = await silent.call("toolwire/session/new", {"cwd": str(root), "model": "openai:m", "settings": {
                "baseUrl": endpoint.base_url, "apiKey": "test", "permissions": AUTO}})
            sid = result["sessionId"]
            before = state(root)  # read while the turn has not started
            await prompt(silent, sid)
        calls = {cid: snaps[-1] for cid, snaps in silent.tool_calls(sid).items()}
        assert calls["a"]["status"] == "done", calls
        assert calls["b"]["status"] == "errored" and calls["b"]["error"]["code"] == "not_undoable", calls
        assert "the checkpoint store cannot be written" in calls["b"]["error"]["message"]
        after = state(root)
        assert after["tree"].pop("first.txt")[1] == b"two\n"
        before["tree"].pop("first.txt")
        assert after == before
    finally:
        for blocker in broken:
            blocker.unlink()


async def test_a_commit_whose_hook_snapshot_cannot_be_stored_does_not_run(client, tmp_path):
    """With a commit hook the checkpoint stores the untracked files a hook might change; when
    the store refuses them after the question (only its contents folder broken: the record
    itself could still be saved), the commit does not run, rather than run unwatched."""
    root = workspace(tmp_path, "git_commit")
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    (root / "notes.txt").write_text("untracked, a hook could rewrite it\n")
    before = state(root)
    script = calls_script(tmp_path / "s.jsonl", [("git_commit", {"message": "change f", "paths": ["f.txt"]})])
    objects = CheckpointStore(root).objects

    def break_objects(params: dict[str, Any]) -> None:
        if objects.is_dir():
            shutil.rmtree(objects)
        objects.write_text("not a folder\n")

    client.before_permission = break_objects
    try:
        sid, calls = await turn(client, root, script, {"optionId": "allow_once"})
    finally:
        client.before_permission = None
        objects.unlink(missing_ok=True)
    assert calls["c0"]["status"] == "errored" and calls["c0"]["error"]["code"] == "not_undoable", calls
    assert "the checkpoint store cannot be written" in calls["c0"]["error"]["message"]
    assert state(root) == before


async def test_the_show_message_request_question_opens_with_why(plain, tmp_path):
    root = workspace(tmp_path, "delete_file")
    script = calls_script(tmp_path / "s.jsonl", [("delete_file", {"path": "f.txt"})])
    sid, calls = await turn(plain, root, script, permissions=AUTO, checkpointMaxBytes=LIMIT)
    (message,) = plain.asked
    assert message.split("\n")[:2] == [
        "This change cannot be undone: f.txt: 2.3 KiB is over the 1 KiB checkpoint limit (the checkpointMaxBytes setting)",
        "Toolwire wants to run delete_file on f.txt:"], message
    assert calls["c0"]["cancelReason"] == "rejected" and (root / "f.txt").read_text() == BIG
