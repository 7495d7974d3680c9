"""The turn lifecycle under failure and cancellation, over the real protocol.

A real ``toolwire serve`` over stdio (pytest-lsp), a local OpenAI-compatible
endpoint on 127.0.0.1 (:mod:`endpoint`) or the embedded replay model, real files
and real git with blocking hooks. Tests wait on events (notifications, requests
arriving at the endpoint, FIFOs written by hooks); the only poll loop waits for
killed processes to vanish, which has no event.

After every scenario the next model request is checked: each assistant tool call
has exactly one result, in call order, and its arguments are a JSON object.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

import pytest
from lsprotocol import types
from pytest_lsp.client import register_lsp_features

from conftest import TERMINAL, ToolwireTestClient, git, server_fixture, write_script
from endpoint import FakeEndpoint, Reply, Reset, Stall, Truncated, chat_body, chat_stream
from toolwire.streaming.state import TRANSITIONS, Status

pytestmark = pytest.mark.asyncio(loop_scope="module")

WAIT = 20.0


# --------------------------------------------------------------------- client
class LifecycleClient(ToolwireTestClient):
    """The shared test client, plus what lifecycle tests need to see.

    Attributes:
        held: Sessions whose permission requests are left open (never answered).
        opened: Per session, set when a held permission request arrives.
        withdrawn: Tool call ids of held permission requests the server cancelled
            with ``$/cancelRequest`` (the pygls handler task was cancelled by id).
        cancel_ids: Every id of a ``$/cancelRequest`` the server sent.
        permission_ids: Message id of every permission request received.
        hooks: Per session, a callable run with the update count after each update.
    """

    def __init__(self) -> None:
        super().__init__()
        self.held: set[str] = set()
        self.opened: dict[str, asyncio.Event] = defaultdict(asyncio.Event)
        self.withdrawn: list[str] = []
        self.withdrawn_event = asyncio.Event()
        self.cancel_ids: list[Any] = []
        self.permission_ids: list[Any] = []
        self.hooks: dict[str, Callable[[int], None]] = {}

    def on_update(self, params: dict[str, Any]) -> None:
        super().on_update(params)
        hook = self.hooks.get(params["sessionId"])
        if hook is not None:
            hook(len(self.updates[params["sessionId"]]))

    async def on_permission_async(self, params: dict[str, Any]) -> dict[str, Any]:
        sid = params["sessionId"]
        self.permission_ids.append(self.protocol._ctx_msg_id.get(None))
        if sid not in self.held:
            return self.on_permission(params)
        self.permission_requests[sid].append(params)
        self.opened[sid].set()
        try:
            await asyncio.Event().wait()  # the user never answers
        except asyncio.CancelledError:
            self.withdrawn.append(params["toolCall"]["toolCallId"])
            self.withdrawn_event.set()
            raise
        raise AssertionError("unreachable")

    async def until(self, sid: str, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT) -> dict:
        """The first update of ``sid`` (already received or still to come) that satisfies ``predicate``."""
        for update in self.updates[sid]:
            if predicate(update):
                return update
        found: list[dict] = []

        def match(params: dict[str, Any]) -> bool:
            if params["sessionId"] == sid and predicate(params["update"]):
                found.append(params["update"])
                return True
            return False

        await self.wait_for(match, timeout)
        return found[0]


def make_lifecycle_client() -> LifecycleClient:
    client = LifecycleClient()
    register_lsp_features(client)
    client.feature("toolwire/session/update")(lambda params: client.on_update(params))

    async def permission(params: dict[str, Any]) -> dict[str, Any]:
        return await client.on_permission_async(params)

    client.feature("toolwire/session/requestPermission")(permission)
    original = client.protocol._handle_cancel_notification

    def record_cancel(msg_id: Any) -> None:
        client.cancel_ids.append(msg_id)
        original(msg_id)

    client.protocol._handle_cancel_notification = record_cancel
    return client


client = server_fixture("client", make_lifecycle_client)


# -------------------------------------------------------------------- helpers
async def open_session(client: LifecycleClient, root: Path, model: str, **settings: Any) -> str:
    params: dict[str, Any] = {"cwd": str(root), "model": model}
    if settings:
        params["settings"] = settings
    return (await client.call("toolwire/session/new", params))["sessionId"]


async def replay_session(client: LifecycleClient, root: Path, script: Path, log: Path, **settings: Any) -> str:
    return await open_session(client, root, f"replay:{script}", replayLog=str(log), **settings)


async def endpoint_session(client: LifecycleClient, root: Path, endpoint: FakeEndpoint, **settings: Any) -> str:
    return await open_session(client, root, "openai:test-model", baseUrl=endpoint.base_url, apiKey="test", **settings)


def start_prompt(client: LifecycleClient, sid: str, text: str = "go", msg_id: str | None = None) -> asyncio.Future:
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}
    return asyncio.ensure_future(client.protocol.send_request_async("toolwire/session/prompt", params, msg_id=msg_id))


async def answer(future: asyncio.Future) -> dict[str, Any]:
    return await asyncio.wait_for(future, WAIT)


def is_call(name: str | None = None, status: str | None = None, cid: str | None = None):
    def predicate(update: dict[str, Any]) -> bool:
        if update["sessionUpdate"] != "tool_call":
            return False
        call = update["toolCall"]
        return ((name is None or call["name"] == name) and (status is None or call["status"] == status)
                and (cid is None or call["toolCallId"] == cid))
    return predicate


def final_calls(client: LifecycleClient, sid: str) -> dict[str, dict[str, Any]]:
    return {cid: snaps[-1] for cid, snaps in client.tool_calls(sid).items()}


def assert_lifecycle(client: LifecycleClient, sid: str, stop_reason: str) -> None:
    """Every call terminal, legal transitions, increasing revs; the turn ended with ``stop_reason``."""
    for cid, snaps in client.tool_calls(sid).items():
        revs = [s["rev"] for s in snaps]
        assert revs == sorted(revs) and len(set(revs)) == len(revs), (cid, revs)
        statuses = [s["status"] for s in snaps]
        for a, b in zip(statuses, statuses[1:]):
            assert a == b or Status(b) in TRANSITIONS[Status(a)], (cid, statuses)
        assert statuses[-1] in TERMINAL, (cid, statuses)
    turns = [u for u in client.updates[sid] if u["sessionUpdate"] == "turn"]
    assert turns[-1]["state"] == "ended" and turns[-1]["stopReason"] == stop_reason, turns[-1]


def assert_valid_history(messages: list[dict[str, Any]]) -> list[str]:
    """Each assistant tool call has exactly one result, right after it and in call order,
    and its arguments are a JSON object. Returns the call ids, in order."""
    pending: list[str] = []
    seen: list[str] = []
    for position, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            assert pending and pending[0] == message["tool_call_id"], (position, message, pending)
            pending.pop(0)
            continue
        assert not pending, (position, "calls without results", pending)
        for call in message.get("tool_calls") or [] if role == "assistant" else []:
            assert isinstance(json.loads(call["function"]["arguments"]), dict), call
            assert call["id"] and call["id"] not in seen, call
            seen.append(call["id"])
            pending.append(call["id"])
    assert not pending, ("calls without results", pending)
    return seen


def replay_requests(log: Path) -> list[list[dict[str, Any]]]:
    """The messages of every request the replay model logged; none (no log yet) for a turn
    cancelled before its first request (while the workspace overview was read)."""
    return [json.loads(line)["messages"] for line in log.read_text().splitlines()] if log.exists() else []


def tool_results(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


async def follow_up_is_valid(client: LifecycleClient, sid: str, log: Path) -> list[dict[str, Any]]:
    """Run one more prompt on the session (replay model) and check every request it made.

    Returns:
        The messages of its first request: the history the interrupted turn left.
    """
    before = len(replay_requests(log))
    result = await answer(start_prompt(client, sid, "again"))
    assert result["stopReason"] in ("end_turn", "repeated_tool_failure"), result
    requests = replay_requests(log)
    assert len(requests) > before
    for messages in requests[before:]:
        assert_valid_history(messages)
    return requests[before]


class PidPipe:
    """A FIFO a git hook writes its PID to; reading it is an event, not a poll.

    Opened for reading (non-blocking) before the hook runs, so the hook's
    ``echo $$ > fifo`` never blocks, and watched with the event loop's reader.
    """

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self._buffer = b""

    async def read_pid(self, timeout: float = WAIT) -> int:
        loop = asyncio.get_running_loop()
        got: asyncio.Future[int] = loop.create_future()

        def readable() -> None:
            try:
                data = os.read(self._fd, 64)
            except BlockingIOError:
                return
            self._buffer += data
            if b"\n" in self._buffer and not got.done():
                got.set_result(int(self._buffer.split(b"\n")[0]))
                loop.remove_reader(self._fd)

        loop.add_reader(self._fd, readable)
        try:
            return await asyncio.wait_for(got, timeout)
        finally:
            loop.remove_reader(self._fd)
            os.close(self._fd)


def blocking_hook(repo: Path, pid_pipe: Path) -> None:
    """A pre-commit hook that reports its PID, then blocks in a child (``sleep 30``)."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text(f'#!/bin/sh\necho $$ > "{pid_pipe}"\nsleep 30\n')
    hook.chmod(0o755)


