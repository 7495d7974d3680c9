"""Code actions, ``toolwire.runAction``, work-done progress and the closing message, as
any LSP client sees them: a real ``toolwire serve`` over stdio, a client that does not
know ``toolwire/session/requestPermission`` (approvals come as ``window/showMessageRequest``)
and applies ``workspace/applyEdit`` to its own buffers like an editor."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, Union

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound
from pytest_lsp import ClientServerConfig
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from conftest import ToolwireTestClient, git, make_client, write_script
from opening import user_text

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT = 30.0
CAPS = types.ClientCapabilities(
    window=types.WindowClientCapabilities(work_done_progress=True),
    workspace=types.WorkspaceClientCapabilities(
        apply_edit=True, configuration=False,
        workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True)),  # editor edits need both
)


class PokingClient(ToolwireTestClient):
    """Sets :attr:`poked` on every update, ``$/progress`` and ``window/showMessage``."""

    def __init__(self) -> None:
        super().__init__()
        self.poked = asyncio.Event()

    def on_update(self, params: dict[str, Any]) -> None:
        super().on_update(params)
        self.poked.set()


def watch_notifications(client: PokingClient) -> None:
    """Wrap pytest-lsp's recording handlers so that each one pokes the client."""
    for method in (types.PROGRESS, types.WINDOW_SHOW_MESSAGE):
        default = DEFAULT_CLIENT_FEATURES[method]

        def handler(params: Any, default: Any = default) -> None:
            default(client, params)
            client.poked.set()

        client.protocol.fm.features.pop(method, None)  # replaces pytest-lsp's own, which it calls
        client.feature(method)(handler)


class EditorClient(PokingClient):
    """An editor without Toolwire's panel: keeps buffers, applies edits, answers approvals."""

    def __init__(self) -> None:
        super().__init__()
        self.buffers: dict[str, tuple[int, str]] = {}
        self.applied: list[Any] = []
        self.asked: list[str] = []
        self.approval = "Allow once"
        self.init_result: types.InitializeResult | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        """This client answers requestPermission with -32601 on purpose; anything else is a failure."""
        if isinstance(error, JsonRpcMethodNotFound) and "requestPermission" in str(error):
            return
        super().report_server_error(error, source)

    def open(self, path: Path) -> str:
        uri = path.as_uri()
        text = path.read_text()
        self.buffers[uri] = (1, text)
        self.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        return uri

    def apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        self.applied.append(params)
        for change in params.edit.document_changes or []:
            uri = change.text_document.uri
            version, text = self.buffers[uri]
            if change.text_document.version != version:
                return types.ApplyWorkspaceEditResult(applied=False, failure_reason="version")
            for edit in sorted(change.edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
                start, end = offset(text, edit.range.start), offset(text, edit.range.end)
                text = text[:start] + edit.new_text + text[end:]
            self.buffers[uri] = (version + 1, text)
            self.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version + 1),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        return types.ApplyWorkspaceEditResult(applied=True)


def offset(text: str, pos: types.Position) -> int:
    """A UTF-16 position's offset in ``text``."""
    lines = text.split("\n")
    before = sum(len(line) + 1 for line in lines[: pos.line])
    line = lines[pos.line] if pos.line < len(lines) else ""
    units = 0
    for i, ch in enumerate(line):
        if units >= pos.character:
            return before + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return before + len(line)


def make_editor() -> EditorClient:
    client = EditorClient()
    register_lsp_features(client)
    watch_notifications(client)
    converter = client.protocol._converter

    # lsprotocol reads any object with a "command" key as a Command, but a CodeAction
    # may carry a command object too (LSP: a Command's "command" is a string)
    def command_or_action(obj: Any, _: Any) -> Any:
        if isinstance(obj.get("command"), str):
            return converter.structure(obj, types.Command)
        return converter.structure(obj, types.CodeAction)

    converter.register_structure_hook(Union[types.Command, types.CodeAction], command_or_action)
    client.feature("toolwire/session/update")(lambda params: client.on_update(params))
    client.feature(types.WORKSPACE_APPLY_EDIT)(lambda params: client.apply(params))

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def ask(params: types.ShowMessageRequestParams):
        client.asked.append(params.message)
        return types.MessageActionItem(title=client.approval)

    return client


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"], client_factory=make_editor))
async def editor(lsp_client: EditorClient):
    lsp_client.init_result = await lsp_client.initialize_session(types.InitializeParams(capabilities=CAPS))
    yield
    await lsp_client.shutdown_session()


