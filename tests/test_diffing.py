"""Unified diffs that cost in proportion to the change (toolwire.workspace.diffing)."""

from __future__ import annotations

import difflib
import random

import pytest

from toolwire.workspace.diffing import unified_diff


def reference(old: str | None, new: str | None, rel: str) -> str:
    """``difflib.unified_diff`` over the whole texts, lines ending at LF, CRLF or a lone CR
    (the LSP rule), each shown as LF (the old implementation)."""
    def lines(text: str) -> list[str]:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        out = [line + "\n" for line in text.split("\n")]
        if text.endswith("\n") or not text:
            out.pop()
        else:
            out[-1] = out[-1][:-1] + "\n\\ No newline at end of file\n"
        return out
    a = "/dev/null" if old is None else f"a/{rel}"
    b = "/dev/null" if new is None else f"b/{rel}"
    return "".join(line if line.endswith("\n") else line + "\n"
                   for line in difflib.unified_diff(lines(old or ""), lines(new or ""), a, b, n=3))


def apply_diff(old: str, diff: str) -> str:
    """Apply a unified diff of LF lines to ``old`` (checks every context and removed line)."""
    old = old.replace("\r\n", "\n").replace("\r", "\n")
    lines = old.split("\n")
    ended = old.endswith("\n") or not old
    if ended:
        lines.pop()
    out: list[str] = []
    pos = 0
    rows = diff.split("\n")[2:]
    for row in rows:
        if row.startswith("@@"):
            start = int(row.split()[1][1:].split(",")[0])
            length = int(row.split()[1].split(",")[1]) if "," in row.split()[1] else 1
            target = start - 1 if length else start
            out += lines[pos:target]
            pos = target
        elif row.startswith("\\"):
            continue
        elif row[:1] in (" ", "-"):
            assert lines[pos] == row[1:], (pos, lines[pos], row)
            if row[0] == " ":
                out.append(row[1:])
            pos += 1
        elif row.startswith("+"):
            out.append(row[1:])
    out += lines[pos:]
    return "\n".join(out)


def sample_text(rng: random.Random, n: int) -> str:
    words = ["alpha", "beta", "", "gamma delta", "é ü", "}", "    return x", "a\fb", "c\u2028d", "e\x85"]
    return "".join(rng.choice(words) + "\n" for _ in range(n))


@pytest.mark.parametrize("seed", range(300))
def test_one_changed_region_gives_exactly_difflibs_diff(seed):
    rng = random.Random(seed)
    old = sample_text(rng, rng.randint(0, 40))
    if rng.random() < 0.2:
        old = old.rstrip("\n")  # no newline at the end
    lines = old.split("\n")
    i = rng.randint(0, len(lines))
    j = min(len(lines), i + rng.randint(0, 3))
    inserted = [rng.choice(["new line", "", "beta", "x" * rng.randint(0, 5)]) for _ in range(rng.randint(0, 3))]
    new = "\n".join(lines[:i] + inserted + lines[j:])
    if rng.random() < 0.2:  # CRLF or lone CR line endings (the LSP rule: both end a line)
        eol = rng.choice(["\r\n", "\r"])
        old, new = old.replace("\n", eol), new.replace("\n", eol)
    diff = unified_diff(old, new, "f.txt")
    want = reference(old, new, "f.txt")
    changed = lambda d: sum(row[:1] in "+-" and row[:3] not in ("+++", "---") for row in d.splitlines())  # noqa: E731
    # A valid diff as small as difflib's; where the change has one place only, difflib's exactly.
    assert changed(diff) == changed(want), (old, new, diff, want)
    assert apply_diff(old, diff).rstrip("\n") == new.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n"), (
        old, new, diff)


