"""What an editor without Toolwire's panel shows reads as what is there (issue 19, part 5).

A code action on ``invoice<U+202E>fdp.exe`` (which reads as "invoiceexe.pdf" when shown
raw), with a diagnostic and a model answer holding U+202E: the quick fix's title, the
``window/showMessageRequest`` approval, the work-done progress and the closing
``window/showMessage`` show paths in git's quoted form (as the approval subject) and every
other control, bidirectional or invisible character as an escape; the model's prompt
names the file in that form, which the tools take back. A real ``toolwire serve`` over
stdio, the client of tests/test_e2e_actions.py.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from conftest import write_script
from test_e2e_actions import CAPS, EditorClient, configure, make_editor, new_tokens, run_action, summaries, until

pytestmark = pytest.mark.asyncio(loop_scope="module")

NAME = "invoice\u202efdp.exe"
SHOWN = '"invoice\\342\\200\\256fdp.exe"'
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"], client_factory=make_editor))
async def editor(lsp_client: EditorClient):
    lsp_client.init_result = await lsp_client.initialize_session(types.InitializeParams(capabilities=CAPS))
    yield
    await lsp_client.shutdown_session()


async def test_a_fix_on_a_bidi_name_is_shown_in_display_form_everywhere(editor, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / NAME).write_text("total = 1 + bb\n")
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"text": f"Fixing {NAME}.", "tool_calls": [{"name": "edit_file", "id": "e1", "arguments": {
            "path": NAME, "old_string": "1 + bb", "new_string": "1 + b"}}]},
        {"text": "Replaced b\u202eb with b\x1b[2J."},
    ])
    configure(editor, model=f"replay:{script}", replayLog=str(log))
    uri = editor.open(ws / NAME)
    diagnostic = types.Diagnostic(
        range=types.Range(start=types.Position(line=0, character=12), end=types.Position(line=0, character=14)),
        message="undefined name 'b\u202eb'", source="pyflakes", severity=types.DiagnosticSeverity.Error)
    [fix] = await editor.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=[types.CodeActionKind.QuickFix])))
    assert fix.title == "Toolwire: Fix 'undefined name 'b\\u202eb''"
    before = set(editor.progress_reports)
    asked = len(editor.asked)
    await run_action(editor, fix.command.arguments[0])
    await until(editor, lambda: summaries(editor, "fix"), "the closing message")

    assert editor.buffers[uri][1] == "total = 1 + b\n"  # the edit reached the file the user opened
    [question] = editor.asked[asked:]
    assert question.startswith(f"Toolwire wants to run edit_file on {SHOWN}:\n"), question
    [summary] = summaries(editor, "fix")
    assert f"Changed: Edited {SHOWN}: 1 replacement at line 1" in summary, summary
    assert "Replaced b\\u202eb with b\\x1b[2J." in summary, summary
    [token] = new_tokens(editor, before)
    reports = editor.progress_reports[token]
    assert reports[0].title == f"Toolwire: fixing {SHOWN}"
    messages = [r.message for r in reports if r.message]
    assert f"running edit_file {SHOWN}" in messages and f"edit_file {SHOWN}: done" in messages, messages
    for text in [question, summary, reports[0].title, *messages]:
        assert RAW.search(text) is None, text
    user = next(m["content"] for m in json.loads(log.read_text().splitlines()[0])["messages"] if m["role"] == "user")
    assert f"File: {SHOWN} (line 1)" in user, user