def configure(client, **section: Any) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"toolwire": section}))


async def until(client, predicate, what: str) -> None:
    """Wait until ``predicate()`` holds, re-checking on every notification the client receives."""
    async def loop() -> None:
        while not predicate():
            client.poked.clear()
            if predicate():
                return
            await client.poked.wait()
    try:
        await asyncio.wait_for(loop(), WAIT)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def summaries(client, kind: str) -> list[str]:
    return [m.message for m in client.messages if m.message.startswith(f"Toolwire ({kind})")]


def new_tokens(client, before: set) -> list:
    return [t for t in client.progress_reports if t not in before]


def kinds(reports: list) -> list[str]:
    return [r.kind for r in reports]


CALC = "def add(a, b):\n    return a + bb\n\n\ndef greet():\n    return 'héllo 👋 wörld'\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    return root


def rng(l1: int, c1: int, l2: int, c2: int) -> types.Range:
    return types.Range(start=types.Position(line=l1, character=c1), end=types.Position(line=l2, character=c2))


DIAG = types.Diagnostic(range=rng(1, 15, 1, 17), message="undefined name 'bb'\nsecond line", source="pyflakes",
                        severity=types.DiagnosticSeverity.Error, code="F821")


async def test_capabilities_declare_code_actions_and_the_command(editor):
    caps = editor.init_result.capabilities
    assert list(caps.execute_command_provider.commands) == ["toolwire.runAction"]
    kinds_declared = set(caps.code_action_provider.code_action_kinds)
    assert {"quickfix", "refactor.rewrite", ""} <= {getattr(k, "value", k) for k in kinds_declared}


async def test_code_actions_for_a_selection_and_for_each_diagnostic(editor, ws):
    uri = editor.open(ws / "calc.py")
    other = types.Diagnostic(range=rng(0, 4, 0, 7), message="x" * 200, source="mypy")

    def ask(r, diagnostics, only=None):
        return editor.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=r,
            context=types.CodeActionContext(diagnostics=diagnostics, only=only)))

    actions = await ask(rng(5, 11, 5, 28), [DIAG, other])
    titles = [a.title for a in actions]
    assert titles == ["Toolwire: Edit selection…", "Toolwire: Explain", "Toolwire: Fix 'undefined name 'bb''",
                      "Toolwire: Fix '" + "x" * 79 + "…'"]
    edit, explain, fix, _ = actions
    assert edit.kind == types.CodeActionKind.RefactorRewrite and fix.kind == types.CodeActionKind.QuickFix
    assert list(fix.diagnostics) == [DIAG]
    for action in actions:
        assert action.command.command == "toolwire.runAction" and len(action.command.arguments) == 1
    assert edit.command.arguments[0] == {"kind": "edit", "uri": uri, "range": {
        "start": {"line": 5, "character": 11}, "end": {"line": 5, "character": 28}}}
    fix_args = fix.command.arguments[0]
    assert fix_args["kind"] == "fix" and fix_args["range"] == {"start": {"line": 1, "character": 15},
                                                               "end": {"line": 1, "character": 17}}
    assert fix_args["diagnostic"]["message"] == DIAG.message and fix_args["diagnostic"]["code"] == "F821"
    # an empty range offers no selection actions; `only` filters by kind
    assert [a.title for a in await ask(rng(1, 4, 1, 4), [])] == []
    assert [a.title for a in await ask(rng(5, 11, 5, 28), [DIAG], only=[types.CodeActionKind.QuickFix])] == [
        "Toolwire: Fix 'undefined name 'bb''"]
    assert [a.title for a in await ask(rng(5, 11, 5, 28), [DIAG], only=[types.CodeActionKind.Refactor])] == [
        "Toolwire: Edit selection…"]


