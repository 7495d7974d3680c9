"""Problems after every edit, over stdio: a real ``toolwire serve`` and a test editor that
declares ``toolwireEditor.diagnostics``, answers ``toolwire/editor/diagnostics`` from data
each test sets, and "runs its language server" after each edit it applies: it sets the
file's problems the test gave and sends ``toolwire/editor/diagnosticsChanged`` (protocol.md
"Problems after an edit: data.diagnostics"). Waits are on events; the quiet period is set
per server (``TOOLWIRE_DIAGNOSTICS_QUIET``) and the bound per session (``diagnosticsWait``),
so nothing depends on how fast the machine is."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from conftest import make_client, new_session, prompt, write_script
from editor import EDITS, EditorClient

pytestmark = pytest.mark.asyncio(loop_scope="module")


def diag(line: int, char: int, message: str, *, severity: int = 1, code: Any = 2304,
         source: str = "ts") -> dict[str, Any]:
    return {"range": {"start": {"line": line, "character": char}, "end": {"line": line, "character": char + 1}},
            "severity": severity, "code": code, "source": source, "message": message}


class ProblemsEditor(EditorClient):
    """An editor whose language server the test scripts.

    Attributes:
        problems: ``uri → [Diagnostic]``: what ``toolwire/editor/diagnostics`` answers.
        after_edit: ``uri → [Diagnostic]``: the problems the file has once an edit of it is
            applied; the editor then reports the change (unless ``report`` is False for it).
        asked: The ``uris`` of every diagnostics question.
        report: Report changes after edits (False: an editor that never sends diagnosticsChanged).
        hold_report: ``uri → event``: the report for that file waits for the event.
    """

    def __init__(self) -> None:
        super().__init__()
        self.problems: dict[str, list[dict[str, Any]]] = {}
        self.after_edit: dict[str, list[dict[str, Any]]] = {}
        self.asked: list[Any] = []
        self.report = True
        self.hold_report: dict[str, asyncio.Event] = {}

    def answer_diagnostics(self, params: dict[str, Any]) -> dict[str, Any]:
        uris = params.get("uris")
        self.asked.append(uris)
        chosen = uris if uris is not None else list(self.problems)
        return {"items": [{"uri": uri, "diagnostics": self.problems.get(uri, [])} for uri in chosen]}

    def changed(self, uris: list[str]) -> None:
        self.protocol.notify("toolwire/editor/diagnosticsChanged", {"uris": uris})

    async def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        result = await super().apply_edit(params)
        for change in params.edit.document_changes or []:
            uri = change.text_document.uri
            if not result.applied or uri not in self.after_edit:
                continue
            if uri in self.hold_report:
                asyncio.get_running_loop().create_task(self._report_later(uri, self.hold_report[uri]))
            else:  # at once: the server sees the report before the edit's answer
                self._language_server(uri)
        return result

    async def _report_later(self, uri: str, event: asyncio.Event) -> None:
        await event.wait()
        self._language_server(uri)

    def _language_server(self, uri: str) -> None:
        self.problems[uri] = self.after_edit.pop(uri)
        if self.report:
            self.changed([uri])


def make_problems_editor() -> ProblemsEditor:
    client = make_client(ProblemsEditor)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    async def apply_edit(params):
        return await client.apply_edit(params)

    @client.feature("toolwire/editor/diagnostics")
    def diagnostics(params):
        return client.answer_diagnostics(params)

    return client


def problems_fixture(name: str, declared: dict[str, Any] | None, quiet: str) -> Any:
    """A module-scoped server whose editor declares ``declared`` as ``toolwireEditor`` (None:
    nothing), the quiet period ``quiet`` seconds."""

    @pytest_lsp.fixture(name=name, scope="module", config=ClientServerConfig(
        server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
        client_factory=make_problems_editor, server_env={**os.environ, "TOOLWIRE_DIAGNOSTICS_QUIET": quiet}))
    async def fixture(lsp_client: ProblemsEditor):
        experimental = {"toolwireEditor": declared} if declared is not None else None
        result = await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities(
            workspace=EDITS, experimental=experimental)))
        lsp_client.encoding = str(result.capabilities.position_encoding or "utf-16")
        yield
        for event in lsp_client.hold_report.values():
            event.set()
        await lsp_client.shutdown_session()

    return fixture


editor = problems_fixture("editor", {"diagnostics": True}, "0")
realtime = problems_fixture("realtime", {"diagnostics": True}, "0.25")  # the real 250 ms quiet period
slow_quiet = problems_fixture("slow_quiet", {"diagnostics": True}, "3600")  # never quiet long enough
no_capability = problems_fixture("no_capability", None, "0")
symbols_only = problems_fixture("symbols_only", {"symbols": True}, "0")

SOURCE = "".join(f"line{n}\n" for n in range(10))  # line0 .. line9


def workspace(tmp_path: Path, *names: str) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    for name in names:
        (root / name).write_text(SOURCE)
    return root


def edit(path: str, old: str, new: str, call_id: str = "c") -> dict[str, Any]:
    return {"name": "edit_file", "arguments": {"path": path, "old_string": old, "new_string": new}, "id": call_id}


async def run(client: ProblemsEditor, root: Path, tmp_path: Path, calls: list[dict[str, Any]],
              **settings: Any) -> dict[str, dict[str, Any]]:
    """Run one turn making ``calls`` (edits auto-approved); each call's final snapshot by id."""
    script = write_script(tmp_path / "s.jsonl", [{"tool_calls": calls}, {"text": "ok"}])
    sid = await new_session(client, root, script, permissions={"edits": "auto"}, **settings)
    await prompt(client, sid)
    return {cid: snaps[-1] for cid, snaps in client.tool_calls(sid).items()}


