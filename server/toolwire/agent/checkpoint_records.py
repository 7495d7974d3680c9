"""The records of a turn's checkpoint: what every path and git action looked like
before the turn and after it (:mod:`toolwire.agent.checkpoints` takes them,
:mod:`toolwire.agent.undo` puts them back).

A :class:`TurnCheckpoint` is saved as JSON in the server's own storage
(:mod:`toolwire.agent.checkpoint_store`) after every writing tool, through
:meth:`TurnCheckpoint.dump`, and read back with ``TurnCheckpoint.model_validate``.
Names are kept exactly, including names that are not UTF-8 (lone surrogates, as
``os.fsdecode`` gives them); what reaches a client is in display form.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from toolwire.workspace.names import display_name, needs_quoting

__all__ = ["FileState", "BufferState", "PathChange", "GitAction", "McpCall", "TurnUsage", "TurnCheckpoint"]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class FileState(_Model):
    """A path on disk at one moment.

    Attributes:
        kind: ``absent``, ``file``, ``symlink``, or ``unknown`` (a folder, a
            device, a file over :data:`toolwire.agent.checkpoints.MAX_CHECKPOINT_BYTES`, unreadable).
        digest: SHA-256 of the bytes (file) or of the link target (symlink).
        mode: Permission bits of a file (``stat.S_IMODE``).
        reason: Why the state is ``unknown``; for a ``file``, why only its digest was
            kept (over the size limit: undo can tell the file is still exactly this,
            redo cannot write it back).
    """

    kind: Literal["absent", "file", "symlink", "unknown"]
    digest: str | None = None
    mode: int | None = None
    reason: str | None = None


class BufferState(_Model):
    """An open editor buffer: SHA-256 of its text (UTF-8) and its LSP version."""

    digest: str
    version: int


class PathChange(_Model):
    """One path a turn touched: its state before the turn's first write and after its last.

    The path is the directory entry the tool really changed, never the spelling
    the model wrote: for file writes the file with every symlink followed (the
    tools write through links), for deletes and renames the entry itself (its
    folder resolved); ``.``/``..``, ``\\`` separators, another Unicode form of
    an existing name or git's quoted form are read as the tools read them
    (:func:`toolwire.workspace.paths.resolve_path`).

    Attributes:
        path: That entry relative to the workspace folder, in display form
            (valid Unicode: git's quoted form for a name that is not UTF-8 or
            holds control or invisible characters; what results show and what
            ``force`` may name).
        name: The same path as the file system spells it (``os.fsdecode`` of
            its bytes), only when it differs from ``path``.
        created_dirs: Parent folders that did not exist before (outermost first).
        undone: True once an undo restored it (a redo sets it back to False).
        typed_lines: Set when an edit of the open buffer, sent without a version (a client
            without ``documentChanges``), landed on text the user changed meanwhile (the
            call ended ``stale`` with ``data.applied``): the buffer's lines that differed
            from what the edit meant, 1-based inclusive ``[first, last]`` ranges. The
            buffer after the turn holds the user's typing too, so undo keeps it unless forced.
    """

    path: str
    name: str | None = None
    before: FileState
    after: FileState | None = None
    before_buffer: BufferState | None = None
    after_buffer: BufferState | None = None
    created_dirs: list[str] = Field(default_factory=list)
    undone: bool = False
    typed_lines: list[list[int]] | None = None

    @model_validator(mode="after")
    def _display(self) -> "PathChange":
        """A record saved before paths were kept in display form has the file-system
        name in ``path``: move it to ``name`` (results must be valid Unicode)."""
        if self.name is None and needs_quoting(self.path):
            self.name, self.path = self.path, display_name(self.path)
        return self

    @property
    def fs_name(self) -> str:
        """The workspace-relative path as the file system spells it (the record's key)."""
        return self.name if self.name is not None else self.path

    @property
    def changed(self) -> bool:
        """True when the turn left the disk or the buffer different from before, or may
        have (its state after the tool was never saved: the server stopped, or the store
        failed, while the tool ran; undo then compares the file with the state before)."""
        if self.after is None:
            return True
        return self.after != self.before or (self.after_buffer is not None and self.after_buffer != self.before_buffer)


class GitAction(_Model):
    """One git action of a turn, in the order it happened.

    Attributes:
        action: ``commit`` (``branch`` moved from ``old`` to ``new``),
            ``branch_create`` (``branch`` created at ``old`` and switched to,
            from ``previous``), ``branch_switch`` (from ``previous`` at ``old``
            to ``branch`` at ``new``), ``index`` (entries of ``paths`` changed).
        branch: See ``action``.
        previous: The branch before a switch (None: HEAD was detached).
        old: HEAD before (None: no commit yet).
        new: HEAD after.
        before: ``index``: path → ``"<mode> <oid> <stage>"`` before (absent: no entry).
        after: ``index``: the same, after.
        undone: True once undone (a redo sets it back).
    """

    action: Literal["commit", "branch_create", "branch_switch", "index"]
    branch: str | None = None
    previous: str | None = None
    old: str | None = None
    new: str | None = None
    before: dict[str, str] = Field(default_factory=dict)
    after: dict[str, str] = Field(default_factory=dict)
    undone: bool = False

    def describe(self) -> str:
        """One line for results, e.g. ``commit 1a2b3c4 on main``."""
        if self.action == "commit":
            return f"commit {(self.new or '')[:7]} on {self.branch}"
        if self.action == "branch_create":
            return f"create and switch to branch {self.branch}"
        if self.action == "branch_switch":
            return f"switch from {self.previous or 'detached HEAD'} to branch {self.branch}"
        names = sorted(display_name(n) for n in set(self.before) | set(self.after))
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        return f"index entries of {shown}"


class McpCall(_Model):
    """An MCP tool call of a turn that ran, its tool not marked ``readOnlyHint``: what it did is
    outside the checkpoints (the server did it), so an undo of the turn names it as not undone.

    Attributes:
        call_id: The call's session-unique id.
        tool: The name the model called it by (``mcp__<server>__<tool>``).
    """

    call_id: str
    tool: str


class TurnUsage(_Model):
    """What a turn cost, as its ``usage`` update said: token counts (None when the
    model reported none) and the turn's wall time in milliseconds."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    duration_ms: int | None = None


class TurnCheckpoint(_Model):
    """Everything one turn changed (saved as JSON next to its contents), and how it ended.

    ``paths`` is keyed by workspace-relative path as the file system spells it
    (:attr:`PathChange.fs_name`); ``git`` is in the order the actions happened.
    ``stop_reason``, ``message``, ``usage``, ``error_code`` and ``notice`` are set when the turn ends (what its
    ``ended`` and ``usage`` updates said), for the snapshot. ``undone_at`` is the time (``time.time()``) of the last
    undo, for choosing what ``redoTurn`` redoes by default. ``dirs_left`` are
    the folders the turn created that still existed after its last writing tool
    (a redo makes them again, even the ones left empty). ``mcp_calls`` are the turn's MCP
    calls that ran (:class:`McpCall`), in the order they started: no undo puts back what they did.
    """

    session_id: str
    turn_id: str
    root: str
    started: float = Field(default_factory=time.time)
    stop_reason: str | None = None
    message: str | None = None
    usage: TurnUsage | None = None
    error_code: str | None = None
    notice: str | None = None
    paths: dict[str, PathChange] = Field(default_factory=dict)
    git: list[GitAction] = Field(default_factory=list)
    undone_at: float | None = None
    dirs_left: list[str] = Field(default_factory=list)
    mcp_calls: list[McpCall] = Field(default_factory=list)

    @model_validator(mode="after")
    def _keys(self) -> "TurnCheckpoint":
        """Key ``paths`` by each change's file-system name (records saved through
        pydantic's JSON mode had U+FFFD in the keys of names that are not UTF-8)."""
        self.paths = {change.fs_name: change for change in self.paths.values()}
        return self

    def created_dirs(self) -> set[str]:
        """Every folder the turn's paths needed that did not exist before the turn."""
        return {d for c in self.paths.values() for d in c.created_dirs}

    def changes(self) -> list[PathChange]:
        """Paths the turn left different, sorted by path."""
        return [c for _, c in sorted(self.paths.items()) if c.changed]

    @property
    def changed_anything(self) -> bool:
        """True when some path or git action was changed by the turn."""
        return bool(self.git) or any(c.changed for c in self.paths.values())

    @property
    def kept(self) -> bool:
        """True when the record is worth saving: the turn changed something, or ran MCP calls
        (an undo then says it cannot undo them)."""
        return self.changed_anything or bool(self.mcp_calls)

    def not_undone(self) -> list[dict[str, str]]:
        """The turn's MCP calls as an undo result lists them: ``[{"callId", "tool"}]``."""
        return [{"callId": call.call_id, "tool": call.tool} for call in self.mcp_calls]

    @property
    def undoable(self) -> bool:
        """True when something the turn changed is not undone yet."""
        return any(not c.undone for c in self.changes()) or any(not g.undone for g in self.git)

    @property
    def undone(self) -> bool:
        """True when the turn changed something and all of it is undone."""
        return self.changed_anything and not self.undoable

    def summary(self) -> dict[str, Any]:
        """``{turnId, stopReason, message, usage, undoable, undone, errorCode?, notice?}`` for the session
        snapshot (:class:`toolwire.lsp.messages.TurnSummary`); ``stopReason``, ``message`` and ``usage``
        (``{inputTokens, outputTokens, durationMs}``) are null while the turn runs; ``errorCode`` and
        ``notice`` only when the turn ended with them."""
        out = {"turnId": self.turn_id, "stopReason": self.stop_reason, "message": self.message,
               "usage": self.usage.model_dump(by_alias=True) if self.usage is not None else None,
               "undoable": self.undoable, "undone": self.undone}
        if self.error_code:
            out["errorCode"] = self.error_code
        if self.notice:
            out["notice"] = self.notice
        return out

    def dump(self) -> dict[str, Any]:
        """The JSON object saved in the store: what undo needs. ``message`` and ``usage``
        stay in memory (a provider's error message may quote an API key, and the
        front-end redacts it only on the way out)."""
        # Python values, not pydantic's JSON mode: that turns a lone surrogate in a dict
        # key (a name that is not UTF-8) into U+FFFD; json.dumps escapes it exactly.
        return self.model_dump(by_alias=True, mode="python", exclude={"message", "usage"})
