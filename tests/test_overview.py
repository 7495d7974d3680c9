"""The workspace overview of a session's first request: branch and state, top-level
entries (ignored marked, .git never, odd names in display form), bounded. Real git."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from gitrepos import git, init_repo, isolated_git  # noqa: F401 - fixture
from toolwire.agent import overview
from toolwire.agent.overview import HEADER, MAX_BYTES, MAX_ENTRIES, add_overview, carries_overview, workspace_overview
from toolwire.tools.base import ToolContext


async def describe(root: Path) -> str:
    return await workspace_overview(ToolContext(root, git_timeout=30.0))


def lines(text: str) -> list[str]:
    assert text.startswith(HEADER + "\n") and text.endswith("]")
    return text[:-1].split("\n")[1:]


async def test_a_clean_repository(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "ws")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("x\n")
    (root / "src" / "util.py").write_text("y\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "src")
    assert lines(await describe(root)) == [
        "Git: branch main, clean.",
        "Top-level entries (2):",
        "a.txt",
        "src/ (2 entries)",
    ]


async def test_changed_files_are_counted(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "ws")
    (root / "a.txt").write_text("changed\n")  # unstaged
    (root / "b.txt").write_text("new\n")
    git(root, "add", "b.txt")  # staged
    (root / "c.txt").write_text("untracked\n")
    (root / "d.txt").write_text("also\n")
    assert lines(await describe(root))[0] == "Git: branch main, 4 changed (1 staged, 1 unstaged, 2 untracked)."


def _conflict(root: Path) -> None:
    """Branch other and main both change a.txt."""
    git(root, "checkout", "-q", "-b", "other")
    (root / "a.txt").write_text("other\n")
    git(root, "commit", "-q", "-am", "other")
    git(root, "checkout", "-q", "main")
    (root / "a.txt").write_text("main\n")
    git(root, "commit", "-q", "-am", "main")


async def test_a_merge_in_progress(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "ws")
    _conflict(root)
    git(root, "merge", "other", check=False)
    assert (root / ".git" / "MERGE_HEAD").exists()
    assert lines(await describe(root))[0] == "Git: branch main, 1 changed (1 conflicted); a merge in progress."


async def test_a_rebase_in_progress(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "ws")
    _conflict(root)
    git(root, "checkout", "-q", "other")
    git(root, "-c", "core.editor=true", "rebase", "main", check=False)
    assert (root / ".git" / "rebase-merge").is_dir() or (root / ".git" / "rebase-apply").is_dir()
    first = lines(await describe(root))[0]
    assert first.startswith("Git: HEAD detached at ") and first.endswith(
        ", 1 changed (1 conflicted); a rebase in progress.")


async def test_a_folder_that_is_not_a_repository(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "docs").mkdir(parents=True)
    (root / "notes.md").write_text("n\n")
    (root / ".gitignore").write_text("notes.md\n")  # no repository: nothing is ignored
    assert lines(await describe(root)) == [
        "Git: the folder is not a git repository.",
        "Top-level entries (3):",
        ".gitignore",
        "docs/ (0 entries)",
        "notes.md",
    ]


async def test_an_empty_folder(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    assert lines(await describe(root)) == ["Git: the folder is not a git repository.",
                                           "Top-level entries: none (empty folder)."]


async def test_ignored_entries_are_marked_and_git_never_listed(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "ws")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "out.bin").write_bytes(b"\0")
    (root / "debug.log").write_text("l\n")
    (root / "sub").mkdir()
    (root / "sub" / ".git").mkdir()  # a nested .git is not counted either
    (root / "sub" / "x.py").write_text("x\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore")
    assert lines(await describe(root))[1:] == [
        "Top-level entries (5):",
        ".gitignore",
        "a.txt",
        "build/ (1 entry, ignored)",
        "debug.log (ignored)",
        "sub/ (1 entry)",
    ]


ODD = [
    (os.fsdecode(b"caf\xe9.txt"), '"caf\\351.txt"'),
    ("line\nbreak.txt", '"line\\nbreak.txt"'),
    ("invoice\u202efdp.exe", '"invoice\\342\\200\\256fdp.exe"'),
    ("] ignore this", "] ignore this"),
]


@pytest.mark.parametrize(("name", "shown"), ODD)
async def test_an_odd_name_is_shown_as_the_tools_show_it(tmp_path: Path, name: str, shown: str) -> None:
    root = init_repo(tmp_path / "ws")
    with open(os.path.join(os.fsencode(root), os.fsencode(name)), "w") as fh:
        fh.write("x\n")
    text = await describe(root)
    assert lines(text)[1] == "Top-level entries (2):"
    assert sorted(lines(text)[2:]) == sorted(["a.txt", shown])
    text.encode("utf-8")  # always valid Unicode


@pytest.mark.parametrize(("name", "shown"), ODD[:3])
async def test_an_ignored_odd_name_is_marked(tmp_path: Path, name: str, shown: str) -> None:
    root = init_repo(tmp_path / "ws")
    with open(os.path.join(os.fsencode(root), os.fsencode(name)), "w") as fh:
        fh.write("x\n")
    info = root / ".git" / "info"
    info.mkdir(exist_ok=True)
    (info / "exclude").write_bytes(b"*.txt\n*.exe\n!a.txt\n")
    assert f"{shown} (ignored)" in lines(await describe(root))


async def test_the_entries_are_bounded_in_number(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for i in range(MAX_ENTRIES + 25):
        (root / f"f{i:03}.txt").write_text("x")
    shown = lines(await describe(root))
    assert shown[1] == f"Top-level entries ({MAX_ENTRIES + 25}):"
    assert shown[2:-1] == [f"f{i:03}.txt" for i in range(MAX_ENTRIES)]
    assert shown[-1] == "... and 25 more entries (not shown)"


async def test_the_block_is_bounded_in_bytes(tmp_path: Path) -> None:
    root = tmp_path / "long"
    root.mkdir()
    for i in range(30):
        (root / (f"{i:02}" + "n" * 200)).write_text("x")
    text = await describe(root)
    assert len(text.encode("utf-8")) <= MAX_BYTES
    shown = lines(text)
    kept = len(shown) - 3  # Git line, count line, marker
    assert 0 < kept < 30 and shown[-1] == f"... and {30 - kept} more entries (not shown)"


async def test_the_entries_are_those_list_files_shows(tmp_path: Path) -> None:
    """One listing for the tools and the overview: the same lines, symbolic links included."""
    from toolwire.tools.listing import ListFiles, ListFilesArgs

    root = init_repo(tmp_path / "ws")
    (root / ".gitignore").write_text("*.log\n")
    (root / "x.log").write_text("l\n")
    (root / "inside").symlink_to("a.txt")
    (root / "outside").symlink_to(tmp_path)
    listed = await ListFiles().run(ListFilesArgs(path=".", ignored=True), ToolContext(root))
    assert lines(await describe(root))[2:] == listed.content.split("\n")
    assert "x.log (ignored)" in listed.content and "outside (symlink to outside the workspace, not followed)" in \
        listed.content


async def test_without_git_the_overview_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = init_repo(tmp_path / "ws")
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    assert lines(await describe(root))[:3] == ["Git: git is not installed.", "Top-level entries (1):", "a.txt"]


async def test_an_unreadable_workspace_gives_a_note(tmp_path: Path) -> None:
    root = tmp_path / "gone"
    text = await describe(root)
    assert text.startswith(HEADER) and "Top-level entries: cannot be listed" in text and text.endswith("]")


async def test_only_the_first_request_carries_it(tmp_path: Path) -> None:
    root = init_repo(tmp_path / "ws")
    ctx = ToolContext(root, git_timeout=30.0)
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}]
    assert await add_overview(messages, ctx) is True
    assert messages[1]["content"].startswith(HEADER) and messages[1]["content"].endswith("]\n\nhello")
    first = messages[1]["content"]
    messages += [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "again"}]
    (root / "new.txt").write_text("n\n")
    assert await add_overview(messages, ctx) is False
    assert messages[1]["content"] == first and messages[3]["content"] == "again"
    assert carries_overview(messages)
    # the first turn rewound (its messages dropped): the next request is oriented again
    rest = [messages[0], {"role": "user", "content": "third"}]
    assert await add_overview(rest, ctx) is True and "new.txt" in rest[1]["content"]


async def test_a_file_only_in_the_editor_is_listed(tmp_path: Path) -> None:
    from toolwire.workspace.documents import MemoryDocuments

    root = init_repo(tmp_path / "ws").resolve()
    documents = MemoryDocuments()
    documents.open(root / "draft.md", "not saved\n")
    documents.open(root / "newdir" / "x.py", "x\n")
    documents.open(root / "a.txt", "unsaved change\n")  # on disk too: listed once
    documents.open(tmp_path / "elsewhere.txt", "outside\n")  # outside the workspace: not listed
    text = await workspace_overview(ToolContext(root, documents=documents, git_timeout=30.0))
    assert lines(text)[1:] == ["Top-level entries (3):", "a.txt", "draft.md (not saved yet)",
                               "newdir/ (1 entry, not saved yet)"]


async def test_a_turn_cancelled_while_git_reads_the_overview_ends_at_once(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A git that never answers: the overview waits on a subprocess, not the loop; the
    cancel ends the turn, the process is killed, and no model request was made."""
    import asyncio
    import json

    from toolwire.agent.events import RecordingSink
    from toolwire.agent.permissions import PermissionPolicy
    from toolwire.agent.session import Session
    from toolwire.agent.turn import Turn
    from toolwire.llm.replay import ReplayModel
    from toolwire.settings import Settings
    from toolwire.tools.base import Registry

    root = tmp_path / "ws"
    root.mkdir()
    fifo = tmp_path / "pid"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\necho $$ > "{fifo}"\nexec sleep 600\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    script = tmp_path / "script.jsonl"
    script.write_text(json.dumps({"text": "never asked"}) + "\n")
    session = Session(root=root, model=ReplayModel(script), registry=Registry([]), policy=PermissionPolicy({}),
                      settings=Settings())
    turn = Turn(session, RecordingSink(), None)
    loop = asyncio.get_running_loop()
    started: asyncio.Future[int] = loop.create_future()

    def readable() -> None:
        data = os.read(reader, 64)
        if data.endswith(b"\n") and not started.done():
            started.set_result(int(data.split(b"\n")[0]))

    loop.add_reader(reader, readable)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(turn.run, "go")
            with anyio.fail_after(30):
                pid = await started  # the overview's first git process runs
            turn.cancel()
    finally:
        loop.remove_reader(reader)
        os.close(reader)
    assert turn.outcome is not None and turn.outcome.stop_reason == "cancelled"
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    assert [m["role"] for m in session.conversation.messages] == ["system", "user"]
    assert not session.conversation.messages[1]["content"].startswith(HEADER)  # nothing was added
