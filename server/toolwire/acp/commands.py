"""The ACP slash commands ``/undo``, ``/redo``, ``/compact`` and ``/continue``: what is advertised,
how a prompt is read as one, and the agent message that answers it (protocol.md, "Slash commands").

``/undo``, ``/redo`` and ``/compact`` are not turns: they never reach the model and add nothing
to the conversation; the agent hands the first two to :meth:`toolwire.agent.host.SessionHost.undo`,
which applies the rules of ``toolwire/session/undoTurn``, and ``/compact`` to
:meth:`toolwire.agent.host.SessionHost.compact`. ``/continue`` is a turn:
:meth:`toolwire.agent.host.SessionHost.continue_turn` (after a turn that stopped at the
request cap). Syntax::

    /undo [TURN_ID] [partial] [rewind] [force PATH …]
    /redo [TURN_ID] [partial] [force PATH …]
    /compact
    /continue

Words are separated by white space; every word after ``force`` is a path, written as
an undo result lists it: plain, or in git's quoted form between double quotes
(``"my file.txt"``, ``"caf\\351.txt"``), which is kept as written (the tools read it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from toolwire.workspace.names import display_text

__all__ = ["COMMANDS", "Command", "CommandError", "Compact", "Continue", "advertised", "answer_text", "capped_text",
           "parse_command"]

#: name → (description, input hint, usage).
COMMANDS: dict[str, tuple[str, str, str]] = {
    "undo": ("Undo the last turn's changes to files and git (or turn TURN_ID); nothing changed since is "
             "overwritten unless forced. Not sent to the model.",
             "[turn id, e.g. t3] [partial] [rewind] [force PATH …]",
             "/undo [TURN_ID] [partial] [rewind] [force PATH …]"),
    "redo": ("Redo the turn undone most recently (or turn TURN_ID). Not sent to the model.",
             "[turn id, e.g. t3] [partial] [force PATH …]",
             "/redo [TURN_ID] [partial] [force PATH …]"),
    "compact": ("Replace every tool result older than the last turn by a short note, to free context. Not sent "
                "to the model.", "(no arguments)", "/compact"),
    "continue": ("Continue the last turn where it stopped at the model-request cap (maxModelRequests), with the "
                 "same history.", "(no arguments)", "/continue"),
}

#: A turn id as the host makes them (``t1``, ``t2``, …).
TURN_ID = re.compile(r"t[0-9]+")


class CommandError(ValueError):
    """A slash command with an argument it does not take (the message names it and gives the usage)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One ``/undo`` or ``/redo`` as the prompt gave it."""

    redo: bool
    turn_id: str | None = None
    partial: bool = False
    rewind: bool = False
    force: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Compact:
    """``/compact``: the session's older tool results replaced by notes (:meth:`SessionHost.compact`)."""


@dataclass(frozen=True, slots=True)
class Continue:
    """``/continue``: the next turn on the same history (:meth:`SessionHost.continue_turn`)."""


def capped_text(message: str | None) -> str:
    """The agent message after a turn that stopped at the request cap: why, and how to go on."""
    return f"{message or 'the turn reached the model-request cap'}; send /continue to go on with the same history"


def advertised() -> list[AvailableCommand]:
    """The commands of ``available_commands_update``, each with a hint for its arguments."""
    return [AvailableCommand(name=name, description=description,
                             input=AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)))
            for name, (description, hint, _) in COMMANDS.items()]


def parse_command(text: str) -> Command | Compact | Continue | None:
    """The command a prompt's text is, None when it is not a command (a prompt for the model).

    Raises:
        CommandError: an argument the command does not take, a second turn id,
            ``force`` without a path, an unterminated quoted path.
    """
    stripped = text.strip()
    head = stripped.split(None, 1)[0] if stripped else ""
    name = head[1:]
    if not head.startswith("/") or name not in COMMANDS:
        return None
    usage = COMMANDS[name][2]
    if name in ("compact", "continue"):
        if stripped[len(head):].strip():
            raise CommandError(f"{head}: it takes no argument. Usage: {usage}")
        return Compact() if name == "compact" else Continue()
    redo = name == "redo"
    turn_id: str | None = None
    partial = rewind = forcing = False
    force: list[str] = []
    for word in _words(stripped[len(head):], head, usage):
        if forcing:
            force.append(word)
        elif word == "partial":
            partial = True
        elif word == "rewind" and not redo:
            rewind = True
        elif word == "force":
            forcing = True
        elif TURN_ID.fullmatch(word) and turn_id is None:
            turn_id = word
        elif TURN_ID.fullmatch(word):
            raise CommandError(f"{head}: a second turn id {word!r} (after {turn_id!r}); give one. Usage: {usage}")
        elif word == "rewind":
            raise CommandError(f"{head}: rewind: only /undo takes it. Usage: {usage}")
        else:
            raise CommandError(f"{head}: unknown argument '{display_text(word)}'. Usage: {usage}")
    if forcing and not force:
        raise CommandError(f"{head}: force: name the paths to overwrite after it. Usage: {usage}")
    return Command(redo=redo, turn_id=turn_id, partial=partial, rewind=rewind, force=force)


def _words(text: str, head: str, usage: str) -> list[str]:
    """``text`` split at white space; a word opening with ``"`` runs to its closing
    ``"`` (a backslash escapes the next character) and keeps its quotes."""
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start = i
        if text[i] == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            if i >= n:
                raise CommandError(f"{head}: the quoted path '{display_text(text[start:])}' has no closing quote. "
                                   f"Usage: {usage}")
            i += 1
        while i < n and not text[i].isspace():
            i += 1
        words.append(text[start:i])
    return words


def answer_text(result: dict[str, Any]) -> str:
    """The agent message answering a command: the undo result's message, then one line
    per path (and git action) acted on, with its outcome and, when it was not
    restored, why. Shown as text: controls and bidi characters escaped."""
    lines = [str(result.get("message") or "")]
    items = [(entry.get("path"), entry) for entry in result.get("paths") or []]
    items += [(f"git: {entry.get('action')}", entry) for entry in result.get("git") or []]
    if items:
        lines.append("")
    for label, entry in items:
        reason = entry.get("reason")
        because = f" ({reason})" if reason and entry.get("outcome") != "restored" else ""
        lines.append(f"- {label}: {entry.get('outcome')}{because}")
    return display_text("\n".join(lines), keep="\n\t")
