"""A commit whose hooks may rewrite a file the checkpoint cannot store is asked about first.

A pre-commit hook (a formatter) rewrites f.txt, which the commit does not name: a
file git does not hold (changed, not staged) and over ``checkpointMaxBytes``. The
commit ran unasked under auto, ended ``done``, and undo then answered not_undoable
for f.txt (with a reason naming a 64 MiB limit, not the setting). Now it is marked
irreversible like any change the turn cannot record; a file that grows past the
limit after the question stops the commit before it runs. The real server over
stdio (test_irreversible's clients), real git, a real hook.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import client, git  # noqa: F401 - client: the module's server fixture
from test_irreversible import BIG, LIMIT, silent, subjects, turn  # noqa: F401 - silent: a fixture
from undo_helpers import calls_script, state, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")

AUTO = {"edits": "auto", "git": "auto"}
WHY = ("f.txt: 2.3 KiB is over the 1 KiB checkpoint limit (the checkpointMaxBytes setting), and a commit hook "
       "might change it")


def workspace(tmp_path: Path, *, hook: bool = True, dirty: str = BIG) -> Path:
    """f.txt and g.txt committed; f.txt changed to ``dirty`` (not staged), g.txt changed; the hook."""
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "f.txt").write_text(BIG)
    (root / "g.txt").write_text("g\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    (root / "f.txt").write_text(dirty.replace("alpha", "beta"))
    (root / "g.txt").write_text("g2\n")
    if hook:
        path = root / ".git" / "hooks" / "pre-commit"
        path.write_text("#!/bin/sh\nsed -i s/beta/gamma/ f.txt\n")
        path.chmod(0o755)
    return root.resolve()


def commit_script(tmp_path: Path) -> Path:
    return calls_script(tmp_path / "s.jsonl", [("git_commit", {"message": "m", "paths": ["g.txt"]})])


async def test_a_hook_that_may_rewrite_a_file_over_the_limit_is_asked_about(client, silent, tmp_path):  # noqa: F811
    root = workspace(tmp_path)
    before = state(root)
    script = commit_script(tmp_path)
    sid, calls = await turn(client, root, script, {"optionId": "reject"}, permissions=AUTO, checkpointMaxBytes=LIMIT)
    (subject,) = subjects(client, sid)
    assert subject["irreversible"] == {"reason": WHY}, subject
    assert calls["c0"]["cancelReason"] == "rejected" and state(root) == before

    sid, calls = await turn(silent, root, script, permissions=AUTO, checkpointMaxBytes=LIMIT)
    assert calls["c0"]["status"] == "errored" and calls["c0"]["error"]["code"] == "not_undoable", calls
    assert f"Why: {WHY}." in calls["c0"]["error"]["message"]
    assert state(root) == before

    sid, calls = await turn(silent, root, script, permissions=AUTO, checkpointMaxBytes=LIMIT, allowIrreversible=True)
    assert calls["c0"]["status"] == "done", calls
    assert (root / "f.txt").read_text().startswith("gamma")  # the hook ran
    undone = await undo(silent, sid, partial=True)
    assert [(p["path"], p["outcome"]) for p in undone["paths"]] == [("f.txt", "not_undoable")], undone
    assert "over the 1 KiB checkpoint limit (the checkpointMaxBytes setting)" in undone["paths"][0]["reason"]


async def test_within_the_limit_or_without_hooks_the_commit_runs_unasked_and_undoes(silent, tmp_path):  # noqa: F811
    for name, hook in (("hooked", True), ("plain", False)):
        root = workspace(tmp_path / name, hook=hook)
        before = state(root)
        sid, calls = await turn(silent, root, commit_script(root.parent), permissions=AUTO,
                                checkpointMaxBytes=LIMIT if not hook else 64 * 1024)
        assert calls["c0"]["status"] == "done", (name, calls)
        assert (await undo(silent, sid))["status"] == "undone"
        assert state(root) == before, name


async def test_a_file_that_grows_past_the_limit_after_the_question_stops_the_commit(client, tmp_path):  # noqa: F811
    root = workspace(tmp_path, dirty="alpha\nsmall\n")
    script = commit_script(tmp_path)

    def grow(params: dict) -> None:
        with open(root / "f.txt", "a") as fh:
            fh.write("more\n" * 400)

    client.before_permission = grow
    try:
        sid, calls = await turn(client, root, script, {"optionId": "allow_once"},
                                permissions={"edits": "auto", "git": "ask"}, checkpointMaxBytes=LIMIT)
    finally:
        client.before_permission = None
    (subject,) = subjects(client, sid)
    assert "irreversible" not in subject
    assert calls["c0"]["status"] == "errored" and calls["c0"]["error"]["code"] == "not_undoable", calls
    message = calls["c0"]["error"]["message"]
    assert message.startswith("not run, nothing changed: its checkpoint could not be taken"), message
    assert "f.txt: 2 KiB is over the 1 KiB checkpoint limit" in message and "a commit hook might change it" in message
    assert git(root, "log", "--format=%s") == "base\n" and (root / "f.txt").read_text().startswith("beta")


@pytest.mark.parametrize("args", [{"action": "create", "name": "fresh"}, {"action": "switch", "name": "other"}],
                         ids=["create", "switch"])
async def test_a_branch_switch_with_a_post_checkout_hook_is_asked_about(client, silent, tmp_path, args):  # noqa: F811
    """git runs post-checkout on git_branch's switch; what it writes is not recorded. It ran
    unasked, and undo answered undone with the hook's writes left, its own switch back
    running the hook again (notes.txt gained a line each way)."""
    root = tmp_path / "ws"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "f.txt").write_text("f\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "branch", "other")
    (root / "notes.txt").write_text("n\n")
    hook = root / ".git" / "hooks" / "post-checkout"
    hook.write_text("#!/bin/sh\necho hooked >> notes.txt\n")
    hook.chmod(0o755)
    before = state(root)
    script = calls_script(tmp_path / "s.jsonl", [("git_branch", args)])
    why = "the repository has a post-checkout hook, which git runs for git_branch, and what it changes is not recorded"
    sid, calls = await turn(client, root, script, {"optionId": "reject"}, permissions=AUTO)
    (subject,) = subjects(client, sid)
    assert subject["irreversible"] == {"reason": why}, subject
    assert calls["c0"]["cancelReason"] == "rejected" and state(root) == before

    sid, calls = await turn(silent, root, script, permissions=AUTO)
    assert calls["c0"]["error"]["code"] == "not_undoable" and f"Why: {why}." in calls["c0"]["error"]["message"], calls
    assert state(root) == before

    sid, calls = await turn(silent, root, script, permissions=AUTO, allowIrreversible=True)
    assert calls["c0"]["status"] == "done", calls
    assert (root / "notes.txt").read_text() == "n\nhooked\n"
    done = await undo(silent, sid)
    assert done["status"] == "undone", done
    assert (root / "notes.txt").read_text() == "n\nhooked\n"  # the undo's switch back ran no hook
    assert state(root)["git"] == before["git"]


@pytest.mark.parametrize(("tool", "args"), [("git_add", {"paths": ["f.txt"]}), ("git_restore", {"paths": ["f.txt"]}),
                                            ("git_restore", {"paths": ["f.txt"], "staged": True})],
                         ids=["add", "restore", "restore-staged"])
async def test_an_index_write_with_a_post_index_change_hook_is_asked_about(client, tmp_path, tool, args):  # noqa: F811
    root = workspace(tmp_path, hook=False, dirty="alpha\nsmall\n")
    if args.get("staged"):
        git(root, "add", "f.txt")
    hook = root / ".git" / "hooks" / "post-index-change"
    hook.write_text("#!/bin/sh\necho hooked >> notes.txt\n")
    hook.chmod(0o755)
    before = state(root)
    sid, calls = await turn(client, root, calls_script(tmp_path / "s.jsonl", [(tool, args)]), {"optionId": "reject"},
                            permissions=AUTO)
    (subject,) = subjects(client, sid)
    assert subject["irreversible"] == {"reason": (
        f"the repository has a post-index-change hook, which git runs for {tool}, and what it changes is not recorded")}
    assert calls["c0"]["cancelReason"] == "rejected" and state(root) == before
