"""Issue 21, "Looking around costs requests": a turn that reaches ``maxModelRequests`` ends
``max_turn_requests``, and Continue resumes it: the next request carries the same history
plus the core's continue prompt. Over LSP (``toolwire/session/continue``), over ACP (the
``/continue`` command) and in ``toolwire run`` (``--continue N``, and the advice when it is 0).

Real server over stdio (``toolwire serve``, ``toolwire acp``, ``toolwire run``), replay
models whose requests are logged (``replayLog``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from pygls.exceptions import JsonRpcInvalidParams

from conftest import write_script
from toolwire.agent.host import CONTINUE_PROMPT

ASYNC = pytest.mark.asyncio(loop_scope="module")

CAP_MESSAGE = "the turn stopped after 2 model requests (the maxModelRequests setting)"
READS = [{"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
         {"tool_calls": [{"id": "r2", "name": "read_file", "arguments": {"path": "b.txt"}}]},
         {"text": "both read"}]


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    return root


def logged(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def assert_resumed(requests: list[dict[str, Any]]) -> None:
    """The third request (the Continue's) is the second's history, the capped turn's last
    call and its result, then the continue prompt: nothing dropped, nothing added."""
    assert len(requests) == 3
    before, after = requests[1]["messages"], requests[2]["messages"]
    assert after[:len(before)] == before
    call, result, prompt = after[len(before):]
    assert call["role"] == "assistant" and call["tool_calls"][0]["function"]["name"] == "read_file"
    assert json.loads(call["tool_calls"][0]["function"]["arguments"]) == {"path": "b.txt"}
    assert result["role"] == "tool" and result["tool_call_id"] == call["tool_calls"][0]["id"]
    assert "beta" in result["content"]
    assert prompt == {"role": "user", "content": CONTINUE_PROMPT}


@ASYNC
async def test_lsp_continue_resumes_a_capped_turn_with_the_same_history(client, tmp_path):
    root = workspace(tmp_path)
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", READS)
    sid = (await client.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}",
                                                      "settings": {"maxModelRequests": 2, "replayLog": str(log)}}))["sessionId"]
    with pytest.raises(JsonRpcInvalidParams, match=r"toolwire/session/continue: invalid params: sessionId: there is "
                       r"no turn to continue \(the session has no turn yet\): Continue resumes a turn that stopped "
                       r"with max_turn_requests"):
        await client.call("toolwire/session/continue", {"sessionId": sid})
    first = await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "read both"})
    assert first["stopReason"] == "max_turn_requests"
    assert first["message"] == CAP_MESSAGE
    ended = [u for u in client.updates[sid] if u["sessionUpdate"] == "turn" and u["state"] == "ended"]
    assert ended[-1]["stopReason"] == "max_turn_requests" and ended[-1]["message"] == CAP_MESSAGE
    resumed = await client.call("toolwire/session/continue", {"sessionId": sid})
    assert resumed["stopReason"] == "end_turn"
    assert_resumed(logged(log))
    turns = [u["turnId"] for u in client.updates[sid] if u["sessionUpdate"] == "turn" and u["state"] == "started"]
    assert turns == ["t1", "t2"]  # a Continue is a turn of its own
    with pytest.raises(JsonRpcInvalidParams, match=r"there is no turn to continue \(the last turn ended end_turn\)"):
        await client.call("toolwire/session/continue", {"sessionId": sid})
    assert len(logged(log)) == 3  # a refused Continue asks the model nothing


@ASYNC
async def test_lsp_continue_is_refused_after_the_capped_turn_was_undone_and_forgotten(client, tmp_path):
    root = workspace(tmp_path)
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"id": "c1", "name": "create_file", "arguments": {"path": "new.txt", "content": "x\n"}}]},
        {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "new.txt"}}]}])
    sid = (await client.call("toolwire/session/new", {"cwd": str(root), "model": f"replay:{script}", "settings": {
        "maxModelRequests": 2, "permissions": {"create_file": "auto"}}}))["sessionId"]
    assert (await client.call("toolwire/session/prompt", {"sessionId": sid, "prompt": "make it"}))["stopReason"] \
        == "max_turn_requests"
    undone = await client.call("toolwire/session/undoTurn", {"sessionId": sid, "rewind": True})
    assert undone["status"] == "undone" and not (root / "new.txt").exists()
    with pytest.raises(JsonRpcInvalidParams, match=r"sessionId: there is no turn to continue \(the last turn was "
                       r"undone and removed from the conversation\): send a new prompt"):
        await client.call("toolwire/session/continue", {"sessionId": sid})


def test_the_default_cap_is_25_requests(tmp_path):
    """A replayed turn of 26 tool calls stops after the 25th request (the default) with max_turn_requests."""
    root = workspace(tmp_path)
    log = tmp_path / "requests.jsonl"
    lines = [{"tool_calls": [{"id": f"r{n}", "name": "read_file", "arguments": {"path": "a.txt"}}]} for n in range(26)]
    script = write_script(tmp_path / "s.jsonl", lines)
    done = run_cli(root, script, "--json", "--settings", json.dumps({"replayLog": str(log)}))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["stopReason"] == "max_turn_requests"
    assert len(logged(log)) == 25
    assert "the turn stopped after 25 model requests (the maxModelRequests setting)" in done.stderr


def run_cli(root: Path, script: Path, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "toolwire", "run", "--workspace", str(root), "--model", f"replay:{script}",
         "--approve", "no", *flags, "read both"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_toolwire_run_says_how_to_continue_and_continue_1_resumes(tmp_path):
    root = workspace(tmp_path)
    script = write_script(tmp_path / "s.jsonl", READS)
    log = tmp_path / "stopped.jsonl"
    stopped = run_cli(root, script, "--settings", json.dumps({"maxModelRequests": 2, "replayLog": str(log)}))
    assert stopped.returncode == 0, stopped.stderr
    assert "stop reason: max_turn_requests" in stopped.stdout
    assert stopped.stderr.splitlines()[-2:] == [
        f"toolwire run: max_turn_requests: {CAP_MESSAGE}",
        "  what to do: this run's session ends with it; run the prompt again with --continue N to let a turn that "
        "stops at the cap go on with the same history (up to N times), or with a higher cap, e.g. "
        "--settings '{\"maxModelRequests\": 50}'"]
    assert len(logged(log)) == 2
    # the advice is true: --continue 1 goes on in the same session, with the same history
    log = tmp_path / "continued.jsonl"
    continued = run_cli(root, script, "--continue", "1", "--settings",
                        json.dumps({"maxModelRequests": 2, "replayLog": str(log)}))
    assert continued.returncode == 0, continued.stderr
    assert f"[continue] 1 of 1: {CAP_MESSAGE}" in continued.stdout
    assert continued.stdout.rstrip().endswith("stop reason: end_turn")
    assert "what to do" not in continued.stderr
    assert_resumed(logged(log))
    # and so is the other half: a higher cap is a valid setting that lets the same turn finish
    log = tmp_path / "higher.jsonl"
    higher = run_cli(root, script, "--settings", json.dumps({"maxModelRequests": 50, "replayLog": str(log)}))
    assert higher.returncode == 0 and higher.stdout.rstrip().endswith("stop reason: end_turn"), higher.stderr
    assert len(logged(log)) == 3
    bad = run_cli(root, script, "--continue", "lots")
    assert bad.returncode == 2 and "--continue: expected a whole number from 0 to 100, not 'lots'" in bad.stderr


@ASYNC
async def test_acp_continue_command_resumes_a_capped_turn(tmp_path):
    from test_acp import RecordingClient, open_session, start, text

    root = workspace(tmp_path)
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", READS)
    client = RecordingClient()
    async with await start(client, f"replay:{script}",
                           settings={"maxModelRequests": 2, "replayLog": str(log)}) as (conn, _):
        sid = await open_session(conn, root)
        await client.wait_for(lambda: any(u.session_update == "available_commands_update" for u in client.updates))
        with pytest.raises(RequestError) as refused:
            await conn.prompt(session_id=sid, prompt=text("/continue"))
        assert refused.value.data == {"prompt": "/continue: there is no turn to continue (the session has no turn "
                                                "yet): Continue resumes a turn that stopped with max_turn_requests"}
        first = await conn.prompt(session_id=sid, prompt=text("read both"))
        assert first.stop_reason == "max_turn_requests"
        chunks = [u.content.text for u in client.updates if u.session_update == "agent_message_chunk"]
        assert chunks[-1] == f"\n\n[Stopped: {CAP_MESSAGE}; send /continue to go on with the same history]"
        with pytest.raises(RequestError) as argued:
            await conn.prompt(session_id=sid, prompt=text("/continue now"))
        assert argued.value.data == {"prompt": "/continue: it takes no argument. Usage: /continue"}
        resumed = await conn.prompt(session_id=sid, prompt=text("/continue"))
        assert resumed.stop_reason == "end_turn"
    assert_resumed(logged(log))
    assert not client.invalid, client.invalid


@ASYNC
async def test_acp_names_the_tools_left_out_once_and_refuses_a_call_to_one(tmp_path):
    from test_acp import RecordingClient, open_session, start, text
    from toolwire.tools import default_registry

    root = workspace(tmp_path)
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"id": "g1", "name": "git_status", "arguments": {}}]}, {"text": "ok"}, {"text": "again"}])
    client = RecordingClient()
    async with await start(client, f"replay:{script}", settings={"maxTools": 5}) as (conn, _):
        sid = await open_session(conn, root)
        assert (await conn.prompt(session_id=sid, prompt=text("status"))).stop_reason == "end_turn"
        assert (await conn.prompt(session_id=sid, prompt=text("again"))).stop_reason == "end_turn"
    names = default_registry().names()
    warnings = [u for u in client.updates if u.session_update == "agent_message_chunk" and u.field_meta]
    assert len(warnings) == 1
    message = (f"{len(names) - 5} of {len(names)} tools are not offered to the model (the maxTools setting is 5): "
               f"{', '.join(names[5:])}. Raise maxTools to offer them.")
    assert warnings[0].field_meta == {"toolwire": {"warning": {"code": "tools_left_out", "message": message,
                                                               "names": names[5:]}}}
    assert warnings[0].content.text == f"[Warning: {message}]\n\n"
    status = client.final("g1")
    assert status["status"] == "failed"
    assert status["raw_output"]["error"]["code"] == "unknown_tool"
    assert status["raw_output"]["error"]["message"].startswith("there is no tool named 'git_status'")
    assert not client.invalid, client.invalid
