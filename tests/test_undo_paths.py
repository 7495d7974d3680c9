"""Undo records the path a tool really touched, whatever spelling the model wrote.

Real server over stdio, real files, symlinked folders and a real git repository:
``./a/../b.txt``, a path through a symlinked folder, ``..`` after a link (the OS
resolves it from the link's target), another Unicode normalization form of an
existing name, ``\\`` separators, a Latin-1 name written in git's quoted form.
Undo must restore the exact bytes of the file really changed and report it in
display form (valid Unicode), and ``force`` must accept any spelling of it.
"""

from __future__ import annotations

import json
import os
import unicodedata

import pytest

from conftest import git, server_fixture
from undo_helpers import EDITOR_CAPABILITIES, calls_script, make_undo_editor, outcomes, redo, run_turn, state, undo

pytestmark = pytest.mark.asyncio(loop_scope="module")

ed = server_fixture("ed", make_undo_editor, EDITOR_CAPABILITIES)

NFC = unicodedata.normalize("NFC", "café.txt")
NFD = unicodedata.normalize("NFD", "café.txt")


def layout(root):
    """a/ (a folder), real/ with a file, link -> real, deep/er/ and up -> deep/er (``up/..`` is deep)."""
    (root / "a").mkdir()
    (root / "b.txt").write_bytes(b"b one\r\nb two\r\n")
    (root / "real").mkdir()
    (root / "real" / "x.txt").write_bytes(b"\xef\xbb\xbfx one\nx two\n")
    os.symlink("real", root / "link")
    (root / "deep" / "er").mkdir(parents=True)
    (root / "deep" / "y.txt").write_text("deep y\n")
    (root / "y.txt").write_text("top y, never touched\n")
    os.symlink("deep/er", root / "up")
    (root / NFC).write_text("accent\n")
    (root / "sub").mkdir()
    (root / "sub" / "w.txt").write_text("win\n")
    os.chmod(root / "sub" / "w.txt", 0o755)


async def test_every_spelling_undoes_the_file_really_touched(ed, repo, tmp_path):
    layout(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "layout")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "./a/../b.txt", "old_string": "b one", "new_string": "B ONE"}),
        ("edit_file", {"path": "link/x.txt", "old_string": "x two", "new_string": "X TWO"}),
        ("create_file", {"path": "link/made.txt", "content": "made through the link\n"}),
        # the OS resolves ".." after following up -> deep/er: this is deep/y.txt, not y.txt
        ("edit_file", {"path": "up/../y.txt", "old_string": "deep y", "new_string": "DEEP Y"}),
        ("multi_edit", {"path": NFD, "edits": [{"old_string": "accent", "new_string": "ACCENT"}]}),
        ("edit_file", {"path": "sub\\w.txt", "old_string": "win", "new_string": "WIN"}),
        ("rename_file", {"path": "./link/../real/made.txt", "new_path": "link/moved.txt"}),
    ], per_response=1)
    sid, result = await run_turn(ed, repo, script)
    assert result["stopReason"] == "end_turn"
    assert {c[-1]["status"] for c in ed.tool_calls(sid).values()} == {"done"}, ed.tool_calls(sid)
    assert (repo / "deep" / "y.txt").read_text() == "DEEP Y\n" and (repo / "y.txt").read_text() == "top y, never touched\n"
    assert (repo / "real" / "moved.txt").exists() and not (repo / "real" / "made.txt").exists()
    after = state(repo)

    done = await undo(ed, sid)
    assert done["status"] == "undone", done
    assert outcomes(done) == {p: "restored" for p in (
        "b.txt", "real/x.txt", "deep/y.txt", NFC, "sub/w.txt", "real/moved.txt")}, done  # made.txt: made and moved
    assert state(repo) == before  # exact bytes (BOM, CRLF), modes, links, nothing else touched
    assert (await redo(ed, sid))["status"] == "redone"
    assert state(repo) == after

    # changed since: kept; force names it in any spelling a tool accepts
    (repo / "real" / "x.txt").write_bytes(b"user\n")
    (repo / "deep" / "y.txt").write_text("user y\n")
    changed = state(repo)
    kept = await undo(ed, sid)
    assert kept["status"] == "blocked" and outcomes(kept) == {"real/x.txt": "kept", "deep/y.txt": "kept"}, kept
    assert state(repo) == changed  # planned first: nothing was changed
    forced = await undo(ed, sid, force=["./link/../link/x.txt", "up/../y.txt"])
    assert forced["status"] == "undone", forced
    assert {p: o for p, o in outcomes(forced).items() if p in ("real/x.txt", "deep/y.txt")} == {
        "real/x.txt": "restored", "deep/y.txt": "restored"}, forced
    assert state(repo) == before


LATIN1 = os.fsdecode(b"caf\xe9.txt")  # a Latin-1 name: not UTF-8
QUOTED = '"caf\\351.txt"'  # git's quoted form of it, as the tools print it


