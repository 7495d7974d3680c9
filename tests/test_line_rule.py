"""The LSP line rule beyond open buffers: only ``\\n``, ``\\r\\n`` and ``\\r`` end a line
wherever the server counts, numbers, splits or diffs lines (read_file, edits,
approval diffs, permission sizes, replay scripts). ``str.splitlines`` also splits at
form feed, VT, ``\\x1c``–``\\x1e``, ``\\x85``, U+2028 and U+2029: none of those may."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lsp_text as ref
from toolwire.agent.permissions import change_size
from toolwire.llm.replay import load_script
from toolwire.tools import default_registry
from toolwire.tools.base import ToolContext, ToolResult, validate_arguments
from toolwire.tools.editing import Replacement, apply_replacement
from toolwire.tools.target import diff_stats, match_style
from toolwire.workspace.positions import line_count, split_lines
from toolwire.workspace.text import dominant_newline, unified_diff

REG = default_registry()
ODD = ["\f", "\v", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
PIECES = ["a", "b", "é", "😀", "\n", "\r", "\r\n", *ODD]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolResult:
    tool = REG.get(name)
    assert tool is not None
    return await tool.run(validate_arguments(tool, arguments), ctx)


@pytest.mark.parametrize("odd", ODD)
async def test_read_file_numbers_lines_like_the_editor(tmp_path: Path, odd: str) -> None:
    (tmp_path / "a.py").write_text(f"import os\n{odd}\ndef f():\r    return 1\r\n", newline="")
    result = await call(ToolContext(tmp_path), "read_file", path="a.py", start_line=2, end_line=4)
    assert result.content == f"2\t{odd}\n3\tdef f():\n4\t    return 1"
    assert result.data["lines"] == 4 and result.data["newline"] == "mixed"


async def test_read_file_knows_cr_only_files(tmp_path: Path) -> None:
    (tmp_path / "mac.txt").write_bytes(b"one\rtwo\rthree")
    result = await call(ToolContext(tmp_path), "read_file", path="mac.txt", start_line=2)
    assert result.content == "2\ttwo\n3\tthree" and result.data["newline"] == "cr" and result.data["lines"] == 3


async def test_an_edit_of_a_cr_file_matches_model_lf_text_and_inserts_cr(tmp_path: Path) -> None:
    (tmp_path / "mac.txt").write_bytes(b"one\rtwo\rthree\r")
    result = await call(ToolContext(tmp_path), "edit_file", path="mac.txt", old_string="two\nthree",
                        new_string="2\n3\n3.5")
    assert result.ok, result.content
    assert (tmp_path / "mac.txt").read_bytes() == b"one\r2\r3\r3.5\r"


@pytest.mark.parametrize("odd", ODD)
def test_approval_diffs_keep_odd_separators_inside_their_line(odd: str) -> None:
    old = f"x = 1\ns = 'a{odd}b'\ny = 2\n"
    diff = unified_diff(old, old.replace("'a", "'A"), "f.py")
    assert diff_stats(diff) == (1, 1)
    assert f"-s = 'a{odd}b'\n+s = 'A{odd}b'\n" in diff


def test_diffs_show_cr_endings_as_lines() -> None:
    diff = unified_diff("a\rb\rc", "a\rB\rc", "f.txt")
    assert "-b\n+B\n" in diff and diff.endswith(" c\n\\ No newline at end of file\n")


@pytest.mark.parametrize(("text", "size"), [("a\rb\rc", 3), ("a\u2028b\u2029c\fd", 1), ("a\r\nb", 2), ("a\n", 2), ("", 0)])
def test_permission_sizes_count_editor_lines(text: str, size: int) -> None:
    tool = REG.get("edit_file")
    args = validate_arguments(tool, {"path": "f", "old_string": "x", "new_string": text or "y"})
    assert change_size(args) == max(size, 1)


def test_replay_scripts_are_json_lines_split_only_at_lf(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    script.write_text(json.dumps({"text": "a\u2028b\x85c"}, ensure_ascii=False) + "\r\n" + json.dumps({"text": "2"}) + "\n")
    assert [line["text"] for line in load_script(script)] == ["a\u2028b\x85c", "2"]


@pytest.mark.parametrize(("text", "newline"), [("a\rb\rc\n", "\r"), ("a\r\nb\r\nc\n", "\r\n"), ("a\nb\r", "\n"), ("", "\n")])
def test_dominant_newline(text: str, newline: str) -> None:
    assert dominant_newline(text) == newline
    assert match_style(text, "x\ny") == f"x{newline}y"


@settings(max_examples=300, deadline=None)
@given(texts)
def test_split_lines_follow_the_reference(text: str) -> None:
    table = ref.lines(text)
    assert "".join(split_lines(text, keepends=True)) == text
    assert [c + e for c, e in table if c + e] == split_lines(text, keepends=True)
    assert split_lines(text) == [c for c, e in table][: len(split_lines(text, keepends=True))]
    assert line_count(text) == (len(table) if text else 0)


@settings(max_examples=300, deadline=None)
@given(texts, st.data())
def test_a_replacement_keeps_every_byte_outside_it(text: str, data: st.DataObject) -> None:
    view = text.replace("\r\n", "\n").replace("\r", "\n")
    if not view.strip("\n"):
        return
    start = data.draw(st.integers(0, len(view) - 1))
    end = data.draw(st.integers(start + 1, len(view)))
    old = view[start:end]
    if view.find(old, view.find(old) + 1) != -1 or not old.strip():
        return  # not unique, counting overlapping matches ('éé' twice in 'ééé'): refused as ambiguous
    new_text, lines, _ = apply_replacement(text, Replacement(old, "<X>"), label="f")
    before, after = new_text.split("<X>")
    assert text.startswith(before) and text.endswith(after)
    assert lines == [len(ref.lines(view[:start]))]


@pytest.mark.parametrize("name", [b"a\xe2\x80\xa8b.log", b"c\x1cd.log", b"q\"uote.log", b"back\\slash.log", b"new\nline.log",
                                  b"tab\t.log", b"caf\xe9.log", b"\xc2\x85.log", b"plain.log"])
def test_names_git_prints_for_the_watcher_come_back_as_the_same_bytes(tmp_path: Path, name: bytes) -> None:
    import os
    import subprocess

    from toolwire.agent.watching import _unquote

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("*.log\n")
    path = os.path.join(os.fsencode(tmp_path), name)
    with open(path, "wb") as fh:
        fh.write(b"x")
    out = subprocess.run(["git", "-c", "core.quotePath=false", "check-ignore", "--", name], cwd=tmp_path,
                         capture_output=True, check=True).stdout
    assert [_unquote(line) for line in out.split(b"\n") if line] == [name]


@pytest.mark.parametrize("odd", ODD)
def test_acp_diff_content_keeps_odd_separators_inside_their_line(odd: str) -> None:
    from toolwire.acp.mapping import diff_content

    old = f"x = 1\ns = 'a{odd}b'\n"
    content = diff_content(Path("/w/f.py"), unified_diff(old, old.replace("x = 1", "x = 2"), "f.py"))
    assert content.old_text == old.rstrip("\n") and content.new_text == old.replace("x = 1", "x = 2").rstrip("\n")


def _outcome(text: str, edit: Replacement) -> Any:
    try:
        return apply_replacement(text, edit, label="f")
    except Exception as exc:  # noqa: BLE001 - the error is part of the outcome compared
        return type(exc).__name__, getattr(exc, "code", None), str(exc), getattr(exc, "data", None)


CRLF_PIECES = ["a", "b", "é", "😀", "\r\n", "\r\n\r\n", " ", *[o for o in ODD if o not in "\r\n"]]


@settings(max_examples=500, deadline=None)
@given(st.one_of(texts, st.lists(st.sampled_from(CRLF_PIECES), max_size=30).map("".join)), st.data())
def test_an_exact_match_found_in_the_text_edits_as_through_the_lf_view(text: str, data: st.DataObject) -> None:
    """A one-line ``old_string`` (any text), or any ``old_string`` in a file whose line
    endings are all CRLF, is searched in the text itself without building the LF view;
    every outcome (text, lines, fuzzy flag, or the error with its data) must equal the
    general path's. Texts mix every line ending (and the separators that are none) or
    have only CRLF."""
    import toolwire.tools.editing as editing

    view = text.replace("\r\n", "\n").replace("\r", "\n")
    if view:
        start = data.draw(st.integers(0, len(view) - 1))
        old = view[start:data.draw(st.integers(start + 1, len(view)))]
    else:
        old = "a"
    if data.draw(st.booleans()):  # sometimes as the model sends it: with CRLF, or not in the file at all
        old = data.draw(st.sampled_from([old.replace("\n", "\r\n"), old + "zz", old.strip("\n") or "a"]))
    edit = Replacement(old, data.draw(st.sampled_from(["<X>", "x\ny", "", "\n"])), data.draw(st.booleans()))
    fast = _outcome(text, edit)
    original = editing._exact_without_view
    editing._exact_without_view = lambda *args: None
    try:
        general = _outcome(text, edit)
    finally:
        editing._exact_without_view = original
    assert fast == general
