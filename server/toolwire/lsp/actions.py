"""Inline code actions: ``textDocument/codeAction`` offers them, ``workspace/executeCommand``
``toolwire.runAction`` runs one as a focused turn, in any LSP client.

Offered actions (see protocol.md, "Code actions"):

* on a non-empty selection: "Toolwire: Edit selection…" (``refactor.rewrite``) and
  "Toolwire: Explain" (kind ``""``, shown only when the client does not filter by kind);
* for each diagnostic in ``context.diagnostics`` (from any source): a ``quickfix``
  "Toolwire: Fix '<message>'" (first line, at most :data:`MAX_TITLE` characters).

Running one (:func:`start_action`) answers ``{sessionId, turnId}`` at once and runs
the turn in the background with work-done progress (when the client supports it;
cancelling the progress cancels the turn), edits to open files through
``workspace/applyEdit``, and a closing ``window/showMessage`` that says what changed, which
MCP tools ran (outside the checkpoints: not file changes) and what was not done.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import converters, types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

import toolwire.agent.prompt_blocks as prompt_blocks
from toolwire.agent.host import Hosted, Session, Turn, TurnOutcome
from toolwire.agent.prompt_blocks import LineRange, fence_for
from toolwire.lsp import boot
from toolwire.lsp.bridge import LspApprover, LspSink
from toolwire.lsp.progress import TurnProgressSink, WorkProgress
from toolwire.lsp.action_messages import RunActionArgs
from toolwire.mcp.tool import McpTool
from toolwire.workspace.names import display_name, display_text
from toolwire.workspace.positions import PositionError

if TYPE_CHECKING:
    from toolwire.lsp.boot import ToolwireServer

log = logging.getLogger(__name__)

#: The command every code action carries; KINDS: the code action kinds offered (declared in
#: the server's capabilities). Both are defined by toolwire.lsp.boot, which registers them.
RUN_ACTION, KINDS = boot.RUN_ACTION, boot.CODE_ACTION_KINDS
#: Longest diagnostic message quoted in a quick fix title.
MAX_TITLE = 80
#: Longest assistant answer quoted in the closing message.
MAX_ANSWER = 4000

_TASKS = {
    "edit": "Edit the selected text as the user asks, using the tools; change nothing outside what is needed.",
    "explain": "Explain what the selected text does and anything notable about it. Do not change any file.",
    "fix": "Fix the problem the diagnostic reports, using the tools; change as little as needed.",
}
_NO_INSTRUCTION = "The user gave no instruction: improve it (fix bugs, clarify) without changing its behaviour."


def _kind_wanted(kind: str, only: list[str] | None) -> bool:
    """LSP's ``context.only`` rule: a kind is wanted when it is, or is under, one of ``only``."""
    if not only:
        return True
    return any(kind == o or (o and kind.startswith(o + ".")) for o in only)


def _title_of(message: str) -> str:
    first = message.strip().splitlines()[0] if message.strip() else "problem"
    first = first if len(first) <= MAX_TITLE else first[: MAX_TITLE - 1] + "…"
    return display_text(first)  # a diagnostic may quote code holding bidi controls


def code_actions(params: types.CodeActionParams) -> list[types.CodeAction]:
    """The actions for a ``textDocument/codeAction`` request (pure: no I/O).

    Returns:
        Selection actions for a non-empty range, then one quick fix per diagnostic,
        each filtered by ``context.only``; every action carries ``toolwire.runAction``.
    """
    uri, rng = params.text_document.uri, params.range
    only = [str(k.value if hasattr(k, "value") else k) for k in (params.context.only or [])] or None
    converter = converters.get_converter()
    wire_range = converter.unstructure(rng)
    out: list[types.CodeAction] = []
    if rng.start != rng.end:
        for title, kind, action in (("Toolwire: Edit selection…", types.CodeActionKind.RefactorRewrite, "edit"),
                                    ("Toolwire: Explain", types.CodeActionKind.Empty, "explain")):
            if (kind.value or only is None) and _kind_wanted(kind.value, only):
                args = {"kind": action, "uri": uri, "range": wire_range}
                out.append(types.CodeAction(title=title, kind=kind,
                                            command=types.Command(title=title, command=RUN_ACTION, arguments=[args])))
    if _kind_wanted(types.CodeActionKind.QuickFix.value, only):
        for diagnostic in params.context.diagnostics:
            title = f"Toolwire: Fix '{_title_of(diagnostic.message)}'"
            args = {"kind": "fix", "uri": uri, "range": converter.unstructure(diagnostic.range),
                    "diagnostic": converter.unstructure(diagnostic)}
            out.append(types.CodeAction(title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                                        command=types.Command(title=title, command=RUN_ACTION, arguments=[args])))
    return out


