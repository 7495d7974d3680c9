"""The approval of a git call shows what a person checks (issue 25): the command as typed (never
the hardened argv), the files it changes and a diffstat; "allow always" quotes the command. Over
the real server on real repositories, in every front-end: LSP (the panel's request and the
``window/showMessageRequest`` fallback), ``toolwire acp`` and ``toolwire run`` on a terminal.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli_run import on_a_terminal, read_question
from conftest import ToolwireTestClient, make_client, prompt, server_fixture, write_script
from gitrepos import git, init_repo
from test_acp import RecordingClient, open_session, start, text
from test_exclude_approval import make_plain_recording_actions
from toolwire.tools.gitsubject import command_line, shell_word
from undo_helpers import calls_script

ON_SERVER = pytest.mark.asyncio(loop_scope="module")

client = server_fixture("client", make_client)
plain = server_fixture("plain", make_plain_recording_actions)


@pytest.mark.parametrize(("word", "shown"), [
    ("a.py", "a.py"),
    ("src/x-1.py", "src/x-1.py"),
    ("Fix x", '"Fix x"'),
    ("new file.txt", '"new file.txt"'),
    ('say "hi"', "'say \"hi\"'"),
    ("costs $5", "'costs $5'"),
    ("it's $HOME", "'it'\\''s $HOME'"),
    ("Fix x\n\nBody", "$'Fix x\\n\\nBody'"),
    ("evil\u202etxt", "$'evil\\u202etxt'"),
    ("bell\x07 it's", "$'bell\\x07 it\\'s'"),
    (os.fsdecode(b"caf\xe9.txt"), "$'caf\\351.txt'"),
    ("café.txt", '"café.txt"'),
])
def test_words_are_quoted_as_a_person_types_them_for_bash(word: str, shown: str) -> None:
    assert shell_word(word) == shown
    if "\udce9" in word:
        return  # bash's $'\351' is the byte; a str with a surrogate cannot go through subprocess as text
    echoed = subprocess.run(["bash", "-c", f"printf %s {shown}"], capture_output=True, text=True, check=True).stdout
    assert echoed == word


def test_a_command_line() -> None:
    assert command_line(["commit", "-m", "Fix x", "--", "a.py", "b.py"]) == 'git commit -m "Fix x" -- a.py b.py'


def repo(tmp_path: Path) -> Path:
    root = init_repo(tmp_path / "ws")
    (root / "a.txt").write_text("one\ntwo\nthree\n")  # +2 -0 unstaged
    (root / "new file.txt").write_text("x\ny\n")
    (root / "ignored.log").write_text("noise\n")
    (root / ".gitignore").write_text("*.log\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore logs")
    return root.resolve()


async def lsp_turn(lsp: ToolwireTestClient, root: Path, tmp_path: Path, calls: list[tuple[str, dict[str, Any]]],
                   answer: Any = None) -> tuple[str, dict[str, dict[str, Any]]]:
    script = calls_script(tmp_path / f"s{len(list(tmp_path.glob('s*.jsonl')))}.jsonl", calls)
    result = await lsp.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}"})
    sid = result["sessionId"]
    if answer is not None:
        lsp.answers[sid] = answer
    outcome = await prompt(lsp, sid)
    assert outcome["stopReason"] == "end_turn", outcome
    return sid, {cid: snaps[-1] for cid, snaps in lsp.tool_calls(sid).items()}


ADD = ("git_add", {"paths": ["a.txt", "new file.txt"]})


@ON_SERVER
async def test_lsp_git_subjects_carry_the_command_files_and_diffstat(client, tmp_path):
    root = repo(tmp_path)
    commit = ("git_commit", {"message": "Fix x", "paths": ["a.txt"]})
    sid, calls = await lsp_turn(client, root, tmp_path, [ADD, ADD, commit, ("git_restore", {"paths": ["a.txt"], "staged": True})],
                                [{"optionId": "allow_always"}, {"optionId": "reject"}, {"optionId": "reject"}])
    asked = client.permission_requests[sid]
    assert [r["toolCall"]["toolCallId"] for r in asked] == ["c0", "c2", "c3"]  # the second add: the rule
    add = asked[0]["subject"]
    assert add["command"] == 'git add -- a.txt "new file.txt"'
    assert add["argv"][0] == "git" and "--literal-pathspecs" in add["argv"]  # argv stays, hardened
    assert add["files"] == [{"path": "a.txt", "added": 2, "removed": 0}, {"path": "new file.txt", "added": 2, "removed": 0}]
    assert add["diffstat"] == {"files": 2, "added": 4, "removed": 0}
    always = [o for o in asked[0]["options"] if o["optionId"] == "allow_always"]
    assert always == [{"optionId": "allow_always", "name": 'Allow always: git add -- a.txt "new file.txt"',
                       "kind": "allow_always"}]
    assert calls["c0"]["status"] == calls["c1"]["status"] == "done"
    # the commit of one path holds that path only (new file.txt is staged but not committed by it)
    sub = asked[1]["subject"]
    assert sub["command"] == 'git commit -m "Fix x" -- a.txt'
    assert sub["files"] == [{"path": "a.txt", "added": 2, "removed": 0}]
    assert [o["name"] for o in asked[1]["options"] if o["optionId"] == "allow_always"] == [
        'Allow always: git commit -m "Fix x" -- a.txt (any message)']
    restore = asked[2]["subject"]
    assert restore["command"] == "git restore --staged -- a.txt" and restore["diffstat"]["added"] == 2
    assert git(root, "log", "-1", "--format=%s").strip() == "ignore logs"


@ON_SERVER
async def test_lsp_a_commit_of_what_is_staged_lists_the_staged_files(client, tmp_path):
    root = repo(tmp_path)
    git(root, "rm", "-q", "-f", "a.txt")
    sid, calls = await lsp_turn(client, root, tmp_path, [("git_commit", {"message": "it's $HOME\nbody"})],
                                {"optionId": "reject"})
    (asked,) = client.permission_requests[sid]
    assert asked["subject"]["command"] == "git commit -m $'it\\'s $HOME\\nbody'"
    assert asked["subject"]["files"] == [{"path": "a.txt", "added": 0, "removed": 1}]
    assert asked["subject"]["diffstat"] == {"files": 1, "added": 0, "removed": 1}


@ON_SERVER
async def test_a_plain_editor_s_question_shows_the_command_and_quotes_it_in_allow_always(plain, tmp_path):
    root = repo(tmp_path)
    sid, calls = await lsp_turn(plain, root, tmp_path, [ADD])
    (asked,) = plain.asked
    assert 'Toolwire wants to run git_add:\ngit add -- a.txt "new file.txt"\n' in asked, asked
    assert "a.txt +2 -0\nnew file.txt +2 -0\n2 files, +4 -0" in asked
    assert "--literal-pathspecs" not in asked
    assert plain.actions == [["Allow once", 'Allow always: git add -- a.txt "new file.txt"', "Reject"]]
    assert calls["c0"]["cancelReason"] == "rejected"


class OptionsClient(RecordingClient):
    """Records the options of each permission request too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.options: list[list[Any]] = []

    async def request_permission(self, options: list[Any], session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        self.options.append(options)
        return await super().request_permission(options, session_id, tool_call, **kwargs)


@ON_SERVER
async def test_acp_the_question_shows_the_command_and_files(tmp_path):
    root = repo(tmp_path)
    acp = OptionsClient(answers=["reject"])
    async with await start(acp, f"replay:{calls_script(tmp_path / 'acp.jsonl', [ADD])}") as (conn, _process):
        sid = await open_session(conn, root)
        response = await conn.prompt(session_id=sid, prompt=text("stage"))
    assert response.stop_reason == "end_turn"
    (request,) = acp.permissions
    shown = request.content[0].content.text
    assert shown == (f'$ git add -- a.txt "new file.txt"\n(in {root})\n'
                     "a.txt +2 -0\nnew file.txt +2 -0\n2 files, +4 -0"), shown
    assert [o.name for o in acp.options[0]] == [
        "Allow once", 'Allow always (this session): git add -- a.txt "new file.txt"', "Reject"]
    assert not acp.invalid, acp.invalid


@ON_SERVER
async def test_toolwire_run_asks_with_the_command_and_files(tmp_path):
    root = repo(tmp_path)
    script = write_script(tmp_path / "run.jsonl", [
        {"tool_calls": [{"name": "git_add", "arguments": ADD[1], "id": "g1"}]}, {"text": "done"}])
    with on_a_terminal(root, script, "--approve", "ask") as (proc, master):
        lines = read_question(proc)
        os.write(master, b"n\n")
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    at = lines.index('git add -- a.txt "new file.txt"')
    assert lines[at + 1:at + 4] == ["a.txt +2 -0", "new file.txt +2 -0", "2 files, +4 -0"], lines
    assert not any("--literal-pathspecs" in line for line in lines)
    assert git(root, "diff", "--cached", "--name-only") == ""


@ON_SERVER
async def test_a_branch_switch_lists_what_differs_and_a_create_nothing(tmp_path):
    from toolwire.agent.permissions import build_subject
    from toolwire.tools.base import ToolContext, validate_arguments
    from gitrepos import REG

    root = repo(tmp_path)
    git(root, "switch", "-q", "-c", "other")
    (root / "b.txt").write_text("b\n")
    git(root, "add", "b.txt")
    git(root, "commit", "-q", "-m", "b")
    git(root, "switch", "-q", "main")
    tool = REG.get("git_branch")
    switch = await build_subject(tool, validate_arguments(tool, {"action": "switch", "name": "other"}), ToolContext(root))
    assert switch["command"] == "git switch other"
    assert switch["files"] == [{"path": "b.txt", "added": 1, "removed": 0}]
    create = await build_subject(tool, validate_arguments(tool, {"action": "create", "name": "new"}), ToolContext(root))
    assert (create["command"], create["files"], create["diffstat"]) == ("git switch -c new", [], {
        "files": 0, "added": 0, "removed": 0})


@pytest.mark.parametrize("rev", ["--output=pwned", "-p", "-"])
def test_a_revision_starting_with_a_dash_is_never_shown_as_an_option(tmp_path: Path, rev: str) -> None:
    """The tools refuse such a revision as they run; the command pasted into bash must not run it as an
    option (``git show --output=x`` writes a file): it goes after --end-of-options, and git fails on it."""
    from toolwire.tools.git import GitLog
    from toolwire.tools.gitdiff import GitDiff, GitShow
    root = repo(tmp_path)
    for tool, args in ((GitShow(), {"rev": rev}), (GitLog(), {"ref": rev}), (GitDiff(), {"ref": rev})):
        line = command_line(tool.git_command(tool.Args.model_validate(args)))
        assert "--end-of-options" in line, line
        run = subprocess.run(["bash", "-c", line], cwd=root, capture_output=True, text=True)
        assert run.returncode != 0 and not (root / "pwned").exists(), (line, run)


HOSTILE_NAMES = ["[ab].txt", "$(touch pwned)", "-rf", "it's \"q\" `x`", "new\nline.txt", ":!a.txt", "*", "tab\there.txt"]


@ON_SERVER
async def test_hostile_names_in_the_command_paste_into_bash_exactly(client, tmp_path):
    """The subject's command, run by bash in the repository, stages exactly the files the tool would:
    no substitution runs, a leading '-' stays a path, '[ab].txt' and ':!a.txt' are names, not patterns."""
    root = repo(tmp_path)
    (root / "b.txt").write_text("b\n")
    for name in HOSTILE_NAMES:
        (root / name).write_text("x\n")
    message = "Fix $(touch pwned) `id` it's \"done\"\n\n-m body"
    calls = [("git_add", {"paths": HOSTILE_NAMES}), ("git_commit", {"message": message})]
    sid, _ = await lsp_turn(client, root, tmp_path, calls, [{"optionId": "reject"}, {"optionId": "reject"}])
    add, commit = (r["subject"] for r in client.permission_requests[sid])
    assert add["command"].startswith("git --literal-pathspecs add -- "), add["command"]
    subprocess.run(["bash", "-c", add["command"]], cwd=root, check=True, capture_output=True)
    staged = git(root, "diff", "--cached", "--name-only", "-z").split("\0")[:-1]
    assert sorted(staged) == sorted(HOSTILE_NAMES) and not (root / "pwned").exists()
    assert commit["command"].startswith("git commit -m ")
    subprocess.run(["bash", "-c", commit["command"]], cwd=root, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "T",
                        "GIT_COMMITTER_EMAIL": "t@x"})
    assert git(root, "log", "-1", "--format=%B").rstrip("\n") == message and not (root / "pwned").exists()


def test_any_words_round_trip_through_bash() -> None:
    """Generated words (every character but NUL, leading '-', quotes, $(…), line breaks, bidi): the
    line bash reads gives back exactly the words."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    chars = st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",))

    @settings(max_examples=200, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.one_of(st.text(chars, max_size=12), st.sampled_from(["-rf", "$(id)", "`id`", "'", '"', "\n"])),
                    min_size=1, max_size=5))
    def run(words: list[str]) -> None:
        line = " ".join(shell_word(w) for w in words)
        out = subprocess.run(["bash", "-c", f"printf '%s\\0' {line}"], capture_output=True, check=True).stdout
        assert out.split(b"\0")[:-1] == [w.encode() for w in words], line

    run()