async def test_new_problem_named_fixed_one_counted_old_one_not_repeated(editor, tmp_path):
    root = workspace(tmp_path, "a.ts")
    uri = editor.open(root / "a.ts", SOURCE)
    # before: a problem on line 2 (0-based) the edit fixes, one on line 7 that stays (and moves down)
    editor.problems[uri] = [diag(2, 0, "Cannot find name 'line2'."), diag(7, 4, "Unused 'line7'.", severity=2, code=6133)]
    editor.after_edit[uri] = [diag(8, 4, "Unused 'line7'.", severity=2, code=6133),  # moved by the inserted line
                              diag(3, 2, "';' expected.", code=1005)]  # new, on the inserted line
    calls = await run(editor, root, tmp_path, [edit("a.ts", "line2\n", "fixed2\nbr(ken\n")])
    call = calls["c"]
    assert call["status"] == "done"
    content = call["result"]["content"]
    assert content.endswith("\n1 new problem (1 problem fixed):\na.ts:4:3: error (ts 1005): ';' expected.")
    assert "line7" not in content
    assert call["result"]["data"]["diagnostics"] == {
        "checked": True, "resolved": 1, "final": True,
        "new": [{"path": "a.ts", "line": 4, "column": 3, "severity": "error", "source": "ts", "code": 1005,
                 "message": "';' expected."}]}


async def test_an_edit_above_a_problem_that_stays_names_nothing_new(editor, tmp_path):
    root = workspace(tmp_path, "a.ts")
    uri = editor.open(root / "a.ts", SOURCE)
    editor.problems[uri] = [diag(5, 0, "Cannot find name 'line5'.")]
    # two lines inserted right above it: the problem is now on line 7, next to the edit
    editor.after_edit[uri] = [diag(7, 0, "Cannot find name 'line5'.")]
    call = (await run(editor, root, tmp_path, [edit("a.ts", "line4\n", "line4\nx\ny\n")]))["c"]
    assert call["result"]["content"].endswith("\nno new problems")
    assert call["result"]["data"]["diagnostics"] == {"checked": True, "new": [], "resolved": 0, "final": True}


