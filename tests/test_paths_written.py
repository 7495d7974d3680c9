"""Paths as models write them (issue 10 §2): backslashes, ~, Unicode normalization
forms, trailing dots and spaces, look-alike and invisible names, quoted names.
Each resolves to the file the person means or is refused with a reason. Real files."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire.agent.permissions import build_subject
from toolwire.tools import default_registry
from toolwire.tools.base import ToolContext, ToolError, ToolResult, validate_arguments
from toolwire.workspace.lookalike import check_new_name, skeleton
from toolwire.workspace.paths import resolve_path

REG = default_registry()
NFC = unicodedata.normalize("NFC", "café.txt")
NFD = unicodedata.normalize("NFD", "café.txt")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "util.py").write_text("util\n")
    (root / "path.py").write_text("p\n")
    return root


async def run(root: Path, name: str, **arguments: object) -> ToolResult:
    tool = REG.get(name)
    assert tool is not None
    return await tool.run(validate_arguments(tool, arguments), ToolContext(root))


async def refused(root: Path, name: str, code: str, **arguments: object) -> ToolError:
    with pytest.raises(ToolError) as err:
        await run(root, name, **arguments)
    assert err.value.code == code, err.value.message
    return err.value


def names_under(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


async def test_backslash_separators_read_the_file_meant(ws: Path) -> None:
    got = await run(ws, "read_file", path="src\\util.py")
    assert got.content == "util\n" and got.data and got.data["path"] == "src/util.py"
    assert got.data["path_notes"] == ["src\\util.py is read as src/util.py (\\ separates folders)"]


async def test_backslash_separators_never_create_a_backslash_name(ws: Path) -> None:
    made = await run(ws, "create_file", path="src\\helpers\\fmt.py", content="x\n")
    assert made.data and made.data["path"] == "src/helpers/fmt.py"
    assert (ws / "src" / "helpers" / "fmt.py").read_text() == "x\n"
    assert not any("\\" in n for n in names_under(ws))
    await run(ws, "edit_file", path="src\\helpers\\new.py", old_string="", new_string="y\n")
    await run(ws, "rename_file", path="src\\helpers\\new.py", new_path="src\\moved.py")
    assert (ws / "src" / "moved.py").read_text() == "y\n"
    assert not any("\\" in n for n in names_under(ws))


async def test_a_file_whose_name_really_holds_a_backslash_is_still_reachable(ws: Path) -> None:
    (ws / "odd\\name.txt").write_text("odd\n")
    assert (await run(ws, "read_file", path="odd\\name.txt")).content == "odd\n"


@pytest.mark.parametrize("path", ["C:\\Users\\me\\x.py", "c:/x.py", "\\\\server\\share\\x.py"])
async def test_windows_absolute_paths_are_refused(ws: Path, path: str) -> None:
    err = await refused(ws, "read_file", "invalid_path", path=path)
    assert "Windows path" in err.message


async def test_home_shorthand(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ws.parent / "home"))
    err = await refused(ws, "create_file", "outside_workspace", path="~/notes.txt", content="x")
    assert "~ is the home folder" in err.message
    assert not (ws / "~").exists()
    err = await refused(ws, "read_file", "invalid_path", path="~nosuchuser12345/x")
    assert "names no home folder" in err.message
    monkeypatch.setenv("HOME", str(ws))  # home inside the workspace: ~ is meant literally as home
    assert (await run(ws, "read_file", path="~/src/util.py")).content == "util\n"
    await run(ws, "create_file", path="./~/literal.txt", content="l\n")  # ./~ is a folder named ~
    assert (ws / "~" / "literal.txt").read_text() == "l\n"


async def test_unicode_normalization_forms_mean_the_existing_file(ws: Path) -> None:
    (ws / NFD).write_text("nfd\n")
    got = await run(ws, "read_file", path=NFC)
    assert got.content == "nfd\n" and got.data and got.data["path"] == NFD
    err = await refused(ws, "create_file", "exists", path=NFC, content="second\n")
    assert NFD in err.message
    await run(ws, "edit_file", path=NFC, old_string="nfd", new_string="edited")
    assert (ws / NFD).read_text() == "edited\n"
    assert sorted(os.listdir(ws)) == sorted(["src", "path.py", NFD])


async def test_a_new_name_is_created_in_nfc(ws: Path) -> None:
    nfd = unicodedata.normalize("NFD", "naïve/naïve.txt")
    made = await run(ws, "create_file", path=nfd, content="x")
    assert made.data and made.data["path"] == unicodedata.normalize("NFC", nfd) != nfd
    assert (ws / unicodedata.normalize("NFC", nfd)).read_text() == "x"
    assert unicodedata.normalize("NFD", "naïve") not in os.listdir(ws)


@pytest.mark.parametrize("written", ["path.py.", "path.py ", "path.py. .", "path.py.."])
async def test_trailing_dots_and_spaces_mean_the_existing_file(ws: Path, written: str) -> None:
    assert (await run(ws, "read_file", path=written)).content == "p\n"
    await refused(ws, "create_file", "exists", path=written, content="x")


@pytest.mark.parametrize("name", ["new.txt.", "new.txt ", " new.txt", "dir./x.txt", "dir /x.txt"])
async def test_names_ending_in_dots_or_spaces_are_never_created(ws: Path, name: str) -> None:
    err = await refused(ws, "create_file", "invalid_name", path=name, content="x")
    assert "dot or a space" in err.message
    assert names_under(ws) == ["path.py", "src", "src/util.py"]


@pytest.mark.parametrize(
    ("name", "existing"),
    [
        ("\u0440\u0430th.py", "path.py"),  # Cyrillic р and а
        ("ｐａｔｈ.py", "path.py"),  # fullwidth
        ("pa\u200bth.py", None),  # zero-width space: refused as invisible
        ("p\u0430th.py", "path.py"),
        ("src/ut\u0456l.py", "util.py"),  # Cyrillic і
    ],
)
async def test_look_alike_and_invisible_names_are_never_created(ws: Path, name: str, existing: str | None) -> None:
    with pytest.raises(ToolError) as err:
        await run(ws, "create_file", path=name, content="x")
    assert err.value.code in ("lookalike", "invalid_name")
    if existing:
        assert err.value.code == "lookalike" and existing in err.value.message
    with pytest.raises(ToolError):
        await run(ws, "rename_file", path="src/util.py", new_path=name)
    assert names_under(ws) == ["path.py", "src", "src/util.py"]


async def test_clearly_different_ascii_names_are_allowed(ws: Path) -> None:
    for name in ("Path.py", "path.pyi", "f00.py", "pat.py"):
        assert (await run(ws, "create_file", path=name, content="x")).ok


@pytest.mark.parametrize("name", ["evil\u202etxt.exe", "bell\x07.txt", "new\nline.txt", "ltr\u200e.txt"])
async def test_control_and_bidi_characters_are_refused_and_prompts_show_them_escaped(ws: Path, name: str) -> None:
    err = await refused(ws, "create_file", "invalid_name", path=name, content="x")
    assert "\u202e" not in err.message and "\n" not in err.message
    (ws / name).write_text("already there\n")  # made outside the assistant
    tool = REG.get("edit_file")
    assert tool is not None
    args = validate_arguments(tool, {"path": name, "old_string": "already", "new_string": "still"})
    subject = await build_subject(tool, args, ToolContext(ws))
    assert subject["kind"] == "edit" and subject["path"].startswith('"') and "\\" in subject["path"]
    header = subject["diff"].split("\n")[:2]
    # git's header form: the prefix inside the quotes, as git_diff prints it
    assert header == [f'--- "a/{subject["path"][1:]}', f'+++ "b/{subject["path"][1:]}']
    for bad in ("\u202e", "\n", "\x07", "\u200e"):
        assert bad not in subject["path"]


async def test_quoted_form_reaches_the_file(ws: Path) -> None:
    raw = os.fsdecode(b"caf\xe9.txt")
    (ws / raw).write_text("latin1\n")
    got = await run(ws, "read_file", path='"caf\\351.txt"')
    assert got.content == "latin1\n" and got.data and got.data["path"] == '"caf\\351.txt"'


def test_ambiguous_spellings_are_refused(ws: Path) -> None:
    (ws / NFD).write_text("1")
    (ws / "café.txt.").write_text("2")  # NFC plus a dot
    with pytest.raises(ToolError) as err:
        resolve_path(ws, "café.txt ")
    assert err.value.code == "ambiguous_path"


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(categories=["Ll", "Lu", "Nd"], max_codepoint=0x7F), min_size=1, max_size=8))
def test_plain_ascii_names_only_look_alike_when_equal(name: str) -> None:
    assert skeleton(name) == name
    assert skeleton(name + "x") != skeleton(name)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["а", "е", "о", "р", "с", "х", "і", "ј", "ѕ"]), st.integers(0, 4))
def test_a_cyrillic_look_alike_of_an_ascii_name_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                            cyr: str, pos: int) -> None:
    folder = tmp_path_factory.mktemp("la")
    latin = {"а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "х": "x", "і": "i", "ј": "j", "ѕ": "s"}[cyr]
    base = "name" + latin + "z"
    (folder / base).write_text("")
    spot = min(pos, len(base))
    fake = base.replace(latin, cyr, 1) if pos % 2 else base[:spot] + base[spot:].replace(latin, cyr, 1)
    if fake == base:
        return
    with pytest.raises(ToolError) as err:
        check_new_name(folder, fake)
    assert err.value.code == "lookalike"


async def test_a_file_uri_of_the_workspace_reads_the_file_it_names(ws: Path, tmp_path: Path) -> None:
    (ws / "src" / "my file.py").write_text("spaced\n")
    got = await run(ws, "read_file", path=f"file://{ws}/src/my%20file.py")
    assert got.content == "spaced\n" and got.data and got.data["path"] == "src/my file.py"
    assert (await run(ws, "read_file", path=f"file://localhost{ws}/src/util.py")).content == "util\n"
    assert "only a file URI of this computer" in (await refused(ws, "read_file", "invalid_path",
                                                                  path=f"file://host{ws}/src/util.py")).message
    (tmp_path / "out.txt").write_text("no\n")
    await refused(ws, "read_file", "outside_workspace", path=f"file://{tmp_path}/out.txt")