def running_in_group(pgid: int) -> list[int]:
    """PIDs of processes of group ``pgid`` that are not zombies (Linux ``/proc``).

    Zombies are dead: orphans killed with their group are reparented to init,
    which in some containers never reaps them.
    """
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            alive.append(int(entry))
    return alive


async def group_vanishes(pgid: int, deadline: float = 10.0) -> None:
    """Poll (no event exists for another process's exit) until the group has no live process."""
    until = time.monotonic() + deadline
    while running_in_group(pgid):
        assert time.monotonic() < until, f"process group {pgid} still running: {running_in_group(pgid)}"
        await asyncio.sleep(0.02)


def commit_count(repo: Path) -> int:
    return int(git(repo, "rev-list", "--count", "HEAD").strip())


# ------------------------------------------------------ 1. retries and errors
RETRY_AFTER_0 = {"retry-after": "0"}
ERROR_BODY = b'{"error": {"message": "try again", "type": "server_error"}}'


@pytest.mark.parametrize("first", [
    Reply(429, ERROR_BODY, RETRY_AFTER_0),
    Reply(503, ERROR_BODY),
    Reset(),
], ids=["429-retry-after", "503-backoff", "connection-reset"])
async def test_retryable_failure_before_the_stream_is_retried_once(client, repo, first):
    body = chat_body({"text": "Recovered."})
    with FakeEndpoint([first, (200, body)]) as endpoint:
        sid = await endpoint_session(client, repo, endpoint)
        result = await answer(start_prompt(client, sid))
    assert result["stopReason"] == "end_turn", result
    assert len(endpoint.requests) == 2  # one turn-level retry; the SDK does not retry on its own
    assert endpoint.requests[0]["messages"] == endpoint.requests[1]["messages"]
    if isinstance(first, Reply) and "retry-after" not in first.headers:
        # exponential backoff with jitter: the first retry waits 0.5-1 s
        assert endpoint.request_times[1] - endpoint.request_times[0] >= 0.45
    text = "".join(u["content"]["text"] for u in client.updates[sid] if u["sessionUpdate"] == "agent_message_chunk")
    assert text == "Recovered."
    assert_lifecycle(client, sid, "end_turn")


