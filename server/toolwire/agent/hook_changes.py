"""What the repository's hooks changed in the working tree during a ``git_commit``.

``git_commit`` runs the repository's hooks (``pre-commit``, ``prepare-commit-msg``,
``commit-msg``, ``post-commit``, ``reference-transaction``, ``post-index-change``). A
formatter hook rewrites files and stages them again; other hooks create files. Those
writes are the turn's doing (the turn's commit ran them), so undoing the turn puts
them back too, under the usual rule (only what is still exactly what the turn left):
a user who undoes a turn expects the tree as it was before it, not a tree where the
turn's commit is gone but its hook's reformatting stays. The checkpoint
(:class:`toolwire.agent.checkpoints.Checkpointer`) records them like the paths of a
file tool, and the index entries the hooks changed as an ``index`` git action.

Before the commit (:func:`take_tree`), only when the repository has one of those hooks:

* every file of the workspace that git lists (tracked, and untracked but not
  ignored) is ``lstat``-ed (kind, size, mtime, ctime, inode, mode);
* the bytes of those git does not hold (untracked, or with changes not in the
  index) are stored, up to :data:`HOOK_CAPTURE_BYTES` in all;
* the index entries are read (``git ls-files -s``).

After it (:func:`tree_changes`) the same listing and stats tell which files the hooks
changed, created or removed. The prior state of each is: absent (it was not listed
before and its inode changed after the listing began), the stored bytes, or, for a
tracked file that matched its index entry, the index blob as git checks it out
(``git cat-file --filters``, with filter drivers off as for every read), accepted only
when it has the size stat-ed before. A file whose prior bytes cannot be had is
recorded ``unknown`` with the reason, so undo lists it ``not_undoable`` and says why.

Not seen: ignored files, files outside the workspace folder, and a listing over
git's output cap (8 MiB of names; the commit is then not watched and a warning is
logged). Folders a hook creates are left in place by undo.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from toolwire.agent.checkpoint_owner import CheckpointOwner
from toolwire.agent.checkpoint_probe import MAX_CHECKPOINT_BYTES, Unrecordable, over_limit, probe
from toolwire.agent.checkpoint_records import FileState, GitAction
from toolwire.agent.checkpoint_store import CheckpointStore
from toolwire.tools.base import ToolContext
from toolwire.tools.gitrepo import git
from toolwire.workspace.errors import ToolError
from toolwire.workspace.names import display_name

log = logging.getLogger(__name__)

__all__ = ["HOOK_NAMES", "UNWATCHED_HOOKS", "HOOK_CAPTURE_BYTES", "HookWatch", "TreeSnapshot", "TreeChanges",
           "has_commit_hooks", "hooks_present", "hook_risk", "unwatched_hook_risk", "take_tree", "tree_changes"]

#: Hooks ``git commit`` may run (githooks(5)).
HOOK_NAMES: Final = ("pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "reference-transaction",
                     "post-index-change")
#: Bytes of untracked and changed files stored before a commit with hooks, in all.
HOOK_CAPTURE_BYTES: Final = 64 * 1024 * 1024

_StatKey = tuple[int, int, int, int, int]


def _stat_key(path: Path) -> _StatKey | None:
    """``(mode, size, mtime_ns, ctime_ns, inode)`` of the entry (links not followed), None when absent."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@dataclass(slots=True)
class TreeSnapshot:
    """The workspace's listed files right before a commit.

    Attributes:
        started_ns: ``time.time_ns()`` before the listing (a file whose ctime is
            later was created or changed after it).
        stats: Workspace-relative name (file-system spelling) → stat key.
        index: Name → ``"<mode> <oid> <stage>"`` (``git ls-files -s``).
        dirty: Tracked names whose file differs from the index (by git's stat check).
        saved: Name → its state, with the bytes stored (untracked and dirty files).
        unsaved: Name → why its bytes were not stored.
    """

    started_ns: int
    stats: dict[str, _StatKey | None] = field(default_factory=dict)
    index: dict[str, str] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)
    saved: dict[str, FileState] = field(default_factory=dict)
    unsaved: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class TreeChanges:
    """What the hooks changed.

    Attributes:
        before: Name → the file's state before the commit, for every file changed.
        index_before: Name → index entry before, for every entry that changed.
        index_after: Name → index entry after, likewise (absent: no entry).
    """

    before: dict[str, FileState] = field(default_factory=dict)
    index_before: dict[str, str] = field(default_factory=dict)
    index_after: dict[str, str] = field(default_factory=dict)