def test_create_delete_rename_and_no_change():
    assert unified_diff(None, "a\nb\n", "n.txt") == reference(None, "a\nb\n", "n.txt")
    assert unified_diff("a\n", None, "d.txt") == reference("a\n", None, "d.txt")
    assert unified_diff("same\n", "same\n", "s.txt") == ""
    assert unified_diff("x\n", "x\n", "a.txt", new_rel="b.txt") == "rename from a.txt\nrename to b.txt\n"
    assert unified_diff("a", "b", "f") == reference("a", "b", "f")  # both without a final newline
    for old, new in (("b\n", "a\nb\n"), ("a\nb\n", "b\n"), ("b", "a\nb"), ("x\n", "x\ny"), ("x\ny", "x\n")):
        assert unified_diff(old, new, "f") == reference(old, new, "f"), (old, new)


def test_difflib_sees_only_the_changed_region_of_a_10_mb_file(monkeypatch):
    """A one-line change in a ~10 MB file: difflib is given the changed line and its context
    only (7 lines a side), and the hunk carries the line numbers of the whole file."""
    lines = 300_000
    old = "".join(f"line {n}: some text of the file\n" for n in range(lines))
    new = old.replace(f"line {lines // 2}: some text of the file\n", "LINE CHANGED\n", 1)
    assert len(old) > 9_000_000
    seen: list[tuple[int, int]] = []
    real = difflib.SequenceMatcher

    class Recording(real):  # type: ignore[misc, valid-type]
        def __init__(self, isjunk=None, a="", b="", autojunk=True):
            seen.append((len(a), len(b)))
            super().__init__(isjunk, a, b, autojunk)

    monkeypatch.setattr(difflib, "SequenceMatcher", Recording)
    diff = unified_diff(old, new, "big.txt")
    assert seen and max(max(pair) for pair in seen) <= 7
    assert diff.splitlines()[2] == "@@ -149998,7 +149998,7 @@"
    assert [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")] == [
        f"-line {lines // 2}: some text of the file", "+LINE CHANGED"]


@pytest.mark.parametrize("seed", range(400))
def test_mixed_line_endings_and_changed_endings_give_difflibs_diff(seed):
    """Texts mixing LF, CRLF and lone CR (changes may split a CRLF or change an ending's
    kind): the diff, computed on the texts as they are, is difflib's over the LF lines."""
    rng = random.Random(1000 + seed)
    pieces = ["a", "b", "", "é", "\u2028", "x y"]
    old = "".join(rng.choice(pieces) + rng.choice(["\n", "\r\n", "\r"]) for _ in range(rng.randint(0, 25)))
    if rng.random() < 0.3:
        old += rng.choice(pieces)
    i = rng.randint(0, len(old))
    j = min(len(old), i + rng.randint(0, 6))
    new = old[:i] + "".join(rng.choice(["\r", "\n", "\r\n", "q", "b"]) for _ in range(rng.randint(0, 3))) + old[j:]
    diff = unified_diff(old, new, "f.txt")
    want = reference(old, new, "f.txt")
    changed = lambda d: sum(row[:1] in "+-" and row[:3] not in ("+++", "---") for row in d.split("\n"))  # noqa: E731
    assert changed(diff) == changed(want), (old, new, diff, want)
    if want:
        assert apply_diff(old, diff).rstrip("\n") == new.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n"), (
            old, new, diff)
    else:
        assert diff == ""


def test_a_quoted_name_is_written_as_git_writes_it_and_the_diff_applies(tmp_path):
    """``--- "a/invoice\\342\\200\\256fdp.exe"`` (git's form, as git_diff prints it), not
    ``--- a/"invoice…"``, which git apply reads as a name holding quotes."""
    import subprocess

    from toolwire.workspace.names import display_name

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    for name in ("invoice\u202efdp.exe", 'say "hi".txt', "tab\there.txt"):
        (tmp_path / name).write_text("total: 1\n")
        diff = unified_diff("total: 1\n", "total: 2\n", display_name(name))
        shown = display_name(name)
        if shown.startswith('"'):  # a quote inside a name needs no quoting (git apply reads it as is)
            assert diff.startswith(f'--- "a/{shown[1:]}\n+++ "b/{shown[1:]}\n'), diff
        (tmp_path / "p.diff").write_text(diff)
        done = subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / name).read_text() == "total: 2\n"
    assert unified_diff("a\n", "b\n", "plain.txt").startswith("--- a/plain.txt\n+++ b/plain.txt\n")