async def run_action(client, args: dict[str, Any]) -> dict[str, Any]:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="toolwire.runAction", arguments=[args]))


async def test_fix_runs_a_turn_that_edits_through_apply_edit_with_progress_and_a_summary(editor, ws, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"text": "Fixing.", "tool_calls": [{"name": "edit_file", "arguments": {
            "path": "calc.py", "old_string": "a + bb", "new_string": "a + b"}, "id": "e1"}]},
        {"text": "Replaced the undefined `bb` with `b`."},
    ])
    configure(editor, model=f"replay:{script}", replayLog=str(log))
    uri = editor.open(ws / "calc.py")
    [fix] = await editor.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=DIAG.range,
        context=types.CodeActionContext(diagnostics=[DIAG], only=[types.CodeActionKind.QuickFix])))
    before = set(editor.progress_reports)
    asked = len(editor.asked)
    started = await run_action(editor, fix.command.arguments[0])
    sid = started["sessionId"]
    assert started["turnId"] == "t1"
    await until(editor, lambda: summaries(editor, "fix"), "the closing message")
    [summary] = summaries(editor, "fix")
    assert "done" in summary.splitlines()[0]
    assert "Changed: Edited calc.py: 1 replacement at line 2" in summary
    assert "Replaced the undefined `bb` with `b`." in summary
    # the approval came as a standard showMessageRequest with the diff
    [question] = editor.asked[asked:]
    assert "edit_file on calc.py" in question and "-    return a + bb" in question and "+    return a + b" in question
    # the edit went through workspace/applyEdit into the editor's buffer; the disk is untouched
    assert editor.buffers[uri][1] == CALC.replace("a + bb", "a + b")
    assert (ws / "calc.py").read_text() == CALC
    # work-done progress: one token, begin (cancellable) … report … end
    [token] = new_tokens(editor, before)
    reports = editor.progress_reports[token]
    assert kinds(reports)[0] == "begin" and kinds(reports)[-1] == "end" and "report" in kinds(reports)
    assert reports[0].title == "Toolwire: fixing calc.py" and reports[0].cancellable is True
    messages = [r.message for r in reports if r.kind == "report"]
    assert "asking the model…" in messages and "running edit_file calc.py" in messages
    assert "edit_file calc.py: done" in messages
    # the prompt: file, range, diagnostic, selected text
    first = json.loads(log.read_text().splitlines()[0])
    user = user_text(next(m["content"] for m in first["messages"] if m["role"] == "user"))
    assert user.startswith("[Toolwire code action: fix]\nFile: calc.py (line 2)\n")
    assert "Diagnostic (error, pyflakes F821): undefined name 'bb'\nsecond line" in user
    assert "Selected text:\n```\nbb\n```" in user and "Task: Fix the problem" in user
    snap = await editor.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snap["running"] is False and [c["status"] for c in snap["toolCalls"]] == ["done"]
    # the user's entry is their intent and the selection, never the template the model reads
    assert [m.get("userText") for m in snap["messages"] if m["role"] == "user"] == [
        "Fix: undefined name 'bb'\nAttached: calc.py (line 2)"]


async def test_explain_answers_in_the_closing_message_and_changes_nothing(editor, ws, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [{"text": "It returns a greeting with an emoji."}])
    configure(editor, model=f"replay:{script}", replayLog=str(log))
    uri = editor.open(ws / "calc.py")
    applied = len(editor.applied)
    # the range is in UTF-16 units (the default encoding): the emoji counts two
    await run_action(editor, {"kind": "explain", "uri": uri, "range": {
        "start": {"line": 5, "character": 11}, "end": {"line": 5, "character": 27}}})
    await until(editor, lambda: summaries(editor, "explain"), "the closing message")
    summary = summaries(editor, "explain")[-1]
    assert "No files changed." in summary and "It returns a greeting with an emoji." in summary
    assert len(editor.applied) == applied
    user = next(m["content"] for m in json.loads(log.read_text().splitlines()[0])["messages"] if m["role"] == "user")
    assert "File: calc.py (line 6)" in user and "```\n'héllo 👋 wörld'\n```" in user
    assert "Do not change any file." in user