async def test_retries_are_bounded_and_do_not_multiply(client, repo):
    with FakeEndpoint([Reply(503, ERROR_BODY, RETRY_AFTER_0)] * 10) as endpoint:
        sid = await endpoint_session(client, repo, endpoint)
        result = await answer(start_prompt(client, sid))
    assert result["stopReason"] == "error" and "503" in result["message"]
    assert len(endpoint.requests) == 4  # 1 + 3 retries (not 3 SDK attempts per turn attempt)
    assert_lifecycle(client, sid, "error")


async def test_a_400_is_not_retried(client, repo):
    with FakeEndpoint([Reply(400, b'{"error": {"message": "bad tool schema"}}')]) as endpoint:
        sid = await endpoint_session(client, repo, endpoint)
        result = await answer(start_prompt(client, sid))
        assert result["stopReason"] == "error" and "400" in result["message"] and "bad tool schema" in result["message"]
        assert len(endpoint.requests) == 1
        assert_lifecycle(client, sid, "error")
        # the session still works, and the failed prompt left a valid history
        assert (await answer(start_prompt(client, sid, "again")))["stopReason"] == "end_turn"
        assert len(endpoint.requests) == 2
        assert_valid_history(endpoint.requests[1]["messages"])


# ------------------------------------------------------ 2. stream dies mid-way
def partial_tool_call_events() -> list[bytes]:
    """The first events of a response calling create_file: its arguments stop half-way."""
    events = chat_stream({"text": "Creating.", "tool_calls": [
        {"name": "create_file", "arguments": {"path": "new.txt", "content": "x" * 200}, "id": "call_cut"},
        {"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "call_never"}]}, 1)
    header = next(i for i, e in enumerate(events) if b"call_cut" in e)
    return events[:header + 4]


@pytest.mark.parametrize("cut", ["socket-closed-mid-body", "clean-eof-without-done"])
async def test_stream_dying_mid_response_errors_open_calls_and_runs_nothing(client, repo, cut):
    events = partial_tool_call_events()
    first = Truncated(events) if cut == "socket-closed-mid-body" else Reply(200, b"".join(events))
    with FakeEndpoint([first, (200, chat_body({"text": "Fine."}, 2))]) as endpoint:
        sid = await endpoint_session(client, repo, endpoint)
        result = await answer(start_prompt(client, sid))
        assert result["stopReason"] == "error", result
        assert result.get("message")
        assert len(endpoint.requests) == 1  # part of the response arrived: never retried
        assert_lifecycle(client, sid, "error")
        finals = final_calls(client, sid)
        assert list(finals) == ["call_cut"]
        assert finals["call_cut"]["status"] == "errored"
        assert client.statuses(sid)["call_cut"] == ["generating", "errored"]
        assert not (repo / "new.txt").exists()
        assert client.permission_requests[sid] == []
        # the next prompt on the same session works and sends a valid history
        follow = await answer(start_prompt(client, sid, "again"))
        assert follow["stopReason"] == "end_turn"
        assert len(endpoint.requests) == 2
    messages = endpoint.requests[1]["messages"]
    assert assert_valid_history(messages) == ["call_cut"]
    assert "Error (" in tool_results(messages)["call_cut"]


# --------------------------------------------- 3. cancel closes the HTTP stream
async def test_cancel_closes_the_model_http_stream(client, repo):
    events = chat_stream({"text": "Thinking hard.", "tool_calls": [
        {"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "call_open"}]}, 1)
    header = next(i for i, e in enumerate(events) if b"call_open" in e)
    stall = Stall(events[:header + 2], tail=events[header + 2:])
    with FakeEndpoint([stall]) as endpoint:
        sid = await endpoint_session(client, repo, endpoint)
        turn = start_prompt(client, sid)
        await client.until(sid, is_call(cid="call_open"))  # the server is reading the stalled stream
        assert await asyncio.to_thread(stall.sent.wait, WAIT)
        client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
        result = await answer(turn)
        assert result["stopReason"] == "cancelled"
        # the endpoint sees the client hang up while it is still stalled (release() was never called)
        assert await asyncio.to_thread(stall.disconnected.wait, WAIT), "the HTTP response was not closed"
        assert_lifecycle(client, sid, "cancelled")
        final = final_calls(client, sid)["call_open"]
        assert final["status"] == "canceled" and final["cancelReason"] == "turn_cancelled"
        assert (await answer(start_prompt(client, sid, "again")))["stopReason"] == "end_turn"
    assert_valid_history(endpoint.requests[-1]["messages"])
    assert "call_open" in tool_results(endpoint.requests[-1]["messages"])


# ------------------------------------------------ 4. $/cancelRequest on prompt
async def test_cancel_request_on_the_prompt_answers_cancelled(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "c_read"}]},
        {"tool_calls": [
            {"name": "create_file", "arguments": {"path": "new.txt", "content": "y" * 2000}, "id": "c_slow"}],
         "chunk_size": 8, "delay": 0.01},
    ])
    sid = await replay_session(client, repo, script, log)
    turn = start_prompt(client, sid, msg_id="prompt-to-cancel")
    await client.until(sid, is_call(cid="c_read", status="done"))
    await client.until(sid, lambda u: is_call(cid="c_slow", status="generating")(u) and u["toolCall"]["argumentsText"])
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="prompt-to-cancel"))
    result = await answer(turn)  # an answer, not a RequestCancelled error
    assert result["stopReason"] == "cancelled", result
    assert_lifecycle(client, sid, "cancelled")
    finals = final_calls(client, sid)
    assert finals["c_read"]["status"] == "done"
    assert finals["c_slow"]["status"] == "canceled" and finals["c_slow"]["cancelReason"] == "turn_cancelled"
    assert not (repo / "new.txt").exists()
    snapshot = await client.call("toolwire/session/snapshot", {"sessionId": sid})
    assert snapshot["running"] is False
    messages = await follow_up_is_valid(client, sid, log)
    results = tool_results(messages)
    assert "hello" in results["c_read"] and "c_slow" in results


# ------------------------------------------------ 5. cancel while asking
async def test_cancel_withdraws_the_open_permission_request(client, repo, tmp_path):
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "hello.txt", "old_string": "hello", "new_string": "bye"}, "id": "c_edit"}]},
    ])
    sid = await replay_session(client, repo, script, log)
    client.held.add(sid)
    turn = start_prompt(client, sid)
    await asyncio.wait_for(client.opened[sid].wait(), WAIT)
    permission_id = client.permission_ids[-1]
    client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    result = await answer(turn)
    assert result["stopReason"] == "cancelled"
    await asyncio.wait_for(client.withdrawn_event.wait(), WAIT)
    assert "c_edit" in client.withdrawn  # the held request's handler was cancelled by its id
    assert permission_id is not None and permission_id in client.cancel_ids
    assert_lifecycle(client, sid, "cancelled")
    final = final_calls(client, sid)["c_edit"]
    assert final["status"] == "canceled" and final["cancelReason"] == "turn_cancelled"
    assert (repo / "hello.txt").read_text() == "hello\n"
    client.held.discard(sid)
    assert "c_edit" in tool_results(await follow_up_is_valid(client, sid, log))


