"""Bad input to ``toolwire acp`` gets a clear answer, and the agent keeps serving.

The real agent over stdio (the SDK's client side, raw bytes written to its stdin
besides): lines that are not UTF-8 are answered -32700 and the open session still
answers prompts; notifications Toolwire does not handle are ignored with one DEBUG
line in the log, never an ERROR or a traceback.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION, spawn_agent_process
from acp.schema import TextContentBlock

from test_acp import agent_env
from toolwire.acp.incoming import check_line, read_line

#: Lines that are not UTF-8 (each answered -32700, id null).
NOT_UTF8 = {
    "a byte 0xff in a JSON string": b'{"jsonrpc": "2.0", "id": 50, "method": "session/prompt", "params": "\xff"}',
    "a bare invalid byte": b"\xff",
    "a lone continuation byte": b"abc\x80def",
    "an overlong encoding of /": b'{"a": "\xc0\xaf"}',
    "a sequence cut short": b'{"jsonrpc": "2.0", "method": "\xe2\x82"}',
    "an encoded surrogate": b'{"jsonrpc": "2.0", "id": 51, "method": "\xed\xa0\x80"}',
    "Latin-1 text": "caf\u00e9 cr\u00e8me".encode("latin-1"),
}
#: Lines the SDK would drop or stop on, each answered (code, the message's start).
OTHER_BAD = {
    b"[" * 100_000 + b"]" * 100_000: (-32700, "Parse error: the line nests arrays or objects too deeply"),
    b'{"jsonrpc": "2.0"}': (-32600, "Invalid Request: neither a request nor a notification"),
    b"[]": (-32600, "Invalid Request: expected one JSON object per line"),
}

#: Notifications Toolwire does not handle: ignored, one DEBUG line each naming the method.
UNKNOWN_NOTIFICATIONS = {
    "foo/bar": {"jsonrpc": "2.0", "method": "foo/bar", "params": {"x": 1}},
    "_foo/bar": {"jsonrpc": "2.0", "method": "_foo/bar", "params": {}},
    "_zed/unknown": {"jsonrpc": "2.0", "method": "_zed/unknown"},
    "$/cancelRequest": {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 999}},
}


class Observer:
    """Every message the agent sends, and a way to wait for some."""

    def __init__(self) -> None:
        self.incoming: list[dict[str, Any]] = []
        self._changed = asyncio.Event()

    def __call__(self, event: Any) -> None:
        if event.direction.value == "incoming":
            self.incoming.append(event.message)
            self._changed.set()

    def errors_without_id(self) -> list[dict[str, Any]]:
        return [m["error"] for m in self.incoming if "error" in m and m.get("id") is None]

    async def wait_for(self, predicate: Any, timeout: float = 60) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()


class Client:
    """An ACP client that needs nothing but updates (the replay model only writes text)."""

    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)


def text(prompt: str) -> list[TextContentBlock]:
    return [TextContentBlock(type="text", text=prompt)]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("hello\n")
    return root


async def start(observer: Observer, log_file: Path):
    args = ["-m", "toolwire", "acp", "--model", "replay", "--log-level", "DEBUG", "--log-file", str(log_file)]
    return spawn_agent_process(Client(), sys.executable, *args, env=agent_env(), observers=[observer])


async def open_session(conn: Any, root: Path) -> str:
    await conn.initialize(protocol_version=PROTOCOL_VERSION)
    return (await conn.new_session(cwd=str(root), mcp_servers=[])).session_id


async def test_lines_that_are_not_utf8_are_answered_and_the_session_goes_on(folder: Path, tmp_path: Path) -> None:
    observer = Observer()
    async with await start(observer, tmp_path / "acp.log") as (conn, process):
        sid = await open_session(conn, folder)
        assert (await conn.prompt(session_id=sid, prompt=text("before"))).stop_reason == "end_turn"
        for line in NOT_UTF8.values():
            process.stdin.write(line + b"\n")
        await process.stdin.drain()
        await observer.wait_for(lambda: len(observer.errors_without_id()) == len(NOT_UTF8))
        response = await conn.prompt(session_id=sid, prompt=text("after"))
        assert response.stop_reason == "end_turn"
        for line in OTHER_BAD:
            process.stdin.write(line + b"\n")
        await process.stdin.drain()
        total = len(NOT_UTF8) + len(OTHER_BAD)
        await observer.wait_for(lambda: len(observer.errors_without_id()) == total)
        assert (await conn.prompt(session_id=sid, prompt=text("still"))).stop_reason == "end_turn"
        assert process.returncode is None
    errors = observer.errors_without_id()
    assert [e["code"] for e in errors[:len(NOT_UTF8)]] == [-32700] * len(NOT_UTF8)
    for (name, line), error in zip(NOT_UTF8.items(), errors):
        assert error["message"].startswith("Parse error: the line is not UTF-8 (byte 0x"), (name, error)
    for (code, says), error in zip(OTHER_BAD.values(), errors[len(NOT_UTF8):]):
        assert error["code"] == code and error["message"].startswith(says), error
    assert not [m for m in observer.incoming if m.get("id") in (50, 51)]  # nothing of them reached the SDK
    assert "Traceback" not in (tmp_path / "acp.log").read_text()


async def test_unknown_notifications_are_ignored_with_one_debug_line(folder: Path, tmp_path: Path) -> None:
    observer, log_file = Observer(), tmp_path / "acp.log"
    async with await start(observer, log_file) as (conn, process):
        sid = await open_session(conn, folder)
        for message in UNKNOWN_NOTIFICATIONS.values():
            process.stdin.write(json.dumps(message).encode() + b"\n")
        # a method name that is not a string: an invalid Request, answered -32600 id null (JSON-RPC 2.0,
        # section 7's own example; as toolwire serve answers it)
        process.stdin.write(b'{"jsonrpc": "2.0", "method": 5}\n')
        # a notification Toolwire handles, with params that do not validate: one WARNING
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {"session": 1}}\n')
        # $/cancel_request of a request that is not an open session/prompt: one DEBUG line
        process.stdin.write(b'{"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 999}}\n')
        await process.stdin.drain()
        # the agent reads in order: once this prompt is answered, every line above was handled
        assert (await conn.prompt(session_id=sid, prompt=text("still here"))).stop_reason == "end_turn"
        assert process.returncode is None
    log = log_file.read_text().splitlines()
    assert not [line for line in log if " ERROR " in line or " CRITICAL " in line], log
    assert not [line for line in log if "Traceback" in line], log
    for method in UNKNOWN_NOTIFICATIONS:
        named = [line for line in log if f"notification '{method}'" in line]
        assert len(named) == 1 and " DEBUG toolwire.acp.incoming: ignored the notification" in named[0], (method, log)
    unknown = [line for line in log if "$/cancel_request for 999" in line]
    assert len(unknown) == 1 and " DEBUG toolwire.acp.cancel_requests: " in unknown[0], log
    invalid = [line for line in log if "notification 'session/cancel'" in line]
    assert len(invalid) == 1 and " WARNING " in invalid[0] and "sessionId: Field required" in invalid[0], log
    [refused] = observer.errors_without_id()  # a notification has no answer; the invalid Request has
    assert refused["code"] == -32600 and refused["message"] == "Invalid Request: the method must be a string, got 5"


def test_check_line_refuses_what_the_sdk_would_mishandle() -> None:
    refused = {b"\xff\n": -32700, b"not json\n": -32700, b"[1, 2]\n": -32600, b"7\n": -32600,
               b"[" * 100_000 + b"]" * 100_000 + b"\n": -32700,  # deeper than the parser can go
               b'{"jsonrpc": "2.0"}\n': -32600, b'{"jsonrpc": "2.0", "id": 5}\n': -32600}
    for line, code in refused.items():
        answer = check_line(line)
        assert answer is not None and answer.endswith(b"\n")
        message = json.loads(answer)
        assert message["jsonrpc"] == "2.0" and message["error"]["code"] == code, line
        assert message["id"] == (5 if b'"id": 5' in line else None), line
    assert json.loads(check_line(b'{"jsonrpc": "2.0", "id": 5}\n'))["id"] == 5  # a usable id is echoed
    assert json.loads(check_line(b'{"id": [5]}\n'))["id"] is None
    assert check_line(b'{"jsonrpc": "2.0", "id": 5, "result": null}\n') is None  # a response: the SDK's
    assert check_line(b"  \n") == b""
    assert check_line(b'{"jsonrpc": "2.0", "method": "no/such"}\n') == b""  # an unknown notification: dropped
    assert check_line(b'{"jsonrpc": "2.0", "id": 1, "method": "no/such"}\n') is None  # a request: the SDK answers
    assert check_line(b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}}\n') is None


async def test_a_line_over_the_limit_is_dropped_whole_and_reading_goes_on() -> None:
    source = asyncio.StreamReader(limit=64)
    source.feed_data(b'{"first": 1}\n' + b"x" * 1000 + b"\n" + b"y" * 100 + b'\n{"after": 2}\n' + b"z" * 200)
    source.feed_eof()
    assert await read_line(source) == b'{"first": 1}\n'
    with pytest.raises(ValueError):
        await read_line(source)
    with pytest.raises(ValueError):
        await read_line(source)
    assert await read_line(source) == b'{"after": 2}\n'
    with pytest.raises(ValueError):  # the stream ends in the middle of a line over the limit
        await read_line(source)
    assert await read_line(source) is None



def test_check_line_refuses_a_byte_order_mark_and_ids_acp_does_not_allow() -> None:
    initialize = b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}'
    assert check_line(initialize + b"\r\n") is None  # a CR-LF line end is a line end
    answer = json.loads(check_line(b"\xef\xbb\xbf" + initialize + b"\n"))  # as toolwire serve answers it
    assert answer["id"] is None and answer["error"] == {
        "code": -32700, "message": "Parse error: the line starts with a byte order mark; send UTF-8 without one"}
    for bad_id in (b"true", b"false", b"1.5", b"[1]", b'{"a": 1}'):
        answer = json.loads(check_line(b'{"jsonrpc": "2.0", "id": ' + bad_id + b', "method": "initialize"}\n'))
        assert answer["id"] is None and answer["error"]["code"] == -32600, bad_id
        assert answer["error"]["message"].startswith("Invalid Request: the id must be a string, an integer or null")
    for method, msg_id in ((b"null", 3), (b"5", 3), (b'["initialize"]', None)):  # answered, never left waiting
        line = b'{"jsonrpc": "2.0", ' + (b'"id": 3, ' if msg_id else b"") + b'"method": ' + method + b"}\n"
        answer = json.loads(check_line(line))
        assert answer["id"] == msg_id and answer["error"]["code"] == -32600, method
        assert answer["error"]["message"].startswith("Invalid Request: the method must be a string, got ")
    for good_id in (b'"x"', b"0", b"-3", b"null"):
        assert check_line(b'{"jsonrpc": "2.0", "id": ' + good_id + b', "method": "initialize"}\n') is None


async def test_a_bom_line_and_an_id_true_are_answered_and_the_agent_goes_on(folder: Path, tmp_path: Path) -> None:
    """A BOM before the first line, an id the SDK would have answered as if it were one: each
    refused with id null; a null method (the SDK sent no answer) refused with its id; a CR-LF
    initialize after them and session/new are answered."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "toolwire", "acp", "--model", "replay", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    initialize = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
    new = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(folder), "mcpServers": []}}
    process.stdin.write(b"\xef\xbb\xbf" + initialize.encode() + b"\n")
    process.stdin.write(b'{"jsonrpc": "2.0", "id": true, "method": "initialize", "params": {"protocolVersion": 1}}\n')
    process.stdin.write(b'{"jsonrpc": "2.0", "id": 9, "method": null}\n')  # the SDK never answered it
    process.stdin.write(initialize.encode() + b"\r\n" + json.dumps(new).encode() + b"\n")
    await process.stdin.drain()
    answers = []
    async with asyncio.timeout(60):
        while len(answers) < 5:
            answers.append(json.loads(await process.stdout.readline()))
    process.stdin.close()
    async with asyncio.timeout(60):
        await process.wait()
    assert [a["error"]["code"] for a in answers if a["id"] is None] == [-32700, -32600]
    assert [a["error"]["code"] for a in answers if a["id"] == 9] == [-32600]
    assert [a["id"] for a in answers if "result" in a] == [1, 2]
    assert answers[-1]["result"]["sessionId"]
    assert process.returncode == 0
