"""The headless client behind ``toolwire run``: a real JSON-RPC peer of ``toolwire serve``.

It starts the server as a subprocess, speaks the real protocol over its stdio
(pygls' JSON-RPC client), rebuilds each tool call from its updates
(:class:`toolwire.lsp.mirror.CallMirror`; a missed piece of argument text makes
it take ``toolwire/session/snapshot``), prints every status change as it happens, answers
permission requests per ``--approve``, and turns Ctrl-C into
``toolwire/session/cancel`` (a second Ctrl-C exits at once).

Exit codes: 0 the turn ended (any stop reason); 1 the server failed or broke the
protocol; 2 bad usage (rejected params); 130 interrupted by Ctrl-C.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from pygls.client import JsonRPCClient
from pygls.exceptions import JsonRpcException

from toolwire.lsp import protocol as P
from toolwire.lsp.mirror import CallMirror
from toolwire.lsp.server import make_converter


@dataclass(slots=True)
class RunOptions:
    """What ``toolwire run`` was asked to do.

    Attributes:
        workspace: The workspace folder.
        model: Model spec (``replay:SCRIPT`` or ``openai:MODEL``).
        prompt: The user's prompt.
        approve: ``yes``, ``no`` or ``ask`` (ask on a terminal).
        json: Print every update params object as one JSON line.
        settings: Extra settings sent as ``initializationOptions``.
        server_args: Extra arguments for ``toolwire serve`` (e.g. ``--log-file``).
    """

    workspace: Path
    model: str
    prompt: str
    approve: str = "ask"
    json: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    server_args: list[str] = field(default_factory=list)


class _Client(JsonRPCClient):
    def __init__(self) -> None:
        super().__init__(converter_factory=make_converter)
        self.protocol_errors: list[str] = []

    def report_server_error(self, error: Exception, source: Any) -> None:
        self.protocol_errors.append(f"{type(error).__name__}: {error}")


class _Printer:
    """Human-readable progress: one line per status change, text as it streams."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.status: dict[str, str] = {}
        self.rev: dict[str, int] = {}
        self.in_text = False

    def update(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self.out.write(update["content"]["text"])
            self.in_text = True
        elif kind == "tool_call":
            call = update["toolCall"]
            key = call.get("toolCallId") or f"#{call.get('index')}"
            if call.get("rev", 0) <= self.rev.get(key, -1):
                return
            self.rev[key] = call.get("rev", 0)
            if self.status.get(key) == call["status"]:
                return
            self.status[key] = call["status"]
            self._newline()
            line = f"[{call['status']}] {call.get('name') or '?'} {key}"
            if call.get("path"):
                line += f" {call['path']}"
            if call.get("error"):
                line += f" — {call['error']['message']}"
            elif call.get("cancelReason"):
                line += f" — {call['cancelReason']}"
            elif call["status"] == "done" and call.get("result"):
                first = str(call["result"].get("content", "")).splitlines()[:1]
                line += f" — {first[0][:120]}" if first else ""
            self.out.write(line + "\n")
        elif kind == "turn" and update.get("state") == "ended":
            self._newline()
        self.out.flush()

    def approval(self, call: dict[str, Any], option: str) -> None:
        """One line saying how a permission request was answered."""
        self._newline()
        words = {"allow_once": "allowed once", "allow_always": "allowed always"}.get(option, "rejected")
        self.out.write(f"[approval] {call.get('name') or '?'} {call.get('toolCallId') or ''} {words}\n")
        self.out.flush()

    def _newline(self) -> None:
        if self.in_text:
            self.out.write("\n")
            self.in_text = False


async def _answer(options: RunOptions, params: dict[str, Any], err: TextIO) -> dict[str, Any]:
    call = params.get("toolCall", {})
    subject = params.get("subject", {})
    approve = options.approve
    if approve == "ask":
        if not sys.stdin.isatty():
            approve = "no"
        else:
            detail = subject.get("diff") or " ".join(subject.get("argv", [])) or json.dumps(subject.get("arguments"))
            err.write(f"\nAllow {call.get('name')}? {call.get('path') or ''}\n{detail}\n[y]es / [a]lways / [n]o: ")
            err.flush()
            reply = (await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)).strip().lower()
            approve = {"y": "yes", "yes": "yes", "a": "always", "always": "always"}.get(reply, "no")
    if approve == "yes":
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    if approve == "always":
        return {"outcome": {"outcome": "selected", "optionId": "allow_always"}}
    return {"outcome": {"outcome": "selected", "optionId": "reject", "reason": "rejected by --approve no"}}


