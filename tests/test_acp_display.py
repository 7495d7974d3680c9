"""``toolwire acp`` shows names as they read and points at the files that are there (issue 19, part 5).

A file named ``invoice<U+202E>fdp.exe`` reads as "invoiceexe.pdf" when shown raw. The
ACP client is told the path in display form wherever the user reads it (tool-call
titles, text content, messages: git's quoted form for paths, escapes for other text,
as the approval subject, the panel and the CLI show it), and the real absolute path
wherever the editor opens it (``locations[].path``, a ``diff`` content's ``path``),
whether the model wrote the name raw or in git's quoted form. ``rawInput`` stays exact.
Real ``toolwire acp`` over stdio, the ACP SDK's client side, real git and files.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

from conftest import git
from test_acp import RecordingClient, open_session, script, start, text

import pytest
from acp import RequestError
from acp.schema import ToolCallLocation

from toolwire.acp import mapping
from toolwire.agent.events import CallSnapshot
from toolwire.workspace.names import display_name, valid_text
from toolwire.workspace.shown_paths import call_path

NAME = "invoice\u202efdp.exe"
SHOWN = '"invoice\\342\\200\\256fdp.exe"'  # git's quoted form, as the approval subject has it
#: What must never reach the user raw: controls but newline and tab, bidi, zero-width, separators.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _texts(value: Any) -> list[str]:
    """Every string a client shows of a dumped update: titles and text blocks (not raw input/output)."""
    if isinstance(value, dict):
        out: list[str] = []
        for key, item in value.items():
            if key in ("raw_input", "raw_output", "old_text", "new_text", "path"):
                continue
            out += _texts(item)
        return out
    if isinstance(value, list):
        return [t for item in value for t in _texts(item)]
    return [value] if isinstance(value, str) else []


def _final(updates: list[Any], call_id: str) -> dict[str, Any]:
    """A call as the client knows it after these updates (later fields win)."""
    merged: dict[str, Any] = {}
    for update in updates:
        if update.session_update in ("tool_call", "tool_call_update") and update.tool_call_id == call_id:
            merged.update(update.model_dump(exclude_none=True))
    return merged


def _diffs(content: list[Any]) -> list[dict[str, Any]]:
    return [c for c in content if c["type"] == "diff"]


def _edit_turn(tmp_path: Path) -> Path:
    return script(tmp_path, [
        {"text": f"Fixing {NAME} now.",
         "tool_calls": [{"id": "raw", "name": "edit_file",
                         "arguments": {"path": NAME, "old_string": "total: 1", "new_string": "total: 2"}}]},
        {"tool_calls": [{"id": "quoted", "name": "edit_file",
                         "arguments": {"path": SHOWN, "old_string": "total: 2", "new_string": "total: 3"}},
                        {"id": "outside", "name": "read_file", "arguments": {"path": f"../x{NAME}"}}]},
        {"text": "Done."},
    ])


async def test_an_edit_of_a_bidi_name_is_titled_in_display_form_and_points_at_the_real_file(
        repo: Path, tmp_path: Path) -> None:
    real = repo / NAME
    real.write_text("total: 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "invoice")
    client = RecordingClient(answers=["allow_once", "allow_once"])
    async with await start(client, f"replay:{_edit_turn(tmp_path)}") as (conn, _):
        sid = await open_session(conn, repo)
        response = await conn.prompt(session_id=sid, prompt=text(f"fix {NAME}"))
        assert response.stop_reason == "end_turn"
        before = len(client.updates)
        await conn.load_session(cwd=str(repo), session_id=sid, mcp_servers=[])
        replayed = client.updates[before:]
    live = client.updates[:before]
    assert not client.invalid, client.invalid
    assert real.read_text() == "total: 3\n"

    for call_id in ("raw", "quoted"):
        final = _final(live, call_id)
        assert final["status"] == "completed", final
        # once the path is known, the title names the file as the approval subject does, whatever the model wrote
        titles = [u.title for u in live if getattr(u, "tool_call_id", None) == call_id and u.title]
        assert set(titles) <= {"edit_file", f"edit_file {SHOWN}"} and final["title"] == f"edit_file {SHOWN}", titles
        assert final["locations"] == [{"path": str(real), "line": 0}]
        [diff] = _diffs(final["content"])
        assert diff["path"] == str(real) and Path(diff["path"]).is_file()
    assert _final(live, "raw")["raw_input"]["path"] == NAME  # machine fields stay exact
    assert _final(live, "quoted")["raw_input"]["path"] == SHOWN
    new_texts = [d["new_text"] for c in ("raw", "quoted") for d in _diffs(_final(live, c)["content"])]
    assert new_texts == ["total: 2", "total: 3"]

    # the approvals: the same title, the whole-file diff on the real file, real locations
    assert [p.tool_call_id for p in client.permissions] == ["raw", "quoted"]
    for asked in client.permissions:
        assert asked.title == f"edit_file {SHOWN}"
        assert [loc.path for loc in asked.locations] == [str(real)]
        [whole] = [c for c in asked.content if c.type == "diff"]
        assert whole.path == str(real) and Path(whole.path).is_file()
        shown = [c.content.text for c in asked.content if c.type == "content"]
        assert shown and f'--- "a/{SHOWN[1:]}' in shown[0]  # the unified diff's header, as git writes it

    # a path the tools refuse: titled in display form, no location
    outside = _final(live, "outside")
    assert outside["title"] == f'read_file "../xinvoice\\342\\200\\256fdp.exe"'
    assert not outside.get("locations")

    # the agent's text and everything shown, live and replayed, reads as what it is
    said = "".join(u.content.text for u in live if u.session_update == "agent_message_chunk")
    assert "Fixing invoice\\u202efdp.exe now." in said
    for update in client.updates:
        for shown_text in _texts(update.model_dump(exclude_none=True)):
            assert RAW.search(shown_text) is None, (update.session_update, shown_text)
    calls = ("raw", "quoted", "outside")
    assert [_final(replayed, c) for c in calls] == [_final(live, c) for c in calls]  # as told live
    [user] = [u.content.text for u in replayed if u.session_update == "user_message_chunk"]
    assert user.startswith("fix invoice\\u202efdp.exe")


async def test_a_quoted_name_is_read_and_written_through_the_clients_buffer(repo: Path, tmp_path: Path) -> None:
    real = repo / NAME
    real.write_text("total: 1\n")
    model = script(tmp_path, [
        {"tool_calls": [{"id": "e", "name": "edit_file",
                         "arguments": {"path": SHOWN, "old_string": "unsaved", "new_string": "edited"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(answers=["allow_once"], buffers={str(real): "total: unsaved\n"})
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo, fs=True)
        await conn.prompt(session_id=sid, prompt=text("edit"))
    assert client.final("e")["status"] == "completed", client.final("e")
    assert client.writes == [(str(real), "total: edited\n")]
    assert real.read_text() == "total: 1\n"  # nothing written behind the client's back
    [whole] = [c for c in client.permissions[0].content if c.type == "diff"]
    assert (whole.path, whole.old_text, whole.new_text) == (str(real), "total: unsaved\n", "total: edited\n")


def test_a_subjects_diff_names_the_file_its_display_form_stands_for(tmp_path: Path) -> None:
    odd = ["invoice\u202efdp.exe", 'say"hi".txt', "caf\udce9.txt", "dir/a\nb.txt", '"quoted".txt', "plain.txt"]
    for name in odd:
        subject = {"kind": "edit", "tool": "edit_file", "path": display_name(name),
                   "diff": f"--- a/{display_name(name)}\n+++ b/{display_name(name)}\n@@ -1 +1 @@\n-a\n+b\n"}
        *diff, unified = mapping.subject_content(subject, tmp_path)
        # a name that is not UTF-8 has no diff block: no JSON string can name it
        assert [d.path for d in diff] == ([] if "\udce9" in name else [str(tmp_path / name)]), name
        assert RAW.search(unified.content.text) is None


def test_a_rename_is_titled_with_both_names_as_the_tools_read_them(tmp_path: Path) -> None:
    (tmp_path / NAME).write_text("x\n")
    resolve = functools.partial(call_path, tmp_path)
    done = CallSnapshot(name="rename_file", path=SHOWN, arguments={"path": SHOWN, "new_path": "paid\u202etxt.exe"})
    assert mapping.title(done, resolve) == f'rename_file {SHOWN} → "paid\\342\\200\\256txt.exe"'
    streaming = CallSnapshot(name="rename_file", preview={"path": NAME, "new_path": "pa\u202e"})
    assert mapping.title(streaming, resolve) == f'rename_file {SHOWN} → "pa\\342\\200\\256"'
    assert mapping.locations(done, resolve) == [ToolCallLocation(path=str(tmp_path / NAME))]
    odd_tool = CallSnapshot(name="run\x1b[2J", kind="server_tool_use")
    assert mapping.title(odd_tool, resolve) == "run\\x1b[2J (run by the provider)"


async def test_two_spellings_of_one_file_in_one_answer_wait_for_each_other(repo: Path, tmp_path: Path) -> None:
    """The raw name and its quoted form are one file: one lock, one call order, so the second
    edit is asked about (and planned) on the text the first left, as for any two edits of a file."""
    real = repo / NAME
    real.write_text("total: 1\n")
    model = script(tmp_path, [
        {"tool_calls": [{"id": "first", "name": "edit_file",
                         "arguments": {"path": NAME, "old_string": "total: 1", "new_string": "total: 2"}},
                        {"id": "second", "name": "edit_file",
                         "arguments": {"path": SHOWN, "old_string": "total: 2", "new_string": "total: 3"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(answers=["allow_once", "allow_once"])
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo)
        await conn.prompt(session_id=sid, prompt=text("edit twice"))
    assert [client.final(c)["status"] for c in ("first", "second")] == ["completed", "completed"], \
        client.final("second")
    assert real.read_text() == "total: 3\n"
    [whole] = [c for c in client.permissions[1].content if c.type == "diff"]
    assert (whole.old_text, whole.new_text) == ("total: 2\n", "total: 3\n")


def _strings(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(k) + _strings(v)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return [value] if isinstance(value, str) else []


async def test_a_name_that_is_not_utf8_is_never_sent_as_a_path(repo: Path, tmp_path: Path) -> None:
    """No JSON string can name ``caf<0xE9>.txt`` (a lone surrogate escape breaks strict parsers):
    its title is the quoted form, and it has no location, no diff block and no fs/read_text_file."""
    with open(os.fsencode(repo) + b"/caf\xe9.txt", "wb") as handle:
        handle.write(b"one\n")
    quoted = '"caf\\351.txt"'
    model = script(tmp_path, [
        {"tool_calls": [{"id": "r", "name": "read_file", "arguments": {"path": quoted}}]},
        {"tool_calls": [{"id": "e", "name": "edit_file",
                         "arguments": {"path": quoted, "old_string": "one", "new_string": "two"}}]},
        {"text": "ok"},
    ])
    client = RecordingClient(answers=["allow_once"])
    async with await start(client, f"replay:{model}") as (conn, _):
        sid = await open_session(conn, repo, fs=True)
        await conn.prompt(session_id=sid, prompt=text("edit"))
    assert not client.invalid, client.invalid
    assert [client.final(c)["status"] for c in ("r", "e")] == ["completed", "completed"]
    with open(os.fsencode(repo) + b"/caf\xe9.txt", "rb") as handle:
        assert handle.read() == b"two\n"
    for call_id in ("r", "e"):
        final = client.final(call_id)
        assert final["title"].endswith(f" {quoted}") and not final.get("locations")
        assert not _diffs(final.get("content", []))
    assert not [c for c in client.permissions[0].content if c.type == "diff"]
    sent = [s for u in client.updates + client.permissions for s in _strings(u.model_dump())] + client.reads
    assert all(valid_text(s) is s for s in sent), [s for s in sent if valid_text(s) is not s]


async def test_a_failed_turns_message_is_shown_in_display_form(repo: Path) -> None:
    """The endpoint's words reach the prompt's error as text that reads as it is."""
    from endpoint import FakeEndpoint, refusal

    with FakeEndpoint([refusal("no access to invoice\u202efdp.exe\x1b[2J", status=403)]) as endpoint:
        client = RecordingClient()
        settings = {"baseUrl": endpoint.base_url, "modelRetries": 0, "apiKey": "sk-test-0123456789"}
        async with await start(client, "openai:m", settings=settings) as (conn, _):
            sid = await open_session(conn, repo)
            with pytest.raises(RequestError) as raised:
                await conn.prompt(session_id=sid, prompt=text("go"))
    message = raised.value.data["message"]
    assert raised.value.data["stopReason"] == "error"
    assert "invoice\\u202efdp.exe\\x1b[2J" in message and RAW.search(message) is None, message
