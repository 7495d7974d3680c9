"""The editor's intelligence over stdio: a real ``toolwire serve`` and test editors that
declare ``capabilities.experimental.toolwireEditor`` (all of it, a subset, nothing) and
answer ``toolwire/editor/*`` from data each test sets (protocol.md "The editor's intelligence")."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from conftest import new_session, prompt, write_script
from editor import EDITS, EditorClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

EDITOR_METHODS = ("diagnostics", "symbols", "definition", "references")
EDITOR_TOOLS = ("get_diagnostics", "search_symbols", "find_symbol")


class IntelEditor(EditorClient):
    """An editor that answers the four questions with ``answers[feature](params)`` and records them.

    Attributes:
        asked: ``(feature, params)`` of every question, in order.
        answers: Per feature, a function of the params giving the result.
        hold: When set, questions wait for it (an editor that never answers).
    """

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.answers: dict[str, Any] = {}
        self.hold: asyncio.Event | None = None
        self.question = asyncio.Event()

    async def answer(self, feature: str, params: dict[str, Any]) -> Any:
        self.asked.append((feature, params))
        self.question.set()
        if self.hold is not None:
            await self.hold.wait()
        return self.answers[feature](params)


def make_intel_editor() -> IntelEditor:
    client = _editor_of(IntelEditor)
    for feature in EDITOR_METHODS:
        async def handler(params, feature=feature):
            return await client.answer(feature, params)
        client.feature(f"toolwire/editor/{feature}")(handler)
    return client


def _editor_of(cls: type[IntelEditor]) -> IntelEditor:
    from conftest import make_client

    client = make_client(cls)

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    async def apply_edit(params):
        return await client.apply_edit(params)

    handle_cancel = client.protocol._handle_cancel_notification

    def record_cancel(msg_id):
        client.cancelled.append(msg_id)
        handle_cancel(msg_id)

    client.protocol._handle_cancel_notification = record_cancel
    return client


def intel_fixture(name: str, declared: dict[str, Any] | None, encodings: list[str] | None = None) -> Any:
    """A module-scoped server driven by an :class:`IntelEditor` that declares ``declared`` as
    ``toolwireEditor`` (None: no such capability) and offers ``encodings``."""

    @pytest_lsp.fixture(name=name, scope="module", config=ClientServerConfig(
        server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
        client_factory=make_intel_editor))
    async def fixture(lsp_client: IntelEditor):
        general = types.GeneralClientCapabilities(position_encodings=encodings) if encodings else None
        experimental = {"toolwireEditor": declared} if declared is not None else None
        result = await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities(
            workspace=EDITS, general=general, experimental=experimental)))
        lsp_client.encoding = str(result.capabilities.position_encoding or "utf-16")
        yield
        if lsp_client.hold is not None:
            lsp_client.hold.set()
        await lsp_client.shutdown_session()

    return fixture


full = intel_fixture("full", {feature: True for feature in EDITOR_METHODS})
full_utf8 = intel_fixture("full_utf8", {feature: True for feature in EDITOR_METHODS}, ["utf-8", "utf-16"])
subset = intel_fixture("subset", {"diagnostics": True, "references": True, "symbols": False})
undeclared = intel_fixture("undeclared", None)


@pytest.fixture
def editors(full, full_utf8):
    """The editors of each encoding by name (one server each, started once per module)."""
    return {"full": full, "full_utf8": full_utf8}


def one_call(tmp_path: Path, name: str, arguments: dict[str, Any]) -> Path:
    return write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": name, "arguments": arguments, "id": "c"}]}, {"text": "ok"}])


async def run_one(client: IntelEditor, root: Path, tmp_path: Path, name: str, arguments: dict[str, Any],
                  **settings: Any) -> dict[str, Any]:
    """Run one call of ``name`` in a new session; its final snapshot."""
    sid = await new_session(client, root, one_call(tmp_path, name, arguments), **settings)
    await prompt(client, sid)
    return client.tool_calls(sid)["c"][-1]


def request_log(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines()]


# ------------------------------------------------------------------ which tools are offered

async def test_a_client_declaring_a_subset_gets_only_those_tools(subset, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [{"text": "ok"}])
    created = await subset.call("toolwire/session/new", {"cwd": str(repo), "model": f"replay:{script}",
                                                         "settings": {"replayLog": str(log)}})
    offered = [name for name in created["tools"] if name in EDITOR_TOOLS]
    assert offered == ["get_diagnostics", "find_symbol"]  # symbols: false declares nothing
    assert created["tools"][:17] == [name for name in created["tools"] if name not in EDITOR_TOOLS][:17]
    listed = await subset.call("toolwire/tools/list", {"sessionId": created["sessionId"]})
    names = [tool["function"]["name"] for tool in listed["tools"]]
    assert names == created["tools"] and names[-2:] == ["get_diagnostics", "find_symbol"]
    unbound = await subset.call("toolwire/tools/list", {})
    assert [tool["function"]["name"] for tool in unbound["tools"]] == names
    await prompt(subset, created["sessionId"])
    request = request_log(tmp_path)[0]
    system = request["messages"][0]["content"]
    assert "get_diagnostics" in system and "find_symbol" in system and "search_symbols" not in system
    assert request["tools"] == names


async def test_a_client_declaring_nothing_gets_no_editor_tools(undeclared, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [{"text": "ok"}])
    created = await undeclared.call("toolwire/session/new", {"cwd": str(repo), "model": f"replay:{script}",
                                                             "settings": {"replayLog": str(log)}})
    assert len(created["tools"]) == 17 and not set(created["tools"]) & set(EDITOR_TOOLS)
    listed = await undeclared.call("toolwire/tools/list", {})
    assert not {tool["function"]["name"] for tool in listed["tools"]} & set(EDITOR_TOOLS)
    await prompt(undeclared, created["sessionId"])
    system = request_log(tmp_path)[0]["messages"][0]["content"]
    assert not any(name in system for name in EDITOR_TOOLS) and "language servers" not in system
    assert undeclared.asked == []


async def test_an_editor_tool_the_session_does_not_offer_is_an_unknown_tool(undeclared, repo, tmp_path):
    final = await run_one(undeclared, repo, tmp_path, "get_diagnostics", {})
    assert final["status"] == "errored", final
    assert final["error"]["code"] == "unknown_tool"
    assert undeclared.asked == []


async def test_find_definition_with_only_references_declared_is_an_error_the_model_reads(subset, repo, tmp_path):
    (repo / "a.py").write_text("greet(1)\n")
    final = await run_one(subset, repo, tmp_path, "find_symbol",
                          {"path": "a.py", "line": 1, "symbol": "greet", "find": "definition"})
    assert final["status"] == "errored"
    assert final["result"]["content"].startswith("Error (editor_unsupported): the editor does not answer definition")
    assert [feature for feature, _ in subset.asked] == []


# ------------------------------------------------------------------ find_symbol

UTIL = "// ü 😀 helpers\nexport function greet(name: string) { return name; }\n"
APP = 'let s = "😀é"; greet(s);\n'


def workspace_files(repo: Path) -> None:
    (repo / "src").mkdir(exist_ok=True)
    (repo / "src" / "util.ts").write_text(UTIL)
    (repo / "src" / "app.ts").write_text(APP)


@pytest.mark.parametrize(("which", "sent", "defined_at"), [
    ("full", 15, 16),        # utf-16: 😀 counts 2 units
    ("full_utf8", 18, 16),   # utf-8: 😀 4 bytes, é 2
])
async def test_find_symbol_sends_the_column_in_the_negotiated_encoding(which, sent, defined_at, editors, repo,
                                                                      tmp_path):
    client = editors[which]
    workspace_files(repo)
    util_uri = (repo / "src" / "util.ts").as_uri()
    # the definition of greet: line 2 of util.ts, column 17 in characters ("export function " is 16)
    client.answers["definition"] = lambda params: {"locations": [
        {"uri": util_uri, "range": {"start": {"line": 1, "character": 16}, "end": {"line": 1, "character": 21}}}]}
    client.asked.clear()
    final = await run_one(client, repo, tmp_path, "find_symbol",
                          {"path": "src/app.ts", "line": 1, "symbol": "greet", "find": "definition"})
    assert final["status"] == "done", final
    feature, params = client.asked[-1]
    assert feature == "definition"
    assert params == {"textDocument": {"uri": (repo / "src" / "app.ts").as_uri()},
                      "position": {"line": 0, "character": sent}}
    content = final["result"]["content"]
    assert content == ("Definition of greet at src/app.ts:1:15:\n"
                       "src/util.ts:2: export function greet(name: string) { return name; }")
    assert final["result"]["data"]["locations"] == [{"path": "src/util.ts", "line": 2, "column": 17,
                                                     "text": "export function greet(name: string) { return name; }"}]
    assert "used occurrence" not in content


async def test_a_location_on_a_non_ascii_line_gets_its_column_in_characters(full_utf8, repo, tmp_path):
    workspace_files(repo)
    app_uri = (repo / "src" / "app.ts").as_uri()
    full_utf8.answers["references"] = lambda params: {"locations": [
        {"uri": app_uri, "range": {"start": {"line": 0, "character": 18}, "end": {"line": 0, "character": 23}}}]}
    final = await run_one(full_utf8, repo, tmp_path, "find_symbol",
                          {"path": "src/app.ts", "line": 1, "symbol": "greet", "find": "references"})
    assert final["status"] == "done", final
    assert final["result"]["data"]["locations"][0]["column"] == 15  # byte 18 is the 15th character
    assert full_utf8.asked[-1][1]["includeDeclaration"] is False


async def test_occurrence_chooses_among_whole_word_matches_and_the_result_says_so(full, repo, tmp_path):
    (repo / "m.py").write_text("x = 1\ny = greet(greet2, greet, o.greet) + greeting\n")
    full.answers["references"] = lambda params: {"locations": []}
    final = await run_one(full, repo, tmp_path, "find_symbol",
                          {"path": "m.py", "line": 2, "symbol": "greet", "occurrence": 2, "find": "references"})
    assert final["status"] == "done", final
    assert full.asked[-1][1]["position"] == {"line": 1, "character": 18}
    content = final["result"]["content"]
    assert content == ("No references found for greet at m.py:2:19.\n"
                       "used occurrence 2 of 3 (columns 5, 19, 28); pass occurrence to choose")
    assert final["result"]["data"]["occurrences"] == [5, 19, 28]


async def test_a_symbol_not_on_the_line_or_an_occurrence_too_far_is_an_error(full, repo, tmp_path):
    (repo / "m.py").write_text("y = greeting + greet\n")
    asked = len(full.asked)
    final = await run_one(full, repo, tmp_path, "find_symbol",
                          {"path": "m.py", "line": 1, "symbol": "greets", "find": "references"})
    assert final["status"] == "errored"
    assert final["result"]["content"].startswith("Error (symbol_not_found): 'greets' is not on line 1 of m.py")
    final = await run_one(full, repo, tmp_path, "find_symbol",
                          {"path": "m.py", "line": 1, "symbol": "greet", "occurrence": 2, "find": "references"})
    assert final["status"] == "errored"
    assert "appears 1 time(s) on line 1 of m.py (columns 16)" in final["result"]["content"]
    assert len(full.asked) == asked  # the editor was not asked


async def test_locations_outside_the_workspace_are_named_as_such(full, repo, tmp_path):
    workspace_files(repo)
    lib = tmp_path / "lib" / "lib.d.ts"
    lib.parent.mkdir()
    lib.write_text("// lib\n\ndeclare function greet(n: number): void;\n")
    full.answers["references"] = lambda params: {"locations": [
        {"uri": lib.as_uri(), "range": {"start": {"line": 2, "character": 17}, "end": {"line": 2, "character": 22}}},
        {"targetUri": (repo / "src" / "util.ts").as_uri(),  # a LocationLink: its targetSelectionRange
         "targetRange": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}},
         "targetSelectionRange": {"start": {"line": 1, "character": 16}, "end": {"line": 1, "character": 21}}},
        {"uri": (repo / "src" / "app.ts").as_uri(),
         "range": {"start": {"line": 0, "character": 15}, "end": {"line": 0, "character": 20}}},
    ]}
    final = await run_one(full, repo, tmp_path, "find_symbol",
                          {"path": "src/app.ts", "line": 1, "symbol": "greet", "find": "references"})
    assert final["status"] == "done", final
    assert final["result"]["content"].splitlines() == [
        "3 references of greet at src/app.ts:1:15:",
        "src/util.ts:2: export function greet(name: string) { return name; }",
        'src/app.ts:1: let s = "😀é"; greet(s);',
        f"outside the workspace: {lib}:3: declare function greet(n: number): void;",
    ]
    outside = final["result"]["data"]["locations"][-1]
    assert outside["outside"] is True and outside["path"] == str(lib)


async def test_the_uri_sent_is_the_one_the_editor_opened_through_a_link(full, repo, tmp_path):
    workspace_files(repo)
    link = tmp_path / "link"
    link.symlink_to(repo)
    opened = full.open(link / "src" / "app.ts", APP.replace("greet(s)", "greet(s) "))  # unsaved text
    try:
        full.answers["definition"] = lambda params: {"locations": [
            {"uri": opened, "range": {"start": {"line": 0, "character": 15}, "end": {"line": 0, "character": 20}}}]}
        final = await run_one(full, repo, tmp_path, "find_symbol",
                              {"path": "src/app.ts", "line": 1, "symbol": "greet", "find": "definition"})
        assert final["status"] == "done", final
        assert full.asked[-1][1]["textDocument"]["uri"] == opened
        # the location is shown with the buffer's text, under its workspace path
        assert final["result"]["content"].splitlines()[-1] == 'src/app.ts:1: let s = "😀é"; greet(s) ;'
    finally:
        full.close(opened)


# ------------------------------------------------------------------ search_symbols

async def test_search_symbols_drops_a_workspace_symbol_without_a_range(full, repo, tmp_path):
    workspace_files(repo)
    util = (repo / "src" / "util.ts").as_uri()
    full.answers["symbols"] = lambda params: {"symbols": [
        {"name": "greet", "kind": 12, "containerName": "util",
         "location": {"uri": util, "range": {"start": {"line": 1, "character": 16},
                                             "end": {"line": 1, "character": 21}}}},
        {"name": "greeter", "kind": 5, "location": {"uri": util}},  # unresolved WorkspaceSymbol: dropped
        {"name": "Greeting", "kind": 11, "location": {"uri": (repo / "src" / "app.ts").as_uri(),
                                                      "range": {"start": {"line": 0, "character": 4},
                                                                "end": {"line": 0, "character": 5}}}},
        {"name": "broken"},  # not a symbol: dropped
    ]}
    final = await run_one(full, repo, tmp_path, "search_symbols", {"query": "gree"})
    assert final["status"] == "done", final
    assert full.asked[-1] == ("symbols", {"query": "gree"})
    assert final["result"]["content"].splitlines() == [
        "2 symbols match 'gree':",
        "function greet (in util) src/util.ts:2",
        "interface Greeting src/app.ts:1",
    ]
    assert final["result"]["data"]["total"] == 2


# ------------------------------------------------------------------ get_diagnostics

def diagnostic(line: int, severity: int | None, message: str, code: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 1}},
                           "message": message, "source": "ts"}
    if severity is not None:
        out["severity"] = severity
    if code is not None:
        out["code"] = code
    return out


async def test_get_diagnostics_lists_errors_first_and_bounds_with_a_marker(full, repo, tmp_path):
    workspace_files(repo)
    app, util = (repo / "src" / "app.ts").as_uri(), (repo / "src" / "util.ts").as_uri()
    warnings = [diagnostic(0, 2, f"unused {n}") for n in range(120)]
    full.answers["diagnostics"] = lambda params: {"items": [
        {"uri": app, "diagnostics": [*warnings, diagnostic(0, 4, "a hint")]},
        {"uri": util, "diagnostics": [diagnostic(1, 1, "Type 'string' is not\nassignable", 2322),
                                      diagnostic(0, None, "no severity", {"value": 7, "target": "x"})]},
    ]}
    final = await run_one(full, repo, tmp_path, "get_diagnostics", {})
    assert final["status"] == "done", final
    assert full.asked[-1] == ("diagnostics", {"uris": None})  # null, sent explicitly
    lines = final["result"]["content"].splitlines()
    assert lines[0] == "123 problems (2 errors, 120 warnings, 1 hint):"
    assert lines[1] == "src/util.ts:1:1: error (ts): no severity"
    assert lines[2] == "src/util.ts:2:1: error (ts 2322): Type 'string' is not assignable"
    assert lines[3] == "src/app.ts:1:1: warning (ts): unused 0"
    assert len(lines) == 1 + 100 + 1 and "a hint" not in final["result"]["content"]
    assert lines[-1] == "[23 more problems not shown; give paths to narrow]"
    data = final["result"]["data"]
    assert data["total"] == 123 and len(data["problems"]) == 100
    assert data["counts"] == {"error": 2, "warning": 120, "info": 0, "hint": 1}


async def test_get_diagnostics_of_paths_asks_for_their_uris_and_names_closed_files(full, repo, tmp_path):
    workspace_files(repo)
    link = tmp_path / "link2"
    link.symlink_to(repo)
    opened = full.open(link / "src" / "app.ts", APP)
    try:
        full.answers["diagnostics"] = lambda params: {"items": [
            {"uri": opened, "diagnostics": [diagnostic(0, 1, "Cannot find name 's'.", 2304)]}]}
        final = await run_one(full, repo, tmp_path, "get_diagnostics", {"paths": ["src/app.ts", "src/util.ts"]})
        assert final["status"] == "done", final
        assert full.asked[-1] == ("diagnostics", {"uris": [opened, (repo / "src" / "util.ts").as_uri()]})
        assert final["result"]["content"].splitlines() == [
            "1 problem in src/app.ts, src/util.ts (1 error):",
            "src/app.ts:1:1: error (ts 2304): Cannot find name 's'.",
            "src/util.ts is not open in the editor: it may not have been checked",
        ]
    finally:
        full.close(opened)


# ------------------------------------------------------------------ an editor that never answers

async def test_an_editor_that_never_answers_errs_the_call_within_editor_timeout(full, repo, tmp_path):
    workspace_files(repo)
    full.hold = asyncio.Event()
    cancelled_before = len(full.cancelled)
    try:
        final = await run_one(full, repo, tmp_path, "search_symbols", {"query": "greet"}, editorTimeout=0.5)
    finally:
        full.hold.set()
        full.hold = None
    assert final["status"] == "errored"
    assert final["result"]["content"].startswith(
        "Error (editor_timeout): the editor did not answer toolwire/editor/symbols within 0.5 s")
    assert len(full.cancelled) == cancelled_before + 1  # the question was withdrawn
    listed = await full.call("toolwire/tools/list", {})  # the server runs on
    assert "search_symbols" in {tool["function"]["name"] for tool in listed["tools"]}


async def test_cancelling_a_call_that_waits_for_the_editor_withdraws_its_question(full, repo, tmp_path):
    workspace_files(repo)
    full.hold = asyncio.Event()
    full.question.clear()
    cancelled_before = len(full.cancelled)
    sid = await new_session(full, repo, one_call(tmp_path, "get_diagnostics", {}), editorTimeout=600)
    turn = asyncio.ensure_future(prompt(full, sid))
    try:
        await asyncio.wait_for(full.question.wait(), 30)
        assert full.tool_calls(sid)["c"][-1]["status"] == "calling"
        assert (await full.call("toolwire/toolCall/cancel", {"sessionId": sid, "toolCallId": "c"}))["cancelled"]
        result = await asyncio.wait_for(turn, 30)
    finally:
        full.hold.set()
        full.hold = None
    final = full.tool_calls(sid)["c"][-1]
    assert result["stopReason"] == "end_turn"
    assert final["status"] == "canceled" and final["cancelReason"] == "call_cancelled"
    assert len(full.cancelled) == cancelled_before + 1


async def test_the_editor_tools_run_without_asking(full, repo, tmp_path):
    workspace_files(repo)
    full.answers["diagnostics"] = lambda params: {"items": []}
    full.answers["symbols"] = lambda params: {"symbols": []}
    full.answers["references"] = lambda params: {"locations": None}  # null: nothing
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "get_diagnostics", "arguments": {"paths": ["src"]}, "id": "d"},
                        {"name": "search_symbols", "arguments": {"query": "greet"}, "id": "s"},
                        {"name": "find_symbol", "arguments": {"path": "src/app.ts", "line": 1, "symbol": "greet",
                                                              "find": "references"}, "id": "f"}]},
        {"text": "ok"}])
    sid = await new_session(full, repo, script)
    await prompt(full, sid)
    calls = full.tool_calls(sid)
    assert {cid: calls[cid][-1]["status"] for cid in "dsf"} == {"d": "done", "s": "done", "f": "done"}
    assert full.permission_requests[sid] == []
    assert calls["d"][-1]["result"]["content"] == "No problems reported in src."
    assert calls["s"][-1]["result"]["content"] == "No symbols match 'greet'."
    assert calls["f"][-1]["result"]["content"] == "No references found for greet at src/app.ts:1:15."


async def test_a_file_kept_from_the_model_shows_its_places_but_not_its_text(full, repo, tmp_path):
    workspace_files(repo)
    (repo / ".env").write_text("TOKEN=greet-sk-123\n")
    env = (repo / ".env").as_uri()
    full.answers["references"] = lambda params: {"locations": [
        {"uri": env, "range": {"start": {"line": 0, "character": 6}, "end": {"line": 0, "character": 11}}}]}
    full.answers["diagnostics"] = lambda params: {"items": [
        {"uri": env, "diagnostics": [diagnostic(0, 1, "unknown key TOKEN=greet-sk-123")]}]}
    final = await run_one(full, repo, tmp_path, "find_symbol",
                          {"path": "src/app.ts", "line": 1, "symbol": "greet", "find": "references"})
    assert final["status"] == "done", final
    assert final["result"]["content"].splitlines()[-1] == ".env:1: [kept from the model (modelExclude '.env')]"
    final = await run_one(full, repo, tmp_path, "get_diagnostics", {})
    assert "sk-123" not in json.dumps(final["result"])
    assert final["result"]["content"].splitlines()[-1] == (
        ".env:1:1: error (ts): [message not shown: the file is kept from the model (modelExclude '.env')]")
    # a symbol's name in such a file is its text too (a key of .env): left out and counted
    full.answers["symbols"] = lambda params: {"symbols": [
        {"name": "TOKEN_greet_sk_123", "kind": 13,
         "location": {"uri": env, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}}}},
        {"name": "greet", "kind": 12, "location": {"uri": (repo / "src" / "util.ts").as_uri(),
                                                   "range": {"start": {"line": 1, "character": 16},
                                                             "end": {"line": 1, "character": 21}}}}]}
    final = await run_one(full, repo, tmp_path, "search_symbols", {"query": "greet"})
    assert "sk_123" not in json.dumps(final["result"])
    assert final["result"]["content"].splitlines() == [
        "1 symbol match 'greet':",
        "function greet src/util.ts:2",
        "[1 symbol in files kept from the model (modelExclude) not shown]",
    ]
    assert final["result"]["data"]["kept_from_model"] == 1


async def test_get_diagnostics_of_a_path_that_does_not_exist_is_an_error(full, repo, tmp_path):
    asked = len(full.asked)
    final = await run_one(full, repo, tmp_path, "get_diagnostics", {"paths": ["nope.ts"]})
    assert final["status"] == "errored"
    assert final["result"]["content"] == "Error (not_found): nope.ts does not exist (nor is it open in the editor)"
    assert len(full.asked) == asked


async def test_lines_follow_the_lsp_rule_in_the_line_the_model_names_and_in_the_locations(full, repo, tmp_path):
    # U+2028 and a form feed are ordinary characters (not line ends); \r\n and a lone \r end lines
    (repo / "r.ts").write_bytes("a = '\u2028\x0c';\r\nb\rgreet(1);\n".encode())
    uri = (repo / "r.ts").as_uri()
    full.answers["definition"] = lambda params: {"locations": [
        {"uri": uri, "range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 5}}}]}
    final = await run_one(full, repo, tmp_path, "find_symbol",
                          {"path": "r.ts", "line": 3, "symbol": "greet", "find": "definition"})
    assert final["status"] == "done", final
    assert full.asked[-1][1]["position"] == {"line": 2, "character": 0}
    assert final["result"]["content"].splitlines()[-1] == "r.ts:3: greet(1);"
