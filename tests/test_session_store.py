"""Saved sessions in the session host (issue 24, "Sessions that survive a restart"): the files'
modes and redaction, retention and the 200 cap, files that are skipped, what a loaded session
continues with. In-process hosts with the replay model over a real folder; the state folder is the
test's own."""

from __future__ import annotations

import asyncio
import json
import logging
import stat
import time
from pathlib import Path
from typing import get_args

import pytest

from toolwire.agent.events import (AgentEvent, ArgumentsPiece, CallChange, CallSnapshot, McpServerChanged, MessageChunk,
                                   PermissionAnswer, PlanEntry, PlanUpdate, RecordingSink, RulesFile, SessionInfo,
                                   SessionWarning, ToolCallChanged, TurnUpdate, UsageUpdate, UserPrompt, WorkspaceChange)
from toolwire.agent.host import SessionHost, UnknownSession
from toolwire.agent.session_store import MAX_SESSIONS, SavedSession, SessionStore, decode_event, encode_event
from toolwire.redaction import Redactor, shared
from toolwire.settings import Settings
from toolwire.streaming.state import CallError, CancelReason, Status
from toolwire.workspace.documents import NoOpenDocuments

SECRET = "sk-test-0123456789abcdef"


class Yes:
    async def request_permission(self, call, subject):  # noqa: ANN001, ANN201
        return PermissionAnswer("allow_once")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLWIRE_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def host_for(tmp_path: Path, lines: list[dict]) -> SessionHost:
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return SessionHost(Settings(model=f"replay:{script}"))


async def open_in(host: SessionHost, root: Path):  # noqa: ANN201
    return await host.open(root, None, None, NoOpenDocuments(), lambda session: RecordingSink())