async def run_turn(options: RunOptions, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run one prompt against a fresh ``toolwire serve``; see the module docstring for exit codes."""
    client = _Client()
    printer = _Printer(out)
    session_id: str | None = None

    turn_over = False

    mirror = CallMirror()  # the calls' full states, rebuilt from the update form

    async def resync() -> None:
        """A piece of argument text was missed: take the session's snapshot as the truth."""
        if session_id is None:
            return
        snapshot = await client.protocol.send_request_async(P.SESSION_SNAPSHOT, {"sessionId": session_id})
        for call in snapshot.get("toolCalls", []):
            mirror.reset(call)

    @client.feature(P.SESSION_UPDATE)
    def on_update(params: Any) -> None:
        if turn_over:  # e.g. a late workspace_change: the turn's output already ended
            return
        update = params.get("update", {})
        if update.get("sessionUpdate") == "tool_call":
            full = mirror.apply(update.get("toolCall", {}), params.get("streamId"))
            if mirror.gaps:
                mirror.gaps.clear()
                asyncio.ensure_future(resync())
            if full is None:
                return  # stale
            update = {**update, "toolCall": full}
        if options.json:  # the params exactly as sent (pieces and all)
            out.write(json.dumps(params, ensure_ascii=False) + "\n")
            out.flush()
        else:
            printer.update(update)

    @client.feature(P.REQUEST_PERMISSION)
    async def on_permission(params: Any) -> dict[str, Any]:
        answer = await _answer(options, params, err)
        if not options.json:
            printer.approval(params.get("toolCall", {}), answer["outcome"].get("optionId", "reject"))
        return answer

    # Its own session: a Ctrl-C at the terminal signals our process group, and the
    # server must live on to cancel the turn cleanly when we tell it to.
    await client.start_io(sys.executable, "-m", "toolwire", "serve", *options.server_args, start_new_session=True)
    proc = client._server
    assert proc is not None and proc.stderr is not None
    stderr_lines: list[str] = []

    async def drain() -> None:
        while line := await proc.stderr.readline():
            stderr_lines.append(line.decode("utf-8", "replace"))
            del stderr_lines[:-40]

    drain_task = asyncio.ensure_future(drain())
    interrupted = 0
    loop = asyncio.get_running_loop()

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted += 1
        if interrupted > 1:
            os._exit(130)
        err.write("\ninterrupted: cancelling the turn (Ctrl-C again to quit now)\n")
        if session_id is not None:
            client.protocol.notify(P.SESSION_CANCEL, {"sessionId": session_id})

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):
        pass

    async def call(method: str, params: dict[str, Any]) -> Any:
        request = asyncio.ensure_future(client.protocol.send_request_async(method, params))
        exited = asyncio.ensure_future(proc.wait())
        done, _ = await asyncio.wait({request, exited}, return_when=asyncio.FIRST_COMPLETED)
        if request in done:
            exited.cancel()
            return request.result()
        request.cancel()
        raise _ServerGone(f"the server exited (code {proc.returncode}) during {method}")

    code = 0
    try:
        root = options.workspace.resolve()
        await call("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                  "initializationOptions": options.settings,
                                  "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]})
        client.protocol.notify("initialized", {})
        new = await call(P.SESSION_NEW, {"cwd": str(root), "model": options.model})
        session_id = new["sessionId"]
        result = await call(P.SESSION_PROMPT, {"sessionId": session_id, "prompt": [{"type": "text", "text": options.prompt}]})
        turn_over = True
        final = {"stopReason": result.get("stopReason"), "usage": result.get("usage")}
        if options.json:
            out.write(json.dumps(final) + "\n")
        else:
            out.write(f"stop reason: {final['stopReason']}\n")
        out.flush()
        if client.protocol_errors:
            err.write("toolwire run: the server broke the protocol: " + "; ".join(client.protocol_errors) + "\n")
            code = 1
        if interrupted:
            code = 130
    except JsonRpcException as exc:
        err.write(f"toolwire run: the server refused the request: {exc.message}\n")
        code = 2 if exc.code == -32602 else 1
    except _ServerGone as exc:
        err.write(f"toolwire run: {exc}\n" + "".join(stderr_lines[-20:]))
        code = 1
    finally:
        try:
            if proc.returncode is None:
                with anyio.move_on_after(5):
                    try:
                        await client.protocol.send_request_async("shutdown", None)
                        client.protocol.notify("exit", None)
                    except Exception as exc:  # the server went away meanwhile: nothing to shut down
                        if proc.returncode not in (None, 0):
                            err.write(f"toolwire run: the server failed while shutting down: {exc}\n")
                            code = code or 1
                with anyio.move_on_after(5):
                    await proc.wait()
            if proc.returncode is None:
                proc.kill()
        finally:
            client._stop_event.set()
            drain_task.cancel()
            for task in client._async_tasks:
                task.cancel()
    return code


class _ServerGone(RuntimeError):
    """The server process exited before answering."""
