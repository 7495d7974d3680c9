"""What an undo or redo (:mod:`toolwire.agent.undo`) says: the result's ``message`` for
the user, and the note the session's next model request carries (issue 19: the
history still said the edits landed, so the model's next ``edit_file`` failed
``no_match`` or, worse, matched older text).

What MCP tool calls did is outside the checkpoints: an undo names the turn's MCP calls it
could not undo (:func:`mcp_sentence`), in the result and in the note.

Names are the result's, in display form (:func:`toolwire.workspace.names.display_name`);
in the note for the model a name other than plain letters, digits and ``._/+-`` is
quoted (:func:`toolwire.agent.session.quoted_name`), as in the external-change note,
so a file name cannot read as an instruction of its own.
"""

from __future__ import annotations

import re
from typing import Any, Final

from toolwire.agent.checkpoint_records import GitAction, TurnCheckpoint
from toolwire.agent.session import MAX_NOTED_CHANGES, quoted_name
from toolwire.workspace.names import display_name

__all__ = ["mcp_sentence", "result_message", "model_note"]

#: At most this many blockers are named in a ``blocked`` result's message.
MAX_NAMED_BLOCKERS: Final = 5
#: At most this many MCP calls are named in a message (the result's ``notUndone`` lists them all).
MAX_NAMED_CALLS: Final = 10

_PLAIN = re.compile(r"[A-Za-z0-9._/+-]+")


def result_message(record: TurnCheckpoint, status: str, paths: list[dict[str, Any]], git: list[dict[str, Any]], *,
                   redo: bool, unmatched: list[str], rolled_back: bool | None = None) -> str:
    """The ``message`` of an undo or redo result with ``status``, ``paths`` and ``git``
    (``rolled_back``: a step failed while acting, and what was done was put back (True)
    or could not all be put back (False))."""
    turn = record.turn_id
    verb = "redo" if redo else "undo"
    if status == "nothing_to_do":
        if not record.changed_anything and record.mcp_calls:
            message = f"Turn {turn} changed no files; there is nothing to {verb}."
        elif not record.changed_anything:
            message = f"Turn {turn} changed nothing; there is nothing to {verb}."
        elif redo:
            message = f"Turn {turn} is not undone; there is nothing to redo."
        else:
            message = f"Turn {turn} is already undone; there is nothing left to undo."
    elif status == "blocked":
        items = [f"{p['path']} ({p.get('reason') or p['outcome']})" for p in paths] + [
            f"{g['action']} ({g.get('reason') or g['outcome']})" for g in git]
        shown = "; ".join(items[:MAX_NAMED_BLOCKERS])
        if len(items) > MAX_NAMED_BLOCKERS:
            shown += f"; and {len(items) - MAX_NAMED_BLOCKERS} more"
        kept = any(p["outcome"] == "kept" for p in paths + git)
        failed = " (it failed while the undo ran; what was done before it was put back)" if rolled_back else ""
        message = (f"Nothing was {verb}ne: {len(items)} change(s) of turn {turn} cannot be {verb}ne as they are"
                   f"{failed}: {shown}. Send partial: true to {verb} the rest"
                   + (", or force for the paths to overwrite." if kept else "."))
    else:
        restored = sum(1 for p in paths if p["outcome"] == "restored")
        parts = [f"{restored} file(s) restored"]
        if git:
            done = sum(1 for g in git if g["outcome"] == "restored")
            parts.append(f"{done} of {len(git)} git action(s) {verb}ne")
        message = f"{'Redid' if redo else 'Undid'} {'part of ' if status == 'partial' else ''}turn {turn}: " + ", ".join(parts) + "."
        kept_paths = [p["path"] for p in paths if p["outcome"] == "kept"]
        if kept_paths:
            message += f" Kept {', '.join(kept_paths)}: changed since the turn (name them in force to overwrite)."
        blocked = [p["path"] for p in paths if p["outcome"] == "not_undoable"] + [
            g["action"] for g in git if g["outcome"] != "restored"]
        if blocked:
            message += f" Not done: {', '.join(blocked)} (see the reasons)."
        if rolled_back is False:
            message += f" A step failed while the {verb} ran and what was done before it could not all be put back."
    if record.mcp_calls and not redo:
        message += " " + mcp_sentence(record)
    if unmatched:
        shown = ", ".join(display_name(e) if e else '""' for e in unmatched)
        them = "it" if len(unmatched) == 1 else "them"
        message += f" Force entries that name no path of turn {turn}: {shown} (nothing was forced for {them})."
    return message


