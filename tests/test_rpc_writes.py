"""What the handling of one message sends goes out in one write (issue 12, goal 2).

The real server object (``toolwire.lsp.boot.server``) in a child process, its
writer replaced by one that records every ``write`` call: a client-fed merge's
``tool_call`` update and its answer must arrive as one write holding both framed
messages, in that order; the ``initialize`` answer is written on its own before
the rest of the server loads; what an async handler sends later is not held back.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = r'''
import asyncio, json, sys
from toolwire.lsp.main import server

writes = []
seen = asyncio.Event()

class Recorder:
    def write(self, data):
        writes.append(bytes(data))
        seen.set()
    def close(self):
        pass

async def answer(msg_id):
    key = b'"id":%d,' % msg_id
    while not any(key in w for w in writes):
        seen.clear()
        await seen.wait()

def frames(data):
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(head.split(b":")[1])
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out

async def main():
    p = server.protocol
    p.set_writer(Recorder())
    modules_before = len(sys.modules)
    p.handle_message({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {}}})
    first = writes[0]
    p.handle_message({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    p.handle_message({"jsonrpc": "2.0", "id": 1, "method": "toolwire/session/new", "params": {"cwd": sys.argv[1]}})
    await answer(1)  # an async handler: answered by a later write of its own
    session = [m for w in writes for m in frames(w) if m.get("id") == 1][0]["result"]["sessionId"]
    del writes[:]
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\": "}}]}}]}
    p.handle_message({"jsonrpc": "2.0", "id": 2, "method": "toolwire/toolCalls/merge",
                      "params": {"sessionId": session, "streamId": "s", "chunks": [chunk]}})
    merge_writes = [frames(w) for w in writes]
    del writes[:]
    p.handle_message([{"jsonrpc": "2.0", "id": 3, "method": "toolwire/tools/list"},
                      {"jsonrpc": "2.0", "id": 4, "method": "toolwire/nope"}])
    print(json.dumps({"first": frames(first), "merge": merge_writes, "batch": [frames(w) for w in writes]}))

asyncio.run(main())
'''


def test_one_write_per_handled_message(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    # initialize: answered alone, before the handlers were loaded
    assert [m.get("id") for m in got["first"]] == [0] and "capabilities" in got["first"][0]["result"]
    # the merge: one write, the update first, then the answer naming the same call
    assert len(got["merge"]) == 1, got["merge"]
    update, result = got["merge"][0]
    assert update["method"] == "toolwire/session/update" and update["params"]["update"]["toolCall"]["toolCallId"] == "call_1"
    assert result["id"] == 2 and result["result"]["toolCalls"][0]["toolCallId"] == "call_1"
    # a batch: both answers in one write, in order
    assert len(got["batch"]) == 1 and [m["id"] for m in got["batch"][0]] == [3, 4]
    assert "error" in got["batch"][0][1] and "tools" in got["batch"][0][0]["result"]
