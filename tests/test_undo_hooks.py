"""Undo a turn whose git_commit ran a repository hook that changed the working tree.

Real git, a real ``pre-commit`` hook script, the real server over stdio. The hook
formats the staged file and stages it again, bumps a tracked file it does not stage,
appends to an untracked file and creates a new one: undoing the turn puts every one
of them back (exact bytes, modes, index, HEAD), and a hook's file the user changed
afterwards is kept until forced.
"""

from __future__ import annotations

import os

import pytest

from conftest import git, server_fixture
from undo_helpers import EDITOR_CAPABILITIES, calls_script, make_undo_editor, outcomes, redo, run_turn, state, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")

ed = server_fixture("ed", make_undo_editor, EDITOR_CAPABILITIES)

FORMATTER = """#!/bin/sh
# a formatter: tabs become four spaces in the staged file, which is staged again
sed 's/\t/    /g' a.py > a.py.tmp && mv a.py.tmp a.py
git add a.py
printf '2\\n' > VERSION
printf 'hook was here\\n' >> notes.txt
printf 'formatted a.py\\n' > logs/hook.log
"""


def with_hook(repo, script: str = FORMATTER, name: str = "pre-commit") -> None:
    hook = repo / ".git" / "hooks" / name
    hook.write_text(script)
    os.chmod(hook, 0o755)


async def test_files_a_commit_hook_changed_are_undone_and_redone(ed, repo, tmp_path):
    (repo / "a.py").write_text("def f():\n\treturn 1\n")
    (repo / "VERSION").write_text("1\n")
    (repo / "logs").mkdir()
    (repo / "logs" / "keep.txt").write_text("k\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "notes.txt").write_bytes(b"my untracked notes\r\n")
    os.chmod(repo / "notes.txt", 0o600)
    with_hook(repo)
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.py", "old_string": "return 1", "new_string": "return 2"}),
        ("git_add", {"paths": ["a.py"]}),
        ("git_commit", {"message": "two"}),
    ])
    sid, _ = await run_turn(ed, repo, script)
    assert {c[-1]["status"] for c in ed.tool_calls(sid).values()} == {"done"}, ed.tool_calls(sid)
    assert git(repo, "show", "HEAD:a.py") == "def f():\n    return 2\n"  # the hook formatted what went in
    assert (repo / "VERSION").read_text() == "2\n" and (repo / "logs" / "hook.log").exists()
    after = state(repo)

    done = await undo(ed, sid)
    assert done["status"] == "undone", done
    assert outcomes(done) == {p: "restored" for p in ("a.py", "VERSION", "notes.txt", "logs/hook.log")}, done
    assert [g["outcome"] for g in done["git"]] == ["restored"] * len(done["git"]), done
    assert state(repo) == before  # bytes (CRLF), modes, index, HEAD, the hook's new file gone
    back = await redo(ed, sid)
    assert back["status"] == "redone", back
    assert state(repo) == after

    # the user changes a file the hook wrote: kept with the diff, then forced
    (repo / "VERSION").write_text("3\n")
    changed = state(repo)
    blocked = await undo(ed, sid)
    assert blocked["status"] == "blocked" and outcomes(blocked) == {"VERSION": "kept"} and blocked["git"] == [], blocked
    assert state(repo) == changed
    kept = await undo(ed, sid, partial=True)
    [version] = [p for p in kept["paths"] if p["path"] == "VERSION"]
    assert version["outcome"] == "kept" and "-3\n+1\n" in version["diff"], kept
    assert all(p["outcome"] == "restored" for p in kept["paths"] if p["path"] != "VERSION"), kept
    forced = await undo(ed, sid, force=["VERSION"])
    assert outcomes(forced) == {"VERSION": "restored"}, forced
    assert state(repo) == before


async def test_a_hook_that_changes_nothing_records_nothing_more(ed, repo, tmp_path):
    with_hook(repo, "#!/bin/sh\nexit 0\n")
    (repo / "untracked.txt").write_text("u\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "hello.txt", "old_string": "hello", "new_string": "bye"}),
        ("git_commit", {"message": "bye", "paths": ["hello.txt"]}),
    ])
    sid, _ = await run_turn(ed, repo, script)
    assert {c[-1]["status"] for c in ed.tool_calls(sid).values()} == {"done"}, ed.tool_calls(sid)
    done = await undo(ed, sid)
    assert outcomes(done) == {"hello.txt": "restored"}, done
    assert state(repo) == before


