"""Per-turn checkpoints: what every path a turn changes looked like before and after.

Before a turn's first writing tool runs, and before each later one that touches
a path the turn has not touched yet, the prior state of that path is taken:

* on disk: the bytes and permission bits of a file, the target of a symbolic
  link, or its absence (and which missing parent folders the turn may create);
* in the editor: the buffer text and version, when the file is open.

Right after each writing tool the same is taken again ("after"), so an undo can
tell whether a path is still exactly what the turn left. Git actions are
recorded the same way, around the tool: index entries of the paths ``git_add``,
``git_restore`` and ``git_commit`` (with paths) change (``git ls-files -s``), and
HEAD and the branch around ``git_commit`` and ``git_branch`` (commit made,
branch created and switched to, branch switched). Files the repository's hooks
change during ``git_commit`` are recorded like a file tool's paths, and the index
entries they change as an ``index`` action (:mod:`toolwire.agent.hook_changes`).
Taking a checkpoint only reads the repository: HEAD, the index, the stash and the
reflog are never touched.

The records (what a checkpoint holds, saved as JSON) are
:mod:`toolwire.agent.checkpoint_records`, the readings of a path, a buffer and the index
:mod:`toolwire.agent.checkpoint_probe`, and the check made before a call is approved
(can its prior state be recorded at all?) :mod:`toolwire.agent.recordable`. Contents go to the server's own storage (:mod:`toolwire.agent.checkpoint_store`);
the record of a turn is saved after each writing tool, so it survives a server
restart (``toolwire undo --workspace DIR``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import Any, Final

from toolwire.agent.checkpoint_probe import (MAX_CHECKPOINT_BYTES, Unrecordable, buffer_state, index_entries,
                                             left_state, over_limit, probe, size_text)
from toolwire.agent.checkpoint_records import (BufferState, FileState, GitAction, PathChange, TurnCheckpoint,
                                               TurnUsage)
from toolwire.agent.checkpoint_store import CheckpointStore
from toolwire.agent.hook_changes import HookWatch
from toolwire.agent.recordable import unrecordable
from toolwire.tools.base import Tool, ToolContext, ToolResult
from toolwire.tools.gitinfo import repo_state
from toolwire.tools.gitrun import run_git
from toolwire.workspace.errors import ToolError, tool_error_in
from toolwire.workspace.names import display_name
from toolwire.workspace.paths import resolve_path

log = logging.getLogger(__name__)

__all__ = [
    "FileState", "BufferState", "PathChange", "GitAction", "TurnCheckpoint", "TurnUsage", "Checkpointer",
    "probe", "buffer_state", "index_entries", "MAX_CHECKPOINT_BYTES", "Unrecordable", "size_text", "over_limit",
]  # the records are defined in toolwire.agent.checkpoint_records, the readings in toolwire.agent.checkpoint_probe

#: Tools whose index changes are recorded (``git_commit`` only when it names paths).
_INDEX_TOOLS: Final = ("git_add", "git_restore", "git_commit")
#: Tools around which HEAD and the branch are recorded.
_HEAD_TOOLS: Final = ("git_commit", "git_branch")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b) and not os.path.islink(a)
    except OSError:
        return False


def _typed_lines(result: ToolResult | None) -> list[list[int]] | None:
    """The ``lines`` of a ``stale`` result whose editor edit was applied all the same, else None."""
    data = result.data if result is not None and not result.ok and result.error_code == "stale" else None
    if not isinstance(data, dict) or data.get("applied") is not True:
        return None
    return [list(r) for r in data.get("lines") or [] if isinstance(r, list | tuple)]


class _Step:
    """What :meth:`Checkpointer.before` took for one tool call, for :meth:`Checkpointer.after`."""

    __slots__ = ("paths", "index_paths", "index_before", "head_before", "tool", "args", "tree")

    def __init__(self, tool: Tool, args: Any) -> None:
        self.tool, self.args = tool, args
        self.paths: list[str] = []
        self.index_paths: list[str] | None = None
        self.index_before: dict[str, str] = {}
        self.head_before: Any = None
        self.tree: Any = None  # git_commit with hooks: the working tree before (hook_changes.TreeSnapshot)


class Checkpointer:
    """Takes one turn's checkpoints around its writing tools.

    Args:
        record: The turn's record (filled in place).
        ctx: The session's tool context (root, open buffers, git timeout).
        store: Where contents and the record are saved.

    The scheduler asks :meth:`unrecordable` before a writing tool is approved (a call
    whose prior state cannot be recorded is asked about, marked irreversible), calls
    :meth:`before` right before it runs and :meth:`after` right after it (shielded from
    cancellation), under the call's path locks. :meth:`before` raises :class:`ToolError`
    ``not_undoable`` (nothing recorded, so the tool does not run) when it is ``strict``
    and something cannot be recorded after all (the store failed since the question);
    otherwise a path that cannot be captured is recorded as ``unknown`` (undo then lists
    it as not undoable) and a git read that fails is logged and that action not recorded.

    Args:
        limit: Largest file kept (bytes; the ``checkpointMaxBytes`` setting).
    """

    def __init__(self, record: TurnCheckpoint, ctx: ToolContext, store: CheckpointStore,
                 limit: int = MAX_CHECKPOINT_BYTES) -> None:
        self.record = record
        self.ctx = ctx
        self.store = store
        self.limit = limit
        self._linked: list[tuple[str, bytes]] = []  # contents stored as hard links: (digest, bytes)
        self._hooks = HookWatch(self)

    async def unrecordable(self, tool: Tool, args: Any) -> str | None:
        """Why the prior state of what ``tool`` will change cannot be recorded now, or None.

        Asked before the call is approved, so the question can say so: the store cannot be
        written (every writing tool and git action: the record lives there), or a path the
        call changes and the turn has not recorded yet is over the size limit or cannot be
        read. Paths the tool will refuse (outside the workspace, a folder) are not reasons.
        """
        return await unrecordable(self, tool, args)

    async def before(self, tool: Tool, args: Any, *, strict: bool = False) -> _Step:
        """Take the prior state of every path ``tool`` will change that the turn has not touched yet.

        Args:
            strict: Anything that cannot be recorded (a path over the limit or unreadable,
                the store refusing a content or the record, a git read failing) raises
                ToolError ``not_undoable`` and records nothing: the tool must not run.
        """
        step = _Step(tool, args)
        listed: Exception | None = None
        try:
            step.paths = await self.paths(tool, args)
        except (ToolError, OSError, ValueError) as exc:  # a file tool refuses such paths itself
            log.info("checkpoint: paths of %s not known (%s)", tool.name, exc)
            listed = exc
        taken: dict[str, PathChange] = {}
        try:
            if strict and listed is not None and tool.name == "git_restore":  # git itself failed to list them
                error = tool_error_in(listed)
                raise Unrecordable(f"git could not list the files it restores: {error.message if error else listed}")
            # rename_file moves the file itself (its inode stays in the workspace), so a
            # content linked to it would still be shared once the tool is done, and the copy
            # that unshares it could fail only after the change was made (a full disk): copy it now.
            link = tool.name != "rename_file"
            for rel in step.paths:
                if rel not in self.record.paths and rel not in taken:
                    taken[rel] = self.capture_before(rel, strict=strict, link=link)
            if tool.name in _INDEX_TOOLS and await self._in_repo():
                names = getattr(args, "paths", None)
                if names:
                    step.index_paths = self._rels(names)
                    step.index_before = await self._read(index_entries(self.ctx, step.index_paths), {}, strict)
            if tool.name in _HEAD_TOOLS and getattr(args, "action", None) != "list":
                step.head_before = await self._read(repo_state(self.ctx), None, strict)
            if tool.name == "git_commit" and step.head_before is not None:
                step.tree = await self._read(self._hooks.before(strict), None, strict)
            self.record.paths.update(taken)
            if strict:
                self.save(strict=True)  # the record must be kept before the change is made
        except ToolError:  # git is missing: the tool's own error, nothing recorded
            self._drop(taken)
            raise
        except Unrecordable as exc:
            self._drop(taken)
            raise ToolError("not_undoable", "not run, nothing changed: its checkpoint could not be taken, so "
                            f"it could not be undone. Why: {exc.args[0]}. Tell the user before calling it "
                            "again.") from None
        return step

    def _drop(self, taken: dict[str, PathChange]) -> None:
        """Forget what :meth:`before` took for a tool that will not run."""
        for rel in taken:
            self.record.paths.pop(rel, None)
        self._unshare()  # nothing will replace the files whose contents were linked

    async def after(self, step: _Step, result: ToolResult | None = None) -> None:
        """Take the state the tool left and save the record (call shielded).

        Args:
            step: What :meth:`before` took.
            result: The tool's result (None when it was cancelled): an editor edit that
                landed on text the user changed meanwhile (``stale`` with ``data.applied``)
                marks the path's buffer (:attr:`PathChange.typed_lines`).
        """
        self._unshare(step)
        typed = _typed_lines(result)
        hooked = await self._quiet(self._hooks.after(step), None) if step.tree is not None else None
        staged: set[str] = set()
        for rel in step.paths:
            change = self.record.paths.get(rel)
            if change is None:  # left as it was, and its content could not be kept (_unshare)
                continue
            change.after = left_state(self.ctx.root / rel, self.store, self.limit)
            change.after_buffer = self._quiet_buffer(rel)
            change.undone = False
            if typed is not None and change.after_buffer is not None:
                change.typed_lines = (change.typed_lines or []) + typed
        if step.index_paths is not None:
            after = await self._quiet(index_entries(self.ctx, step.index_paths), None)
            if after is not None:
                names = {n for n in set(step.index_before) | set(after) if step.index_before.get(n) != after.get(n)}
                staged = names
                if names:
                    self.record.git.append(GitAction(
                        action="index", before={n: step.index_before[n] for n in names if n in step.index_before},
                        after={n: after[n] for n in names if n in after}))
        if step.head_before is not None:
            head_after = await self._quiet(repo_state(self.ctx), None)
            if head_after is not None:
                self._note_head(step, step.head_before, head_after)
        if hooked is not None:  # index entries the hooks changed (those the commit's paths changed are above)
            hooked.before = {n: e for n, e in hooked.before.items() if n not in staged}
            hooked.after = {n: e for n, e in hooked.after.items() if n not in staged}
            if hooked.before or hooked.after:
                self.record.git.append(hooked)
        root = self.ctx.root
        self.record.dirs_left = sorted(d for d in self.record.created_dirs() if os.path.isdir(root / d))
        self.save()

    def save(self, *, strict: bool = False) -> None:
        """Save the record (errors are logged: the turn goes on without a saved checkpoint;
        ``strict``: they raise :class:`Unrecordable`)."""
        try:
            self.store.save(self.record.session_id, self.record.turn_id, self.record.dump())
        except OSError as exc:
            if strict:
                raise Unrecordable(f"the checkpoint store cannot be written ({exc.strerror or exc})") from None
            log.warning("cannot save the checkpoint of turn %s: %s", self.record.turn_id, exc)

    # ------------------------------------------------------------ helpers
    def _note_head(self, step: _Step, before: Any, after: Any) -> None:
        if step.tool.name == "git_commit":
            if after.head != before.head and after.branch == before.branch and after.branch:
                self.record.git.append(GitAction(action="commit", branch=after.branch, old=before.head, new=after.head))
        elif after.branch != before.branch or after.head != before.head:
            create = getattr(step.args, "action", None) == "create"
            self.record.git.append(GitAction(
                action="branch_create" if create else "branch_switch", branch=after.branch,
                previous=before.branch, old=before.head, new=after.head))

    def _rels(self, names: list[str]) -> list[str]:
        """Path arguments of a git tool as it passes them to git (``git_paths``: lexical, file-system
        spelling); a name the tool will refuse (outside the workspace, not a valid path) is left out:
        the tool then fails with that error and changes nothing."""
        rels = []
        for name in names:
            try:
                rels.append(resolve_path(self.ctx.root, name).name)
            except (ToolError, OSError, ValueError):
                continue
        return rels

    async def paths(self, tool: Tool, args: Any) -> list[str]:
        """Workspace-relative paths (file-system spelling) whose entries ``tool`` may change:
        each resolved exactly as the tool resolves its arguments."""
        root = Path(os.path.realpath(self.ctx.root))
        if tool.name in ("create_file", "edit_file", "multi_edit"):  # these write through symlinks
            return [resolve_path(root, args.path).resolved.relative_to(root).as_posix()]
        if tool.name in ("delete_file", "rename_file"):  # these act on the entry itself
            names = [args.path] + ([args.new_path] if tool.name == "rename_file" else [])
            return [resolve_path(root, n).entry.relative_to(root).as_posix() for n in names]
        if tool.name == "git_restore":
            if args.staged or not await self._in_repo():
                return []
            out = await run_git(root, ["diff", "--name-only", "--relative", "--no-renames", "-z", "--", *self._rels(args.paths)],
                                read_only=True, timeout=self.ctx.git_timeout)
            return sorted({os.fsdecode(n) for n in out.stdout.split(b"\x00") if n})
        if tool.name.startswith("git_"):
            return []
        out = []
        for name in tool.paths(args):  # another writing tool: the entry and its target
            wp = resolve_path(root, name)
            out += [wp.entry.relative_to(root).as_posix(), wp.resolved.relative_to(root).as_posix()]
        return list(dict.fromkeys(out))

    def capture_before(self, rel: str, state: FileState | None = None, *, strict: bool = False,
                       link: bool = True) -> PathChange:
        """The record of ``rel`` (file-system spelling) before the turn touches it: ``state``
        when the caller already has it (a commit hook's file, taken before the commit),
        else the path as it is now; the open buffer as it is now; the folders it lacks.
        ``strict``: raise :class:`Unrecordable` when the path or its buffer cannot be kept.
        ``link``: False when the tool will not replace the file (it moves it), so its
        content is copied now rather than hard-linked."""
        # A file's content is kept as a hard link where possible (no copy of a large
        # file before the tool writes it); :meth:`after` makes it a copy if the tool
        # left the file in place (so later writes to it cannot change the checkpoint).
        # Never for a file open in the editor: the edit goes to the buffer, and the
        # editor's save (before it answers the edit) may write the file in place,
        # which would change a linked content under the checkpoint.
        if strict:
            shown = display_name(rel)
            try:
                buffer = buffer_state(self.ctx, rel, self.store)[0]
                linked = self._linked if buffer is None and link else None
                state = state or probe(self.ctx.root / rel, self.store, linked, limit=self.limit, strict=True)[0]
            except Unrecordable as exc:
                raise Unrecordable(f"{shown}: {exc.args[0]}") from None
            except OSError as exc:
                raise Unrecordable(f"the checkpoint store cannot be written ({exc.strerror or exc})") from None
        else:
            buffer = self._quiet_buffer(rel)
            if state is None:
                state = self._quiet_probe(rel, self._linked if buffer is None and link else None)
        created: list[str] = []
        if state.kind == "absent":
            parent = (self.ctx.root / rel).parent
            while parent != self.ctx.root and not os.path.lexists(parent):
                created.insert(0, parent.relative_to(self.ctx.root).as_posix())
                parent = parent.parent
        shown = display_name(rel)
        return PathChange(path=shown, name=rel if shown != rel else None, before=state, before_buffer=buffer,
                          created_dirs=created)

    def _unshare(self, step: _Step | None = None) -> None:
        """Copy every before-content still sharing its bytes with a workspace file.

        When the copy fails (a full disk), a path of ``step`` whose file is still the linked
        one was left as it was (the tool failed before replacing it): it is forgotten, as a
        path the turn did not change, and the store's link removed; any other path
        recorded with that content is not undoable."""
        linked, self._linked = self._linked, []
        for digest, data in linked:
            try:
                self.store.unshare(digest, data)
            except OSError as exc:  # cannot copy
                obj = self.store.objects / digest
                for rel in step.paths if step is not None else []:
                    change = self.record.paths.get(rel)
                    if change is not None and change.before.digest == digest and _same_file(self.ctx.root / rel, obj):
                        del self.record.paths[rel]
                for change in self.record.paths.values():
                    if change.before.digest == digest:
                        change.before = FileState(kind="unknown", reason=f"the checkpoint could not be stored: {exc}")
                if all(change.before.digest != digest for change in self.record.paths.values()):
                    with contextlib.suppress(OSError):
                        obj.unlink()  # no record names it: do not keep sharing a workspace file's bytes

    def _quiet_probe(self, rel: str, linked: list[tuple[str, bytes]] | None = None) -> FileState:
        try:
            return probe(self.ctx.root / rel, self.store, linked, limit=self.limit)[0]
        except OSError as exc:  # the store refused (disk full…)
            return FileState(kind="unknown", reason=f"the checkpoint could not be stored: {exc.strerror or exc}")

    def _quiet_buffer(self, rel: str) -> BufferState | None:
        try:
            return buffer_state(self.ctx, rel, self.store)[0]
        except OSError as exc:  # the store refused: the buffer's state is not kept
            log.warning("checkpoint: cannot store the buffer of %s: %s", rel, exc)
            return None

    async def _in_repo(self) -> bool:
        try:
            out = await run_git(self.ctx.root, ["rev-parse", "--is-inside-work-tree"], read_only=True,
                                timeout=self.ctx.git_timeout, check=False)
        except ToolError as exc:  # no git, or too slow: nothing of git to record
            log.info("checkpoint: cannot ask git: %s", exc.message)
            return False
        return out.returncode == 0 and out.text.strip() == "true"

    async def _read(self, coro: Any, default: Any, strict: bool) -> Any:
        """A git read of :meth:`before` (or the commit hooks' tree snapshot, which stores
        contents): as :meth:`_quiet`, or (``strict``) Unrecordable when it fails."""
        if not strict:
            return await self._quiet(coro, default)
        try:
            return await coro
        except Unrecordable:  # it says why itself
            raise
        except Exception as exc:  # noqa: BLE001 - said in the call's error
            error = tool_error_in(exc)
            if error is not None and error.code == "git_missing":  # the git tool cannot run either:
                raise error from None                                # its own error says why
            if error is None and isinstance(exc, OSError):
                raise Unrecordable(f"the checkpoint store cannot be written ({exc.strerror or exc})") from None
            raise Unrecordable(f"git could not be read: {error.message if error else exc}") from None

    async def _quiet(self, coro: Any, default: Any) -> Any:
        try:
            return await coro
        except Exception as exc:  # noqa: BLE001 - a checkpoint never stops the tool
            error = tool_error_in(exc)
            if error is None:
                log.warning("checkpoint: git read failed", exc_info=exc)
            else:
                log.info("checkpoint: git read failed: %s", error.message)
            return default
