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
import shlex
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
from toolwire.lsp import protocol as P
from toolwire.lsp.messages import IRREVERSIBLE_PREFIX
from toolwire.redaction import EXACT_FIELDS, RedactingWriter, shared
from toolwire.rpc.protocol import make_converter
from toolwire.workspace.names import display_text
from toolwire.workspace.shown_paths import call_path


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


#: How many characters of a result's first line a status line shows (then ``…``).
RESULT_LINE_LIMIT = 120

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


class _Printer:
    """Human-readable progress: one line per status change, text as it streams.

    A call whose name has not arrived yet shows ``?`` (in ``toolCalling: "text"``
    mode a block's name arrives with the whole block, at its closing tag); the
    line is printed again, named, when the name arrives while the status stays.
    """

    def __init__(self, out: TextIO, root: Path) -> None:
        self.out = out
        self.root = root
        self.paths: dict[tuple[str, str], str] = {}
        self.status: dict[str, tuple[str, bool]] = {}
        self.rev: dict[str, int] = {}
        self.in_text = False  # the last thing written is text not ending with a newline

    def update(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            text = display_text(update["content"]["text"], keep="\n\t")
            if text:
                self.out.write(text)
                self.in_text = not text.endswith("\n")
        elif kind == "tool_call":
            call = update["toolCall"]
            key = call.get("toolCallId") or f"#{call.get('index')}"
            if call.get("rev", 0) <= self.rev.get(key, -1):
                return
            self.rev[key] = call.get("rev", 0)
            seen = (call["status"], bool(call.get("name")))
            if self.status.get(key) == seen:
                return
            self.status[key] = seen
            self._newline()
            line = f"[{call['status']}] {call.get('name') or '?'} {key}"
            if call.get("path"):
                line += f" {self.shown_path(key, call['path'])}"
            if call.get("error"):
                line += f" — {call['error']['message']}"
            elif call.get("cancelReason"):
                line += f" — {call['cancelReason']}"
            elif call["status"] == "done" and call.get("result"):
                line += first_line(str(call["result"].get("content", "")))
            self.out.write(display_text(line) + "\n")  # the path's display form has nothing to escape
        elif kind == "turn" and update.get("state") == "ended":
            self._newline()
        self.out.flush()

    def shown_path(self, key: str, written: str) -> str:
        """A call's path as the tool resolves it, in display form (resolved once per call:
        a deleted or renamed file keeps the name it was shown with)."""
        found = self.paths.get((key, written))
        if found is None:
            found = self.paths[(key, written)] = call_path(self.root, written).shown
        return found

    def approval(self, call: dict[str, Any], option: str) -> None:
        """One line saying how a permission request was answered."""
        self._newline()
        words = {"allow_once": "allowed once", "allow_always": "allowed always"}.get(option, "rejected")
        line = f"[approval] {call.get('name') or '?'} {call.get('toolCallId') or ''} {words}"
        self.out.write(display_text(line) + "\n")
        self.out.flush()

    def _newline(self) -> None:
        if self.in_text:
            self.out.write("\n")
            self.in_text = False


def first_line(content: str, limit: int = RESULT_LINE_LIMIT) -> str:
    """`` — `` and the first line of a result (cut at ``limit`` characters, then ``…``), or ``""``."""
    first = content.split("\n", 1)[0].rstrip("\r")
    if not first:
        return ""
    return f" — {first[:limit]}…" if len(first) > limit else f" — {first}"


#: Answers the approval prompt accepts; an empty answer is the default, no.
_REPLIES = {"y": "yes", "yes": "yes", "a": "always", "always": "always", "n": "no", "no": "no", "": "no"}


def shown_command(subject: dict[str, Any]) -> str:
    """The git command a permission request is about, as the user would type it.

    The subject's ``argv`` is the hardened command line (``--no-pager``,
    ``--literal-pathspecs``, ``-c key=value`` settings before the subcommand);
    those are dropped and the rest quoted for a POSIX shell (``shlex.join``).
    """
    argv = list(subject.get("argv") or [])
    if not argv:
        return ""
    rest, i = argv[1:], 0
    while i < len(rest):
        if rest[i] == "-c" and i + 1 < len(rest):
            i += 2
        elif rest[i] in ("--no-pager", "--literal-pathspecs", "--no-optional-locks"):
            i += 1
        else:
            break
    return shlex.join(["git", *rest[i:]])


class _Prompt:
    """The ``[y]es / [a]lways / [N]o`` question on the terminal, read without a thread
    (so a Ctrl-C or a withdrawn request never leaves a reader blocked on stdin)."""

    def __init__(self) -> None:
        self.open = False

    async def ask(self, question: str, err: TextIO) -> str:
        loop = asyncio.get_running_loop()
        self.open = True
        try:
            return await self._ask(question, err, loop)
        except asyncio.CancelledError:
            err.write("\n(the server withdrew the question)\n")
            err.flush()
            raise
        finally:
            self.open = False

    async def _ask(self, question: str, err: TextIO, loop: asyncio.AbstractEventLoop) -> str:
        while True:
            err.write(question)
            err.flush()
            line = await self._readline(loop)
            if line is None:  # end of input: the default
                return "no"
            reply = _REPLIES.get(line.strip().lower())
            if reply is not None:
                return reply
            err.write(f"Please answer y (allow once), a (allow always) or n (reject); not {line.strip()[:40]!r}.\n")

    @staticmethod
    async def _readline(loop: asyncio.AbstractEventLoop) -> str | None:
        fd = sys.stdin.fileno()
        done: asyncio.Future[str | None] = loop.create_future()
        buffer = bytearray()

        def readable() -> None:
            chunk = os.read(fd, 4096)
            if not chunk:
                if not done.done():
                    done.set_result(buffer.decode("utf-8", "replace") if buffer else None)
                return
            buffer.extend(chunk)
            if b"\n" in buffer and not done.done():
                done.set_result(buffer.split(b"\n", 1)[0].decode("utf-8", "replace"))

        loop.add_reader(fd, readable)
        try:
            return await done
        finally:
            loop.remove_reader(fd)


async def _answer(options: RunOptions, params: dict[str, Any], err: TextIO, prompt: _Prompt,
                  printer: _Printer) -> dict[str, Any]:
    call = params.get("toolCall", {})
    subject = params.get("subject", {})
    approve = options.approve
    irreversible = subject.get("irreversible")
    warning = f"{IRREVERSIBLE_PREFIX}{irreversible.get('reason')}" if isinstance(irreversible, dict) else None
    if warning is not None and approve == "yes":  # answering by itself: never allow what undo cannot take back
        err.write(display_text(f"toolwire run: {call.get('name')} rejected: {warning} (--approve yes never allows "
                               "such a change; answer it with --approve ask)") + "\n")
        return {"outcome": {"outcome": "selected", "optionId": "reject", "reason": (
            f"rejected by --approve yes: {warning}. Tell the user; they can run it with --approve ask")}}
    if approve == "ask":
        if subject.get("kind") == "git":
            detail = display_text(shown_command(subject))
        elif subject.get("diff"):
            detail = display_text(subject["diff"], keep="\n\t")
        else:
            detail = display_text(json.dumps(subject.get("arguments"), ensure_ascii=False))
        path = printer.shown_path(call.get("toolCallId") or "", call["path"]) if call.get("path") else ""
        header = display_text(f"Allow {call.get('name')}? {path}")
        if warning is not None:
            header = display_text(warning) + "\n" + header
        question = f"\n{header}\n{detail}\n[y]es / [a]lways / [N]o (default: no): "
        approve = await prompt.ask(question, err)
    if approve == "yes":
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
    if approve == "always":
        return {"outcome": {"outcome": "selected", "optionId": "allow_always"}}
    reason = "rejected at the prompt" if options.approve == "ask" else "rejected by --approve no"
    return {"outcome": {"outcome": "selected", "optionId": "reject", "reason": reason}}


def advice(message: str) -> str:
    """What to do about a turn that ended with ``stopReason: "error"``, from its message."""
    low = message.lower()
    # the turn's own messages first: they quote the endpoint's answer (an HTTP 500 over the context window)
    if low.startswith("the model returned an empty answer") and "content filter" in low:
        return "rephrase the prompt, or check the filter settings of the endpoint's deployment"
    if low.startswith("the model returned an empty answer"):
        return "send the prompt again or rephrase it; if the model keeps answering nothing, try another model"
    if low.startswith("the request does not fit the model's context window"):
        return ("start a new session or shorten the prompt, or give the model a larger context and set the "
                "contextWindow setting to it")
    if "http 401" in low or "http 403" in low:
        return ("check the API key: set TOOLWIRE_API_KEY or OPENAI_API_KEY, or the apiKey setting "
                "(--settings '{\"apiKey\": \"…\"}')")
    if "http 404" in low:
        return "check the model name and the endpoint (OPENAI_BASE_URL or the baseUrl setting)"
    if "http 429" in low:
        return "the endpoint is rate-limiting: wait and try again, or raise the modelRetries setting"
    if "http 5" in low:
        return "the endpoint failed on its side: try again later (retries: the modelRetries setting)"
    if "no data from the model" in low or "timed out" in low:
        return "the endpoint stalled: try again, or raise the readTimeout setting for a slow model"
    if "mid-response" in low or "mid-stream" in low or "ended before" in low or "dropped" in low:
        return "the connection to the endpoint dropped mid-response: try again"
    if "refuses tool definitions" in low:
        return "run with --settings '{\"toolCalling\": \"text\"}', or enable tool calling on the endpoint"
    if "empty answer" in low:
        return "send the prompt again or rephrase it; if the model keeps answering nothing, try another model"
    if "context window" in low:
        return ("start a new session or shorten the prompt, or give the model a larger context and set the "
                "contextWindow setting to it")
    if "cannot reach" in low:
        return "check that the endpoint is running and the URL is right (OPENAI_BASE_URL or the baseUrl setting)"
    return "see the server log (--server-log FILE --log-level DEBUG) for details"


async def run_turn(options: RunOptions, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run one prompt against a fresh ``toolwire serve``; see the module docstring for exit codes."""
    redactor = shared()
    redactor.add_settings(options.settings)
    raw_out, out, err = out, RedactingWriter(out, redactor, content=True), RedactingWriter(err, redactor)
    client = _Client()
    printer = _Printer(out, options.workspace)
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
        else:
            printer.update(update)

    prompt = _Prompt()

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
        result = await call(P.SESSION_PROMPT, {"sessionId": session_id, "prompt": [{"type": "text", "text": options.prompt}]})
        turn_over = True
        final = {"stopReason": result.get("stopReason"), "usage": result.get("usage")}
        if result.get("message"):
            final["message"] = result["message"]
        if options.json:
            out.write(json.dumps(final) + "\n")
        else:
            out.write(f"stop reason: {final['stopReason']}\n")
        out.flush()
        if final["stopReason"] == "error":
            message = result.get("message") or "no reason given"
            err.write(f"toolwire run: the turn failed: {display_text(message)}\n  what to do: {advice(message)}\n")
            code = EXIT_CODES["turn_error"]
        elif result.get("message") and final["stopReason"] != "end_turn":
            err.write(f"toolwire run: {final['stopReason']}: {display_text(result['message'])}\n")
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