async def test_a_hook_that_formats_then_fails_the_commit_is_undone_too(ed, repo, tmp_path):
    """Like the pre-commit framework: the hook rewrites the file and fails the commit
    ("files were modified by this hook"). The commit is refused, the rewrite stays:
    undoing the turn takes back the turn's edit and the hook's rewrite."""
    (repo / "a.py").write_text("def f():\n\treturn 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    with_hook(repo, "#!/bin/sh\nsed 's/\t/    /g' a.py > a.py.tmp && mv a.py.tmp a.py\n"
                    "echo 'files were modified by this hook' >&2\nexit 1\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "a.py", "old_string": "return 1", "new_string": "return 2"}),
        ("git_add", {"paths": ["a.py"]}),
        ("git_commit", {"message": "two"}),
    ])
    sid, _ = await run_turn(ed, repo, script)
    statuses = [c[-1]["status"] for c in ed.tool_calls(sid).values()]
    assert statuses == ["done", "done", "errored"], ed.tool_calls(sid)
    assert (repo / "a.py").read_text() == "def f():\n    return 2\n"  # the hook's rewrite stayed
    done = await undo(ed, sid)
    assert done["status"] == "undone" and outcomes(done) == {"a.py": "restored"}, done
    assert state(repo) == before


async def test_hook_in_a_sub_folder_workspace_with_eol_attributes(ed, repo, tmp_path):
    """The workspace is packages/app; the hook (run at the repository's top) rewrites a
    clean tracked file whose attributes give it CRLF in the work tree (its blob has LF),
    and writes a file outside the workspace, which undo leaves alone."""
    app = repo / "packages" / "app"
    app.mkdir(parents=True)
    (repo / ".gitattributes").write_text("/packages/app/w.txt text eol=crlf\n")
    (app / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    (app / "main.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "app")
    assert git(repo, "cat-file", "-p", "HEAD:packages/app/w.txt") == "one\ntwo\n"  # LF in the blob
    with_hook(repo, "#!/bin/sh\nprintf 'hooked\\n' > packages/app/w.txt\nprintf 'o\\n' > outside.txt\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "main.py", "old_string": "x = 1", "new_string": "x = 2"}),
        ("git_commit", {"message": "app", "paths": ["main.py"]}),
    ])
    sid, _ = await run_turn(ed, app, script)
    assert {c[-1]["status"] for c in ed.tool_calls(sid).values()} == {"done"}, ed.tool_calls(sid)
    assert (app / "w.txt").read_bytes() == b"hooked\n"
    done = await undo(ed, sid)
    assert done["status"] == "undone" and outcomes(done) == {"main.py": "restored", "w.txt": "restored"}, done
    assert (app / "w.txt").read_bytes() == b"one\r\ntwo\r\n"  # git's checkout of the blob, exactly
    now = state(repo)
    assert now["tree"].pop("outside.txt")[1] == b"o\n"  # outside the workspace: not the turn's to undo
    assert now == before


async def test_what_the_tree_watch_records_and_what_it_leaves(repo, tmp_path, monkeypatch):
    """In process, real git and files: a changed file whose earlier bytes were over the
    capture limit is recorded unknown with the reason; an ignored file a hook writes is
    not recorded; a file the hook creates was absent; a changed untracked file comes back
    from the stored bytes; index entries a hook changes are reported."""
    from toolwire.agent import hook_changes
    from toolwire.agent.checkpoint_store import CheckpointStore
    from toolwire.tools.base import ToolContext

    monkeypatch.setenv("TOOLWIRE_STATE_DIR", str(tmp_path / "state"))
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "big.txt").write_text("0123456789" * 10)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "more")
    (repo / "big.txt").write_text("changed but not staged\n" * 10)  # dirty: 230 bytes
    (repo / "small.txt").write_text("untracked\n")
    (repo / "old.log").write_text("ignored\n")
    ctx = ToolContext(root=repo)
    store = CheckpointStore(repo)
    assert not await hook_changes.has_commit_hooks(ctx)
    with_hook(repo, "#!/bin/sh\nexit 0\n", name="post-commit")
    assert await hook_changes.has_commit_hooks(ctx)
    monkeypatch.setattr(hook_changes, "HOOK_CAPTURE_BYTES", 100)
    snap = await hook_changes.take_tree(ctx, store)
    assert snap is not None and set(snap.saved) == {"small.txt"} and "100-byte limit" in snap.unsaved["big.txt"]
    # what a hook does meanwhile
    (repo / "big.txt").write_text("hooked\n")
    (repo / "small.txt").write_text("hooked\n")
    (repo / "old.log").write_text("hooked\n")
    (repo / "new.txt").write_text("new\n")
    git(repo, "add", "new.txt")
    found = await hook_changes.tree_changes(snap, ctx, store)
    assert found is not None
    assert set(found.before) == {"big.txt", "small.txt", "new.txt"}  # not the ignored old.log
    assert found.before["big.txt"].kind == "unknown" and "limit" in found.before["big.txt"].reason
    assert found.before["new.txt"].kind == "absent"
    assert store.get(found.before["small.txt"].digest) == b"untracked\n"
    assert set(found.index_after) == {"new.txt"} and found.index_before == {}
