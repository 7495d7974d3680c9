"""Facts about the repository around the workspace, cached, and the git runs that use them.

A workspace may be the whole work tree or a folder inside it
(``repo/packages/app``), a linked worktree, or a submodule. What the git
tools need to know about that (the top folder, the git directory, the
workspace's prefix inside the work tree, which filter drivers to switch off)
costs two git processes to learn, so it is kept in a :class:`GitCache`:

* the session owns one cache and clears it when a turn starts, when a
  tree-writing tool finishes and when the workspace watcher reports changes;
* an entry is also dropped as soon as the repository's config files change
  (their size and mtime are compared on every use, without a process).

What is in progress (merge, rebase, cherry-pick, revert, am, bisect) is read
from the files git keeps in the git directory (``MERGE_HEAD``,
``rebase-merge/``…, as git's own ``wt-status.c`` does), never cached. Where
HEAD points is read from ``HEAD`` in the git directory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import anyio

from toolwire.tools.gitrun import GitOutput, filter_settings, run_git
from toolwire.workspace.errors import ToolError, tool_error_in

__all__ = ["RepoFacts", "GitCache", "GitContext", "InProgress", "RepoState", "load_facts", "in_progress", "repo_state",
           "git"]  # fmt: skip


@dataclass(frozen=True, slots=True)
class RepoFacts:
    """What stays true about a workspace's repository while nobody reconfigures it.

    Attributes:
        root: The workspace folder (resolved).
        toplevel: The work tree's top folder.
        git_dir: The git directory of this work tree (``.git``, or
            ``.git/worktrees/<name>`` for a linked worktree).
        common_dir: The directory shared by all worktrees (refs, config).
        prefix: The workspace's folder inside the work tree, POSIX, ending in
            ``/``; ``""`` when the workspace is the top folder.
        filters: ``-c`` settings that switch off the configured filter drivers.
        sparse: ``core.sparseCheckout`` is on (some tracked files are not in
            the work tree on purpose).
        identity: Which of ``user.name`` / ``user.email`` git's config sets.
        signature: Size and mtime of the config files, to notice a change.
    """

    root: Path
    toplevel: Path
    git_dir: Path
    common_dir: Path
    prefix: str
    filters: tuple[str, ...]
    sparse: bool
    signature: tuple[Any, ...]
    identity: frozenset[str] = frozenset()

    def to_workspace(self, repo_path: str) -> str:
        """A repository-root path as the workspace sees it (``../x`` when outside)."""
        if repo_path.startswith(self.prefix):
            return repo_path[len(self.prefix):]
        return os.path.relpath("/" + repo_path, "/" + self.prefix).replace(os.sep, "/")

    def inside(self, repo_path: str) -> bool:
        """True when the repository-root path lies in the workspace."""
        return repo_path.startswith(self.prefix)


def _signature(git_dir: Path, common_dir: Path) -> tuple[Any, ...]:
    out = []
    for path in (common_dir / "config", git_dir / "config.worktree", common_dir / "info" / "sparse-checkout"):
        try:
            st = os.stat(path)
            out.append((st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


async def _config_facts(root: Path, timeout: float) -> tuple[list[str], bool, frozenset[str]]:
    """The filter-blanking settings, whether sparse checkout is on, and which identity
    keys are set (one ``git config``, which runs no filter itself)."""
    listed = await run_git(
        root, ["config", "-z", "--get-regexp", r"^(filter\.|core\.sparsecheckout$|user\.(name|email)$)"],
        read_only=True, timeout=timeout, check=False, filters=(),
    )
    keys, sparse, identity = [], False, set()
    for record in listed.stdout.split(b"\x00"):
        key, _, value = os.fsdecode(record).partition("\n")
        lower = key.lower()
        if lower == "core.sparsecheckout":
            sparse = value.strip().lower() in ("true", "yes", "on", "1", "")
        elif lower in ("user.name", "user.email"):
            identity.add(lower)
        elif key:
            keys.append(key)
    return filter_settings(keys), sparse, frozenset(identity)


async def load_facts(root: Path, timeout: float) -> RepoFacts:
    """Ask git about the repository of ``root`` (two small processes, run side by side).

    Raises:
        ToolError: ``not_a_repository`` when ``root`` is not in a work tree;
            ``git_failed`` / ``timeout`` from the runner.
    """
    found: dict[str, Any] = {}

    async def rev_parse() -> None:
        found["top"] = await run_git(
            root,
            ["rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir", "--git-common-dir",
             "--show-prefix"],
            read_only=True, timeout=timeout, check=False, filters=(),
        )  # fmt: skip

    async def config() -> None:
        found["config"] = await _config_facts(root, timeout)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(rev_parse)
            tg.start_soon(config)
    except ExceptionGroup as group:  # both reads fail alike (no git): report the tool error itself
        raise tool_error_in(group) or group from None
    top: GitOutput = found["top"]
    lines = top.stdout.split(b"\n")
    if top.returncode != 0 or len(lines) < 4:
        if "not a git repository" in top.error or "must be run in a work tree" in top.error or top.returncode == 0:
            raise ToolError("not_a_repository", f"the workspace ({root}) is not inside a git work tree")
        raise ToolError("git_failed", f"git rev-parse failed: {top.error}", {"stderr": top.error})
    toplevel, git_dir, common_dir = (Path(os.fsdecode(p)) for p in lines[:3])
    filters, sparse, identity = found["config"]
    return RepoFacts(
        root=root, toplevel=toplevel, git_dir=git_dir, common_dir=common_dir, prefix=os.fsdecode(lines[3]),
        filters=tuple(filters), sparse=sparse, signature=_signature(git_dir, common_dir), identity=identity,
    )  # fmt: skip


class GitCache:
    """Repository facts by workspace folder, for the git tools of one session.

    Not thread-safe; one event loop. Two tools asking at once may both load
    (the later answer wins), which is harmless.
    """

    def __init__(self) -> None:
        self._facts: dict[Path, RepoFacts] = {}

    def clear(self) -> None:
        """Forget everything (a turn starts, the tree changed, the watcher spoke)."""
        self._facts.clear()

    async def facts(self, root: Path, timeout: float) -> RepoFacts:
        """The facts of ``root``'s repository, from the cache when still valid.

        Raises:
            ToolError: as :func:`load_facts`.
        """
        known = self._facts.get(root)
        if known is not None and known.signature == _signature(known.git_dir, known.common_dir):
            return known
        fresh = await load_facts(root, timeout)
        self._facts[root] = fresh
        return fresh


class GitContext(Protocol):
    """What the git runs here read from a tool's context (a :class:`toolwire.tools.base.ToolContext` is one)."""

    @property
    def root(self) -> Path:
        """The workspace folder (absolute, resolved)."""
        ...

    @property
    def git_timeout(self) -> float:
        """Seconds a git subprocess may run before it is killed."""
        ...

    @property
    def git(self) -> GitCache:
        """The session's cached repository facts."""
        ...