def _calls(record: TurnCheckpoint) -> str:
    """``call_3 (mcp__db__insert), call_5 (mcp__db__drop)``: at most :data:`MAX_NAMED_CALLS`, then how many more."""
    calls = record.mcp_calls
    named = ", ".join(f"{c.call_id} ({c.tool})" for c in calls[:MAX_NAMED_CALLS])
    return named + (f" and {len(calls) - MAX_NAMED_CALLS} more" if len(calls) > MAX_NAMED_CALLS else "")


def mcp_sentence(record: TurnCheckpoint) -> str:
    """What an undo of ``record``'s turn says about its MCP calls, e.g. ``Toolwire cannot undo what
    MCP tools do: call_3 (mcp__db__insert) was not undone.`` (the turn has some)."""
    were = "was" if len(record.mcp_calls) == 1 else "were"
    return f"Toolwire cannot undo what MCP tools do: {_calls(record)} {were} not undone."


def _name(shown: str) -> str:
    """A display-form name as the note gives it: git's quoted form (it opens with a
    double quote) as it is, a plain one bare, any other one quoted (:func:`quoted_name`)."""
    if shown.startswith('"'):  # already inert; quoting it again escaped its quotes and escapes
        return shown
    return shown if _PLAIN.fullmatch(shown) else quoted_name(shown)


def _names(shown: list[str]) -> str:
    out = ", ".join(_name(n) for n in shown[:MAX_NOTED_CHANGES])
    return out + (f" and {len(shown) - MAX_NOTED_CHANGES} more" if len(shown) > MAX_NOTED_CHANGES else "")


def _git_done(action: GitAction, redo: bool) -> str:
    """What one git action put back did, as the note tells it."""
    if action.action == "commit":
        sha = (action.new or "")[:7]
        return f"commit {sha} is back on {_name(action.branch or '')}" if redo else f"commit {sha} was removed"
    if action.action in ("branch_create", "branch_switch"):
        if redo:
            return f"HEAD is on branch {_name(action.branch or '')} again"
        back = f"branch {_name(action.previous)}" if action.previous else f"commit {(action.old or '')[:7]}"
        return f"HEAD is back on {back}"
    names = _names(sorted(display_name(n) for n in set(action.before) | set(action.after)))
    return (f"the index entries of {names} are again as the turn left them" if redo
            else f"the index entries of {names} are back to their state before it")


def model_note(record: TurnCheckpoint, result: dict[str, Any], *, redo: bool, rewound: bool = False) -> str:
    """The note for the session's next model request after an undo or redo that
    changed something (``""`` when it changed nothing), e.g. ``Turn t3 was undone by
    the user: a.py, b.py are back to their state before it; commit 1a2b3c4 was
    removed. Read files again before editing.``

    Args:
        record: The turn's checkpoint (for what its git actions were).
        result: The undo or redo result (``status``, ``paths``, ``git`` in the order done).
        redo: It was a redo.
        rewound: The turn was also dropped from the conversation (``rewind``).
    """
    if result["status"] not in ("undone", "redone", "partial"):
        return ""
    done = [p["path"] for p in result["paths"] if p["outcome"] == "restored"]
    left = [p["path"] for p in result["paths"] if p["outcome"] != "restored"]
    described = {a.describe(): a for a in record.git}
    git_done = [_git_done(described[g["action"]], redo) for g in result["git"]
                if g["outcome"] == "restored" and g["action"] in described]
    git_left = [g["action"] for g in result["git"] if g["outcome"] != "restored"]
    if not done and not git_done:
        return ""
    verb = "redone" if redo else "undone"
    parts = []
    if done:
        one = len(done) == 1
        parts.append((f"{_names(done)} is again as the turn left it" if one else f"{_names(done)} are again as the turn left them")
                     if redo else (f"{_names(done)} is back to its state before it" if one
                                   else f"{_names(done)} are back to their state before it"))
    parts += git_done
    if left:
        parts.append(f"{_names(left)} {'was' if len(left) == 1 else 'were'} not {verb} (changed since, or not recorded)")
    parts += [f"{action} was not {verb}" for action in git_left]
    if record.mcp_calls and not redo:
        parts.append(f"what the MCP calls {_calls(record)} did was not undone (Toolwire cannot undo MCP tools)")
    how = f"{'partly ' if result['status'] == 'partial' else ''}{verb} by the user"
    if rewound:
        how += " and removed from this conversation"
    return f"\n\n[Turn {record.turn_id} was {how}: " + "; ".join(parts) + ". Read files again before editing.]"
