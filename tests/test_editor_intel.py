"""The core of the editor's intelligence without a server: what a client declares, the
diagnostics-changed feed, the bound on an unanswered question, whole-word occurrences."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from toolwire.lsp.editor_link import diagnostics_changed
from toolwire.tools.editor_intel import DiagnosticsFeed, EditorFeatures, EditorIntel
from toolwire.tools.editor_tools import editor_tools, occurrences
from toolwire.workspace.errors import ToolError


@pytest.mark.parametrize(("raw", "declared"), [
    ({"diagnostics": True, "symbols": True, "definition": True, "references": True},
     ["diagnostics", "symbols", "definition", "references"]),
    ({"references": True, "symbols": False, "definition": "yes", "diagnostics": 1}, ["references"]),
    (None, []),
    ([True], []),
    ({}, []),
])
def test_only_true_declares_a_feature(raw, declared):
    features = EditorFeatures.parse(raw)
    assert features.names() == declared and features.any() == bool(declared)


@pytest.mark.parametrize(("declared", "tools"), [
    (EditorFeatures(diagnostics=True), ["get_diagnostics"]),
    (EditorFeatures(symbols=True), ["search_symbols"]),
    (EditorFeatures(definition=True), ["find_symbol"]),
    (EditorFeatures(references=True), ["find_symbol"]),
    (EditorFeatures(True, True, True, True), ["get_diagnostics", "search_symbols", "find_symbol"]),
    (EditorFeatures(), []),
    (None, []),
])
def test_each_tool_follows_its_feature(declared, tools):
    assert [tool.name for tool in editor_tools(declared)] == tools


@pytest.mark.parametrize(("line", "symbol", "found"), [
    ("greet(greet2, greet, o.greet) + greeting", "greet", [0, 14, 23]),
    ("_greet greet_ greet", "greet", [14]),
    ("x = $el + $el2", "$el", [4]),          # a symbol starting with a non-word character
    ("a->b; a-> b", "a->", [0, 6]),
    ("ünï = ünïcode + ünï", "ünï", [0, 16]),  # word characters beyond ASCII
    ("nothing here", "greet", []),
])
def test_occurrences_are_whole_words_in_code_points(line, symbol, found):
    assert occurrences(line, symbol) == found


async def test_the_feed_counts_reports_per_file_and_wakes_a_waiter():
    feed = DiagnosticsFeed()
    a, b = Path("/w/a.ts"), Path("/w/b.ts")
    assert not feed.seen(a) and feed.count(a) == 0
    waiter = asyncio.ensure_future(feed.wait_changed(a, 0, 30))
    feed.changed([b])
    await asyncio.sleep(0)
    assert not waiter.done()  # another file's report
    feed.changed([a, a])  # one report naming a twice counts once
    assert await waiter is True
    assert feed.count(a) == 1 and feed.count(b) == 1 and feed.seen(a)
    assert await feed.wait_changed(a, 0, 30) is True  # already past: at once
    assert await feed.wait_changed(a, 1, 0.01) is False  # nothing more comes: the bound


def test_the_notification_feeds_resolved_paths_and_ignores_bad_params(tmp_path):
    real = tmp_path / "ws"
    real.mkdir()
    (real / "a.ts").write_text("x")
    link = tmp_path / "link"
    link.symlink_to(real)
    server = SimpleNamespace(editor_feed=DiagnosticsFeed())
    diagnostics_changed(server, {"uris": [(link / "a.ts").as_uri(), "untitled:Untitled-1"]})
    assert server.editor_feed.count((real / "a.ts").resolve()) == 1
    diagnostics_changed(server, {"uris": "file:///x"})  # not a list: logged, ignored
    diagnostics_changed(server, None)
    assert server.editor_feed.count((real / "a.ts").resolve()) == 1


class SilentLink:
    """A link whose client never answers."""

    features = EditorFeatures(True, True, True, True)
    encoding = "utf-16"
    feed = DiagnosticsFeed()

    def __init__(self) -> None:
        self.withdrawn = 0

    async def _never(self) -> Any:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.withdrawn += 1
            raise

    async def symbols(self, query: str) -> Any:
        return await self._never()


async def test_a_question_nobody_answers_is_a_tool_error_within_the_bound():
    link = SilentLink()
    intel = EditorIntel(link, timeout=0.05)  # type: ignore[arg-type]
    with pytest.raises(ToolError) as caught:
        await intel.symbols("x")
    assert caught.value.code == "editor_timeout" and link.withdrawn == 1
    assert caught.value.data == {"method": "toolwire/editor/symbols", "timeout": 0.05}


async def test_a_question_the_client_did_not_declare_is_refused_before_it_is_sent():
    link = SilentLink()
    link.features = EditorFeatures(symbols=True)  # type: ignore[misc]
    with pytest.raises(ToolError) as caught:
        await EditorIntel(link).definition("file:///a", (0, 0))  # type: ignore[arg-type]
    assert caught.value.code == "editor_unsupported" and caught.value.data == {"missing": ["definition"]}


def test_a_session_without_an_editor_link_has_no_editor_tools_and_one_with_gets_them_last(tmp_path):
    from toolwire.agent.opening import open_session
    from toolwire.settings import Settings
    from toolwire.tools import default_registry
    from toolwire.workspace.documents import NoOpenDocuments

    built_in = default_registry().names()
    plain = open_session(tmp_path, "replay", Settings(), NoOpenDocuments())  # ACP, toolwire run
    assert plain.registry.names() == built_in and plain.tool_context().editor is None
    link = SilentLink()
    link.features = EditorFeatures(diagnostics=True, definition=True)  # type: ignore[misc]
    session = open_session(tmp_path, "replay", Settings(), NoOpenDocuments(), link)  # type: ignore[arg-type]
    assert session.registry.names() == [*built_in, "get_diagnostics", "find_symbol"]
    intel = session.tool_context().editor
    assert intel is not None and intel.timeout == 10.0
    tight = open_session(tmp_path, "replay", Settings(max_tools=len(built_in) + 1, editor_timeout=2.5),
                         NoOpenDocuments(), link)  # type: ignore[arg-type]
    assert tight.registry.names()[-1] == "get_diagnostics" and tight.tool_selection.left_out == ("find_symbol",)
    assert tight.tool_context().editor.timeout == 2.5
    link.features = EditorFeatures()  # type: ignore[misc]  # a client that declares nothing
    assert open_session(tmp_path, "replay", Settings(), NoOpenDocuments(), link).tool_context().editor is None  # type: ignore[arg-type]


def test_a_closed_file_is_named_under_the_workspace_folder_as_the_editor_spells_it(tmp_path):
    from toolwire.lsp.editor_link import LspEditorLink

    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    (real / "src" / "a.ts").write_text("x\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    no_buffers = SimpleNamespace(matches=lambda path: [])
    folders = [SimpleNamespace(uri=link.as_uri())]  # the editor opened the folder through the link
    server = SimpleNamespace(initialize_params=SimpleNamespace(workspace_folders=folders, root_uri=None))
    editor = LspEditorLink(server, no_buffers)  # type: ignore[arg-type]
    target = (real / "src" / "a.ts").resolve()
    assert editor.uri_for(target) == (link / "src" / "a.ts").as_uri()
    assert editor.path_of(editor.uri_for(target)) == target
    outside = (tmp_path / "elsewhere.ts").resolve()
    assert editor.uri_for(outside) == outside.as_uri()
    server.initialize_params = SimpleNamespace(workspace_folders=None, root_uri=link.as_uri())
    assert editor.uri_for(target) == (link / "src" / "a.ts").as_uri()
    assert editor.file_text(target) == "x\n"
