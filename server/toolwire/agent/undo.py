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

Anything else is ``not_undoable`` with the reason. An item put back is marked
undone, so undoing the same turn again does nothing and says so.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from toolwire.agent.checkpoint_store import CheckpointStore, StoreError
from toolwire.agent.checkpoints import BufferState, FileState, GitAction, PathChange, TurnCheckpoint, probe
from toolwire.agent.undo_git import GitUndo
from toolwire.tools.base import ToolContext
from toolwire.workspace.errors import ToolError
from toolwire.workspace.fs import TEMP_MARKER, keep_metadata
from toolwire.workspace.names import display_name
from toolwire.workspace.paths import is_inside, resolve_path
from toolwire.workspace.text import unified_diff

__all__ = ["Restorer", "refresh"]


def _same(a: FileState, b: FileState) -> bool:
    return a.kind == b.kind and a.digest == b.digest and (a.kind != "file" or a.mode == b.mode)


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def describe_change(rel: str, now: bytes | None, then: bytes | None, now_mode: int | None = None,
                    then_mode: int | None = None) -> str:
    """The diff from what ``rel`` holds ``now`` to what the undo would make it (``then``).

    Text is shown as a unified diff; binary contents and permission changes as one line each.
    """
    out = ""
    if now is not None and then is not None and now_mode is not None and then_mode is not None and now_mode != then_mode:
        out += f"mode {now_mode:o} -> {then_mode:o}\n"
    if now == then:
        return out
    a, b = _text(now), _text(then)
    if (now is None or a is not None) and (then is None or b is not None):
        return out + unified_diff(a, b, rel)
    size = lambda d: "absent" if d is None else f"{len(d)} bytes"  # noqa: E731
    return out + f"Binary file {rel} differs ({size(now)} now, {size(then)} after the undo)\n"