async def test_a_file_that_is_not_open_is_not_checked(editor, tmp_path):
    root = workspace(tmp_path, "b.ts")
    asked = len(editor.asked)
    call = (await run(editor, root, tmp_path, [edit("b.ts", "line1\n", "oops(\n")]))["c"]
    assert call["status"] == "done"
    assert call["result"]["content"].endswith("\nproblems not checked: b.ts is not open in the editor")
    assert "no new problems" not in call["result"]["content"]
    assert call["result"]["data"]["diagnostics"] == {"checked": False}
    assert len(editor.asked) == asked  # nothing asked of the editor for it


async def test_create_file_is_not_checked_when_not_open(editor, tmp_path):
    root = workspace(tmp_path)
    call = (await run(editor, root, tmp_path, [
        {"name": "create_file", "arguments": {"path": "new.ts", "content": "x\n"}, "id": "c"}]))["c"]
    assert call["result"]["content"].endswith("\nproblems not checked: new.ts is not open in the editor")
    assert call["result"]["data"]["diagnostics"] == {"checked": False}


async def test_without_any_editor_capability_nothing_is_asked_or_added(no_capability, tmp_path):
    await nothing_added(no_capability, tmp_path)


async def test_with_symbols_only_nothing_is_asked_or_added(symbols_only, tmp_path):
    await nothing_added(symbols_only, tmp_path)


async def nothing_added(client: ProblemsEditor, tmp_path: Path) -> None:
    root = workspace(tmp_path, "a.ts", "b.ts")
    uri = client.open(root / "a.ts", SOURCE)
    client.problems[uri] = [diag(2, 0, "old")]
    client.after_edit[uri] = [diag(2, 0, "new")]
    calls = await run(client, root, tmp_path, [edit("a.ts", "line2\n", "x\n", "c1"), edit("b.ts", "line2\n", "x\n", "c2")])
    for call in calls.values():
        assert call["status"] == "done"
        assert "problem" not in call["result"]["content"]
        assert "diagnostics" not in call["result"]["data"]
    assert client.asked == []


async def test_an_editor_that_never_reports_hits_the_bound(editor, tmp_path):
    root = workspace(tmp_path, "a.ts")
    uri = editor.open(root / "a.ts", SOURCE)
    editor.problems[uri] = [diag(8, 0, "old one")]  # the file has problems: it is waited for
    editor.after_edit[uri] = [diag(8, 0, "old one"), diag(1, 0, "new one")]
    editor.report = False
    try:
        call = (await run(editor, root, tmp_path, [edit("a.ts", "line1\n", "x\n")], diagnosticsWait=0.2))["c"]
    finally:
        editor.report = True
    content = call["result"]["content"]
    assert "problems may not be final" in content
    assert "a.ts:2:1: error (ts 2304): new one" in content  # what the editor had when the bound ran out
    assert call["result"]["data"]["diagnostics"]["final"] is False


async def test_the_quiet_period_is_waited_for_within_the_bound(slow_quiet, tmp_path):
    root = workspace(tmp_path, "a.ts")
    uri = slow_quiet.open(root / "a.ts", SOURCE)
    slow_quiet.problems[uri] = [diag(8, 0, "old one")]
    slow_quiet.after_edit[uri] = []
    call = (await run(slow_quiet, root, tmp_path, [edit("a.ts", "line1\n", "x\n")], diagnosticsWait=0.3))["c"]
    assert call["result"]["data"]["diagnostics"] == {"checked": True, "new": [], "resolved": 1, "final": False}
    assert "1 problem fixed\n(problems may not be final" in call["result"]["content"]


async def test_with_the_real_quiet_period_problems_settle(realtime, tmp_path):
    root = workspace(tmp_path, "a.ts")
    uri = realtime.open(root / "a.ts", SOURCE)
    realtime.problems[uri] = [diag(8, 0, "old one")]
    realtime.after_edit[uri] = [diag(8, 0, "old one"), diag(1, 0, "new one")]
    call = (await run(realtime, root, tmp_path, [edit("a.ts", "line1\n", "x\n")], diagnosticsWait=30))["c"]
    assert call["result"]["data"]["diagnostics"]["final"] is True
    assert call["result"]["content"].endswith("\n1 new problem:\na.ts:2:1: error (ts 2304): new one")


