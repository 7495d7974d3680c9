"""A code-action turn never waits on the work-done progress handshake.

Real ``toolwire serve`` over stdio (pytest-lsp) with a client that declares
``window.workDoneProgress`` but answers ``window/workDoneProgress/create`` late or
never: the turn runs anyway, ``toolwire/session/cancel`` cancels it, the snapshot's
``turns[]`` matches the ``turnId`` already answered, and the unanswered create
request is withdrawn (``$/cancelRequest``) after ``progress.CREATE_TIMEOUT`` seconds.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from conftest import make_client, write_script
from test_e2e_actions import (CAPS, EditorClient, PokingClient, kinds, make_editor, run_action, summaries, until,
                              watch_notifications)
from toolwire.lsp.progress import CREATE_TIMEOUT

pytestmark = pytest.mark.asyncio(loop_scope="module")


class SlowProgressClient(PokingClient):
    """Answers ``window/workDoneProgress/create`` after :attr:`create_delay` seconds,
    or never when it is None; records each create's fate in :attr:`creates`."""

    def __init__(self) -> None:
        super().__init__()
        self.create_delay: float | None = None
        self.creates: list[dict[str, Any]] = []


def make_slow_client() -> SlowProgressClient:
    client = make_client(SlowProgressClient)
    watch_notifications(client)
    client.protocol.fm.features.pop(types.WINDOW_WORK_DONE_PROGRESS_CREATE, None)

    @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
    async def create(params: types.WorkDoneProgressCreateParams) -> None:
        record = {"token": params.token, "at": time.monotonic(), "fate": "pending"}
        client.creates.append(record)
        client.poked.set()
        try:
            if client.create_delay is None:
                await asyncio.Event().wait()  # never answers
            await asyncio.sleep(client.create_delay)
        except asyncio.CancelledError:  # the server withdrew the request ($/cancelRequest)
            record["fate"], record["withdrawn_at"] = "withdrawn", time.monotonic()
            client.poked.set()
            raise
        record["fate"] = "answered"
        client.progress_reports.setdefault(params.token, [])  # what pytest-lsp's own handler does
        return None

    return client


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
    client_factory=make_slow_client))
async def slow(lsp_client: SlowProgressClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=CAPS))
    yield
    await lsp_client.shutdown_session()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello world\n")
    return root


def configure(client, **section: Any) -> None:
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"toolwire": section}))


SELECTION = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 5}}


def turn_updates(client, sid: str) -> list[dict[str, Any]]:
    return [u for u in client.updates[sid] if u.get("sessionUpdate") == "turn"]


async def test_a_turn_runs_while_the_client_never_answers_progress_create(slow, ws, tmp_path):
    slow.create_delay = None
    script = write_script(tmp_path / "s.jsonl", [{"text": "It says hello.", "chunk_size": 2, "delay": 0.1}])
    configure(slow, model=f"replay:{script}", replayLog=None)
    creates = len(slow.creates)
    started = await run_action(slow, {"kind": "explain", "uri": (ws / "a.txt").as_uri(), "range": SELECTION})
    sid, turn_id = started["sessionId"], started["turnId"]
    await until(slow, lambda: summaries(slow, "explain"), "the closing message")
    assert "It says hello." in summaries(slow, "explain")[-1]
    assert [u.get("turnId") for u in turn_updates(slow, sid)][-1] == turn_id
    snap = await slow.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snap["running"] is False
    assert [(t["turnId"], t["stopReason"]) for t in snap["turns"]] == [(turn_id, "end_turn")]
    # the create request was sent; the turn's end withdrew it ($/cancelRequest)
    await until(slow, lambda: len(slow.creates) > creates, "the create request")
    [create] = slow.creates[creates:]
    await until(slow, lambda: create["fate"] == "withdrawn", "the create request withdrawn")
    assert slow.progress_reports.get(create["token"]) is None  # no $/progress for a token never accepted
    # the session takes the next prompt
    script2 = write_script(tmp_path / "s2.jsonl", [{"text": "Again."}])
    configure(slow, model=f"replay:{script2}")
    result = await slow.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "more"})
    assert result["stopReason"] == "end_turn"


