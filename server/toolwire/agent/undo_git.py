"""The git half of undo and redo (:mod:`toolwire.agent.undo`): one recorded git action at a time.

Each action is undone only when the repository is still where the turn left it
(redone only when it is where the undo left it); nothing is guessed:

* ``commit``: HEAD must still be that commit on the same branch; the branch is
  moved back (``git update-ref`` with the expected old value), so the changes
  return to the index and working tree and nothing is lost;
* ``branch_create``: HEAD must still be on that branch; the previous branch is
  checked out again and the new branch is deleted when it still points where it
  was created (otherwise it is kept and the reason says so);
* ``branch_switch``: HEAD must still be on that branch at the same commit;
* ``index``: each entry must still be what the turn left (``git update-index``).

Every action is checked before anything is done (:meth:`GitUndo.plan`); the files
of a commit that stays are not undone either.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from toolwire.agent.checkpoints import GitAction, index_entries
from toolwire.tools.base import ToolContext
from toolwire.tools.gitinfo import repo_state
from toolwire.tools.gitrun import run_git
from toolwire.workspace.errors import ToolError
from toolwire.workspace.names import display_name

__all__ = ["GitUndo"]


class GitUndo:
    """Undoes or redoes the git actions of one turn.

    Args:
        ctx: Root and git timeout.
        turn_id: For the reflog message of moved branches.
        tree_write: Returns a context manager held while git changes the working tree.

    Attributes:
        redo: Redo instead of undo.
        force: Paths whose index entries are restored even if they changed since.
        blocked: Path → why it must stay: it is in a commit that cannot be undone.
    """

    def __init__(self, ctx: ToolContext, turn_id: str,
                 tree_write: Callable[[], AbstractContextManager[Any]] | None = None) -> None:
        self.ctx = ctx
        self.turn_id = turn_id
        self.tree_write = tree_write or nullcontext
        self.redo = False
        self.force: set[str] = set()
        self.blocked: dict[str, str] = {}

    async def _run(self, args: list[str]) -> None:
        # The repository's hooks do not run: undo puts recorded states back (a post-checkout
        # hook run by the switch back wrote files again, leaving the tree not as it was).
        await run_git(self.ctx.root, args, read_only=False, timeout=self.ctx.git_timeout,
                      config=("core.hooksPath=/dev/null",))

    async def _switch(self, branch: str | None, commit: str | None) -> None:
        with self.tree_write():
            if branch is None:
                await self._run(["switch", "-q", "--detach", "--end-of-options", str(commit)])
            elif commit is None:  # a branch with no commits yet
                await self._run(["symbolic-ref", "HEAD", f"refs/heads/{branch}"])
            else:
                await self._run(["switch", "-q", "--no-guess", "--end-of-options", branch])

    def _check(self, a: GitAction, branch: str | None, head: str | None
               ) -> tuple[str, str | None, tuple[str | None, str | None]]:
        """Whether the branch or commit action ``a`` can be undone (redone) with HEAD on
        ``branch`` at ``head``: ``(outcome, reason, (branch, head) after it)``; no I/O."""
        where = f"branch {branch}" if branch else "a detached HEAD"
        if a.action == "commit":
            expect = a.old if self.redo else a.new
            if branch != a.branch:
                return "not_undoable", f"HEAD is now on {where}, not on {a.branch}", (branch, head)
            if head != expect:
                return "not_undoable", (f"{a.branch} moved since (it is at {(head or 'no commit')[:7]}, "
                                        f"not {(expect or 'no commit')[:7]})"), (branch, head)
            return "restored", None, (branch, a.new if self.redo else a.old)
        here, there = (a.previous, a.branch) if self.redo else (a.branch, a.previous)
        here_head = a.old if self.redo else a.new
        if branch != here or (a.action == "branch_switch" and head != here_head):
            return "not_undoable", f"HEAD is now on {where} at {(head or 'no commit')[:7]}", (branch, head)
        return "restored", None, (there, a.new if self.redo else a.old)

    async def act(self, a: GitAction) -> tuple[str, str | None]:
        """Undo (or redo) one action: ``(outcome, reason)`` with outcome ``restored``,
        ``kept`` or ``not_undoable``.

        Raises:
            ToolError: a git command failed (the caller reports it as not undoable).
        """
        if a.action == "index":
            return await self._index(a)
        state = await repo_state(self.ctx)
        outcome, reason, _ = self._check(a, state.branch, state.head)
        if outcome != "restored":
            return outcome, reason
        label = f"turn {self.turn_id}"
        if a.action == "commit":
            expect = a.old if self.redo else a.new
            ref = f"refs/heads/{a.branch}"
            target = a.new if self.redo else a.old
            verb = "redo" if self.redo else "undo"
            if target is None:
                await self._run(["update-ref", "-m", f"toolwire: {verb} {label}", "-d", ref, str(expect)])
            else:
                await self._run(["update-ref", "-m", f"toolwire: {verb} {label}", ref, target, expect or ""])
            return "restored", None
        there = a.branch if self.redo else a.previous
        if self.redo and a.action == "branch_create":
            exists = await run_git(self.ctx.root, ["rev-parse", "-q", "--verify", f"refs/heads/{a.branch}"],
                                   read_only=True, timeout=self.ctx.git_timeout, check=False)
            with self.tree_write():
                await self._run(["switch", "-q", "--no-guess", *([] if exists.returncode == 0 else ["-c"]), str(a.branch)])
            return "restored", None
        await self._switch(there, a.old if not self.redo else a.new)
        if a.action == "branch_create" and not self.redo:
            tip = await run_git(self.ctx.root, ["rev-parse", "-q", "--verify", f"refs/heads/{a.branch}"],
                                read_only=True, timeout=self.ctx.git_timeout, check=False)
            if tip.text.strip() == (a.old or ""):
                await self._run(["update-ref", "-d", f"refs/heads/{a.branch}", tip.text.strip()])
            else:
                return "restored", f"switched back to {there}; branch {a.branch} is kept (it has commits made since)"
        return "restored", None

    async def plan(self, actions: list[GitAction]) -> list[tuple[GitAction, str, str | None]]:
        """Check every action without acting: ``(action, outcome, reason)`` in the order
        they would run (undo: newest first; redo: oldest first).

        Each is decided on the state the earlier ones would leave (a branch the turn
        switched to is left first), simulated from where HEAD is now; index entries
        are read as they are. Undo also notes the files of a commit that would stay
        (:attr:`blocked`): their undo would show as changes against a HEAD that keeps
        them. Git may still refuse a switch when it runs (local changes in the way).
        """
        if not actions:
            return []
        try:
            state = await repo_state(self.ctx)
        except ToolError as exc:
            return [(a, "not_undoable", exc.message) for a in actions]
        branch, head = state.branch, state.head
        index: dict[str, str | None] = {}  # entries the planned index actions would set
        out: list[tuple[GitAction, str, str | None]] = []
        for a in actions if self.redo else list(reversed(actions)):
            if a.action == "index":
                try:
                    outcome, reason = await self._index(a, planned=index)
                except ToolError as exc:
                    outcome, reason = "not_undoable", exc.message
                out.append((a, outcome, reason))
                continue
            outcome, reason, (branch, head) = self._check(a, branch, head)
            if a.action == "commit" and outcome != "restored" and not self.redo:
                await self._block_commit(a, f"HEAD is now on {branch or 'a detached HEAD'}" if branch != a.branch
                                         else f"{a.branch} moved since")
            out.append((a, outcome, reason))
        return out

    async def _block_commit(self, a: GitAction, why: str) -> None:
        args = ["diff", "--name-only", "--relative", "--no-renames", "-z", str(a.old), str(a.new)] if a.old else [
            "ls-tree", "-r", "--name-only", "-z", str(a.new)]
        try:
            out = await run_git(self.ctx.root, args, read_only=True, timeout=self.ctx.git_timeout)
        except ToolError:
            return
        for name in out.stdout.split(b"\x00"):
            if name:
                self.blocked.setdefault(os.fsdecode(name), f"it is in commit {(a.new or '')[:7]}, which stays ({why})")

    async def _index(self, a: GitAction, *, planned: dict[str, str | None] | None = None) -> tuple[str, str | None]:
        """Undo (redo) an ``index`` action; with ``planned`` only check it, the index
        being as the planned actions before it leave it (``planned``: name → entry,
        None for no entry; updated when this one would be done)."""
        dry = planned is not None
        src, dst = (a.before, a.after) if self.redo else (a.after, a.before)
        names = sorted(set(src) | set(dst))
        stuck = [n for n in names if n in self.blocked and n not in self.force]
        if stuck:
            return "not_undoable", f"{', '.join(map(display_name, stuck))}: {self.blocked[stuck[0]]}"
        current: dict[str, str | None] = dict(await index_entries(self.ctx, names)) if names else {}
        if planned:
            current.update({n: e for n, e in planned.items() if n in names})
        changed = [n for n in names if current.get(n) not in (src.get(n), dst.get(n)) and n not in self.force]
        if changed:
            return "kept", f"index entries changed since the turn: {', '.join(map(display_name, changed))}"
        if dry:
            conflicts = [n for n in names if current.get(n) != dst.get(n) and n in dst and dst[n].split()[2] != "0"]
            if conflicts:
                return "not_undoable", f"{display_name(conflicts[0])} had a conflict entry, which cannot be put back"
            assert planned is not None
            planned.update({n: dst.get(n) for n in names})
            return "restored", None
        prefix: str | None = None
        for name in names:
            if current.get(name) == dst.get(name):
                continue
            if name not in dst:
                await self._run(["update-index", "--force-remove", "--", name])
                continue
            mode, oid, stage = dst[name].split()
            if stage != "0":
                return "not_undoable", f"{display_name(name)} had a conflict entry, which cannot be put back"
            if prefix is None:  # --cacheinfo takes a path from the top folder, not the workspace
                shown = await run_git(self.ctx.root, ["rev-parse", "--show-prefix"], read_only=True,
                                      timeout=self.ctx.git_timeout)
                prefix = shown.text.strip()
            await self._run(["update-index", "--add", "--cacheinfo", f"{mode},{oid},{prefix}{name}"])
        return "restored", None