@dataclass(frozen=True, slots=True)
class InProgress:
    """Operations stopped half-way, as the files in the git directory say.

    Attributes:
        merge: ``MERGE_HEAD`` exists (``git merge`` stopped, or is being concluded).
        rebase: ``rebase-merge/`` or ``rebase-apply/`` (not from ``am``) exists.
        am: ``rebase-apply/applying`` exists (``git am`` stopped).
        cherry_pick: ``CHERRY_PICK_HEAD`` exists, or a cherry-pick sequence is open.
        revert: ``REVERT_HEAD`` exists, or a revert sequence is open.
        bisect: ``BISECT_LOG`` exists.
    """

    merge: bool = False
    rebase: bool = False
    am: bool = False
    cherry_pick: bool = False
    revert: bool = False
    bisect: bool = False

    @property
    def names(self) -> list[str]:
        """The operations in progress: ``"merge"``, ``"rebase"``, ``"am"``,
        ``"cherry-pick"``, ``"revert"``, ``"bisect"``."""
        pairs = (("merge", self.merge), ("rebase", self.rebase), ("am", self.am),
                 ("cherry-pick", self.cherry_pick), ("revert", self.revert), ("bisect", self.bisect))  # fmt: skip
        return [name for name, on in pairs if on]

    @property
    def blocking(self) -> list[str]:
        """The operations that a branch switch or an ordinary commit must not cut across (all but bisect)."""
        return [name for name in self.names if name != "bisect"]