async def test_cancel_ends_a_turn_whose_progress_is_unanswered(slow, ws, tmp_path):
    slow.create_delay = None
    script = write_script(tmp_path / "s.jsonl", [{"text": "word " * 1000, "chunk_size": 5, "delay": 0.05}])
    configure(slow, model=f"replay:{script}", replayLog=None)
    creates = len(slow.creates)
    started = await run_action(slow, {"kind": "explain", "uri": (ws / "a.txt").as_uri(), "range": SELECTION})
    sid = started["sessionId"]
    await until(slow, lambda: any(u.get("state") == "model_request" for u in turn_updates(slow, sid)),
                "the model request")
    await until(slow, lambda: len(slow.creates) > creates, "the create request")
    [create] = slow.creates[creates:]
    assert create["fate"] == "pending"  # the turn did not wait for the answer
    snap = await slow.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snap["running"] is True and [t["turnId"] for t in snap["turns"]] == [started["turnId"]]
    # the token is given up after CREATE_TIMEOUT seconds while the turn goes on
    await until(slow, lambda: create["fate"] == "withdrawn", "the create request withdrawn")
    waited = create["withdrawn_at"] - create["at"]
    assert CREATE_TIMEOUT - 0.5 <= waited <= CREATE_TIMEOUT + 5, waited
    snap = await slow.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snap["running"] is True
    slow.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    await until(slow, lambda: summaries(slow, "explain") and summaries(slow, "explain")[-1].startswith(
        "Toolwire (explain): cancelled"), "the cancelled turn's closing message")
    snap = await slow.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snap["running"] is False
    assert [(t["turnId"], t["stopReason"]) for t in snap["turns"]] == [(started["turnId"], "cancelled")]
    script2 = write_script(tmp_path / "s2.jsonl", [{"text": "Next."}])
    configure(slow, model=f"replay:{script2}")
    result = await slow.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "next"})
    assert result["stopReason"] == "end_turn"


async def test_a_late_accepted_token_reports_the_steps_taken_before_it(slow, ws, tmp_path):
    slow.create_delay = 1.0
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}, "id": "r"}]},
        {"text": "word " * 100, "chunk_size": 10, "delay": 0.05},
    ])
    configure(slow, model=f"replay:{script}", replayLog=None)
    creates = len(slow.creates)
    started = await run_action(slow, {"kind": "explain", "uri": (ws / "a.txt").as_uri(), "range": SELECTION})
    await until(slow, lambda: summaries(slow, "explain") and "word" in summaries(slow, "explain")[-1],
                "the closing message")
    [create] = slow.creates[creates:]
    assert create["fate"] == "answered"
    reports = slow.progress_reports[create["token"]]
    assert kinds(reports)[0] == "begin" and kinds(reports)[-1] == "end"
    messages = [r.message for r in reports if r.kind == "report"]
    # the read ran before the token was accepted: its steps are reported, in order, when it is
    wanted = ["asking the model…", "running read_file a.txt", "read_file a.txt: done", "asking the model…"]
    assert [m for m in messages if m in wanted] == wanted, messages
    assert slow.messages and started["turnId"] == "t1"


# --------------------------------------- an approval the editor never answers

def make_silent_editor() -> EditorClient:
    """An editor without the panel (approvals come as window/showMessageRequest) that never answers them."""
    client = make_editor()
    client.protocol.fm.features.pop(types.WINDOW_SHOW_MESSAGE_REQUEST, None)
    client.pending_questions = []  # type: ignore[attr-defined]

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    async def ask(params: types.ShowMessageRequestParams):
        record = {"message": params.message, "fate": "pending"}
        client.pending_questions.append(record)  # type: ignore[attr-defined]
        client.poked.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            record["fate"] = "withdrawn"
            client.poked.set()
            raise

    return client


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(
    server_command=[sys.executable, "-m", "toolwire", "serve", "--log-level", "WARNING"],
    client_factory=make_silent_editor))
async def silent(lsp_client: EditorClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=CAPS))
    yield
    await lsp_client.shutdown_session()


async def test_cancel_ends_a_turn_waiting_on_an_unanswered_show_message_request(silent, ws, tmp_path):
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "a.txt", "old_string": "hello", "new_string": "bye"}, "id": "e1"}]},
        {"text": "never"},
    ])
    sid = (await silent.call("toolwire/session/new", {"cwd": str(ws), "model": f"replay:{script}"}))["sessionId"]
    turn = asyncio.ensure_future(silent.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "edit"}))
    await until(silent, lambda: silent.pending_questions, "the approval question")
    [question] = silent.pending_questions
    assert "edit_file on a.txt" in question["message"]
    silent.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    result = await asyncio.wait_for(turn, 30)
    assert result["stopReason"] == "cancelled"
    await until(silent, lambda: question["fate"] == "withdrawn", "the question withdrawn ($/cancelRequest)")
    snap = await silent.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snap["running"] is False and [c["status"] for c in snap["toolCalls"]] == ["canceled"]
    assert (ws / "a.txt").read_text() == "hello world\n"
