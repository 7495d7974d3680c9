"""Where a file tool reads and writes: the open editor buffer, else the disk.

Open buffers win: when the editor has the file open, its (possibly unsaved)
text is what the tool reads and the edit goes back through the editor
(versioned, or checked against the editor's report for a client without versioned
edits); a refused or outdated edit is reported and nothing else is written. Other files are read with a size limit and written atomically with a
check that the disk still holds what was read.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from toolwire.tools.base import Tool, ToolContext, ToolResult
from toolwire.workspace.documents import OpenDocument
from toolwire.workspace.errors import ToolError, clip_quote
from toolwire.workspace.fs import ABSENT, MAX_EDIT_BYTES, atomic_write, check_writable, read_bytes
from toolwire.workspace.lookalike import check_new_path
from toolwire.workspace.paths import WorkspacePath, resolve_path
from toolwire.workspace.text import decode_text, dominant_newline, encode_text

__all__ = [
    "EDITOR_WAIT",
    "Target",
    "load_target",
    "still_reads",
    "write_target",
    "match_style",
    "diff_stats",
    "FileChange",
    "FileTool",
    "result_data",
    "cut_diff",
    "RESULT_DIFF_LIMIT",
    "check_creatable",
    "HUNK_ANSWERS",
]


#: Key of ``ToolContext.extra`` holding the workspace-relative path whose editor
#: edit was sent and not answered yet (removed once the editor answers).
EDITOR_WAIT = "editor_edit_unanswered"


@dataclass(slots=True)
class Target:
    """A file as a tool read it.

    Attributes:
        path: The checked path.
        doc: The open buffer, when the editor has the file open.
        text: The text (no BOM, line endings as stored), None when missing.
        bom: The file starts with a UTF-8 BOM (disk files only).
        raw: The bytes read from disk (None for buffers and missing files);
            the write is refused if the disk no longer holds them.
    """

    path: WorkspacePath
    doc: OpenDocument | None
    text: str | None
    bom: bool = False
    raw: bytes | None = None

    @property
    def exists(self) -> bool:
        """True when the file (or its buffer) exists."""
        return self.text is not None

    @property
    def source(self) -> str:
        """``"editor"`` or ``"disk"``."""
        return "editor" if self.doc is not None else "disk"


def load_target(ctx: ToolContext, path: str) -> Target:
    """Check ``path`` and read the file from its open buffer or from disk.

    A missing file gives a target with ``text=None``. Files up to
    :data:`~toolwire.workspace.fs.MAX_EDIT_BYTES` (16 MiB) are read.

    Raises:
        ToolError: ``outside_workspace``, ``invalid_path``, ``is_directory``,
            ``not_a_file``, ``too_large``, ``binary``, ``not_utf8``, ``io_error``.
    """
    wp = resolve_path(ctx.root, path)
    doc = ctx.documents.get(wp.resolved)
    if doc is not None:
        return Target(path=wp, doc=doc, text=doc.text)
    if not os.path.lexists(wp.resolved):  # missing (or a dangling link: writing creates its target)
        return Target(path=wp, doc=None, text=None)
    raw = read_bytes(wp.resolved, limit=MAX_EDIT_BYTES, label=clip_quote(wp.rel))
    decoded = decode_text(raw, wp.rel)
    return Target(path=wp, doc=None, text=decoded.text, bom=decoded.bom, raw=raw)


def still_reads(ctx: ToolContext, target: Target, path: str) -> bool:
    """True when :func:`load_target` of ``path`` would now read exactly ``target``.

    That is: ``path`` still resolves to the same file; the same open buffer at the
    same version with the same text, or still none; and the disk still holds the
    bytes read (one read and one memory comparison), or still nothing. A plan
    made from ``target`` is then the plan a new one would make
    (:mod:`toolwire.tools.planmemo`). Never raises: any doubt is False.
    """
    try:
        wp = resolve_path(ctx.root, path)
        doc = ctx.documents.get(wp.resolved)
    except ToolError:
        return False
    if (wp.rel, wp.entry, wp.resolved) != (target.path.rel, target.path.entry, target.path.resolved):
        return False
    if target.doc is not None or doc is not None:
        return (doc is not None and target.doc is not None and doc.version == target.doc.version
                and doc.uri == target.doc.uri and doc.text == target.text)
    if target.raw is None:  # missing when read
        return target.text is None and not os.path.lexists(wp.resolved)
    try:
        return read_bytes(wp.resolved, limit=MAX_EDIT_BYTES, label=clip_quote(wp.rel)) == target.raw
    except ToolError:
        return False


def check_creatable(ctx: ToolContext, target: Target | WorkspacePath) -> None:
    """Refuse to create a name that would read as something it is not
    (:func:`toolwire.workspace.lookalike.check_new_path`); nothing for an existing file.

    Raises:
        ToolError: ``invalid_name``, ``lookalike``.
    """
    wp = target.path if isinstance(target, Target) else target
    if isinstance(target, Target) and target.exists:
        return
    check_new_path(Path(os.path.realpath(ctx.root)), wp.name)


async def write_target(ctx: ToolContext, target: Target, new_text: str) -> None:
    """Write ``new_text`` where ``target`` was read from.

    An open buffer is replaced through the editor; a disk file is written
    atomically (BOM, permission bits, owner and extended attributes kept, parent folders created for a
    new file), refused if the disk changed since :func:`load_target`.

    Raises:
        ToolError: ``stale`` (the buffer moved on, or the disk changed),
            ``editor_refused`` / ``editor_unsupported`` / ``editor_disconnected`` (from the editor, see
            :meth:`~toolwire.workspace.documents.Documents.replace`), ``exists``,
            ``read_only`` (the file on disk is read-only, open in the editor or not; nothing changes),
            ``io_error``; ``invalid_name`` / ``lookalike`` for a new name (:func:`check_creatable`).
    """
    if target.doc is not None:
        if target.exists:  # the editor could not save it either
            check_writable(target.path.resolved, label=clip_quote(target.path.rel))
        _expect_editor_save(ctx, target, new_text)
        # While the editor has not answered, a timeout or cancel leaves the edit's
        # fate to the editor: the runner reads this note to say so.
        ctx.extra[EDITOR_WAIT] = target.path.rel
        try:
            applied = await ctx.documents.replace(target.doc, new_text)
        except ToolError:  # the editor answered (or nothing was sent)
            ctx.extra.pop(EDITOR_WAIT, None)
            raise
        ctx.extra.pop(EDITOR_WAIT, None)
        if not applied:
            raise ToolError("stale", f"{clip_quote(target.path.rel)}: the editor buffer changed since it was read")
        return
    dest = target.path.resolved
    if not target.exists:
        check_creatable(ctx, target)
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ToolError("io_error", f"cannot create folders for {clip_quote(target.path.rel)}: {exc.strerror}") from None
    data = encode_text(new_text, bom=target.bom)
    expected: bytes | Any = target.raw if target.raw is not None else ABSENT
    atomic_write(dest, data, expected=expected, label=clip_quote(target.path.rel), listener=ctx.write_listener)


def _expect_editor_save(ctx: ToolContext, target: Target, new_text: str) -> None:
    """Announce the save an editor makes after editing a clean buffer.

    An editor following protocol.md ("Saving after an editor edit", e.g. Toolwire's VS
    Code client) saves a buffer that equalled its file on disk right after applying the
    edit; that write is Toolwire's, so the workspace watcher is told its content
    (``ctx.write_listener``) and does not report it as a change made outside Toolwire.
    A buffer with unsaved text of its own is not saved, so nothing is announced.
    """
    if ctx.write_listener is None or target.doc is None:
        return
    try:
        raw = read_bytes(target.path.resolved, limit=MAX_EDIT_BYTES, label=clip_quote(target.path.rel))
        decoded = decode_text(raw, target.path.rel)
    except ToolError:  # missing, too large, not text: the editor has its own unsaved copy
        return
    if decoded.text == target.doc.text:
        ctx.write_listener(target.path.resolved, encode_text(new_text, bom=decoded.bom))


def match_style(existing: str | None, content: str) -> str:
    """Give whole-file ``content`` the line ending of the file it replaces."""
    if existing is None:
        return content
    lf = content.replace("\r\n", "\n").replace("\r", "\n")
    newline = dominant_newline(existing)
    return lf.replace("\n", newline) if newline != "\n" else lf


def diff_stats(diff: str) -> tuple[int, int]:
    """``(added, removed)`` line counts of a unified diff."""
    added = removed = 0
    for line in diff.split("\n"):  # a diff's lines end with LF; U+2028 & co. are content
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


@dataclass(slots=True)
class FileChange:
    """A planned file change: what it will do, and how to do it.

    Attributes:
        rel: Workspace-relative path (the source path for a rename).
        diff: The exact unified diff the change makes.
        apply: Performs the change and returns the tool result.
        data: Extra structured facts for the result.
        before: The file's text before the change (``""`` for a file not created
            yet), None when it cannot be shown as text (binary, too large).
        after: The file's text after the change (``""`` once deleted), None
            when it cannot be shown as text.
    """

    rel: str
    diff: str
    apply: Callable[[], Awaitable[ToolResult]]
    data: dict[str, Any]
    before: str | None = None
    after: str | None = None


#: Key of ``ToolContext.extra`` holding the user's answer per hunk of the approved diff,
#: ``[{"index", "accepted", "reason"?}]`` (every hunk, by index), when they answered hunk by
#: hunk and rejected some (:mod:`toolwire.workspace.hunks`); absent for a whole-call answer.
HUNK_ANSWERS = "hunk_answers"


class FileTool(Tool):
    """A tool that changes one file; ``plan`` is a dry run the permission prompt shows.
    ``reviews_hunks``: its change may be accepted hunk by hunk (:data:`HUNK_ANSWERS`)."""

    reviews_hunks: ClassVar[bool] = False

    async def plan(self, args: Any, ctx: ToolContext) -> FileChange:  # pragma: no cover - abstract
        """Read the file and compute the change without writing anything.

        Raises:
            ToolError: whatever makes the change impossible.
        """
        raise NotImplementedError

    async def run(self, args: Any, ctx: ToolContext) -> ToolResult:
        """Plan the change on the current text, then apply it."""
        change = await self.plan(args, ctx)
        return await change.apply()


#: Longest ``diff`` a file tool's result carries for the client (UTF-8 bytes); longer ones are cut.
RESULT_DIFF_LIMIT = 256 * 1024


def cut_diff(diff: str, limit: int = RESULT_DIFF_LIMIT) -> str:
    """``diff`` when it is at most ``limit`` UTF-8 bytes; else its lines that fit, then a
    marker line ``[diff cut: N bytes in all, the first M shown]`` (M: the bytes kept)."""
    if len(diff) * 4 <= limit:  # no character takes more than four bytes
        return diff
    data = diff.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return diff
    end = data.rfind(b"\n", 0, limit) + 1  # whole lines only (0: not even one fits)
    kept = data[:end].decode("utf-8", "surrogatepass")
    return f"{kept}[diff cut: {len(data)} bytes in all, the first {end} shown]\n"


def result_data(change_rel: str, diff: str, source: str, **extra: Any) -> dict[str, Any]:
    """The structured result of a file change: ``diff`` (the unified diff written, cut by
    :func:`cut_diff`), ``diffstat`` ``{added, removed}`` and the same counts as ``added``
    and ``removed`` (of the whole diff)."""
    added, removed = diff_stats(diff)
    return {"path": change_rel, "diff": cut_diff(diff), "diffstat": {"added": added, "removed": removed},
            "added": added, "removed": removed, "source": source, **extra}