# ------------------------------------------------ 6. cancel while git runs
async def test_cancel_kills_a_blocking_commit_hook_and_commits_nothing(client, repo, tmp_path):
    pipe = PidPipe(tmp_path / "pid.fifo")
    blocking_hook(repo, pipe.path)
    (repo / "hello.txt").write_text("hello again\n")
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "git_commit", "arguments": {"message": "Blocked", "paths": ["hello.txt"]},
                         "id": "c_commit"}]},
        {"tool_calls": [{"name": "git_commit", "arguments": {"message": "Works", "paths": ["hello.txt"]},
                         "id": "c_commit2"}]},
    ])
    sid = await replay_session(client, repo, script, log)
    commits = commit_count(repo)
    turn = start_prompt(client, sid)
    pid = await pipe.read_pid()
    pgid = os.getpgid(pid)
    assert pgid != os.getpgid(0)  # git runs in its own process group
    client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})
    result = await answer(turn)
    assert result["stopReason"] == "cancelled"
    await group_vanishes(pgid)
    assert commit_count(repo) == commits
    assert_lifecycle(client, sid, "cancelled")
    final = final_calls(client, sid)["c_commit"]
    assert final["status"] == "canceled" and final["cancelReason"] == "turn_cancelled"
    # the repository is usable afterwards: no lock left behind by the killed git
    assert not (repo / ".git" / "index.lock").exists()
    (repo / ".git" / "hooks" / "pre-commit").unlink()
    await follow_up_is_valid(client, sid, log)
    assert final_calls(client, sid)["c_commit2"]["status"] == "done", final_calls(client, sid)["c_commit2"]
    assert git(repo, "log", "-1", "--format=%s").strip() == "Works"


