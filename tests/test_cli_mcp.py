"""``toolwire run`` with MCP servers (issue 23, "toolwire run"): a subprocess as a user runs it on a
terminal, a real server, real ``mcp-server-time`` and ``mcp-server-git`` (tests/mcp_servers.py) and
one that never starts. The question names the server, its hints and, for a tool not marked
read-only, that Toolwire cannot undo it; MCP calls print like every call; the server that fails is
told once on stderr."""

from __future__ import annotations

import json
import os

from cli_run import on_a_terminal, read_question
from conftest import write_script
from mcp_servers import git_server, time_server


def test_mcp_calls_on_a_terminal_and_a_server_that_never_starts(repo, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "mcp__time__get_current_time", "arguments": {"timezone": "UTC"}, "id": "t1"}]},
        {"tool_calls": [{"name": "mcp__git__git_add", "id": "a1",
                         "arguments": {"repo_path": str(repo), "files": ["hello.txt"]}}]},
        {"text": "Done."}])
    settings = json.dumps({"mcpServers": {"broken": {"command": str(tmp_path / "no-such-server")},
                                          "time": time_server(), "git": {**git_server(repo), "tools": ["git_add"]}}})
    with on_a_terminal(repo, script, "--approve", "ask", "--settings", settings) as (proc, master):
        first = read_question(proc)
        os.write(master, b"y\n")
        second = read_question(proc)
        os.write(master, b"n\n")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    asked = first.index("Allow mcp__time__get_current_time? (get_current_time from the MCP server time)")
    assert first[asked + 1] == "Hints from the server, not checked: read-only, not destructive, closed world.", first
    assert first[asked - 1] != "Toolwire cannot undo what this tool does.", first  # read-only: no undo line
    at = second.index("Toolwire cannot undo what this tool does.")
    assert second[at + 1] == "Allow mcp__git__git_add? (git_add from the MCP server git)", second
    assert second[at + 2] == "Hints from the server, not checked: not read-only, not destructive, closed world.", second
    assert json.loads(second[at + 3]) == {"repo_path": str(repo), "files": ["hello.txt"]}
    stdout = out.decode()
    assert "[done] mcp__time__get_current_time t1 — {" in stdout, stdout
    assert "[approval] mcp__time__get_current_time t1 allowed once" in stdout
    assert "[approval] mcp__git__git_add a1 rejected" in stdout
    stderr = "\n".join(first + second) + "\n" + err.decode()
    failures = [line for line in stderr.splitlines() if "MCP server broken" in line]
    assert len(failures) == 1 and failures[0].startswith("toolwire run: warning: MCP server broken is not available"), \
        stderr