def _severity(diagnostic: dict[str, Any]) -> str:
    return {1: "error", 2: "warning", 3: "information", 4: "hint"}.get(diagnostic.get("severity") or 0, "problem")


def build_prompt(args: RunActionArgs, rel: str, text: str) -> str:
    """The prompt of a code-action turn (its shape is documented in protocol.md).

    Args:
        args: The action.
        rel: The file's path relative to the session's folder (or absolute outside it).
        text: The text of ``args.range`` in the file.
    """
    start, end = _line_range(args).lines()
    lines = f"line {start}" if start == end else f"lines {start}-{end}"
    parts = [f"[Toolwire code action: {args.kind}]", f"File: {rel} ({lines})"]
    if args.diagnostic is not None:
        d = args.diagnostic
        source = f"{d.get('source')}" + (f" {d.get('code')}" if d.get("code") is not None else "") if d.get("source") else ""
        parts.append(f"Diagnostic ({_severity(d)}{', ' + source if source else ''}): {d.get('message', '')}")
    fence = fence_for(text)  # longer than any backtick run: the text cannot close it
    parts += ["Selected text:", f"{fence}\n{text}\n{fence}", f"Task: {_TASKS[args.kind]}"]
    if args.kind == "edit":
        parts.append(f"Instruction: {args.instruction}" if args.instruction else _NO_INSTRUCTION)
    elif args.instruction:
        parts.append(f"The user adds: {args.instruction}")
    return "\n".join(parts)


def _line_range(args: RunActionArgs) -> LineRange:
    return LineRange(args.range.start.line, args.range.start.character, args.range.end.line, args.range.end.character)


def intent(args: RunActionArgs) -> str:
    """What the user asked, as their entry in the conversation shows it (never the template the model
    reads): ``Improve this code``, the edit's instruction, ``Explain this code``, ``Fix: <problem>``."""
    if args.kind == "edit":
        return args.instruction.strip() if args.instruction and args.instruction.strip() else "Improve this code"
    if args.kind == "explain":
        return "Explain this code" + (f": {args.instruction.strip()}" if args.instruction and args.instruction.strip() else "")
    message = str((args.diagnostic or {}).get("message") or "the problem")
    return f"Fix: {_title_of(message)}"


def action_blocks(args: RunActionArgs, text: str) -> list[dict[str, Any]]:
    """The blocks of a code action's prompt as the user gave it (saved with the session, its title
    from the first): the intent, then the selection as an embedded resource with its range."""
    return [{"type": "text", "text": intent(args)},
            {"type": "resource", "resource": {"uri": args.uri, "text": text},
             "range": args.range.model_dump(mode="json", by_alias=True)}]


def selected_text(server: "ToolwireServer", args: RunActionArgs) -> str:
    """The text of ``args.range`` (in the negotiated position encoding) in the open
    buffer, or on disk when the file is not open; ``args.text`` when given."""
    if args.text is not None:
        return args.text
    rng = types.Range(start=types.Position(line=args.range.start.line, character=args.range.start.character),
                      end=types.Position(line=args.range.end.line, character=args.range.end.character))
    buf = server.buffers.get(args.uri)
    # the server's own copy of an open buffer (LSP line rule); else pygls reads the file
    text = buf.text if buf is not None else server.workspace.get_text_document(args.uri).source
    try:
        return server.buffers.slice(text, rng)
    except PositionError as exc:
        raise JsonRpcInvalidParams(f"toolwire.runAction: invalid params: range: {exc}") from None


def folder_for(server: "ToolwireServer", path: Path) -> Path:
    """The workspace folder holding ``path`` (the deepest one), else the root, else its folder."""
    best: Path | None = None
    roots = [to_fs_path(f.uri) for f in server.workspace.folders.values()] + [server.workspace.root_path]
    for root in roots:
        if not root:
            continue
        candidate = Path(root).resolve()
        if path.is_relative_to(candidate) and (best is None or len(candidate.parts) > len(best.parts)):
            best = candidate
    return best or path.parent