# ------------------------------------------------ 7. cancel during an edit
@pytest.mark.parametrize("when", ["asking", "calling"])
async def test_cancel_during_a_large_edit_never_half_writes(client, tmp_path, when):
    """Cancel while the edit waits for approval (it must not run) or right after
    ``calling`` arrives (it may have finished: a disk write has no await point)."""
    root = tmp_path / "ws"
    root.mkdir()
    lines = [f"line {i:07d} {'abcdefghij' * 8}\n" for i in range(17000)]  # ~1.5 MB
    original = "".join(lines).encode()
    (root / "big.txt").write_bytes(original)
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "multi_edit", "arguments": {"path": "big.txt", "edits": [
            {"old_string": "line 0000001 ", "new_string": "FIRST "},
            {"old_string": "line 0016999 ", "new_string": "LAST "}]}, "id": "c_big"}]},
    ])
    sid = await replay_session(client, root, script, log)
    cancel = lambda: client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})  # noqa: E731
    if when == "asking":
        client.held.add(sid)
        turn = start_prompt(client, sid)
        await asyncio.wait_for(client.opened[sid].wait(), WAIT)
        cancel()
    else:
        def cancel_on_calling(count: int) -> None:
            if is_call(cid="c_big", status="calling")(client.updates[sid][-1]):
                cancel()  # sent from the notification handler: as early as the client can
                client.hooks.pop(sid)

        client.hooks[sid] = cancel_on_calling
        turn = start_prompt(client, sid)
    result = await answer(turn)
    client.held.discard(sid)
    final = final_calls(client, sid)["c_big"]
    data = (root / "big.txt").read_bytes()
    expected = original.replace(b"line 0000001 ", b"FIRST ").replace(b"line 0016999 ", b"LAST ")
    if final["status"] == "done":
        assert data == expected
    else:
        assert final["status"] == "canceled" and final["cancelReason"] == "turn_cancelled"
        assert data == original  # byte for byte
    if when == "asking":
        assert final["status"] == "canceled" and result["stopReason"] == "cancelled"
    assert result["stopReason"] in ("cancelled", "end_turn")
    assert_lifecycle(client, sid, result["stopReason"])
    assert [p.name for p in root.iterdir()] == ["big.txt"]  # no temporary file left
    await follow_up_is_valid(client, sid, log)