#: Hooks git runs for the git tools other than git_commit (githooks(5)); what they change is not watched.
UNWATCHED_HOOKS: Final = {
    "git_branch": ("post-checkout", "reference-transaction", "post-index-change"),  # git switch
    "git_add": ("post-index-change",),
    "git_restore": ("post-index-change",),
}


async def has_commit_hooks(ctx: ToolContext, names: tuple[str, ...] = HOOK_NAMES) -> bool:
    """True when the repository has an executable hook ``git commit`` may run.

    The hooks folder is ``core.hooksPath`` as the repository's configuration sets it
    (relative to the work tree's top, ``~`` expanded), else ``hooks`` in the common git
    directory. (Our read-only git runs override ``core.hooksPath``, so it is read with
    its scope and the command-line value is skipped.)

    Raises:
        ToolError: git failed.
    """
    return bool(await hooks_present(ctx, names))


async def hooks_present(ctx: ToolContext, names: tuple[str, ...]) -> list[str]:
    """Which of the hooks ``names`` the repository has, executable (see :func:`has_commit_hooks`)."""
    facts = await ctx.git.facts(ctx.root, ctx.git_timeout)
    out = await git(ctx, ["config", "--show-scope", "--get-all", "core.hooksPath"], read_only=True, filters=(),
                    check=False)
    folder = facts.common_dir / "hooks"
    for line in out.stdout.split(b"\n"):
        scope, _, value = os.fsdecode(line).partition("\t")
        if value and scope != "command":
            folder = facts.toplevel / os.path.expanduser(value)  # an absolute value replaces the top
    return [name for name in names if os.path.isfile(folder / name) and os.access(folder / name, os.X_OK)]


async def _names(ctx: ToolContext, args: list[str]) -> list[str] | None:
    """NUL-separated names git prints (file-system spelling); None when the output was cut."""
    out = await git(ctx, args, read_only=True)
    if out.truncated:
        return None
    return [os.fsdecode(n) for n in out.stdout.split(b"\x00") if n]


async def _index(ctx: ToolContext) -> dict[str, str] | None:
    records = await _names(ctx, ["ls-files", "-s", "-z"])
    if records is None:
        return None
    entries = {}
    for record in records:
        info, _, name = record.partition("\t")
        entries[name] = info
    return entries


async def _listing(ctx: ToolContext) -> tuple[dict[str, str], list[str]] | None:
    """Index entries and untracked (not ignored) names of the workspace; None when cut."""
    index = await _index(ctx)
    untracked = await _names(ctx, ["ls-files", "-z", "--others", "--exclude-standard"])
    if index is None or untracked is None:
        return None
    return index, untracked


async def take_tree(ctx: ToolContext, store: CheckpointStore, limit: int = MAX_CHECKPOINT_BYTES) -> TreeSnapshot | None:
    """Stat the workspace's listed files and store the bytes git does not hold (see the module docstring).

    Returns:
        The snapshot, or None when the listing was over git's output cap (logged).

    Raises:
        ToolError: git failed. OSError: the store refused a content.
    """
    snap = TreeSnapshot(started_ns=time.time_ns())
    listing = await _listing(ctx)
    if listing is None:
        log.warning("checkpoint: too many files to watch what the commit hooks change")
        return None
    snap.index, untracked = listing
    dirty = await _names(ctx, ["diff-files", "--name-only", "--relative", "-z"])
    snap.dirty = set(dirty or [])
    root = ctx.root
    for name in (*snap.index, *untracked):
        snap.stats[name] = _stat_key(root / name)
    budget = HOOK_CAPTURE_BYTES
    for name in (*untracked, *sorted(snap.dirty)):
        key = snap.stats.get(name)
        if key is None or not (stat.S_ISREG(key[0]) or stat.S_ISLNK(key[0])):
            continue
        why = _unkept(key[1], budget, limit)
        if why is not None:
            snap.unsaved[name] = f"its content before the commit was not kept: {why}"
            continue
        state, _ = probe(root / name, store, limit=limit)
        if state.kind == "unknown":
            snap.unsaved[name] = f"its content before the commit was not kept: {state.reason}"
            continue
        snap.saved[name] = state
        budget -= key[1]
    return snap