async def test_a_name_that_is_not_utf8_is_undone_and_reported_in_display_form(ed, repo, tmp_path):
    (repo / LATIN1).write_bytes(b"latin one\n")
    os.symlink("real", repo / "link")
    (repo / "real").mkdir()
    (repo / "real" / "s.txt").write_text("staged one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "latin")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": QUOTED, "old_string": "one", "new_string": "two"}),
        ("git_add", {"paths": [QUOTED]}),
        ("edit_file", {"path": "link/s.txt", "old_string": "one", "new_string": "two"}),
        ("git_add", {"paths": ["real/s.txt"]}),
    ])
    sid, _ = await run_turn(ed, repo, script)
    assert {c[-1]["status"] for c in ed.tool_calls(sid).values()} == {"done"}, ed.tool_calls(sid)
    assert (repo / LATIN1).read_bytes() == b"latin two\n"
    # the user changes both files afterwards: kept, then forced under other spellings
    (repo / LATIN1).write_bytes(b"latin user\n")
    (repo / "real" / "s.txt").write_text("user\n")
    changed = state(repo)
    blocked = await undo(ed, sid)
    json.dumps(blocked, ensure_ascii=False).encode("utf-8")  # valid Unicode all through
    assert blocked["status"] == "blocked" and outcomes(blocked) == {QUOTED: "kept", "real/s.txt": "kept"}, blocked
    assert blocked["git"] == [] and QUOTED in blocked["message"], blocked
    assert state(repo) == changed
    kept = await undo(ed, sid, partial=True)
    json.dumps(kept, ensure_ascii=False).encode("utf-8")
    assert kept["status"] == "partial" and outcomes(kept) == {QUOTED: "kept", "real/s.txt": "kept"}, kept
    assert [g["outcome"] for g in kept["git"]] == ["restored", "restored"], kept
    assert any(QUOTED in g["action"] for g in kept["git"]), kept
    forced = await undo(ed, sid, force=[QUOTED, "link/s.txt"])
    assert outcomes(forced) == {QUOTED: "restored", "real/s.txt": "restored"}, forced
    assert state(repo) == before


async def test_deleted_files_whose_names_read_as_other_spellings_come_back(ed, repo, tmp_path):
    """Names that resolve_path would read as another path once they are gone (a literal
    backslash, a leading ~, a leading double quote) are restored under their own name."""
    names = ["back\\slash.txt", "~tilde.txt", '"q".txt']
    for n, name in enumerate(names):
        (repo / name).write_text(f"literal {n}\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [("delete_file", {"path": name}) for name in names])
    sid, _ = await run_turn(ed, repo, script)
    assert {c[-1]["status"] for c in ed.tool_calls(sid).values()} == {"done"}, ed.tool_calls(sid)
    assert not any(os.path.lexists(repo / name) for name in names)
    done = await undo(ed, sid)
    assert done["status"] == "undone", done
    assert outcomes(done) == {"back\\slash.txt": "restored", "~tilde.txt": "restored", '"\\"q\\".txt"': "restored"}
    assert state(repo) == before


async def test_a_record_saved_with_file_system_names_still_answers_in_display_form(repo, tmp_path):
    """Records saved before paths were kept in display form hold the file-system name in
    ``path`` (a lone surrogate for a Latin-1 byte): ``toolwire undo`` still restores the
    file and prints valid UTF-8 JSON with the quoted form."""
    import subprocess
    import sys

    from toolwire.agent.checkpoint_store import CheckpointStore

    (repo / LATIN1).write_bytes(b"latin one\n")
    before = state(repo)
    script = calls_script(tmp_path / "s.jsonl", [("edit_file", {"path": QUOTED, "old_string": "one", "new_string": "two"}),
                                                 ("git_add", {"paths": [QUOTED]})])
    run = [sys.executable, "-m", "toolwire"]
    ran = subprocess.run([*run, "run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "yes", "go"],
                         capture_output=True, stdin=subprocess.DEVNULL, timeout=120)
    assert ran.returncode == 0, ran.stderr
    store = CheckpointStore(repo.resolve())
    [saved] = sorted(store.turns.glob("*.json"))
    record = json.loads(saved.read_text(encoding="utf-8"))
    [(key, change)] = record["paths"].items()
    assert key == LATIN1 and change["path"] == QUOTED and change["name"] == LATIN1
    change["path"] = change.pop("name")  # the earlier format
    saved.write_text(json.dumps(record), encoding="utf-8")
    undone = subprocess.run([*run, "undo", "--workspace", str(repo), "--json"], capture_output=True,
                            stdin=subprocess.DEVNULL, timeout=120)
    result = json.loads(undone.stdout.decode("utf-8"))  # strict UTF-8: no lone surrogate
    assert undone.returncode == 0 and [(p["path"], p["outcome"]) for p in result["paths"]] == [(QUOTED, "restored")]
    assert result["git"] == [{"action": f"index entries of {QUOTED}", "outcome": "restored"}], result
    assert state(repo) == before  # the file and the index entry git_add made