async def test_saved_files_are_private_redacted_and_continue_after_a_restart(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    shared().add(SECRET)
    host = host_for(tmp_path, [{"tool_calls": [{"id": "c1", "name": "edit_file",
                                                "arguments": {"path": "a.txt", "old_string": "hello", "new_string": "bye"}}]},
                               {"text": "ok"}])
    hosted = await open_in(host, root)
    assert host.list_sessions(root) == []  # listed once it ran a turn
    await host.run_turn(hosted, f"Use the key {SECRET} please\nand more, Authorization: Bearer tok-unregistered",
                        RecordingSink(), Yes())
    await host.close(hosted.id)

    folder = state / "sessions"
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert {p.name for p in files} == {"workspace", f"{hosted.id}.json", f"{hosted.id}.meta.json"}
    for path in [folder, *folder.iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert SECRET not in path.read_text() and "tok-unregistered" not in path.read_text()  # as in logs
    (listed,) = host.list_sessions(root)
    assert listed.title == "Use the key *** please" and listed.turns == 1

    later = host_for(tmp_path, [{"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
                                {"text": "again"}])
    loaded = await later.load(hosted.id, root, NoOpenDocuments(), lambda session: RecordingSink())
    session = loaded.session
    assert session.turns == 1 and loaded.log.journal.title == listed.title
    assert [r.turn_id for r in session.turn_records] == ["t1"]  # from the checkpoint store
    prompts = [e for e in later.history(loaded) if isinstance(e, UserPrompt)]
    assert [p.text for p in prompts] == ["Use the key *** please\nand more, Authorization: Bearer ***"]
    sink = RecordingSink()
    await later.run_turn(loaded, "next", sink, Yes())
    calls = {e.call.id for e in sink.events if isinstance(e, ToolCallChanged)}
    assert calls == {"c1_2"}  # the id c1 was given out before the restart
    assert [r.turn_id for r in session.turn_records] == ["t1", "t2"]
    result = await later.undo(loaded, "t1")
    assert result["status"] == "undone" and (root / "a.txt").read_text() == "hello\n"
    assert await later.delete(hosted.id) is True
    assert later.list_sessions(root) == [] and hosted.id not in later.sessions
    await later.close_all()


def test_retention_and_the_cap_drop_the_least_recently_updated(tmp_path: Path, state: Path) -> None:
    store = SessionStore(tmp_path)
    now = time.time()
    redactor = Redactor(env={})
    for n in range(MAX_SESSIONS + 2):
        store.save(SavedSession(f"s{n:03d}", str(tmp_path), f"t{n}", now - 10, now - 1000 + n, 1), {}, redactor)
    store.save(SavedSession("expired", str(tmp_path), None, now - 40 * 86400, now - 31 * 86400, 1), {}, redactor)
    assert store.prune(30) == 3
    kept = [s.session_id for s in store.listing()]
    assert len(kept) == MAX_SESSIONS and kept[0] == f"s{MAX_SESSIONS + 1:03d}" and kept[-1] == "s002"
    assert not (store.folder / "s000.json").exists() and not (store.folder / "expired.meta.json").exists()


async def test_a_corrupt_or_foreign_file_is_skipped_with_a_log_line(tmp_path: Path, state: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    store = SessionStore(root.resolve())
    store.save(SavedSession("good", str(root.resolve()), "fine", 1.0, time.time(), 1), {}, Redactor(env={}))
    (store.folder / "bad.meta.json").write_text("{not json")
    (store.folder / "bad.json").write_text("{not json")
    (store.folder / "other.meta.json").write_text(json.dumps({**SavedSession("other", "/elsewhere", None, 1.0, 2.0, 1)
                                                              .to_json(), "version": 99}))
    host = host_for(tmp_path, [])
    with caplog.at_level(logging.WARNING):
        assert [s.session_id for s in host.list_sessions(root)] == ["good"]
        with pytest.raises(UnknownSession):
            await host.load("bad", root, NoOpenDocuments(), lambda session: RecordingSink())
        with pytest.raises(UnknownSession):  # a record without its conversation
            await host.load("good", root, NoOpenDocuments(), lambda session: RecordingSink())
    assert sum("skipping the saved session" in r.getMessage() for r in caplog.records) >= 3


def test_every_logged_event_type_round_trips_in_its_typed_form() -> None:
    call = CallSnapshot(id="c1", name="edit_file", status=Status.ERRORED, path="a.txt", arguments={"path": "a.txt"},
                        error=CallError("stale", "changed", False), result={"ok": False}, text="{}", partial={"p": 1})
    samples = [
        ToolCallChanged(call, CallChange(ArgumentsPiece(0, "{}"), None, True, False)),
        ToolCallChanged(CallSnapshot(id="c2", status=Status.CANCELED, cancel_reason=CancelReason.REJECTED), CallChange()),
        MessageChunk("x", "reasoning"), TurnUpdate("ended", "end_turn", "m", "t1"), UsageUpdate(1, None, 3),
        WorkspaceChange(("a", "b")), SessionInfo((RulesFile("AGENTS.md", 3, False),)),
        SessionWarning("tools_left_out", "m", ("git_branch",)), McpServerChanged("time", "failed", "exited"),
        PlanUpdate((PlanEntry("step", "in_progress", "high"),)), UserPrompt("t1", "hi", ({"type": "text", "text": "hi"},)),
    ]
    assert {type(e) for e in samples} == {*get_args(AgentEvent), UserPrompt}  # a new event type needs a sample
    for event in samples:
        back = decode_event(json.loads(json.dumps(encode_event(event))))
        if isinstance(event, ToolCallChanged):  # kept without the argument text and its partial parse
            event = ToolCallChanged(event.call._replace(text=None, partial=None), CallChange())
        assert back == event
    with pytest.raises(ValueError):
        decode_event({"type": "Nope"})


async def test_a_session_deleted_while_its_turn_runs_is_not_saved_again(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    asked = asyncio.Event()

    class Waits:
        async def request_permission(self, call, subject):  # noqa: ANN001, ANN201
            asked.set()
            await asyncio.Event().wait()  # until the turn is cancelled

    host = host_for(tmp_path, [{"tool_calls": [{"id": "c1", "name": "edit_file",
                                                "arguments": {"path": "a.txt", "old_string": "hello", "new_string": "x"}}]}])
    hosted = await open_in(host, root)
    turn = asyncio.ensure_future(host.run_turn(hosted, "edit it", RecordingSink(), Waits()))
    await asyncio.wait_for(asked.wait(), 30)
    assert [s.session_id for s in host.list_sessions(root)] == [hosted.id]  # saved when its title was set
    assert await host.delete(hosted.id) is True
    assert (await asyncio.wait_for(turn, 30)).stop_reason == "cancelled"
    assert host.list_sessions(root) == [] and not list(SessionStore(root.resolve()).folder.glob(f"{hosted.id}*"))


@pytest.mark.parametrize("cwd", ["/tmp/a\0b", "relative/folder", "~no-such-user-of-toolwire/x"])
async def test_a_folder_no_session_can_have_is_refused_or_has_none(cwd: str, state: Path) -> None:
    """A ``cwd`` with a NUL, a relative one, or ``~`` of no user: load refuses it naming ``cwd`` (an
    InvalidParams for the front-ends, never an internal error); list and delete find nothing."""
    from toolwire.agent.opening import SessionSpecError

    host = SessionHost(Settings())
    with pytest.raises(SessionSpecError) as refused:
        await host.load("0", cwd, NoOpenDocuments(), lambda session: None)
    assert refused.value.field == "cwd"
    if not cwd.startswith("~"):
        assert host.list_sessions(cwd) == []
        assert await host.delete("0", cwd) is False
