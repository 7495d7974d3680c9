"""Issue 21, "Done when", through ``toolwire run`` (the headless client, a real server over
stdio): the look-around turn (tests/look_around.py) with ``--approve yes``: the read of
``.env`` is refused saying why (``--approve yes`` never allows a file kept from the model),
the edit is allowed and lands on the disk, the rules files are named as the model gets
them. No editor: the disk is searched, as in ACP."""

from __future__ import annotations

import subprocess
import sys

from look_around import (FINAL_TEXT, NOT_SEARCHED, READ_UTIL, RECORDED_SEARCH, SCRIPT, SECRET, WORKSPACE, make_workspace)

KEPT = "Kept from the model (modelExclude): .env (pattern '.env'). Allowing shows it to the model for this call only."


def test_the_look_around_turn_through_toolwire_run(tmp_path):
    root = make_workspace(tmp_path / "ws")
    done = subprocess.run([sys.executable, "-m", "toolwire", "run", "--workspace", str(root), "--model",
                           f"replay:{SCRIPT}", "--approve", "yes", "Look around, then fix shout()."],
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    expected = [  # in this order, among the status lines
        "[rules] AGENTS.md (55 B)",
        "Let me look around first.",
        "[done] list_files list — .env (8 entries)",
        "[done] list_files glob — src/greet.py (2 entries)",
        f"[done] search_files {RECORDED_SEARCH} — []",  # the disk copy of src/greet.py has no TODO
        f"    {NOT_SEARCHED}",  # what the [] leaves out, under its line
        '[done] search_files ignored — build/gen.py:1: # TODO regenerate <img src=x onerror="window.__pwned=1">',
        f"    {NOT_SEARCHED}",
        "[approval] read_file secret rejected",
        "[canceled] read_file secret .env — rejected",
        "[rules] sub/AGENTS.md (53 B)",
        "[done] read_file read sub/util.py — " + READ_UTIL.split("\n")[0],
        "[approval] edit_file edit allowed once",
        "[done] edit_file edit sub/util.py — Edited sub/util.py: 1 replacement at line 2",
        FINAL_TEXT,
        "stop reason: end_turn",
    ]
    assert [line for line in lines if line in expected] == expected
    assert f"toolwire run: read_file rejected: {KEPT} (--approve yes never allows a file kept from the model; " \
           "answer it with --approve ask)" in done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert (root / "sub" / "util.py").read_text() == WORKSPACE["edited"]["sub/util.py"]