@pytest.mark.parametrize("odd", ["\f", "\u2028", "\x85"])
async def test_the_selection_after_an_odd_separator_is_the_text_the_user_selected(editor, ws, tmp_path, odd):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [{"text": "It returns sel."}])
    configure(editor, model=f"replay:{script}", replayLog=str(log))
    (ws / "odd.py").write_text(f"import os\n{odd}\ndef f():\n    return 'sel'  # 😀\n", newline="")
    uri = editor.open(ws / "odd.py")
    before = len(summaries(editor, "explain"))
    await run_action(editor, {"kind": "explain", "uri": uri, "range": {  # line 3 only by the LSP line rule
        "start": {"line": 3, "character": 11}, "end": {"line": 3, "character": 16}}})
    await until(editor, lambda: len(summaries(editor, "explain")) > before, "the closing message")
    user = next(m["content"] for m in json.loads(log.read_text().splitlines()[0])["messages"] if m["role"] == "user")
    assert "```\n'sel'\n```" in user
    editor.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_cancelling_the_progress_ends_the_turn_with_every_call_terminal(editor, ws, tmp_path):
    slow = {"name": "create_file", "arguments": {"path": "big.txt", "content": "x" * 400}, "id": "slow"}
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "calc.py"}, "id": "r"}, slow],
         "chunk_size": 2, "delay": 0.02},
        {"text": "never"},
    ])
    configure(editor, model=f"replay:{script}", replayLog=None)
    uri = editor.open(ws / "calc.py")
    before = set(editor.progress_reports)
    started = await run_action(editor, {"kind": "edit", "uri": uri, "instruction": "make it big", "range": {
        "start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}})
    sid = started["sessionId"]
    await until(editor, lambda: any(c[-1]["status"] == "generating" for c in editor.tool_calls(sid).values())
                and new_tokens(editor, before), "a call streaming under a progress")
    [token] = new_tokens(editor, before)
    editor.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token))
    await until(editor, lambda: summaries(editor, "edit"), "the closing message")
    assert kinds(editor.progress_reports[token])[-1] == "end"
    assert summaries(editor, "edit")[-1].startswith("Toolwire (edit): cancelled")
    snap = await editor.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snap["running"] is False
    statuses = {c["toolCallId"] or c["index"]: (c["status"], c.get("cancelReason")) for c in snap["toolCalls"]}
    assert statuses and all(s in ("done", "errored", "canceled") for s, _ in statuses.values()), statuses
    assert ("canceled", "turn_cancelled") in statuses.values()
    assert not (ws / "big.txt").exists()


async def test_run_action_errors(editor, ws, tmp_path):
    uri = (ws / "calc.py").as_uri()
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 3}}
    for args, words in (({"kind": "rewrite", "uri": uri, "range": whole}, "kind"),
                        ({"kind": "fix", "uri": "untitled:1", "range": whole}, "not a file: URI"),
                        ({"kind": "fix", "uri": uri, "range": whole, "sessionId": "nope"}, "unknown session")):
        with pytest.raises(JsonRpcException) as info:
            await run_action(editor, args)
        assert words in str(info.value), info.value