def _sequence(git_dir: Path) -> str | None:
    """``"pick"``/``"revert"`` when ``sequencer/todo`` holds a cherry-pick or revert sequence."""
    try:
        with open(git_dir / "sequencer" / "todo", "rb") as fh:
            first = fh.readline().split(b" ", 1)[0]
    except OSError:
        return None
    return {b"pick": "pick", b"p": "pick", b"revert": "revert"}.get(first)


def in_progress(git_dir: Path) -> InProgress:
    """Read what is in progress from ``git_dir`` (no process)."""
    apply = git_dir / "rebase-apply"
    am = (apply / "applying").exists()
    seq = _sequence(git_dir)
    return InProgress(
        merge=(git_dir / "MERGE_HEAD").exists(),
        rebase=(git_dir / "rebase-merge").is_dir() or (apply.is_dir() and not am),
        am=am,
        cherry_pick=(git_dir / "CHERRY_PICK_HEAD").exists() or seq == "pick",
        revert=(git_dir / "REVERT_HEAD").exists() or seq == "revert",
        bisect=(git_dir / "BISECT_LOG").exists(),
    )


@dataclass(slots=True)
class RepoState:
    """Facts plus where HEAD is and what is in progress.

    Attributes:
        facts: The cached :class:`RepoFacts`.
        branch: The current branch (also on an unborn branch), None when detached.
        head: HEAD's commit hash, None on an unborn branch.
        ops: What is in progress.
    """

    facts: RepoFacts
    branch: str | None
    head: str | None
    ops: InProgress

    @property
    def detached(self) -> bool:
        """HEAD points at a commit, not a branch."""
        return self.branch is None

    @property
    def unborn(self) -> bool:
        """The current branch has no commit yet."""
        return self.head is None

    @property
    def merging(self) -> bool:
        """A merge is in progress."""
        return self.ops.merge

    @property
    def rebasing(self) -> bool:
        """A rebase (or am) is in progress."""
        return self.ops.rebase or self.ops.am


async def _head_branch(ctx: GitContext, facts: RepoFacts) -> str | None:
    """The branch HEAD names (read from the ``HEAD`` file; ``symbolic-ref`` for reftable repositories)."""
    try:
        text = (facts.git_dir / "HEAD").read_text("utf-8", "surrogateescape").strip()
    except OSError:
        text = ""
    if text.startswith("ref: ") and not text.endswith("/.invalid"):
        ref = text[5:]
        return ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
    if text and not text.startswith("ref: "):
        return None  # a commit hash: detached
    sym = await git(ctx, ["symbolic-ref", "-q", "HEAD"], read_only=True, check=False, filters=())
    ref = os.fsdecode(sym.stdout.strip())
    return ref.removeprefix("refs/heads/") if sym.returncode == 0 and ref.startswith("refs/heads/") else None


async def repo_state(ctx: GitContext) -> RepoState:
    """Facts (cached), the current branch and HEAD's commit (one ``rev-parse``).

    Raises:
        ToolError: as :func:`load_facts`.
    """
    facts = await ctx.git.facts(ctx.root, ctx.git_timeout)
    branch = await _head_branch(ctx, facts)
    head = await git(ctx, ["rev-parse", "-q", "--verify", "HEAD^{commit}"], read_only=True, check=False, filters=())
    oid = head.text.strip() if head.returncode == 0 else None
    return RepoState(facts=facts, branch=branch, head=oid, ops=in_progress(facts.git_dir))


async def git(ctx: GitContext, args: Sequence[str], *, read_only: bool, check: bool = True,
              config: Sequence[str] = (), filters: Sequence[str] | None = None) -> GitOutput:
    """Run ``git <args>`` in the workspace with the cached facts.

    A read-only run gets the cached filter settings (no extra process) unless
    ``filters`` is given (``()`` for commands that run no filter driver).

    Raises:
        ToolError: as :func:`toolwire.tools.gitrun.run_git`, and as :func:`load_facts`.
    """
    if read_only and filters is None:
        filters = (await ctx.git.facts(ctx.root, ctx.git_timeout)).filters
    return await run_git(ctx.root, args, read_only=read_only, timeout=ctx.git_timeout, config=config, check=check,
                         filters=filters)