# ------------------------------------------------ 8. cancel one running call
async def test_cancelling_one_running_call_keeps_the_turn_going(client, repo, tmp_path):
    pipe = PidPipe(tmp_path / "pid.fifo")
    blocking_hook(repo, pipe.path)
    (repo / "hello.txt").write_text("hello again\n")
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "git_commit", "arguments": {"message": "Blocked", "paths": ["hello.txt"]},
                         "id": "c_commit"}]},
        {"text": "Skipping the commit."},
    ])
    sid = await replay_session(client, repo, script, log)
    commits = commit_count(repo)
    turn = start_prompt(client, sid)
    pid = await pipe.read_pid()
    pgid = os.getpgid(pid)
    got = await client.call("toolwire/toolCall/cancel", {"sessionId": sid, "toolCallId": "c_commit"})
    assert got == {"cancelled": True}
    result = await answer(turn)
    assert result["stopReason"] == "end_turn"  # the turn went on to the next model request
    await group_vanishes(pgid)
    assert commit_count(repo) == commits
    assert not (repo / ".git" / "index.lock").exists()
    assert_lifecycle(client, sid, "end_turn")
    final = final_calls(client, sid)["c_commit"]
    assert final["status"] == "canceled" and final["cancelReason"] == "call_cancelled"
    requests = replay_requests(log)
    assert len(requests) == 2
    assert assert_valid_history(requests[1]) == ["c_commit"]
    assert tool_results(requests[1])["c_commit"].startswith("Canceled by the user")
    again = await client.call("toolwire/toolCall/cancel", {"sessionId": sid, "toolCallId": "c_commit"})
    assert again == {"cancelled": False}