async def test_a_file_never_diagnosed_is_not_waited_for(editor, tmp_path):
    root = workspace(tmp_path, "notes.txt")
    uri = editor.open(root / "notes.txt", SOURCE)
    editor.report = False  # nothing ever reports on it; waiting would run out the 30 s bound
    try:
        call = (await run(editor, root, tmp_path, [edit("notes.txt", "line1\n", "x\n")], diagnosticsWait=30))["c"]
    finally:
        editor.report = True
    assert call["result"]["data"]["diagnostics"] == {"checked": True, "new": [], "resolved": 0, "final": True}
    assert uri in {u for asked in editor.asked if asked for u in asked}


async def test_two_edits_of_one_turn_do_not_wait_for_each_other(editor, tmp_path):
    root = workspace(tmp_path, "a.ts", "b.ts")
    a = editor.open(root / "a.ts", SOURCE)
    b = editor.open(root / "b.ts", SOURCE)
    editor.problems[a] = [diag(8, 0, "old a")]
    editor.problems[b] = [diag(8, 0, "old b")]
    editor.after_edit[a] = [diag(8, 0, "old a"), diag(1, 0, "new in a")]
    editor.after_edit[b] = [diag(8, 0, "old b"), diag(1, 0, "new in b")]
    # a.ts's problems are reported only once b.ts's edit is done: if a.ts's wait held b.ts up (its
    # path locks, the one parallel slot),
    # a.ts would run out its 30 s bound first and say its problems may not be final
    release = editor.hold_report[a] = asyncio.Event()
    b_done = asyncio.get_running_loop().create_task(editor.wait_for(
        lambda p: p["update"].get("sessionUpdate") == "tool_call" and p["update"]["toolCall"].get("toolCallId") == "cb"
        and p["update"]["toolCall"].get("status") == "done", timeout=60))
    b_done.add_done_callback(lambda _: release.set())
    try:
        calls = await run(editor, root, tmp_path, [edit("a.ts", "line1\n", "x\n", "ca"), edit("b.ts", "line1\n", "x\n", "cb")],
                          diagnosticsWait=30, maxParallelTools=1)  # one slot: a.ts's wait must not hold it
    finally:
        release.set()
        del editor.hold_report[a]
    assert calls["ca"]["result"]["data"]["diagnostics"]["final"] is True
    assert calls["ca"]["result"]["content"].endswith("a.ts:2:1: error (ts 2304): new in a")
    assert calls["cb"]["result"]["content"].endswith("b.ts:2:1: error (ts 2304): new in b")
    assert b_done.done() and b_done.exception() is None


async def test_two_edits_of_one_file_each_name_their_own_problems(editor, tmp_path):
    root = workspace(tmp_path, "a.ts")
    uri = editor.open(root / "a.ts", SOURCE)
    editor.problems[uri] = [diag(8, 0, "old")]
    first = [diag(8, 0, "old"), diag(1, 0, "from the first")]
    second = [*first, diag(5, 0, "from the second")]
    editor.after_edit[uri] = first
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [edit("a.ts", "line1\n", "x\n", "c1"), edit("a.ts", "line5\n", "y\n", "c2")]}, {"text": "ok"}])
    sid = await new_session(editor, root, script, permissions={"edits": "auto"}, diagnosticsWait=30)

    def queue_second(params: dict[str, Any]) -> bool:  # the second edit's problems, once the first is done
        call = params["update"].get("toolCall") or {}
        if call.get("toolCallId") == "c1" and call.get("status") == "done" and uri not in editor.after_edit:
            editor.after_edit[uri] = second
        return False

    editor.waiters.append((queue_second, asyncio.Event()))
    try:
        await prompt(editor, sid)
    finally:
        editor.waiters.pop()
    calls = {cid: snaps[-1] for cid, snaps in editor.tool_calls(sid).items()}
    assert [p["message"] for p in calls["c1"]["result"]["data"]["diagnostics"]["new"]] == ["from the first"]
    assert [p["message"] for p in calls["c2"]["result"]["data"]["diagnostics"]["new"]] == ["from the second"]