def _write_entry(entry: Path, state: FileState, data: bytes | None, listener: Callable | None) -> None:
    """Make the directory entry ``entry`` hold ``state`` atomically (``data``: its bytes or link target)."""
    if state.kind == "absent":
        if os.path.lexists(entry):
            if listener is not None:
                listener(entry, None)
            os.unlink(entry)
        return
    assert data is not None
    entry.parent.mkdir(parents=True, exist_ok=True)
    temp = entry.parent / f".{entry.name[:80]}{TEMP_MARKER}{secrets.token_hex(6)}.tmp"
    try:
        if state.kind == "symlink":
            os.symlink(os.fsdecode(data), temp)
        else:
            try:
                now = os.lstat(entry)
            except OSError:
                now = None
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
            try:
                if now is not None and stat.S_ISREG(now.st_mode):  # owner, group, xattrs of the file replaced
                    keep_metadata(fd, now, entry)
                os.fchmod(fd, state.mode if state.mode is not None else 0o644)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
        if listener is not None:
            listener(entry, data if state.kind == "file" else None)
        os.replace(temp, entry)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise


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

    async def run(self, *, redo: bool = False, force: list[str] | None = None) -> dict[str, Any]:
        """Undo (or redo) what is not undone (or is undone) yet.

        Args:
            redo: Re-apply an undone turn instead.
            force: Paths (and index paths) to restore even if they changed since, in any
                spelling a tool accepts (see :meth:`_forced`).

        Returns:
            ``{turnId, status, message, paths: [{path, outcome, reason?, diff?}],
            git: [{action, outcome, reason?}], unmatchedForce: [entry]}`` with
            status ``undone`` / ``redone`` / ``partial`` / ``nothing_to_do``;
            ``unmatchedForce`` lists the ``force`` entries (as given) that name
            no path and no index entry of the turn (the message says so too).
        """
        record = self.record
        self.redo, self.force = redo, self._forced(force or [])
        self.gitundo.redo, self.gitundo.force = self.redo, self._forced_git(force or [])
        self.unmatched = self._unmatched(force or [])
        files = [c for c in record.changes() if c.undone == redo]
        actions = [g for g in record.git if g.undone == redo]
        if not files and not actions:
            return self._result("nothing_to_do")
        if redo:
            for action in actions:
                await self._git(action)
        else:
            await self.gitundo.find_blocked(actions)
        for change in files:
            await self._path(change)
        self._folders()
        if not redo:
            for action in reversed(actions):
                await self._git(action)
        if not redo and any(item["outcome"] == "restored" for item in self.paths + self.git):
            record.undone_at = time.time()
        try:
            self.store.save(record.session_id, record.turn_id, record.dump())
        except OSError:
            pass  # the in-memory record is still right; the next save retries
        ok = all(p["outcome"] == "restored" for p in self.paths + self.git)
        return self._result(("redone" if redo else "undone") if ok else "partial")

    def _forced(self, force: list[str]) -> set[str]:
        """The record keys (:attr:`PathChange.fs_name`) that ``force`` names.

        An entry names a recorded path when it is that path as results show it
        (display form) or as the file system spells it; otherwise it is read as
        a tool reads a path argument and names the recorded entry it resolves
        to: the entry itself (a link, its folder resolved) if the turn changed
        that, else the file it leads to. So ``link/a.txt``, ``./x/../a.txt`` or
        git's quoted form of a name force the file the turn really changed.
        """
        keys = {c.fs_name for c in self.record.paths.values()}
        shown = {c.path: c.fs_name for c in self.record.paths.values()}
        root = Path(os.path.realpath(self.ctx.root))
        out: set[str] = set()
        for entry in force:
            if entry in keys or entry in shown:
                out.add(shown.get(entry, entry))
                continue
            try:
                wp = resolve_path(root, entry)
            except ToolError:
                continue
            for candidate in (wp.entry, wp.resolved):
                rel = candidate.relative_to(root).as_posix()
                if rel in keys:
                    out.add(rel)
                    break
        return out

    def _forced_git(self, force: list[str]) -> set[str]:
        """``force`` as index paths: each entry as written and as git tools pass it (``git_paths``)."""
        out = set(force)
        for entry in force:
            try:
                out.add(resolve_path(self.ctx.root, entry).name)
            except ToolError:
                pass
        return out | self.force

    def _unmatched(self, force: list[str]) -> list[str]:
        """The ``force`` entries that name neither a recorded path (:meth:`_forced`) nor
        an index entry of the turn's ``index`` git actions (:meth:`_forced_git`), in order."""
        index_names = {n for g in self.record.git if g.action == "index" for n in (*g.before, *g.after)}
        out: list[str] = []
        for entry in dict.fromkeys(force):
            if self._forced([entry]):
                continue
            names = {entry}
            try:
                names.add(resolve_path(self.ctx.root, entry).name)
            except ToolError:
                pass
            if not names & index_names:
                out.append(entry)
        return out

    # --------------------------------------------------------------- files
    async def _path(self, change: PathChange) -> None:
        rel = change.path  # display form: results are valid Unicode
        try:
            outcome, reason, diff = await self._restore_path(change)
        except (OSError, ToolError, StoreError) as exc:
            outcome, reason, diff = "not_undoable", getattr(exc, "message", None) or str(exc), None
        if outcome == "restored":
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
        assert src is not None
        forced = key in self.force
        if key in self.blocked and not forced:
            return "not_undoable", self.blocked[key], None
        if dst.kind == "unknown" or src.kind == "unknown":
            return "not_undoable", f"its state was not recorded: {(dst.reason or src.reason)}", None
        # The recorded entry exactly, never re-read as a model's spelling (a literal
        # "a\\b.txt", "~x" or '"q"' names itself): only its folders must still be real.
        root = Path(os.path.realpath(self.ctx.root))
        entry = root / key
        if Path(os.path.realpath(entry.parent)) != entry.parent:
            return "not_undoable", "a folder on its path is now a symbolic link", None
        disk_todo = not _same(src, dst)
        buffer_todo = src_buf is not None and (dst_buf is None or src_buf.digest != dst_buf.digest)
        doc = self.ctx.documents.get(Path(os.path.realpath(entry)))
        if buffer_todo and doc is None:
            assert src_buf is not None
            return self._closed_buffer(change, entry, (src, dst), (src_buf, dst_buf), forced)
        now, now_data = probe(entry)
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
        now, now_data = probe(entry)
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
        return (f"text was typed in the editor while the turn edited it ({where}); putting the buffer back "
                "would remove that too: undo the edit with the editor's undo, or force it")

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
        verb = "Redid" if self.redo else "Undid"
        restored = sum(1 for p in self.paths if p["outcome"] == "restored")
        kept = [p["path"] for p in self.paths if p["outcome"] == "kept"]
        if status == "nothing_to_do":
            if not record.changed_anything:
                message = f"Turn {record.turn_id} changed nothing; there is nothing to {'redo' if self.redo else 'undo'}."
            elif self.redo:
                message = f"Turn {record.turn_id} is not undone; there is nothing to redo."
            else:
                message = f"Turn {record.turn_id} is already undone; there is nothing left to undo."
        else:
            parts = [f"{restored} file(s) restored"]
            git_done = sum(1 for g in self.git if g["outcome"] == "restored")
            if self.git:
                parts.append(f"{git_done} of {len(self.git)} git action(s) {'redone' if self.redo else 'undone'}")
            message = f"{verb} {'part of ' if status == 'partial' else ''}turn {record.turn_id}: " + ", ".join(parts) + "."
            if kept:
                message += f" Kept {', '.join(kept)}: changed since the turn (name them in force to overwrite)."
            blocked = [p["path"] for p in self.paths if p["outcome"] == "not_undoable"] + [
                g["action"] for g in self.git if g["outcome"] != "restored"]
            if blocked:
                message += f" Not done: {', '.join(blocked)} (see the reasons)."
        if self.unmatched:
            shown = ", ".join(display_name(e) if e else '""' for e in self.unmatched)
            them = "it" if len(self.unmatched) == 1 else "them"
            message += (f" Force entries that name no path of turn {record.turn_id}: {shown} "
                        f"(nothing was forced for {them}).")
        return {"turnId": record.turn_id, "status": status, "message": message, "paths": self.paths, "git": self.git,
                "unmatchedForce": self.unmatched}
