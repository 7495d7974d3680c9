"""Saved sessions in the session host (issue 24, "Sessions that survive a restart"): the files'
modes and redaction, retention and the 200 cap, files that are skipped, what a loaded session
continues with. In-process hosts with the replay model over a real folder; the state folder is the
test's own."""

from __future__ import annotations

import json
import logging
import stat
import time
from pathlib import Path

import pytest

from toolwire.agent.events import PermissionAnswer, RecordingSink, ToolCallChanged, UserPrompt
from toolwire.agent.host import SessionHost, UnknownSession
from toolwire.agent.session_store import MAX_SESSIONS, SavedSession, SessionStore, decode_event, encode_event
from toolwire.redaction import Redactor, shared
from toolwire.settings import Settings
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
    await host.run_turn(hosted, f"Use the key {SECRET} please\nand more", RecordingSink(), Yes())
    await host.close(hosted.id)

    folder = state / "sessions"
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert {p.name for p in files} == {"workspace", f"{hosted.id}.json", f"{hosted.id}.meta.json"}
    for path in [folder, *folder.iterdir()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert SECRET not in path.read_text()
    (listed,) = host.list_sessions(root)
    assert listed.title == "Use the key *** please" and listed.turns == 1

    later = host_for(tmp_path, [{"tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
                                {"text": "again"}])
    loaded = await later.load(hosted.id, root, NoOpenDocuments(), lambda session: RecordingSink())
    session = loaded.session
    assert session.turns == 1 and loaded.log.journal.title == listed.title
    assert [r.turn_id for r in session.turn_records] == ["t1"]  # from the checkpoint store
    prompts = [e for e in later.history(loaded) if isinstance(e, UserPrompt)]
    assert [p.text for p in prompts] == ["Use the key *** please\nand more"]
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


def test_events_round_trip_in_their_typed_form() -> None:
    prompt = UserPrompt("t1", "hi", ({"type": "text", "text": "hi"},))
    assert decode_event(json.loads(json.dumps(encode_event(prompt)))) == prompt
    with pytest.raises(ValueError):
        decode_event({"type": "Nope"})
