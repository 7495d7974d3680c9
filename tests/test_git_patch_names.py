"""git_diff and git_show print the names in a patch's header lines the way every git
tool prints names: a name holding a bidirectional, invisible or line-separating
character in git's quoted form, others as they are (real server, real git)."""

from __future__ import annotations

import subprocess

import pytest

from conftest import git, new_session, prompt, write_script

pytestmark = pytest.mark.asyncio(loop_scope="module")

EVIL = "evil\u202etxt.exe"
ZW = "zw\u200bsp.txt"
LS = "ls\u2028sep.txt"
PLAIN = "café.txt"
RAW = ("\u202e", "\u200b", "\u2028")


def quoted_headers(repo, *args: str) -> list[str]:
    """git's own header lines with every non-ASCII name quoted (``core.quotePath=true``)."""
    out = subprocess.run(["git", "-c", "core.quotePath=true", *args, "--no-color", "-M"], cwd=repo, check=True,
                         capture_output=True).stdout.decode()
    return [line for line in out.split("\n")
            if line.startswith(("diff --git", "--- ", "+++ ", "rename from", "rename to"))]


async def run_tools(client, repo, tmp_path, calls):
    script = write_script(tmp_path / "s.jsonl", [{"text": "look", "tool_calls": calls}, {"text": "done"}])
    sid = await new_session(client, repo, script)
    await prompt(client, sid)
    return [snaps[-1]["result"] for snaps in client.tool_calls(sid).values()]


async def test_diff_and_show_headers_quote_names_like_git_status(client, repo, tmp_path):
    for name in (EVIL, ZW, LS, PLAIN):
        (repo / name).write_text("one\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "names")
    for name in (EVIL, ZW, LS, PLAIN):
        (repo / name).write_text("one\ntwo\n")
    expected_diff = quoted_headers(repo, "diff")
    expected_show = quoted_headers(repo, "show", "--format=", "HEAD")
    diff, show, status = await run_tools(client, repo, tmp_path, [
        {"name": "git_diff", "arguments": {}}, {"name": "git_show", "arguments": {"rev": "HEAD"}},
        {"name": "git_status", "arguments": {}}])
    for result in (diff, show):
        assert result["ok"], result["content"]
        for text in (result["content"], result["data"]["diff"]):
            assert not any(ch in text for ch in RAW), text
        shown = {f["path"] for f in result["data"]["files"]}
        assert '"evil\\342\\200\\256txt.exe"' in shown and PLAIN in shown
    headers = lambda text: [l for l in text.split("\n") if l.startswith(("diff --git", "--- ", "+++ "))]  # noqa: E731
    for ours, theirs in ((headers(diff["content"]), expected_diff), (headers(show["content"]), expected_show)):
        quoted = [line for line in theirs if "caf" not in line]
        assert [line for line in ours if "caf" not in line] == quoted
        assert f"diff --git a/{PLAIN} b/{PLAIN}" in ours  # a plain UTF-8 name stays as it is
    assert 'diff --git "a/evil\\342\\200\\256txt.exe" "b/evil\\342\\200\\256txt.exe"' in diff["content"]
    assert '"evil\\342\\200\\256txt.exe"' in status["content"]


async def test_a_rename_to_a_bidi_name_is_quoted_in_every_header(client, repo, tmp_path):
    (repo / "plain.txt").write_text("a\nb\nc\nd\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "plain")
    git(repo, "mv", "plain.txt", EVIL)
    git(repo, "commit", "-q", "-m", "rename")
    expected = quoted_headers(repo, "show", "--format=", "HEAD")
    (show,) = await run_tools(client, repo, tmp_path, [{"name": "git_show", "arguments": {"rev": "HEAD"}}])
    assert not any(ch in show["content"] for ch in RAW)
    assert "rename to \"evil\\342\\200\\256txt.exe\"" in show["content"]
    ours = [line for line in show["content"].split("\n")
            if line.startswith(("diff --git", "--- ", "+++ ", "rename from", "rename to"))]
    assert ours == expected