# ------------------------------------------------ 9. results in call order
async def test_results_follow_call_order_when_tools_finish_out_of_order(client, repo, tmp_path):
    gate = tmp_path / "gate.fifo"
    os.mkfifo(gate)
    (repo / ".gitattributes").write_text("slow.txt filter=slow\n")
    git(repo, "config", "filter.slow.clean", f'read line < "{gate}"; cat')
    (repo / "slow.txt").write_text("slow\n")
    (repo / "other.txt").write_text("other\n")
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [
            {"name": "git_add", "arguments": {"paths": ["slow.txt"]}, "id": "c1_add"},
            {"name": "read_file", "arguments": {"path": "hello.txt"}, "id": "c2_read"},
            {"name": "read_file", "arguments": {"path": "other.txt"}, "id": "c3_read"}]},
        {"text": "Done."},
    ])
    sid = await replay_session(client, repo, script, log)
    turn = start_prompt(client, sid)
    await client.until(sid, is_call(cid="c1_add", status="calling"))
    await client.until(sid, is_call(cid="c2_read", status="done"))
    await client.until(sid, is_call(cid="c3_read", status="done"))
    assert final_calls(client, sid)["c1_add"]["status"] == "calling"  # still blocked in its clean filter

    def open_gate() -> None:
        with gate.open("w") as fh:
            fh.write("go\n")

    await asyncio.to_thread(open_gate)
    result = await answer(turn)
    assert result["stopReason"] == "end_turn"
    assert_lifecycle(client, sid, "end_turn")
    done_order = [u["toolCall"]["toolCallId"] for u in client.updates[sid] if is_call(status="done")(u)]
    assert done_order == ["c2_read", "c3_read", "c1_add"]
    second = replay_requests(log)[1]
    assert assert_valid_history(second) == ["c1_add", "c2_read", "c3_read"]
    assert [m["tool_call_id"] for m in second if m["role"] == "tool"] == ["c1_add", "c2_read", "c3_read"]
    assert "slow.txt" in git(repo, "diff", "--cached", "--name-only")


# ------------------------------------------------ 11. random cancellation points
RANDOM_SCRIPT = [
    {"text": "Working.", "tool_calls": [
        {"name": "read_file", "arguments": {"path": "hello.txt"}},
        {"name": "edit_file", "arguments": {"path": "hello.txt", "old_string": "hello", "new_string": "hello world"}},
        {"name": "git_status", "arguments": {}}], "chunk_size": 3},
    {"tool_calls": [
        {"name": "create_file", "arguments": {"path": "new.txt", "content": "new\n"}},
        {"name": "nope", "arguments": {}},
        {"name": "read_file", "arguments": '{"path": '}], "chunk_size": 5},
    {"tool_calls": [{"name": "git_diff", "arguments": {}}]},
    {"text": "Finished."},
]


def fresh_repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "hello.txt").write_text("hello\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


async def test_cancel_at_random_points_over_the_protocol(client, tmp_path):
    script = write_script(tmp_path / "s.jsonl", RANDOM_SCRIPT)
    probe_log = tmp_path / "probe.jsonl"
    probe = await replay_session(client, fresh_repo(tmp_path / "probe"), script, probe_log)
    assert (await answer(start_prompt(client, probe)))["stopReason"] == "end_turn"
    total = len(client.updates[probe])
    assert total > 30
    rng = random.Random(20261130)
    outcomes = set()
    for round_ in range(15):
        k = rng.randint(1, total)
        root = fresh_repo(tmp_path / f"ws{round_}")
        log = tmp_path / f"requests{round_}.jsonl"
        sid = await replay_session(client, root, script, log)
        if rng.random() < 0.3:
            client.answers[sid] = [{"optionId": "reject", "reason": "no"}]

        def cancel_at(count: int, sid: str = sid, k: int = k) -> None:
            if count == k:
                client.protocol.notify("toolwire/session/cancel", {"sessionId": sid})

        client.hooks[sid] = cancel_at
        result = await answer(start_prompt(client, sid))
        client.hooks.pop(sid)
        outcomes.add(result["stopReason"])
        assert result["stopReason"] in ("cancelled", "end_turn"), (k, result)
        assert_lifecycle(client, sid, result["stopReason"])
        assert (root / "hello.txt").read_bytes() in (b"hello\n", b"hello world\n"), k
        if (root / "new.txt").exists():
            assert (root / "new.txt").read_bytes() == b"new\n"
        assert not [p for p in root.iterdir() if ".toolwire-" in p.name]
        # the next request is valid, and holds every call that ran (the model sees its result)
        ran = [cid for cid, final in final_calls(client, sid).items() if final["status"] == "done"]
        messages = await follow_up_is_valid(client, sid, log)
        recorded = set(assert_valid_history(messages))
        assert set(ran) <= recorded, (k, ran, recorded)
    assert "cancelled" in outcomes
