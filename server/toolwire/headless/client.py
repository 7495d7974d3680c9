"""The headless client behind ``toolwire run``: a real JSON-RPC peer of ``toolwire serve``.

It starts the server as a subprocess, speaks the real protocol over its stdio
(pygls' JSON-RPC client), rebuilds each tool call from its updates
(:class:`toolwire.headless.mirror.CallMirror`; a missed piece of argument text makes
it take ``toolwire/session/snapshot``), prints every status change as it happens, answers
permission requests per ``--approve``, and turns Ctrl-C into
``toolwire/session/cancel`` (a second Ctrl-C exits at once).

Everything a model (or a file, or the provider) wrote is printed in display
form (:func:`toolwire.workspace.names.display_text`): control, bidirectional
and invisible characters appear as escapes (``\\x1b``, ``\\u202e``), so a
status line, the approval question and its diff show exactly what will happen.
A call's path is the one the tool resolves, in git's quoted form when it holds
such characters (:func:`toolwire.workspace.shown_paths.call_path`), as the
approval subject, the results and the panel show it.
``--json`` lines are exact JSON (its own escaping).

Everything printed is redacted (:mod:`toolwire.redaction`) with the secrets of
``--settings`` and the environment, on top of the server's own redaction: what the
client holds itself (its settings, the server's stderr) never reaches the terminal.

Exit codes (:data:`EXIT_CODES`): 0 the turn ended; 1 the server failed or broke
the protocol; 2 bad usage (rejected params or settings); 3 the turn ended with
``stopReason: "error"`` (its message and advice are printed on stderr); 130
interrupted by Ctrl-C (at an approval prompt: at once).
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
from pygls.protocol import JsonRPCProtocol

from toolwire.headless.mirror import CallMirror
from toolwire.headless.terminal import Printer, Prompt, advice, mcp_detail, mcp_origin, shown_command
from toolwire.lsp import protocol as P
from toolwire.lsp.messages import IRREVERSIBLE_PREFIX, excluded_notice
from toolwire.redaction import EXACT_FIELDS, RedactingWriter, shared
from toolwire.rpc.protocol import make_converter
from toolwire.workspace.names import display_text


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
        continues: How many times a turn that stopped at the request cap (``max_turn_requests``)
            is continued on the same history (``toolwire/session/continue``) before the run ends.
    """

    workspace: Path
    model: str
    prompt: str
    approve: str = "ask"
    json: bool = False
    settings: dict[str, Any] = field(default_factory=dict)
    server_args: list[str] = field(default_factory=list)
    continues: int = 0


#: The stop reason of a turn that reached ``maxModelRequests``, and what ``toolwire run`` advises then.
CAP_STOP = "max_turn_requests"
CAP_ADVICE = ("this run's session ends with it; run the prompt again with --continue N to let a turn that stops "
              "at the cap go on with the same history (up to N times), or with a higher cap, e.g. "
              "--settings '{\"maxModelRequests\": 50}'")

#: ``toolwire run`` exit codes (README, "toolwire run").
EXIT_CODES = {"ok": 0, "server": 1, "usage": 2, "turn_error": 3, "interrupted": 130}


class _ClientProtocol(JsonRPCProtocol):
    """pygls' JSON-RPC client protocol; ``$/cancelRequest`` params stay a plain dict here."""

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if method_name == "$/cancelRequest":
            msg_id = params.get("id") if isinstance(params, dict) else getattr(params, "id", None)
            future = self._request_futures.pop(msg_id, None) if msg_id is not None else None
            if future is not None:
                future.cancel()  # the server withdrew its request: stop asking
            return
        super()._handle_notification(method_name, params)


class _Client(JsonRPCClient):
    def __init__(self) -> None:
        super().__init__(protocol_cls=_ClientProtocol, converter_factory=make_converter)
        self.protocol_errors: list[str] = []

    def report_server_error(self, error: Exception, source: Any) -> None:
        self.protocol_errors.append(f"{type(error).__name__}: {error}")