def _unkept(size: int, budget: int, limit: int) -> str | None:
    """Why a file of ``size`` bytes a hook might change is not stored before the commit
    (``budget`` bytes left of :data:`HOOK_CAPTURE_BYTES`, ``limit`` = checkpointMaxBytes), or None."""
    if size > limit:
        return over_limit(size, limit)
    if size > budget:
        return f"{size} bytes, over the {HOOK_CAPTURE_BYTES}-byte limit for files a commit hook might change"
    return None


async def unwatched_hook_risk(ctx: ToolContext, tool: str) -> str | None:
    """Why ``tool`` (git_branch create or switch, git_add, git_restore) could now change what
    the turn does not record, or None: the repository has a hook git runs for it
    (:data:`UNWATCHED_HOOKS`), which may write any file, and the checkpoint does not watch it.

    Raises:
        ToolError: git failed.
    """
    found = await hooks_present(ctx, UNWATCHED_HOOKS[tool]) if tool in UNWATCHED_HOOKS else []
    if not found:
        return None
    return f"the repository has a {' and a '.join(found)} hook, which git runs for {tool}, and what it changes is not recorded"


async def hook_risk(ctx: ToolContext, limit: int = MAX_CHECKPOINT_BYTES) -> str | None:
    """Why a commit now could change a file whose prior state the turn cannot record, or None.

    Only a repository with commit hooks (:func:`has_commit_hooks`): a hook may rewrite any
    file, and one git does not hold (untracked, or changed and not staged) is recorded
    only when it can be stored (:func:`take_tree`'s rule, read from metadata only). Asked
    before a ``git_commit`` is approved (:mod:`toolwire.agent.recordable`).

    Raises:
        ToolError: git failed.
    """
    if not await has_commit_hooks(ctx):
        return None
    listing = await _listing(ctx)
    if listing is None:
        return "the repository has commit hooks and too many files to watch what they change"
    index, untracked = listing
    dirty = await _names(ctx, ["diff-files", "--name-only", "--relative", "-z"]) or []
    budget = HOOK_CAPTURE_BYTES
    for name in (*untracked, *sorted(set(dirty))):
        key = _stat_key(ctx.root / name)
        if key is None or not (stat.S_ISREG(key[0]) or stat.S_ISLNK(key[0])):
            continue
        why = _unkept(key[1], budget, limit) if stat.S_ISREG(key[0]) else None
        if why is None and stat.S_ISREG(key[0]):
            try:
                os.close(os.open(ctx.root / name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0)))
            except OSError as exc:
                why = f"cannot read it: {exc.strerror or exc}"
        if why is not None:
            return f"{display_name(name)}: {why}, and a commit hook might change it"
        budget -= key[1]
    return None


async def _blob_state(ctx: ToolContext, store: CheckpointStore, name: str, entry: str, key: _StatKey
                      ) -> FileState:
    """The state of a tracked file that matched its index entry before the commit, from that blob."""
    mode, oid, stage = entry.split()
    if stage != "0":
        return FileState(kind="unknown", reason="it had a conflict entry before the commit; its content was not kept")
    if mode == "120000":  # a symbolic link: the blob is its target
        args = ["cat-file", "blob", oid]
    else:  # --path is read from the top of the work tree (attributes, eol rules)
        prefix = (await ctx.git.facts(ctx.root, ctx.git_timeout)).prefix
        args = ["cat-file", "--filters", f"--path={prefix}{name}", oid]
    try:
        out = await git(ctx, args, read_only=True)
    except ToolError as exc:
        return FileState(kind="unknown", reason=f"its content before the commit could not be read from git: {exc.message}")
    data = out.stdout
    if out.truncated or (mode != "120000" and len(data) != key[1]):
        return FileState(kind="unknown", reason="its content before the commit could not be had exactly "
                                                "(git's checkout of the index blob differs in size)")
    digest = store.put(data)
    if mode == "120000":
        return FileState(kind="symlink", digest=digest)
    return FileState(kind="file", digest=digest, mode=stat.S_IMODE(key[0]))