async def test_an_action_on_a_file_kept_from_the_model_is_refused_unless_allowed(editor, ws, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [{"text": "It sets the token."}])
    configure(editor, model=f"replay:{script}", replayLog=str(log))
    (ws / ".env").write_text("API_TOKEN=hunter2-secret\n")
    uri = editor.open(ws / ".env")
    args = {"kind": "explain", "uri": uri, "range": {"start": {"line": 0, "character": 0},
                                                     "end": {"line": 0, "character": 24}}}
    before = len(summaries(editor, "explain"))
    for refused in (args, {**args, "allowExcluded": False}):
        with pytest.raises(JsonRpcException) as info:
            await run_action(editor, refused)
        text = str(info.value)
        assert ".env is kept from the model by the modelExclude setting (pattern '.env')" in text, text
        assert "attach it in the Toolwire panel" in text and '"allowExcluded": true' in text and "nothing was sent" in text
    assert not log.exists() or "hunter2" not in log.read_text()  # refused before any model request
    assert len(summaries(editor, "explain")) == before  # no turn ran
    await run_action(editor, {**args, "allowExcluded": True})
    await until(editor, lambda: len(summaries(editor, "explain")) > before, "the closing message")
    assert "It sets the token." in summaries(editor, "explain")[-1]
    assert "hunter2-secret" in log.read_text()  # the user allowed it for this action
    editor.text_document_did_close(types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


# ----------------------------------------------------------------- long tools

def make_progress_client() -> PokingClient:
    client = make_client(PokingClient)
    watch_notifications(client)
    return client


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
    client_factory=make_progress_client))
async def toolwire_client(lsp_client: ToolwireTestClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=CAPS))
    yield
    await lsp_client.shutdown_session()


async def test_a_long_tool_reports_work_done_progress_in_a_prompt_turn(toolwire_client, repo, tmp_path):
    client = toolwire_client
    fifo = tmp_path / "release"
    os.mkfifo(fifo)
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\ncat '{fifo}' > /dev/null\n")
    hook.chmod(0o755)
    (repo / "hello.txt").write_text("changed\n")
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "git_commit", "arguments": {"message": "slow hook", "paths": ["hello.txt"]}, "id": "g"}]},
        {"text": "Committed."},
    ])
    sid = (await client.call("toolwire/session/new", {"cwd": str(repo), "model": f"replay:{script}",
                                                      "settings": {"permissions": {"git_commit": "auto"}}}))["sessionId"]
    before = set(client.progress_reports)
    turn = asyncio.ensure_future(client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "commit"}))
    await until(client, lambda: any(kinds(client.progress_reports[t])[:1] == ["begin"] for t in new_tokens(client, before)),
                "the long tool's progress")
    [token] = new_tokens(client, before)
    begin = client.progress_reports[token][0]
    assert begin.title == "Toolwire: git_commit" and begin.cancellable is True
    await asyncio.to_thread(fifo.write_text, "go\n")  # the hook finishes
    result = await asyncio.wait_for(turn, WAIT)
    assert result["stopReason"] == "end_turn"
    assert kinds(client.progress_reports[token])[-1] == "end"
    assert client.progress_reports[token][-1].message == "git_commit: done"
    assert git(repo, "log", "-1", "--format=%s").strip() == "slow hook"


async def test_ranges_use_the_negotiated_position_encoding(ws, tmp_path):
    """A client that speaks UTF-8 offsets gets them: the selection is read in bytes."""
    config = ClientServerConfig(server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
                                client_factory=make_editor)
    client = await config.start()
    try:
        caps = types.ClientCapabilities(
            general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf8]),
            window=types.WindowClientCapabilities(work_done_progress=True))
        result = await client.initialize_session(types.InitializeParams(capabilities=caps))
        assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
        log = tmp_path / "requests.jsonl"
        script = write_script(tmp_path / "s.jsonl", [{"text": "A greeting."}])
        configure(client, model=f"replay:{script}", replayLog=str(log))
        uri = client.open(ws / "calc.py")
        # 'héllo 👋 wörld' is 20 UTF-8 bytes (16 UTF-16 units)
        await run_action(client, {"kind": "explain", "uri": uri, "range": {
            "start": {"line": 5, "character": 11}, "end": {"line": 5, "character": 31}}})
        await until(client, lambda: summaries(client, "explain"), "the closing message")
        user = next(m["content"] for m in json.loads(log.read_text().splitlines()[0])["messages"] if m["role"] == "user")
        assert "```\n'héllo 👋 wörld'\n```" in user
    finally:
        await client.shutdown_session()
        await client.stop()
