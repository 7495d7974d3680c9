"""What ``toolwire run`` shows and asks on the terminal.

* :class:`Printer`: one line per status change of a call, the model's text as it
  streams, one line per answered approval, one ``[rules]`` line per project rules file,
  the turn's plan as a checklist each time it changes;
* :class:`Prompt`: the ``[y]es / [a]lways / [N]o`` approval question, read on the
  event loop;
* :func:`advice`: what to do about a turn that ended with ``stopReason: "error"``.

Everything a model (or a file, or the provider) wrote is shown in display form
(:func:`toolwire.workspace.names.display_text`), and a call's path is the one the
tool resolves (:func:`toolwire.workspace.shown_paths.call_path`).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from pathlib import Path
from typing import Any, TextIO

from toolwire.headless.result_notes import count_summary, note_lines
from toolwire.lsp.messages import git_summary, mcp_hints_notice
from toolwire.workspace.names import display_text
from toolwire.workspace.shown_paths import call_path

__all__ = ["Printer", "Prompt", "advice", "first_line", "mcp_detail", "mcp_origin", "shown_command", "size_text",
           "RESULT_LINE_LIMIT"]

#: How many characters of a result's first line a status line shows (then ``…``).
RESULT_LINE_LIMIT = 120


class Printer:
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
        self.rules_shown: set[tuple[str, int, bool]] = set()

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
            notes: list[str] = []
            if call.get("path"):
                line += f" {self.shown_path(key, call['path'])}"
            if call.get("error"):
                line += f" — {call['error']['message']}"
            elif call.get("cancelReason"):
                line += f" — {call['cancelReason']}"
            elif call["status"] == "done" and call.get("result"):
                content, data = str(call["result"].get("content", "")), call["result"].get("data")
                line += first_line(content) + count_summary(data)
                notes = note_lines(content, data)
            self.out.write(display_text(line) + "\n")  # the path's display form has nothing to escape
            for note in notes:  # what a list or search left out, under its line
                self.out.write(f"    {display_text(note)}\n")
        elif kind == "session_info":
            self.rules(update.get("instructions") or [])
        elif kind == "plan":
            self.plan(update.get("entries") or [])
        elif kind == "turn" and update.get("state") == "ended":
            self._newline()
        self.out.flush()

    def rules(self, instructions: list[dict[str, Any]]) -> None:
        """One ``[rules] AGENTS.md (1.2 KB)`` line per project rules file the model is given
        (``session/new``'s ``instructions``, a ``session_info`` update), each file once as long
        as its size stays the same."""
        for entry in instructions:
            key = (str(entry.get("path", "")), int(entry.get("bytes") or 0), bool(entry.get("truncated")))
            if key in self.rules_shown:
                continue
            self.rules_shown.add(key)
            self._newline()
            cut = f", cut to fit {LIMIT_KB} KB" if key[2] else ""
            self.out.write(display_text(f"[rules] {key[0]} ({size_text(key[1])}{cut})") + "\n")
        self.out.flush()

    def plan(self, entries: list[dict[str, Any]]) -> None:
        """The turn's plan (a ``plan`` update): ``[plan] 1 of 3 completed``, then one line per step,
        ``    [x] done``, ``    [>] in progress``, ``    [ ] pending``, `` (high)`` after a high-priority one."""
        self._newline()
        done = sum(1 for entry in entries if entry.get("status") == "completed")
        self.out.write(f"[plan] {done} of {len(entries)} completed\n")
        for entry in entries:
            mark = PLAN_MARKS.get(str(entry.get("status")), " ")
            high = " (high)" if entry.get("priority") == "high" else ""
            self.out.write(f"    [{mark}] {display_text(str(entry.get('content', '')))}{high}\n")
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

    def flush_text(self) -> None:
        """End streamed text with a line break (before a line written elsewhere)."""
        self._newline()
        self.out.flush()

    def _newline(self) -> None:
        if self.in_text:
            self.out.write("\n")
            self.in_text = False


#: A plan step's mark by its status, as ``[plan]`` lines show it.
PLAN_MARKS = {"completed": "x", "in_progress": ">", "pending": " "}

#: The bound on project rules text, as ``[rules]`` lines name it (protocol.md, "Project rules").
LIMIT_KB = 32


def size_text(size: int) -> str:
    """``512 B``, ``1.2 KB`` (1024 bytes a KB, one decimal), ``3.4 MB``."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def first_line(content: str, limit: int = RESULT_LINE_LIMIT) -> str:
    """`` — `` and the first line of a result (cut at ``limit`` characters, then ``…``), or ``""``."""
    first = content.split("\n", 1)[0].rstrip("\r")
    if not first:
        return ""
    return f" — {first[:limit]}…" if len(first) > limit else f" — {first}"


#: Answers the approval prompt accepts; an empty answer is the default, no.
_REPLIES = {"y": "yes", "yes": "yes", "a": "always", "always": "always", "n": "no", "no": "no", "": "no"}


def shown_command(subject: dict[str, Any]) -> str:
    """The git command a permission request is about, as the user would type it, then the files it
    changes and their lines (:func:`toolwire.agent.events.git_summary`).

    That is the subject's ``command``; from a server that sends none, its ``argv`` (the hardened
    command line: ``--no-pager``, ``--literal-pathspecs``, ``-c key=value`` settings before the
    subcommand) without those and quoted for a POSIX shell (``shlex.join``).
    """
    command = subject.get("command")
    if isinstance(command, str) and command:
        files = git_summary(subject)
        return command + (f"\n{files}" if files else "")
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


def mcp_origin(subject: dict[str, Any]) -> str:
    """``(get_current_time from the MCP server time)``: where the tool of an ``mcp`` subject comes from."""
    return f"({subject.get('serverTool')} from the MCP server {subject.get('server')})"


def mcp_detail(subject: dict[str, Any], arguments: str) -> str:
    """The lines under the question about an MCP call: the server's hints in words (``Hints from the
    server, not checked: read-only, closed world.``; none when it gave none), then ``arguments``."""
    hints = mcp_hints_notice(subject)
    return arguments if hints is None else display_text(hints) + "\n" + arguments


class Prompt:
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


def advice(message: str, code: str | None = None) -> str:
    """What to do about a turn that ended with ``stopReason: "error"``, from its ``errorCode`` and message."""
    if code == "no_api_key":
        return ("set the API key: the TOOLWIRE_API_KEY or OPENAI_API_KEY environment variable, or the apiKey "
                "setting (--settings '{\"apiKey\": \"…\"}')")
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