async def tree_changes(snap: TreeSnapshot, ctx: ToolContext, store: CheckpointStore) -> TreeChanges | None:
    """The files the commit's hooks changed, with their states before it (see the module docstring).

    Returns:
        The changes, or None when the listing after the commit was over git's cap (logged).

    Raises:
        ToolError: git failed. OSError: the store refused a content.
    """
    listing = await _listing(ctx)
    if listing is None:
        log.warning("checkpoint: too many files to see what the commit hooks changed")
        return None
    index_after, untracked_after = listing
    out = TreeChanges()
    root = ctx.root
    for name in dict.fromkeys([*snap.stats, *index_after, *untracked_after]):
        now = _stat_key(root / name)
        listed = name in snap.stats
        then = snap.stats.get(name)
        if now == then:
            continue
        if not listed:
            if now is None or now[3] < snap.started_ns:
                continue  # not listed before (ignored then) and not touched since: not the hooks'
            out.before[name] = FileState(kind="absent")
        elif then is None:
            out.before[name] = FileState(kind="absent")
        elif not (stat.S_ISREG(then[0]) or stat.S_ISLNK(then[0])):
            continue  # a folder (submodule) or a special file: not a checkpointed path
        elif name in snap.saved:
            out.before[name] = snap.saved[name]
        elif name in snap.unsaved:
            out.before[name] = FileState(kind="unknown", reason=snap.unsaved[name])
        elif name in snap.index and name not in snap.dirty:
            out.before[name] = await _blob_state(ctx, store, name, snap.index[name], then)
        else:
            out.before[name] = FileState(kind="unknown", reason="its content before the commit was not kept")
    for name in dict.fromkeys([*snap.index, *index_after]):  # a hook may stage a file it did not change
        if snap.index.get(name) != index_after.get(name):
            if name in snap.index:
                out.index_before[name] = snap.index[name]
            if name in index_after:
                out.index_after[name] = index_after[name]
    return out


class HookWatch:
    """The files a ``git_commit``'s repository hooks change, for a turn's record.

    Used by :class:`toolwire.agent.checkpoints.Checkpointer` around ``git_commit``
    (``owner``: the checkpointer, as :class:`CheckpointOwner`). Never raises: a failure is
    logged and the hooks' changes are then not recorded.
    """

    def __init__(self, owner: CheckpointOwner) -> None:
        self.owner = owner

    async def before(self, strict: bool = False) -> Any:
        """The tree before the commit, or None when there are no hooks (or it cannot be
        taken; ``strict``: then the ToolError or OSError is raised, so the commit does not run)."""
        ctx = self.owner.ctx
        try:
            if not await has_commit_hooks(ctx):
                return None
            snap = await take_tree(ctx, self.owner.store, self.owner.limit)
        except (ToolError, OSError) as exc:
            if strict:
                raise
            log.warning("checkpoint: cannot watch what the commit hooks change: %s", getattr(exc, "message", exc))
            return None
        if strict and snap is not None and snap.unsaved:  # approved as undoable: it must not run unrecorded
            name, why = min(snap.unsaved.items())
            raise Unrecordable(f"{display_name(name)}: {why.removeprefix('its content before the commit was not kept: ')}"
                               ", and a commit hook might change it")
        return snap

    async def after(self, step: Any) -> GitAction | None:
        """Add the paths the hooks changed to the record and to ``step.paths`` (their state
        after is taken with the tool's); returns the index entries they changed, if any."""
        owner = self.owner
        try:
            found = await tree_changes(step.tree, owner.ctx, owner.store)
        except (ToolError, OSError) as exc:
            log.warning("checkpoint: cannot see what the commit hooks changed: %s", getattr(exc, "message", exc))
            return None
        if found is None:
            return None
        for rel, state in sorted(found.before.items()):
            if rel not in owner.record.paths:
                owner.record.paths[rel] = owner.capture_before(rel, state)
            if rel not in step.paths:
                step.paths.append(rel)
        if not (found.index_before or found.index_after):
            return None
        return GitAction(action="index", before=found.index_before, after=found.index_after)
