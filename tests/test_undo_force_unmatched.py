"""A ``force`` entry that names nothing the turn changed is reported, not silently dropped.

Over the wire (real server over stdio): ``toolwire/session/undoTurn`` answers
``unmatchedForce`` (the entries as sent) and says so in ``message``; an entry
naming an index entry of the turn's ``git_add`` counts as matched. On the
command line (real ``toolwire run`` then ``toolwire undo``): one stderr line per
such ``--force``. Real files, real git.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import git, server_fixture
from undo_helpers import EDITOR_CAPABILITIES, calls_script, make_undo_editor, outcomes, run_turn, undo

ed = server_fixture("ed", make_undo_editor, EDITOR_CAPABILITIES)

NOWHERE = ["../x", "", "C:\\x", "a\x00b", "nope.txt", "../x"]


@pytest.mark.asyncio(loop_scope="module")
async def test_undo_turn_reports_force_entries_that_match_nothing(ed, repo, tmp_path):
    (repo / "staged.txt").write_text("staged\n")
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "hello.txt", "old_string": "hello", "new_string": "HELLO"}),
        ("git_add", {"paths": ["staged.txt"]}),
    ])
    sid, result = await run_turn(ed, repo, script)
    assert result["stopReason"] == "end_turn"
    (repo / "hello.txt").write_text("HELLO\nmine\n")  # changed since the turn: kept unless forced

    kept = await undo(ed, sid, force=NOWHERE)
    assert outcomes(kept) == {"hello.txt": "kept"}, kept
    assert kept["unmatchedForce"] == ["../x", "", "C:\\x", "a\x00b", "nope.txt"], kept
    assert ('Force entries that name no path of turn t1: ../x, "", C:\\x, "a\\000b", nope.txt '
            "(nothing was forced for them).") in kept["message"], kept["message"]
    assert (repo / "hello.txt").read_text() == "HELLO\nmine\n"

    # the index entry git_add changed counts as named; nothing unmatched
    forced = await undo(ed, sid, turnId="t1", force=["./hello.txt", "staged.txt"])
    assert forced["status"] == "undone" and forced["unmatchedForce"] == [], forced
    assert "Force entries" not in forced["message"]
    assert (repo / "hello.txt").read_text() == "hello\n"
    assert git(repo, "ls-files", "--", "staged.txt") == ""

    nothing = await undo(ed, sid, force=["../x"])
    assert nothing["status"] == "nothing_to_do" and nothing["unmatchedForce"] == ["../x"], nothing


def test_toolwire_undo_prints_a_line_per_unmatched_force(repo, tmp_path):
    script = calls_script(tmp_path / "s.jsonl", [
        ("edit_file", {"path": "hello.txt", "old_string": "hello", "new_string": "HELLO"})])

    def toolwire(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "toolwire", *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=120)

    ran = toolwire("run", "--workspace", str(repo), "--model", f"replay:{script}", "--approve", "yes", "go")
    assert ran.returncode == 0, ran.stderr
    (repo / "hello.txt").write_text("HELLO\nmine\n")
    kept = toolwire("undo", "--workspace", str(repo), "--force", "../x", "--force", "", "--force", "C:\\x")
    assert kept.returncode == 1, kept.stdout + kept.stderr
    assert "kept: hello.txt" in kept.stdout
    assert kept.stderr.splitlines() == [
        f"toolwire undo: --force {shown} matched no path of turn t1; nothing was forced for it "
        "(give a path as printed above)" for shown in ("../x", '""', "C:\\x")] + [
        "toolwire undo: nothing was changed; --partial restores the rest, --force PATH overwrites PATH"], kept.stderr

    forced = toolwire("undo", "--workspace", str(repo), "--json", "--force", "hello.txt", "--force", "../x")
    result = json.loads(forced.stdout)
    assert forced.returncode == 0 and result["status"] == "undone", result
    assert result["unmatchedForce"] == ["../x"]
    assert (repo / "hello.txt").read_text() == "hello\n"