async def _answer(options: RunOptions, params: dict[str, Any], err: TextIO, prompt: Prompt,
                  printer: Printer) -> dict[str, Any]:
    call = params.get("toolCall", {})
    subject = params.get("subject", {})
    approve = options.approve
    irreversible = subject.get("irreversible")
    warning = f"{IRREVERSIBLE_PREFIX}{irreversible.get('reason')}" if isinstance(irreversible, dict) else None
    kept = excluded_notice(subject)
    # answering by itself: never allow what undo cannot take back, nor show the model a file kept from it
    if (warning is not None or kept is not None) and approve == "yes":
        why, what = (warning, "such a change") if warning is not None else (kept, "a file kept from the model")
        err.write(display_text(f"toolwire run: {call.get('name')} rejected: {why} (--approve yes never allows "
                               f"{what}; answer it with --approve ask)") + "\n")
        return {"outcome": {"outcome": "selected", "optionId": "reject", "reason": (
            f"rejected by --approve yes: {why} Tell the user; they can allow it with --approve ask"
            if warning is None else
            f"rejected by --approve yes: {warning}. Tell the user; they can run it with --approve ask")}}
    if approve == "ask":
        if subject.get("kind") == "git":
            detail = display_text(shown_command(subject), keep="\n")
        elif subject.get("diff"):
            detail = display_text(subject["diff"], keep="\n\t")
        else:
            detail = display_text(json.dumps(subject.get("arguments"), ensure_ascii=False))
        path = printer.shown_path(call.get("toolCallId") or "", call["path"]) if call.get("path") else ""
        header = display_text(f"Allow {call.get('name')}? {path}")
        if subject.get("kind") == "mcp":
            header, detail = display_text(f"Allow {call.get('name')}? {mcp_origin(subject)}"), mcp_detail(subject, detail)
            if subject.get("undo"):
                header = display_text(f"{subject['undo']}.") + "\n" + header
        if warning is not None:
            header = display_text(warning) + "\n" + header
        if kept is not None:
            header = display_text(kept) + "\n" + header
        question = f"\n{header}\n{detail}\n[y]es / [a]lways / [N]o (default: no): "
        approve = await prompt.ask(question, err)
    if approve == "yes":
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    if approve == "always":
        return {"outcome": {"outcome": "selected", "optionId": "allow_always"}}
    reason = "rejected at the prompt" if options.approve == "ask" else "rejected by --approve no"
    return {"outcome": {"outcome": "selected", "optionId": "reject", "reason": reason}}


async def run_turn(options: RunOptions, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run one prompt against a fresh ``toolwire serve``; see the module docstring for exit codes."""
    redactor = shared()
    redactor.add_settings(options.settings)
    raw_out, out, err = out, RedactingWriter(out, redactor, content=True), RedactingWriter(err, redactor)
    client = _Client()
    printer = Printer(out, options.workspace)
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
        if options.json:  # the params exactly as sent (pieces and all), redacted as the server does
            raw_out.write(json.dumps(redactor.redact_data(params, EXACT_FIELDS), ensure_ascii=False) + "\n")
            raw_out.flush()
        elif update.get("sessionUpdate") == "warning":
            printer.flush_text()
            err.write(f"toolwire run: warning: {display_text(str(update.get('message')))}\n")
            err.flush()
        else:
            printer.update(update)

    prompt = Prompt()

    @client.feature("window/showMessage")
    def on_show_message(params: Any) -> None:
        message = params.get("message") if isinstance(params, dict) else None
        if message:
            err.write(f"toolwire run: {display_text(message, keep=chr(10))}\n")
            err.flush()

    @client.feature(P.REQUEST_PERMISSION)
    async def on_permission(params: Any) -> dict[str, Any]:
        answer = await _answer(options, params, err, prompt, printer)
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
        if session_id is not None:
            client.protocol.notify(P.SESSION_CANCEL, {"sessionId": session_id})
        if interrupted > 1 or prompt.open:
            # At the approval prompt (or a second time): quit now. Nothing was
            # approved; the server sees the cancel, then the end of its input.
            err.write("\ninterrupted\n")
            err.flush()
            os._exit(EXIT_CODES["interrupted"])
        err.write("\ninterrupted: cancelling the turn (Ctrl-C again to quit now)\n")

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
        if not options.json:  # the JSON lines carry session_info updates as they come
            printer.rules(new.get("instructions") or [])
        result = await call(P.SESSION_PROMPT, {"sessionId": session_id, "prompt": [{"type": "text", "text": options.prompt}]})
        for number in range(1, options.continues + 1):
            if result.get("stopReason") != CAP_STOP or interrupted:
                break
            if not options.json:
                out.write(f"[continue] {number} of {options.continues}: {display_text(result.get('message') or '')}\n")
                out.flush()
            result = await call(P.SESSION_CONTINUE, {"sessionId": session_id})
        turn_over = True
        final = {"stopReason": result.get("stopReason"), "usage": result.get("usage")}
        if result.get("message"):
            final["message"] = result["message"]
        for key in ("errorCode", "notice"):
            if result.get(key):
                final[key] = result[key]
        if options.json:
            out.write(json.dumps(final) + "\n")
        else:
            out.write(f"stop reason: {final['stopReason']}\n")
        out.flush()
        if final["stopReason"] == "error":
            message = result.get("message") or "no reason given"
            err.write(f"toolwire run: the turn failed: {display_text(message)}\n  what to do: {advice(message, result.get('errorCode'))}\n")
            code = EXIT_CODES["turn_error"]
        elif result.get("message") and final["stopReason"] != "end_turn":
            err.write(f"toolwire run: {final['stopReason']}: {display_text(result['message'])}\n")
            if final["stopReason"] == CAP_STOP:
                err.write(f"  what to do: {CAP_ADVICE}\n")
        if client.protocol_errors:
            err.write("toolwire run: the server broke the protocol: " + "; ".join(client.protocol_errors) + "\n")
            code = 1
        if interrupted:
            code = 130
    except JsonRpcException as exc:
        err.write(f"toolwire run: the server refused the request: {display_text(exc.message)}\n")
        code = 2 if exc.code == -32602 else 1
    except _ServerGone as exc:
        err.write(f"toolwire run: {exc}\n" + display_text("".join(stderr_lines[-20:]), keep="\n\t"))
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