async def test_multi_edit_names_the_problems_next_to_each_of_its_edits_only(editor, tmp_path):
    root = workspace(tmp_path, "a.ts")
    uri = editor.open(root / "a.ts", SOURCE)
    editor.problems[uri] = [diag(9, 0, "was there")]
    editor.after_edit[uri] = [diag(9, 0, "was there"), diag(1, 0, "near the first"), diag(7, 0, "near the second"),
                              diag(4, 0, "far from both")]
    call = (await run(editor, root, tmp_path, [{"name": "multi_edit", "id": "c", "arguments": {"path": "a.ts", "edits": [
        {"old_string": "line1\n", "new_string": "one\n"}, {"old_string": "line7\n", "new_string": "seven\n"}]}}]))["c"]
    assert [p["message"] for p in call["result"]["data"]["diagnostics"]["new"]] == ["near the first", "near the second"]
    assert call["result"]["content"].splitlines()[1:] == [
        "2 new problems:", "a.ts:2:1: error (ts 2304): near the first", "a.ts:8:1: error (ts 2304): near the second"]


async def test_create_file_over_an_open_file_is_checked(editor, tmp_path):
    root = workspace(tmp_path, "a.ts")
    uri = editor.open(root / "a.ts", SOURCE)
    editor.problems[uri] = [diag(3, 0, "gone with the old text")]
    editor.after_edit[uri] = [diag(0, 0, "in the new text")]
    call = (await run(editor, root, tmp_path, [
        {"name": "create_file", "id": "c", "arguments": {"path": "a.ts", "content": "brand(\nnew\n", "overwrite": True}}]))["c"]
    assert call["status"] == "done", call
    assert call["result"]["data"]["diagnostics"] == {
        "checked": True, "resolved": 1, "final": True,
        "new": [{"path": "a.ts", "line": 1, "column": 1, "severity": "error", "source": "ts", "code": 2304,
                 "message": "in the new text"}]}


async def test_a_call_cancelled_while_it_waits_ends_done_with_its_edit_and_no_problems(editor, tmp_path):
    root = workspace(tmp_path, "a.ts")
    uri = editor.open(root / "a.ts", SOURCE)
    editor.problems[uri] = [diag(8, 0, "old one")]
    editor.after_edit[uri] = [diag(8, 0, "old one"), diag(1, 0, "new one")]
    editor.report = False  # never settles: the edit's call waits its 30 s bound unless cancelled
    script = write_script(tmp_path / "s.jsonl", [{"tool_calls": [
        edit("a.ts", "line1\n", "x\n", "c1"),
        {"name": "read_file", "id": "r1", "arguments": {"path": "a.ts"}}]}, {"text": "ok"}])
    sid = await new_session(editor, root, script, permissions={"edits": "auto"}, diagnosticsWait=30)

    def read_done(params: dict[str, Any]) -> bool:  # the read ran: c1 released a.ts, it is waiting now
        call = params["update"].get("toolCall") or {}
        return call.get("toolCallId") == "r1" and call.get("status") == "done"

    read = asyncio.get_running_loop().create_task(editor.wait_for(read_done, timeout=60))
    turn = asyncio.get_running_loop().create_task(prompt(editor, sid))
    try:
        await read
        assert (await editor.call("toolwire/toolCall/cancel", {"sessionId": sid, "toolCallId": "c1"}))["cancelled"]
        await asyncio.wait_for(turn, 60)
    finally:
        editor.report = True
    call = editor.tool_calls(sid)["c1"][-1]
    assert call["status"] == "done"
    assert call["result"]["content"] == "Edited a.ts: 1 replacement at line 2"
    assert "diagnostics" not in call["result"]["data"]
    assert editor.buffers[uri][0].startswith("line0\nx\n")
