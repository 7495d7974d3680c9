"""Issue 11 §1: with ``toolCalling: "text"``, a ``<tool_call>`` written only inside
``<think>`` or a code fence is text — even with ``delete_file`` on ``auto`` the file stays."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import write_script

DELETE = '<tool_call>{"name": "delete_file", "arguments": {"path": "important.txt"}}</tool_call>'


def test_delete_only_in_think_and_in_a_fence_runs_nothing(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "important.txt").write_text("keep me\n")
    text = (f"<think>The user might want {DELETE} but I am not sure.</think>\n"
            f"For example, a call looks like:\n```\n{DELETE}\n```\nI will not delete anything.")
    script = write_script(tmp_path / "s.jsonl", [{"text": text, "chunk_size": 5}, {"text": "Done."}])
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "run", "--workspace", str(root), "--model", f"replay:{script}", "--json",
         "--approve", "yes", "--settings", json.dumps({"toolCalling": "text", "permissions": {"delete_file": "auto"}}),
         "clean up"], capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert not [u for u in lines if u.get("update", {}).get("sessionUpdate") == "tool_call"]
    assert lines[-1]["stopReason"] == "end_turn"
    assert (root / "important.txt").read_text() == "keep me\n"
