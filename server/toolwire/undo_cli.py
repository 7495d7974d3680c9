"""``toolwire undo``: undo (or redo) a turn from its saved checkpoint, without a server.

Checkpoints are saved in the server's state folder (see
:mod:`toolwire.agent.checkpoint_store`), so a turn can be taken back after the
server that ran it has exited. The rule is the one of
``toolwire/session/undoTurn`` (:mod:`toolwire.agent.undo`): only what is still
exactly what the turn left is restored; the rest is kept and shown.

Every path and git action is checked before anything is changed: when one
would be kept or cannot be undone, nothing is changed (status ``blocked``)
unless ``--partial`` (restore the rest, report the blockers).

Exit codes: 0 the turn was undone/redone (or there was nothing to do); 1 some
path or git action was kept or could not be undone (``blocked``: nothing was
changed; ``partial``: the rest was); 2 bad usage (no such folder, no such turn,
an ambiguous turn id).

Paths, reasons and diffs are printed in display form
(:func:`toolwire.workspace.names.display_text`): control, bidirectional and
invisible characters a file holds show as escapes. ``--json`` is exact JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when the command runs, so other commands start fast
    from toolwire.agent.checkpoint_store import CheckpointStore
    from toolwire.agent.checkpoints import TurnCheckpoint


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``undo`` arguments to ``parser``."""
    parser.add_argument("--workspace", required=True, help="the workspace folder the turn ran in")
    parser.add_argument("--turn", metavar="ID", help="the turn id (t1, t2…); default: the last turn with something to undo")
    parser.add_argument("--session", metavar="ID", help="the session id, when several sessions have that turn id")
    parser.add_argument("--force", metavar="PATH", action="append", default=[],
                        help="restore PATH even though it changed since the turn (repeatable)")
    parser.add_argument("--partial", action="store_true",
                        help="when some path or git action must stay as it is, restore the rest anyway "
                             "(default: change nothing and exit 1)")
    parser.add_argument("--redo", action="store_true", help="re-apply an undone turn instead")
    parser.add_argument("--list", action="store_true", help="list the saved turns of the workspace and exit")
    parser.add_argument("--json", action="store_true", help="print the result object (as undoTurn answers it)")


def _fail(message: str) -> int:
    print(f"toolwire undo: {message}", file=sys.stderr)
    return 2


def _records(store: "CheckpointStore") -> "list[TurnCheckpoint]":
    from toolwire.agent.checkpoints import TurnCheckpoint

    out = []
    for raw in store.records():
        try:
            out.append(TurnCheckpoint.model_validate(raw))
        except ValueError:
            continue
    return out


def _pick(records: "list[TurnCheckpoint]", args: argparse.Namespace) -> "TurnCheckpoint | str | None":
    """The record to act on; a message when the choice is ambiguous or unknown; None when there is none."""
    if args.session:
        records = [r for r in records if r.session_id == args.session]
    if args.turn:
        found = [r for r in records if r.turn_id == args.turn]
        if not found:
            return f"no saved turn {args.turn}" + (f" in session {args.session}" if args.session else "")
        if len({r.session_id for r in found}) > 1:
            sessions = ", ".join(sorted(r.session_id for r in found))
            return f"several sessions have a turn {args.turn} ({sessions}); pass --session"
        return found[-1]
    if args.redo:
        undone = [r for r in records if r.undone_at is not None and (
            any(c.undone for c in r.changes()) or any(g.undone for g in r.git))]
        return max(undone, key=lambda r: r.undone_at or 0.0, default=None)
    return next((r for r in reversed(records) if r.undoable), None) or next(
        (r for r in reversed(records) if r.mcp_calls), None)


def _print_list(records: "list[TurnCheckpoint]") -> None:
    for r in records:
        when = datetime.datetime.fromtimestamp(r.started).isoformat(timespec="seconds")
        state = "undone" if r.undone else ("undoable" if r.undoable else "-")
        files = len(r.changes())
        print(f"{r.session_id} {r.turn_id} {when} {r.stop_reason or 'running'} {state} "
              f"{files} file(s), {len(r.git)} git action(s)" + (f", {len(r.mcp_calls)} MCP call(s)" if r.mcp_calls else ""))


def _print_result(result: dict[str, Any]) -> None:
    from toolwire.workspace.names import display_name, display_text

    print(display_text(result["message"]))
    for item in result["paths"]:
        reason = f" ({item['reason']})" if item.get("reason") else ""
        print(display_text(f"  {item['outcome']}: {item['path']}{reason}"))
        if item.get("diff"):
            print("    " + display_text(item["diff"].rstrip("\n"), keep="\n\t").replace("\n", "\n    "))
    for item in result["git"]:
        reason = f" ({item['reason']})" if item.get("reason") else ""
        print(display_text(f"  {item['outcome']}: {item['action']}{reason}"))
    for entry in result.get("unmatchedForce", []):
        print(f"toolwire undo: --force {display_text(display_name(entry) or chr(34) * 2)} matched no path of turn "
              f"{result['turnId'] or '(none)'}; nothing was forced for it (give a path as printed above)",
              file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Run ``toolwire undo``; returns the exit code (see the module docstring)."""
    from toolwire.agent.checkpoint_store import CheckpointStore
    from toolwire.agent.undo import Restorer
    from toolwire.tools.base import ToolContext

    workspace = Path(args.workspace).expanduser()
    if not workspace.is_dir():
        return _fail(f"--workspace {workspace} is not a folder")
    root = workspace.resolve()
    store = CheckpointStore(root)
    records = _records(store)
    if args.list:
        _print_list(records)
        return 0
    record = _pick(records, args)
    if isinstance(record, str):
        return _fail(record)
    if record is None:
        what = "undone turn to redo" if args.redo else "saved turn with something to undo"
        result: dict[str, Any] = {"turnId": None, "status": "nothing_to_do", "paths": [], "git": [],
                                  "message": f"There is no {what} for {root}.",
                                  "unmatchedForce": list(dict.fromkeys(args.force)), "notUndone": []}
    else:
        restorer = Restorer(record, ToolContext(root=root), store)
        result = asyncio.run(restorer.run(redo=args.redo, force=args.force, partial=args.partial))
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        _print_result(result)
    if result["status"] == "blocked":
        print("toolwire undo: nothing was changed; --partial restores the rest, --force PATH overwrites PATH",
              file=sys.stderr)
    return 1 if result["status"] in ("partial", "blocked") else 0