def summary(turn: Turn, session: Session, outcome: TurnOutcome, kind: str) -> tuple[types.MessageType, str]:
    """The closing ``window/showMessage``: what changed, which MCP tools ran (``Ran MCP tools:
    git_add from the MCP server git (not undoable)``, unless marked ``readOnlyHint``), what
    failed, and the answer."""
    changed, ran, failed = [], [], []
    for call in turn.calls:
        result = call.result if isinstance(call.result, dict) else {}
        tool = session.registry.get(call.name)
        if call.status.value == "done" and isinstance(tool, McpTool):
            undo = "" if tool.hint("readOnlyHint") is True else " (not undoable)"
            ran.append(f"{tool.original} from the MCP server {tool.server}{undo}")
        elif call.status.value == "done" and tool is not None and not tool.read_only:
            changed.append(str(result.get("content") or call.name).splitlines()[0])
        elif call.status.value in ("errored", "canceled"):
            why = call.error.code if call.error else (call.cancel_reason.value if call.cancel_reason else "")
            failed.append(f"{call.name} {call.status.value}" + (f" ({why})" if why else ""))
    lines = [f"Toolwire ({kind}): " + {"end_turn": "done", "cancelled": "cancelled"}.get(
        outcome.stop_reason, outcome.stop_reason) + (f": {outcome.message}" if outcome.message else "")]
    lines.append("Changed: " + "; ".join(changed) if changed else "No files changed.")
    if ran:
        lines.append("Ran MCP tools: " + "; ".join(ran))
    if failed:
        lines.append("Not done: " + "; ".join(failed))
    answer = ""
    for message in reversed(session.conversation.messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str) and message["content"]:
            answer = message["content"]
            break
    if answer:
        lines.append(answer if len(answer) <= MAX_ANSWER else answer[:MAX_ANSWER] + "…")
    level = {"end_turn": types.MessageType.Info, "cancelled": types.MessageType.Warning}.get(
        outcome.stop_reason, types.MessageType.Error if outcome.stop_reason == "error" else types.MessageType.Warning)
    return level, "\n".join(lines)


async def drive(server: "ToolwireServer", hosted: Hosted, turn: Turn, sink: TurnProgressSink,
                prompt: tuple[str, list[dict[str, Any]], str], title: str, kind: str) -> None:
    """Run a code-action turn to its end: the turn, its progress, the closing message. ``prompt``:
    what the model reads, the blocks the user's request is saved as, and the user's entry.

    The turn starts at once; the progress is created alongside it and reports the
    turn's steps from the moment the client accepts the token (a client that never
    answers ``window/workDoneProgress/create`` gets no progress, and the turn neither
    waits for it nor becomes uncancellable).
    """
    progress = WorkProgress(server, lambda: server.host.cancel_turn(hosted.id))

    async def show_progress() -> None:
        if await progress.begin(title, "starting"):
            sink.attach(progress)

    shown = server.spawn(show_progress())
    outcome = TurnOutcome("cancelled")
    try:
        model_text, blocks, entry = prompt
        outcome = await server.host.finish_turn(hosted, turn, model_text, blocks, shown=entry)  # a cancel answers its outcome
    finally:
        shown.cancel()
        level, text = summary(turn, hosted.session, outcome, kind)
        text = display_text(server.redactor.redact(text), keep="\n\t")  # model and file text, shown as it is
        progress.end(text.splitlines()[0])
        server.window_show_message(types.ShowMessageParams(type=level, message=text))


def start_action(server: "ToolwireServer", hosted: Hosted, args: RunActionArgs, path: Path) -> dict[str, str]:
    """Start the action's turn in the background; ``{sessionId, turnId}``.

    Raises:
        TurnRunning: a turn runs in the session.
        KeptFromModel: the file is kept from the model and ``args.allowExcluded`` is not set.
    """
    session = hosted.session
    try:  # display form: what the user reads is what is there, and the tools take it back
        rel = display_name(path.relative_to(session.root).as_posix())
    except ValueError:
        rel = display_name(str(path))
    text = selected_text(server, args)
    prompt = build_prompt(args, rel, text)
    blocks = action_blocks(args, text)
    shown = prompt_blocks.shown_text(prompt_blocks.parse_blocks(blocks), session.root)
    sink = TurnProgressSink(LspSink(server, session.id, long_tools=None), root=session.root)
    turn = server.host.begin_turn(hosted, sink, LspApprover(server, session.id), blocks, args.allow_excluded)
    title = {"edit": "Toolwire: editing", "explain": "Toolwire: explaining", "fix": "Toolwire: fixing"}[args.kind]
    server.spawn(drive(server, hosted, turn, sink, (prompt, blocks, shown), f"{title} {rel}", args.kind))
    return {"sessionId": session.id, "turnId": turn.id}
