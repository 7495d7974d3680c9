"""Tool errors stay bounded whatever the input: at most 1000 characters, no absolute
path of the workspace, no more than about 80 characters of any input quoted
(protocol.md "Errors"). A real server over stdio runs every tool that takes a path,
a ref or a name with huge and odd values in a real git repository."""

from __future__ import annotations

import json
import os

import pytest

from conftest import new_session, prompt, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")

#: name → a value no tool can use; each longer than any quote an error may carry.
ODD = {
    "3000 x": "x" * 3000 + ".txt",
    "700 y": "y" * 700 + ".txt",
    "name with spaces": "a b " * 200,
    "path over 4096 bytes": "/".join(["d" * 200] * 30),
    "deep but valid": "/".join(["e" * 100] * 8) + "/f.txt",
    "spaced and deep": "/".join(["a b c d e"] * 120),
    "ref with spaces": "HEAD " * 300,
    "newlines": "a\n" * 300,
    "bidi": "\u202e\u200b" * 200 + ".txt",
    "absolute outside": "/etc/" + "z" * 500,
    "dots": "../" * 400 + "etc/passwd",
    "quoted form": '"' + "\\342\\200\\256" * 100 + '"',
}


def calls_for(value: str) -> list[dict]:
    """One call of every tool that takes a path, a ref or a name, with ``value`` there
    (consecutive calls name different tools, so no failure streak ends the turn)."""
    return [
        {"name": "read_file", "arguments": {"path": value}},
        {"name": "create_file", "arguments": {"path": value, "content": "x\n"}},
        {"name": "edit_file", "arguments": {"path": value, "old_string": "a", "new_string": "b"}},
        {"name": "delete_file", "arguments": {"path": value}},
        {"name": "rename_file", "arguments": {"path": "hello.txt", "new_path": value}},
        {"name": "multi_edit", "arguments": {"path": value, "edits": [{"old_string": "a", "new_string": "b"}]}},
        {"name": "rename_file", "arguments": {"path": value, "new_path": "n.txt"}},
        {"name": "git_add", "arguments": {"paths": [value]}},
        {"name": "git_restore", "arguments": {"paths": [value]}},
        {"name": "git_diff", "arguments": {"paths": [value]}},
        {"name": "git_log", "arguments": {"path": value}},
        {"name": "git_diff", "arguments": {"ref": value}},
        {"name": "git_log", "arguments": {"ref": value}},
        {"name": "git_show", "arguments": {"rev": value}},
        {"name": "git_branch", "arguments": {"action": "create", "name": value}},
        {"name": "git_commit", "arguments": {"message": "m", "paths": [value]}},
    ]


@pytest.mark.parametrize("label", list(ODD))
async def test_every_tool_error_is_bounded_relative_and_quotes_little(client, repo, tmp_path, label):
    value = ODD[label]
    script = write_script(tmp_path / "s.jsonl", [{"text": "trying", "chunk_size": 8192, "tool_calls": calls_for(value)},
                                                  {"text": "done"}])
    sid = await new_session(client, repo, script)
    await prompt(client, sid)
    roots = {str(repo), os.path.realpath(repo)}
    results = [snaps[-1] for snaps in client.tool_calls(sid).values()]
    assert len(results) == len(calls_for(value))
    failed = 0
    for call in results:
        assert call["status"] in ("done", "errored"), call["status"]
        texts = [call["result"]["content"]] if call.get("result") and not call["result"]["ok"] else []
        if call.get("error"):
            texts.append(call["error"]["message"])
        for text in texts:
            where = f"{call['name']}: {text[:300]!r}"
            assert len(text) <= 1000 + len("Error (invalid_path): "), (len(text), where)
            assert not any(root in text for root in roots), where
            for start in range(0, max(1, len(value) - 120), 40):  # no 120-character piece of the input
                assert value[start:start + 120] not in text, where
            assert json.dumps(value)[1:121] not in text, where
        failed += not call["result"]["ok"] if call.get("result") else 1
    assert failed >= 6  # the walk met errors (a valid deep path is created, then read, staged...)
