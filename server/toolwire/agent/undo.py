"""Undo and redo a whole turn from its checkpoint, never clobbering later changes.

Rule (the same for undo and redo, with "before" and "after" swapped): a path is
put back only when it is still exactly what the turn left (bytes, permission
bits, link target or absence on disk; the text of an open buffer). A path
changed since (by the user, another session, a later turn) is ``kept`` and
reported with the diff the undo would make; naming it in ``force`` restores it
anyway. Open buffers are restored through the editor (versioned
``workspace/applyEdit``), other files atomically (temporary file, then rename,
with the recorded permission bits). A buffer the turn edited that the editor has
closed since is restored on disk, when the file holds what the turn left
(:meth:`Restorer._closed_buffer`).

Git actions are undone in reverse order after the files (and redone in order
before them), each only when the repository is still where the turn left it
(:mod:`toolwire.agent.undo_git`).

Everything is checked before anything is done (:meth:`Restorer.plan`): when a path
or git action would be ``kept`` or ``not_undoable``, nothing is changed and the
result is ``blocked``, unless ``partial`` asks for the rest anyway. A step that
fails while acting all the same (the editor refuses, git refuses a switch) has what
was done before it put back (:meth:`Restorer._roll_back`): still ``blocked``.

Anything else is ``not_undoable`` with the reason. An item put back is marked
undone, so undoing the same turn again does nothing and says so.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from toolwire.agent.checkpoint_store import CheckpointStore, StoreError
from toolwire.agent.checkpoints import BufferState, FileState, GitAction, PathChange, TurnCheckpoint, probe
from toolwire.agent.undo_files import describe_change
from toolwire.agent.undo_files import same as _same
from toolwire.agent.undo_files import text as _text
from toolwire.agent.undo_files import write_entry as _write_entry
from toolwire.agent.undo_force import forced_index, forced_paths, unmatched_force
from toolwire.agent.undo_git import GitUndo
from toolwire.agent.undo_report import result_message
from toolwire.tools.base import ToolContext
from toolwire.workspace.errors import ToolError
from toolwire.workspace.paths import is_inside
from toolwire.workspace.text import unified_diff

__all__ = ["Restorer", "refresh", "NOT_SAVED"]

log = logging.getLogger(__name__)

#: Why a path's state after the turn is missing from its record (after None).
NOT_SAVED = "was not saved (the server stopped, or the checkpoint store failed, while the tool ran)"


def refresh(record: TurnCheckpoint, store: CheckpointStore) -> None:
    """Take the undone flags saved in the store (another process, ``toolwire undo``, may have changed them)."""
    saved = store.load(record.session_id, record.turn_id)
    if not saved:
        return
    try:
        other = TurnCheckpoint.model_validate(saved)
    except ValueError:
        return
    for rel, change in record.paths.items():
        if rel in other.paths:
            change.undone = other.paths[rel].undone
    if len(other.git) == len(record.git):
        for mine, theirs in zip(record.git, other.git):
            mine.undone = theirs.undone
    record.undone_at = other.undone_at


class Restorer:
    """Undoes or redoes one turn.

    Args:
        record: The turn's checkpoint (its undone flags are updated and saved).
        ctx: Root, open buffers, write listener and git timeout.
        store: The checkpoint storage (contents, and where the record is saved).
        tree_write: Returns a context manager held while git changes the working
            tree (the session's watcher then takes those changes as its own).
    """

    def __init__(self, record: TurnCheckpoint, ctx: ToolContext, store: CheckpointStore,
                 tree_write: Callable[[], AbstractContextManager[Any]] | None = None) -> None:
        self.record = record
        self.ctx = ctx
        self.store = store
        self.redo = False
        self.force: set[str] = set()  # record keys (PathChange.fs_name) to restore even if changed since
        self.unmatched: list[str] = []  # force entries that name no recorded path or index entry
        self.paths: list[dict[str, Any]] = []
        self.git: list[dict[str, Any]] = []
        self.gitundo = GitUndo(ctx, record.turn_id, tree_write)
        self.blocked = self.gitundo.blocked  # path → why: it is in a commit that stays
        self.dry = False  # while planning: decide every outcome, change nothing
        self.rolled_back: bool | None = None  # True: a step failed while acting and what was done was put back

    async def run(self, *, redo: bool = False, force: list[str] | None = None,
                  partial: bool = False) -> dict[str, Any]:
        """Undo (or redo) what is not undone (or is undone) yet, planned first.

        Every path and git action is checked before anything is changed
        (:meth:`plan`). When one would be ``kept`` or ``not_undoable``, nothing is
        changed and the status is ``blocked`` (``paths`` and ``git`` list those
        blockers only), unless ``partial``: then everything else is done and the
        blockers are reported with the rest.

        Args:
            redo: Re-apply an undone turn instead.
            force: Paths (and index paths) to restore even if they changed since, in any
                spelling a tool accepts (see :func:`toolwire.agent.undo_force.forced_paths`).
            partial: Do what can be done even when something is blocked.

        Returns:
            ``{turnId, status, message, paths: [{path, outcome, reason?, diff?}],
            git: [{action, outcome, reason?}], unmatchedForce: [entry], notUndone: [{callId, tool}]}`` with
            status ``undone`` / ``redone`` / ``partial`` / ``blocked`` / ``nothing_to_do``;
            ``unmatchedForce`` lists the ``force`` entries (as given) that name
            no path and no index entry of the turn (the message says so too); ``notUndone`` (undo
            only) the turn's MCP calls, whose effects no undo puts back (the message names them).
        """
        record = self.record
        self.redo, self.force = redo, forced_paths(record, self.ctx.root, force or [])
        self.gitundo.redo, self.gitundo.force = self.redo, forced_index(self.ctx.root, force or []) | self.force
        self.unmatched = unmatched_force(record, self.ctx.root, force or [])
        files = [c for c in record.changes() if c.undone == redo]
        actions = [g for g in record.git if g.undone == redo]
        if not files and not actions:
            return self._result("nothing_to_do")
        paths, git = await self.plan(files, actions)
        if (paths or git) and not partial:
            self.paths, self.git = paths, git
            return self._result("blocked")
        await self._act(files, actions)
        ok = all(p["outcome"] == "restored" for p in self.paths + self.git)
        status = ("redone" if redo else "undone") if ok else "partial"
        if not ok and not partial:  # failed while acting (the editor refused, git refused a switch, I/O)
            status = "blocked" if await self._roll_back(files, actions) else "partial"
        if not redo and (any(c.undone for c in files) or any(g.undone for g in actions)):
            record.undone_at = time.time()
        try:
            self.store.save(record.session_id, record.turn_id, record.dump())
        except OSError as exc:  # the in-memory record is still right; the next save retries
            log.warning("cannot save the record of turn %s after its %s: %s", record.turn_id, "redo" if redo else "undo",
                        exc)
        return self._result(status)

    async def _act(self, files: list[PathChange], actions: list[GitAction]) -> None:
        """Undo (redo) ``files`` and ``actions``: redo does git first, oldest first; undo
        does the files first, then git newest first."""
        if self.redo:
            for action in actions:
                await self._git(action)
        for change in files:
            await self._path(change)
        self._folders()
        if not self.redo:
            for action in reversed(actions):
                await self._git(action)

    async def _roll_back(self, files: list[PathChange], actions: list[GitAction]) -> bool:
        """Something failed while acting although the plan found nothing in the way: put
        back what this run already did (the opposite way, under the same rule), so the
        result is ``blocked`` with nothing changed. Returns False when that failed too
        (the result then reports everything, ``partial``, and the message says so)."""
        done_files = [c for c in files if c.undone != self.redo]
        done_actions = [g for g in actions if g.undone != self.redo]
        failed_paths = [p for p in self.paths if p["outcome"] != "restored"]
        failed_git = [g for g in self.git if g["outcome"] != "restored"]
        back = Restorer(self.record, self.ctx, self.store, self.gitundo.tree_write)
        back.redo = back.gitundo.redo = not self.redo
        await back._act(done_files, done_actions)
        if any(item["outcome"] != "restored" for item in back.paths + back.git):
            self.paths += [p | {"reason": f"{p.get('reason') or p['outcome']}; could not be put back after "
                                f"a later step failed"} for p in back.paths if p["outcome"] != "restored"]
            self.rolled_back = False
            return False
        self.paths, self.git, self.rolled_back = failed_paths, failed_git, True
        return True

    async def plan(self, files: list[PathChange], actions: list[GitAction]
                   ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Check every path and git action without changing anything: the blockers,
        ``(paths, git)`` result items whose outcome is ``kept`` or ``not_undoable``.

        Git actions are decided on the state the ones before them would leave
        (:meth:`GitUndo.plan`), paths on the disk and buffers as they are now. A redo
        that switches branches first changes the files under the paths, so its paths
        are checked only when they are acted on.
        """
        self.dry = True
        try:
            git: list[dict[str, Any]] = []
            for action, outcome, reason in await self.gitundo.plan(actions):
                if outcome != "restored":
                    git.append({"action": action.describe(), "outcome": outcome} | ({"reason": reason} if reason else {}))
            switches = self.redo and any(a.action in ("branch_create", "branch_switch") for a in actions)
            for change in [] if switches else files:
                await self._path(change)
            paths = [p for p in self.paths if p["outcome"] != "restored"]
        finally:
            self.dry, self.paths = False, []
        return paths, git

    # --------------------------------------------------------------- files
    async def _path(self, change: PathChange) -> None:
        rel = change.path  # display form: results are valid Unicode
        try:
            outcome, reason, diff = await self._restore_path(change)
        except (OSError, ToolError, StoreError) as exc:
            outcome, reason, diff = "not_undoable", getattr(exc, "message", None) or str(exc), None
        if outcome == "restored" and not self.dry:
            change.undone = not self.redo
        item: dict[str, Any] = {"path": rel, "outcome": outcome}
        if reason:
            item["reason"] = reason
        if diff is not None:
            item["diff"] = diff
        self.paths.append(item)

    async def _restore_path(self, change: PathChange) -> tuple[str, str | None, str | None]:
        rel, key = change.path, change.fs_name
        src, dst = (change.before, change.after) if self.redo else (change.after, change.before)
        src_buf, dst_buf = (change.before_buffer, change.after_buffer) if self.redo else (change.after_buffer, change.before_buffer)
        forced = key in self.force
        if key in self.blocked and not forced:
            return "not_undoable", self.blocked[key], None
        if dst is None:  # redo of a path whose state after the turn was never saved
            return "not_undoable", f"the state the turn left {NOT_SAVED}", None
        if dst.kind == "unknown" or (src is not None and src.kind == "unknown"):
            return "not_undoable", f"its state was not recorded: {(dst.reason or src.reason)}", None
        if dst.kind != "unknown" and dst.reason:  # only its digest was kept (over the size limit, a full disk)
            return "not_undoable", dst.reason, None
        # The recorded entry exactly, never re-read as a model's spelling (a literal
        # "a\\b.txt", "~x" or '"q"' names itself): only its folders must still be real.
        root = Path(os.path.realpath(self.ctx.root))
        entry = root / key
        if Path(os.path.realpath(entry.parent)) != entry.parent:
            return "not_undoable", "a folder on its path is now a symbolic link", None
        if src is None:  # what the turn left is not known: only a file that is not as it was before is asked about
            src = probe(entry, hash_large=True)[0]
            if not forced and not _same(src, dst):
                return "kept", f"the state the turn left {NOT_SAVED}; name it in force to restore it", None
        disk_todo = not _same(src, dst)
        buffer_todo = src_buf is not None and (dst_buf is None or src_buf.digest != dst_buf.digest)
        doc = self.ctx.documents.get(Path(os.path.realpath(entry)))
        if buffer_todo and doc is None:
            assert src_buf is not None
            return self._closed_buffer(change, entry, (src, dst), (src_buf, dst_buf), forced)
        now, now_data = probe(entry, hash_large=True)
        want = self.store.get(dst.digest) if dst.digest else None
        write = disk_todo and not _same(now, dst)
        if write and not forced:
            if not _same(now, src):
                return "kept", "changed since the turn", describe_change(rel, now_data, want, now.mode, dst.mode)
            if doc is not None and not buffer_todo and doc.text != (_text(now_data) or ""):
                return "kept", "open in the editor with unsaved changes", unified_diff(doc.text, _text(want), rel)
        checked: Any = None
        if buffer_todo:
            assert src_buf is not None
            checked = self._check_buffer(change, doc, src_buf, dst_buf, dst, forced)
            if isinstance(checked, tuple):
                return checked
        if self.dry:
            return "restored", None, None
        if write:
            _write_entry(entry, dst, want, self.ctx.write_listener)
        if buffer_todo and isinstance(checked, str) and not await self.ctx.documents.replace(doc, checked):
            return "not_undoable", "the editor refused the edit (the buffer changed meanwhile)", None
        return "restored", None, None

    def _closed_buffer(self, change: PathChange, entry: Path, disk: tuple[FileState, FileState],
                       buffers: tuple[BufferState, BufferState | None], forced: bool) -> tuple[str, str | None, str | None]:
        """The editor buffer the turn edited is closed now: the file on disk is what is left.

        The disk holds what the turn left when it holds the buffer's text as the turn
        left it (the editor saved it) or the file as the turn left it on disk (the
        buffer was closed without saving); it then goes back to the buffer's text
        before the turn (the file's exact bytes and mode when that was also the
        disk's text). A disk that already holds that text is ``restored`` as it is;
        anything else is ``kept`` with the diff, unless forced.

        Args:
            disk: ``(src, dst)``: the file on disk as the turn left it and as it is to become.
            buffers: ``(src_buf, dst_buf)``: the buffer the same way (``dst_buf`` None:
                it was opened during the turn, so its earlier text is the file's).
        """
        rel = change.path
        src, dst = disk
        src_buf, dst_buf = buffers
        dst_data = self.store.get(dst.digest) if dst.digest else None
        now, now_data = probe(entry, hash_large=True)
        now_text = _text(now_data) if now.kind == "file" else None
        state: FileState = dst
        want = dst_data
        if dst_buf is None:  # opened during the turn: back to the entry as it was on disk
            back = _same(now, dst) or (dst.kind == "file" and now_text is not None and now_text == _text(dst_data))
        else:
            target = self.store.get(dst_buf.digest).decode("utf-8", "surrogatepass")
            back = now_text == target
            if dst.kind != "file" or _text(dst_data) != target:  # the buffer had text of its own before the turn
                bom = now.kind == "file" and now_data is not None and now_data.startswith(b"\xef\xbb\xbf")
                state = FileState(kind="file", mode=now.mode if now.kind == "file" else dst.mode)
                want = (b"\xef\xbb\xbf" if bom else b"") + target.encode("utf-8", "surrogatepass")
        if back:
            return "restored", None, None  # closed without saving what the turn left, or undone by hand
        left = self.store.get(src_buf.digest).decode("utf-8", "surrogatepass")
        if now_text != left and not _same(now, src) and not forced:
            return "kept", "changed since the turn (its editor buffer is closed)", describe_change(
                rel, now_data, want, now.mode, state.mode)
        if now_text == left and not forced and (typed := self._typed(change)):  # saved with the typing
            return "kept", typed, describe_change(rel, now_data, want, now.mode, state.mode)
        if not self.dry:
            _write_entry(entry, state, want, self.ctx.write_listener)
        return "restored", None, None

    def _check_buffer(self, change: PathChange, doc: Any, src_buf: BufferState, dst_buf: BufferState | None,
                      dst: FileState, forced: bool) -> tuple[str, str | None, str | None] | str | None:
        """For the buffer of an open file: the text to put in it, None when it already
        holds it, or an outcome (``kept``, ``not_undoable``) when it must not be touched."""
        rel = change.path
        if dst_buf is not None:
            target: str | None = self.store.get(dst_buf.digest).decode("utf-8", "surrogatepass")
        else:  # the buffer was opened during the turn: back to the file's text
            target = _text(self.store.get(dst.digest)) if dst.digest else ""
            if target is None:
                return "not_undoable", "its earlier content is not text", None
        current = doc.text.encode("utf-8", "surrogatepass")
        if current == target.encode("utf-8", "surrogatepass"):
            return None
        if not forced and hashlib.sha256(current).hexdigest() != src_buf.digest:
            return "kept", "changed in the editor since the turn", unified_diff(doc.text, target, rel)
        if not forced and (typed := self._typed(change)):
            return "kept", typed, unified_diff(doc.text, target, rel)
        return target

    def _typed(self, change: PathChange) -> str | None:
        """Why undo keeps a buffer the user typed into while an unversioned edit of the turn
        landed (:attr:`PathChange.typed_lines`): putting it back would remove that typing."""
        if self.redo or change.typed_lines is None:
            return None
        parts = [str(a) if a == b else f"{a}-{b}" for a, b in change.typed_lines]
        where = ("line " if len(parts) == 1 and "-" not in parts[0] else "lines ") + (", ".join(parts) or "unknown")
        return (f"after the turn's edit the editor buffer held text the turn did not write ({where}; typed while "
                "the edit was on its way); putting the buffer back would remove that too: undo the edit with the "
                "editor's undo, or force it")

    def _folders(self) -> None:
        """Undo: remove the folders the turn created once nothing is left in them (deepest
        first). Redo: make again those it left, empty ones included."""
        record = self.record
        if self.redo:
            root = Path(os.path.realpath(self.ctx.root))
            for folder in record.dirs_left:
                path = root / folder
                try:
                    if not is_inside(Path(os.path.realpath(path)), root):
                        continue  # never through a link out of the workspace
                    path.mkdir(parents=True, exist_ok=True)
                except OSError:
                    pass
            return
        for folder in sorted(record.created_dirs(), key=lambda d: d.count("/"), reverse=True):
            try:
                os.rmdir(self.ctx.root / folder)
            except OSError:
                pass

    # ----------------------------------------------------------------- git
    async def _git(self, action: GitAction) -> None:
        try:
            outcome, reason = await self.gitundo.act(action)
        except ToolError as exc:
            outcome, reason = "not_undoable", exc.message
        if outcome == "restored":
            action.undone = not self.redo
        item: dict[str, Any] = {"action": action.describe(), "outcome": outcome}
        if reason:
            item["reason"] = reason
        self.git.append(item)

    # -------------------------------------------------------------- result
    def _result(self, status: str) -> dict[str, Any]:
        record = self.record
        message = result_message(record, status, self.paths, self.git, redo=self.redo, unmatched=self.unmatched,
                                 rolled_back=self.rolled_back)
        return {"turnId": record.turn_id, "status": status, "message": message, "paths": self.paths, "git": self.git,
                "unmatchedForce": self.unmatched, "notUndone": [] if self.redo else record.not_undone()}
