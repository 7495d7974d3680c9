"""Git output is cut where git cuts it: after LF, or at NUL with ``-z``.

:meth:`str.splitlines` also breaks at U+2028, U+2029, U+0085, \\x1c-\\x1e, \\r, \\v and
\\f. Those can be part of a branch name, a config subsection (a filter driver's
name), a commit message or a file's content, so a parser that used it cut a name
or a patch line in two. Real git, real files; each test failed with the
``splitlines`` parsers.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gitrepos import call, git, init_repo, isolated_git  # noqa: F401 - fixture
from toolwire.tools.gitdiff import PER_FILE_CHARS
from toolwire.tools.gitrun import blank_filters, run_git

pytestmark = pytest.mark.usefixtures("isolated_git")

#: Characters ``str.splitlines`` breaks at that git does not.
ODD = ["\u2028", "\x85", "\x1c", "\r"]


async def test_branch_list_keeps_names_that_hold_line_separators(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "one")
    names = ["feature\u2028x", "next\x85line", "para\u2029graph"]  # \x1c and \r are not allowed in ref names
    for name in names:
        git(repo, "branch", name)

    listed = await call(repo, "git_branch", action="list")

    assert listed.data is not None
    assert sorted(b["name"] for b in listed.data["branches"]) == sorted([*names, "main"])
    for name in names:
        assert f"  {name} " in listed.content


@pytest.mark.parametrize("odd", ODD, ids=["U+2028", "U+0085", "x1c", "CR"])
async def test_filter_drivers_whose_names_hold_line_separators_are_switched_off(tmp_path: Path, odd: str) -> None:
    repo = init_repo(tmp_path / "repo")
    name = f"tidy{odd}up"
    marker = tmp_path / "filter-ran"  # init_repo committed a.txt holding "one"
    git(repo, "config", f"filter.{name}.clean", f"touch '{marker}'; cat")
    git(repo, "config", f"filter.{name}.smudge", f"touch '{marker}'; cat")

    settings = await blank_filters(repo, 10)

    assert f"filter.{name}.clean=" in settings and f"filter.{name}.smudge=" in settings
    if odd != "\r":  # git reads \r in .gitattributes as white space, so no file can name that driver
        (repo / ".git" / "info" / "attributes").write_text(f"*.txt filter={name}\n", encoding="utf-8")
        (repo / "a.txt").write_text("two\n")
        out = await run_git(repo, ["diff", "--no-ext-diff"], read_only=True, timeout=10)  # compares through the clean filter
        assert "+two" in out.text
        assert not marker.exists(), "a read-only git run ran the repository's filter driver"


def _patch_lines(content: str) -> list[str]:
    return ["+" + line + "\n" for line in content.split("\n") if line]


async def test_diff_blocks_and_lines_are_cut_at_lf_only(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("")
    (repo / "b.txt").write_text("")
    git(repo, "add", "a.txt", "b.txt")
    git(repo, "commit", "-q", "-m", "empty")
    odd = "".join(f"line {n}: left{ch}right\n" for n, ch in enumerate(ODD))
    odd += "notes\u2028diff --git a/fake b/fake\n"  # would start a third block
    (repo / "a.txt").write_text(odd, newline="")
    (repo / "b.txt").write_text("plain\n")

    diff = await call(repo, "git_diff")

    assert diff.data is not None
    files = diff.data["files"]
    assert [(f["path"], f["added"], f["truncated"]) for f in files] == [("a.txt", 5, False), ("b.txt", 1, False)]
    for line in _patch_lines(odd):
        assert line in diff.content
    assert diff.content.index("+plain\n") > diff.content.index("diff --git a/b.txt b/b.txt")


async def test_a_long_patch_is_cut_between_whole_lines_and_counted_right(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "big.txt").write_text("")
    git(repo, "add", "big.txt")
    git(repo, "commit", "-q", "-m", "empty")
    lines = [f"row {n:04d} " + "x" * 20 + ODD[n % len(ODD)] + "y" * 20 for n in range(PER_FILE_CHARS // 40)]
    (repo / "big.txt").write_text("".join(line + "\n" for line in lines), newline="")

    diff = await call(repo, "git_diff")

    assert diff.data is not None and diff.data["files"][0]["truncated"] is True
    shown, note = diff.content.rsplit("[diff of big.txt truncated: ", 1)
    shown = shown[shown.index("diff --git a/big.txt") :]
    kept, total = map(int, re.match(r"(\d+) of (\d+) lines shown\]", note).groups())  # type: ignore[union-attr]
    header = 5  # diff --git, index, ---, +++, @@
    assert total == len(lines) + header
    assert shown.endswith("\n")
    added = [line for line in shown.split("\n")[header:] if line]
    assert len(added) == kept - header
    assert added == ["+" + line for line in lines[: len(added)]]


async def test_show_indents_every_message_line_and_only_those(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    message = "subject\n\nfirst\u2028still first\x85and\x1cstill\n\nlast"
    git(repo, "commit", "-q", "--cleanup=verbatim", "-m", message)

    show = await call(repo, "git_show", rev="HEAD")

    assert show.data is not None and show.data["message"] == message
    assert "\n    first\u2028still first\x85and\x1cstill\n\n    last\n" in show.content
