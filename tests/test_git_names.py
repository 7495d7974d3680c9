"""File names that are not plain: not UTF-8, spaces, quotes, newlines, leading dashes,
control and bidi characters. Every name a git tool prints is valid Unicode and goes
back into every tool that takes a path (issue 10 §3). Real git, real files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitrepos import call, git, init_repo, isolated_git, jsonable  # noqa: F401 - fixture
from toolwire.agent.conversation import Conversation, valid_text
from toolwire.workspace.names import display_name, parse_quoted

LATIN1 = os.fsdecode(b"caf\xe9.txt")  # 'caf\udce9.txt'

#: (name on disk, how the tools print it)
NAMES = [
    (LATIN1, '"caf\\351.txt"'),
    ("with space.txt", "with space.txt"),
    ('say "hi".txt', 'say "hi".txt'),
    ("it's.txt", "it's.txt"),
    ("line\nbreak.txt", '"line\\nbreak.txt"'),
    ("tab\there.txt", '"tab\\there.txt"'),
    ("-rf", "-rf"),
    ("--help", "--help"),
    ("ünïcödé ✓.txt", "ünïcödé ✓.txt"),
    ("back\\slash.txt", "back\\slash.txt"),
    ("evil\u202etxt.exe", '"evil\\342\\200\\256txt.exe"'),
    ("zero\u200bwidth.txt", '"zero\\342\\200\\213width.txt"'),
    ('"quoted".txt', '"\\"quoted\\".txt"'),
]


@pytest.mark.parametrize(("name", "shown"), NAMES, ids=[repr(n) for n, _ in NAMES])
async def test_every_git_tool_prints_and_takes_back_the_name(tmp_path: Path, name: str, shown: str) -> None:
    repo = init_repo(tmp_path / "repo")
    path = repo / name
    path.write_bytes(b"one\n")
    git(repo, "add", "--", os.fsencode(name))
    git(repo, "commit", "-q", "-m", "add it")
    path.write_bytes(b"two\n")

    status = await call(repo, "git_status")
    jsonable(status.data)
    status.content.encode("utf-8")
    assert status.data and status.data["unstaged"] == [{"path": shown, "status": "M"}]
    assert f"M {shown}" in status.content

    diff = await call(repo, "git_diff", paths=[shown])
    jsonable(diff.data)
    assert diff.data and [f["path"] for f in diff.data["files"]] == [shown]
    assert "-one\n+two\n" in diff.content

    log = await call(repo, "git_log", path=shown)
    assert log.data and [c["subject"] for c in log.data["commits"]] == ["add it"]

    added = await call(repo, "git_add", paths=[shown])
    assert added.data and added.data["staged"] == [{"path": shown, "status": "M"}]
    jsonable(added.data)
    await call(repo, "git_restore", paths=[shown], staged=True)
    await call(repo, "git_restore", paths=[shown])
    assert path.read_bytes() == b"one\n"

    read = await call(repo, "read_file", path=shown)
    assert read.content == "one\n" and read.data and read.data["path"] == shown

    path.write_bytes(b"three\n")
    done = await call(repo, "git_commit", message="change it", paths=[shown])
    assert done.data and done.data["files"] == [{"status": "M", "path": shown}]
    jsonable(done.data)
    show = await call(repo, "git_show", rev="HEAD")
    assert show.data and [f["path"] for f in show.data["files"]] == [shown]
    show.content.encode("utf-8")


async def test_untracked_and_renamed_odd_names(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / LATIN1).write_bytes(b"x\n")
    git(repo, "mv", "a.txt", "line\nbreak.txt")
    data = (await call(repo, "git_status")).data
    jsonable(data)
    assert data and data["untracked"] == ['"caf\\351.txt"']
    assert data["renamed"] == [{"path": '"line\\nbreak.txt"', "from": "a.txt", "where": "staged"}]


async def test_a_lone_surrogate_never_stays_in_the_history() -> None:
    conv = Conversation("system")
    conv.add_user("look at caf\udce9.txt")
    conv.add_tool_result("call_1", "M caf\udce9.txt")
    conv.add_assistant("ok \udce9", [("c2", "read_file", '{"path": "caf\udce9.txt"}')])
    conv.add_tool_result("c2", "x")
    json.dumps(conv.messages, ensure_ascii=False).encode("utf-8")
    assert conv.messages[1]["content"] == "look at caf\ufffd.txt"
    conv.messages.append({"role": "user", "content": "sneaked in \ud800"})  # not through add_*
    assert "not valid Unicode" in " ".join(conv.repair())
    json.dumps(conv.messages, ensure_ascii=False).encode("utf-8")
    assert valid_text("\ud83d\ude00") == "\U0001f600"  # a surrogate pair is joined, not replaced


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=1, max_size=24).filter(lambda b: b"\x00" not in b and b"/" not in b))
def test_display_form_is_valid_unicode_and_round_trips(raw: bytes) -> None:
    name = os.fsdecode(raw)
    shown = display_name(name)
    shown.encode("utf-8")
    assert "\n" not in shown and "\u202e" not in shown
    back = name if shown == name else parse_quoted(shown)
    assert back is not None and os.fsencode(back) == raw


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=16).filter(lambda s: "\x00" not in s))
def test_display_form_of_text_round_trips(name: str) -> None:
    shown = display_name(name)
    shown.encode("utf-8")
    assert (parse_quoted(shown) if shown != name else name) == name
