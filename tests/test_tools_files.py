"""File tools on real files: byte-exact results, errors as codes, open buffers, symlinks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from toolwire.tools import default_registry
from toolwire.tools.base import ToolContext, ToolError, ToolResult, validate_arguments
from toolwire.workspace.documents import MemoryDocuments

REG = default_registry()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolResult:
    tool = REG.get(name)
    assert tool is not None
    return await tool.run(validate_arguments(tool, arguments), ctx)


async def fails(ctx: ToolContext, name: str, code: str, **arguments: Any) -> ToolError:
    with pytest.raises(ToolError) as err:
        await call(ctx, name, **arguments)
    assert err.value.code == code, err.value.message
    return err.value


# ---- read_file


async def test_read_whole_file_is_exact(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"one\r\ntwo\n\tthree")
    result = await call(ToolContext(ws), "read_file", path="a.txt")
    assert result.ok and result.content == "one\r\ntwo\n\tthree"
    assert result.data == {"path": "a.txt", "lines": 3, "source": "disk", "bom": False, "newline": "mixed"}


async def test_read_range_is_numbered_and_inclusive(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"\xef\xbb\xbfl1\r\nl2\r\nl3\r\nl4\r\n")
    result = await call(ToolContext(ws), "read_file", path="a.txt", start_line=2, end_line=3)
    assert result.content == "2\tl2\n3\tl3"
    assert result.data and result.data["bom"] is True and result.data["newline"] == "crlf"
    clamped = await call(ToolContext(ws), "read_file", path="a.txt", start_line=4, end_line=99)
    assert clamped.content == "4\tl4"
    (ws / "u.txt").write_text("a\u2028b\nc\n")
    numbered = await call(ToolContext(ws), "read_file", path="u.txt", start_line=2)
    assert numbered.content == "2\tc"
    await fails(ToolContext(ws), "read_file", "out_of_range", path="a.txt", start_line=9)


async def test_read_errors(ws: Path) -> None:
    ctx = ToolContext(ws)
    (ws / "bin.dat").write_bytes(b"PK\x03\x04\x00\x00")
    (ws / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (ws / "big.txt").write_bytes(b"a" * (2 * 1024 * 1024 + 1))
    (ws / "dir").mkdir()
    await fails(ctx, "read_file", "not_found", path="missing.txt")
    await fails(ctx, "read_file", "is_directory", path="dir")
    await fails(ctx, "read_file", "binary", path="bin.dat")
    err = await fails(ctx, "read_file", "not_utf8", path="latin1.txt")
    assert "latin1.txt is not valid UTF-8" in err.message
    await fails(ctx, "read_file", "too_large", path="big.txt")
    await fails(ctx, "read_file", "outside_workspace", path="../x")


async def test_read_prefers_open_buffer(ws: Path) -> None:
    (ws / "a.py").write_text("disk\n")
    docs = MemoryDocuments()
    docs.open(ws / "a.py", "unsaved\n", version=3)
    result = await call(ToolContext(ws, docs), "read_file", path="a.py")
    assert result.content == "unsaved\n" and result.data and result.data["source"] == "editor"


# ---- create_file


async def test_create_makes_parents_and_refuses_existing(ws: Path) -> None:
    ctx = ToolContext(ws)
    result = await call(ctx, "create_file", path="src/pkg/new.py", content="x = 1\n")
    assert (ws / "src/pkg/new.py").read_bytes() == b"x = 1\n"
    assert result.content == "Created src/pkg/new.py (1 lines)"
    assert result.data and result.data["diff"] == "--- /dev/null\n+++ b/src/pkg/new.py\n@@ -0,0 +1 @@\n+x = 1\n"
    err = await fails(ctx, "create_file", "exists", path="src/pkg/new.py", content="y\n")
    assert err.message == "src/pkg/new.py already exists; use edit_file, or set overwrite to replace it"
    assert (ws / "src/pkg/new.py").read_bytes() == b"x = 1\n"
    # a session whose requests do not offer edit_file (a small maxTools): the text does not name it
    small = ToolContext(ws, extra={"offered": frozenset({"read_file", "list_files", "search_files", "create_file"})})
    err = await fails(small, "create_file", "exists", path="src/pkg/new.py", content="y\n")
    assert err.message == "src/pkg/new.py already exists; set overwrite to replace it"


async def test_create_overwrite_keeps_bom_and_crlf(ws: Path) -> None:
    (ws / "w.txt").write_bytes(b"\xef\xbb\xbfold\r\n")
    await call(ToolContext(ws), "create_file", path="w.txt", content="new\nlines\n", overwrite=True)
    assert (ws / "w.txt").read_bytes() == b"\xef\xbb\xbfnew\r\nlines\r\n"


async def test_create_refuses_outside_and_git(ws: Path) -> None:
    (ws / ".git").mkdir()
    os.symlink(ws.parent, ws / "up")
    ctx = ToolContext(ws)
    await fails(ctx, "create_file", "outside_workspace", path="../evil.txt", content="x")
    await fails(ctx, "create_file", "outside_workspace", path="up/evil.txt", content="x")
    await fails(ctx, "create_file", "outside_workspace", path=".git/hooks/pre-commit", content="x")
    assert not (ws.parent / "evil.txt").exists()
    assert not (ws / ".git" / "hooks").exists()


async def test_create_through_dangling_inside_link_creates_target(ws: Path) -> None:
    os.symlink(ws / "real.txt", ws / "link.txt")
    await call(ToolContext(ws), "create_file", path="link.txt", content="hi")
    assert os.path.islink(ws / "link.txt") and (ws / "real.txt").read_bytes() == b"hi"


# ---- edit_file


async def test_edit_exact_preserves_everything_else(ws: Path) -> None:
    original = b"\xef\xbb\xbfdef f():\r\n\treturn 1\r\n\r\nx = 2"  # BOM, CRLF, tabs, no final newline
    (ws / "a.py").write_bytes(original)
    os.chmod(ws / "a.py", 0o755)
    result = await call(ToolContext(ws), "edit_file", path="a.py", old_string="\treturn 1\n", new_string="\ty = 1\n\treturn y\n")
    assert (ws / "a.py").read_bytes() == b"\xef\xbb\xbfdef f():\r\n\ty = 1\r\n\treturn y\r\n\r\nx = 2"
    assert os.stat(ws / "a.py").st_mode & 0o777 == 0o755
    assert result.content == "Edited a.py: 1 replacement at line 2"
    assert result.data is not None
    assert result.data["diff"] == (
        "--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,5 @@\n def f():\n-\treturn 1\n+\ty = 1\n+\treturn y\n \n x = 2\n"
        "\\ No newline at end of file\n"
    )
    assert (result.data["added"], result.data["removed"], result.data["lines"]) == (2, 1, [2])


async def test_edit_lf_file_inserts_lf_and_keeps_missing_final_newline(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"a\nb")
    await call(ToolContext(ws), "edit_file", path="a.txt", old_string="b", new_string="b\nc")
    assert (ws / "a.txt").read_bytes() == b"a\nb\nc"


async def test_edit_mixed_endings_only_touches_the_span(ws: Path) -> None:
    (ws / "m.txt").write_bytes(b"one\r\ntwo\nthree\r\nfour\r\n")
    await call(ToolContext(ws), "edit_file", path="m.txt", old_string="two\nthree", new_string="2\n3")
    assert (ws / "m.txt").read_bytes() == b"one\r\n2\r\n3\r\nfour\r\n"


async def test_edit_counts_overlapping_occurrences(ws: Path) -> None:
    (ws / "o.txt").write_bytes(b"aaa\n")
    err = await fails(ToolContext(ws), "edit_file", "ambiguous_match", path="o.txt", old_string="aa", new_string="b")
    assert err.data == {"count": 2, "lines": [1, 1]}
    assert (ws / "o.txt").read_bytes() == b"aaa\n"


async def test_edit_ambiguous_names_count_and_lines(ws: Path) -> None:
    (ws / "a.py").write_bytes(b"x = 1\ny = 2\nx = 1\n")
    err = await fails(ToolContext(ws), "edit_file", "ambiguous_match", path="a.py", old_string="x = 1", new_string="x = 3")
    assert "occurs 2 times" in err.message and "lines 1, 3" in err.message
    result = await call(ToolContext(ws), "edit_file", path="a.py", old_string="x = 1", new_string="x = 3", replace_all=True)
    assert (ws / "a.py").read_bytes() == b"x = 3\ny = 2\nx = 3\n"
    assert result.content == "Edited a.py: 2 replacements at lines 1, 3"


async def test_edit_refusals(ws: Path) -> None:
    (ws / "a.py").write_bytes(b"x\n")
    ctx = ToolContext(ws)
    await fails(ctx, "edit_file", "no_match", path="a.py", old_string="nope", new_string="y")
    await fails(ctx, "edit_file", "empty_old_string", path="a.py", old_string="", new_string="y")
    await fails(ctx, "edit_file", "no_change", path="a.py", old_string="x", new_string="x")
    (ws / "b.bin").write_bytes(b"\x00\x01x")
    await fails(ctx, "edit_file", "binary", path="b.bin", old_string="x", new_string="y")
    await fails(ctx, "edit_file", "not_found", path="nope.py", old_string="x", new_string="y")
    assert (ws / "a.py").read_bytes() == b"x\n"


async def test_edit_empty_old_string_creates_missing_file(ws: Path) -> None:
    await call(ToolContext(ws), "edit_file", path="new/n.py", old_string="", new_string="print()\n")
    assert (ws / "new/n.py").read_bytes() == b"print()\n"


async def test_fuzzy_match_trailing_whitespace(ws: Path) -> None:
    (ws / "a.py").write_bytes(b"if x:   \n    go()\n")
    result = await call(ToolContext(ws), "edit_file", path="a.py", old_string="if x:\n    go()", new_string="if y:\n    go()")
    assert (ws / "a.py").read_bytes() == b"if y:\n    go()\n"
    assert result.data and result.data["fuzzy"] is True


async def test_fuzzy_match_reindents_to_tabs(ws: Path) -> None:
    (ws / "a.py").write_bytes(b"class A:\n\tdef f(self):\n\t\treturn 1\n")
    await call(
        ToolContext(ws),
        "edit_file",
        path="a.py",
        old_string="    def f(self):\n        return 1\n",
        new_string="    def f(self):\n        if self:\n            return 2\n",
    )
    assert (ws / "a.py").read_bytes() == b"class A:\n\tdef f(self):\n\t\tif self:\n\t\t\treturn 2\n"


async def test_fuzzy_match_only_when_unique(ws: Path) -> None:
    (ws / "a.py").write_bytes(b"  go()\n    go()\n")
    err = await fails(ToolContext(ws), "edit_file", "ambiguous_match", path="a.py", old_string="go() ", new_string="stop()")
    assert err.data == {"count": 2, "lines": [1, 2]}
    assert (ws / "a.py").read_bytes() == b"  go()\n    go()\n"


async def test_edit_stale_when_disk_changes_between_plan_and_write(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"one\n")
    tool = REG.get("edit_file")
    assert tool is not None
    ctx = ToolContext(ws)
    change = await tool.plan(validate_arguments(tool, {"path": "a.txt", "old_string": "one", "new_string": "two"}), ctx)  # type: ignore[attr-defined]
    (ws / "a.txt").write_bytes(b"someone else\n")
    with pytest.raises(ToolError) as err:
        await change.apply()
    assert err.value.code == "stale" and "file changed since it was read" in err.value.message
    assert (ws / "a.txt").read_bytes() == b"someone else\n"


async def test_edit_goes_through_open_buffer(ws: Path) -> None:
    (ws / "a.py").write_bytes(b"disk = 1\n")
    docs = MemoryDocuments()
    docs.open(ws / "a.py", "buffer = 1\n", version=7)
    result = await call(ToolContext(ws, docs), "edit_file", path="a.py", old_string="buffer = 1", new_string="buffer = 2")
    doc = docs.get(ws / "a.py")
    assert doc is not None and doc.text == "buffer = 2\n" and doc.version == 8
    assert (ws / "a.py").read_bytes() == b"disk = 1\n"
    assert result.data and result.data["source"] == "editor"


async def test_edit_refused_by_editor_is_stale_and_writes_nothing(ws: Path) -> None:
    (ws / "a.py").write_bytes(b"buffer = 1\n")
    docs = MemoryDocuments()
    docs.open(ws / "a.py", "buffer = 1\n")
    docs.refuse = True
    await fails(ToolContext(ws, docs), "edit_file", "stale", path="a.py", old_string="1", new_string="2")
    assert (ws / "a.py").read_bytes() == b"buffer = 1\n"
    doc = docs.get(ws / "a.py")
    assert doc is not None and doc.text == "buffer = 1\n"


async def test_edit_through_symlink_inside_workspace(ws: Path) -> None:
    (ws / "real.py").write_bytes(b"a\n")
    os.symlink(ws / "real.py", ws / "alias.py")
    await call(ToolContext(ws), "edit_file", path="alias.py", old_string="a", new_string="b")
    assert os.path.islink(ws / "alias.py") and (ws / "real.py").read_bytes() == b"b\n"


# ---- multi_edit


async def test_multi_edit_applies_in_order(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"alpha\r\nbeta\r\n")
    edits = [
        {"old_string": "alpha", "new_string": "ALPHA"},
        {"old_string": "ALPHA\nbeta", "new_string": "ALPHA\nBETA\ngamma"},
    ]
    result = await call(ToolContext(ws), "multi_edit", path="a.txt", edits=edits)
    assert (ws / "a.txt").read_bytes() == b"ALPHA\r\nBETA\r\ngamma\r\n"
    assert result.data and result.data["replacements"] == 2


async def test_multi_edit_all_or_nothing(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"alpha\nbeta\n")
    edits = [{"old_string": "alpha", "new_string": "A"}, {"old_string": "missing", "new_string": "B"}]
    err = await fails(ToolContext(ws), "multi_edit", "no_match", path="a.txt", edits=edits)
    assert err.message.startswith("edit 2 of 2:") and err.data == {"edit": 2}
    assert (ws / "a.txt").read_bytes() == b"alpha\nbeta\n"


async def test_multi_edit_accepts_double_encoded_edits(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"x\n")
    tool = REG.get("multi_edit")
    assert tool is not None
    args = validate_arguments(tool, {"path": "a.txt", "edits": '[{"old_string": "x", "new_string": "y"}]'})
    await tool.run(args, ToolContext(ws))
    assert (ws / "a.txt").read_bytes() == b"y\n"


# ---- delete_file, rename_file


async def test_delete_file_and_symlink(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"bye\n")
    (ws / "target.txt").write_bytes(b"stay\n")
    os.symlink(ws / "target.txt", ws / "link.txt")
    ctx = ToolContext(ws)
    result = await call(ctx, "delete_file", path="a.txt")
    assert not (ws / "a.txt").exists()
    assert result.data and result.data["diff"] == "--- a/a.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    await call(ctx, "delete_file", path="link.txt")
    assert not os.path.lexists(ws / "link.txt") and (ws / "target.txt").read_bytes() == b"stay\n"
    (ws / "d").mkdir()
    await fails(ctx, "delete_file", "is_directory", path="d")
    await fails(ctx, "delete_file", "not_found", path="a.txt")


async def test_delete_refuses_link_whose_target_is_outside(ws: Path) -> None:
    (ws.parent / "precious.txt").write_bytes(b"p")
    os.symlink(ws.parent / "precious.txt", ws / "p.txt")
    await fails(ToolContext(ws), "delete_file", "outside_workspace", path="p.txt")
    assert os.path.lexists(ws / "p.txt")


async def test_rename_file(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"a\r\n")
    (ws / "b.txt").write_bytes(b"b")
    ctx = ToolContext(ws)
    await fails(ctx, "rename_file", "exists", path="a.txt", new_path="b.txt")
    await fails(ctx, "rename_file", "outside_workspace", path="a.txt", new_path="../a.txt")
    result = await call(ctx, "rename_file", path="a.txt", new_path="sub dir/ä.txt")
    assert (ws / "sub dir" / "ä.txt").read_bytes() == b"a\r\n" and not (ws / "a.txt").exists()
    assert result.content == "Renamed a.txt to sub dir/ä.txt"
    await fails(ctx, "rename_file", "not_found", path="a.txt", new_path="c.txt")


def test_definitions_are_what_the_model_sees() -> None:
    defs = {d["function"]["name"]: d["function"] for d in REG.definitions()}
    edit = defs["edit_file"]["parameters"]
    assert edit["required"] == ["path", "old_string", "new_string"]
    assert all("description" in p for p in edit["properties"].values())
    assert "line numbers" in defs["read_file"]["description"]
    assert REG.get("read_file").read_only and not REG.get("edit_file").read_only  # type: ignore[union-attr]


async def test_delete_and_rename_refuse_a_file_open_in_the_editor(tmp_path):
    from toolwire.tools import default_registry
    from toolwire.tools.base import ToolContext, ToolError, validate_arguments
    from toolwire.workspace.documents import MemoryDocuments

    (tmp_path / "a.py").write_text("saved\n")
    docs = MemoryDocuments()
    docs.open((tmp_path / "a.py").resolve(), "unsaved work\n", version=7)
    ctx = ToolContext(root=tmp_path.resolve(), documents=docs)
    registry = default_registry()
    for name, args in (("delete_file", {"path": "a.py"}), ("rename_file", {"path": "a.py", "new_path": "b.py"})):
        tool = registry.get(name)
        with pytest.raises(ToolError) as info:
            await tool.run(validate_arguments(tool, args), ctx)
        assert info.value.code == "open_in_editor" and "a.py" in info.value.message
    assert (tmp_path / "a.py").read_text() == "saved\n" and not (tmp_path / "b.py").exists()


async def test_rename_never_replaces_a_destination_that_appears_meanwhile(tmp_path):
    from toolwire.tools.files import _move_no_replace
    from toolwire.tools.base import ToolError

    (tmp_path / "src.txt").write_text("mine\n")
    (tmp_path / "dst.txt").write_text("theirs\n")  # appeared after the check
    with pytest.raises(ToolError) as info:
        _move_no_replace(tmp_path / "src.txt", tmp_path / "dst.txt", "dst.txt")
    assert info.value.code == "exists"
    assert (tmp_path / "dst.txt").read_text() == "theirs\n" and (tmp_path / "src.txt").read_text() == "mine\n"
    _move_no_replace(tmp_path / "src.txt", tmp_path / "new.txt", "new.txt")
    assert (tmp_path / "new.txt").read_text() == "mine\n" and not (tmp_path / "src.txt").exists()
