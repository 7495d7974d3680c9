"""File tools: read_file, create_file, delete_file, rename_file.

Every path is confined to the workspace (:mod:`toolwire.workspace.paths`);
open editor buffers are read and written through the editor; disk writes are
atomic (:mod:`toolwire.workspace.fs`).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolwire.tools.base import Tool, ToolContext, ToolResult
from toolwire.tools.target import (
    FileChange,
    FileTool,
    check_creatable,
    load_target,
    match_style,
    result_data,
    write_target,
)
from toolwire.workspace.positions import newline_counts, split_lines
from toolwire.workspace.errors import ToolError, clip_quote
from toolwire.workspace.fs import MAX_FILE_BYTES, check_writable, read_bytes
from toolwire.workspace.paths import resolve_path
from toolwire.workspace.text import decode_text, unified_diff

__all__ = ["ReadFile", "CreateFile", "DeleteFile", "RenameFile"]

_PATH = "Path of the file, relative to the workspace folder."


class ReadFileArgs(BaseModel):
    """Arguments of read_file."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description=_PATH)
    start_line: int | None = Field(None, ge=1, description="First line to show, 1-based. Optional.")
    end_line: int | None = Field(None, ge=1, description="Last line to show, 1-based and inclusive. Optional.")

    @model_validator(mode="after")
    def _range(self) -> "ReadFileArgs":
        if self.start_line and self.end_line and self.end_line < self.start_line:
            raise ValueError("end_line must not be before start_line")
        return self


class ReadFile(Tool):
    """Read a UTF-8 text file, whole or a range of lines."""

    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = (
        "Read a text file of the workspace, as the editor has it (unsaved changes included). Without "
        "start_line/end_line it returns the exact file text, unchanged. With a range it returns the "
        "requested lines (1-based, inclusive) with their line numbers in front, as '<number>\\t<line>'; "
        "the numbers are not part of the file: leave them out of old_string when you edit. Use it before "
        "editing a file, and read a range of a long file rather than all of it. Binary and non-UTF-8 "
        "files are refused; files over 2 MB are read in line ranges only (at most 2 MB of lines per "
        "read), files over 16 MB not at all. Secrets matched by modelExclude (e.g. .env) are read only if the "
        "user allows it."
    )
    Args: ClassVar[type[BaseModel]] = ReadFileArgs
    read_only: ClassVar[bool] = True
    shows_content: ClassVar[bool] = True

    async def run(self, args: ReadFileArgs, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        ctx.refuse_excluded(resolve_path(ctx.root, args.path))  # before a byte of it is read
        target = load_target(ctx, args.path)
        rel = target.path.rel
        if target.text is None:
            raise ToolError("not_found", f"{clip_quote(rel)} does not exist")
        text = target.text
        lines = split_lines(text)  # CRLF, CR and LF end a line (LSP, editors); U+2028 & co. do not
        kinds = [kind for kind, n in newline_counts(text).items() if n]
        newline = "mixed" if len(kinds) > 1 else {"\r\n": "crlf", "\r": "cr"}.get(kinds[0] if kinds else "", "lf")
        data: dict[str, Any] = {
            "path": rel,
            "lines": len(lines),
            "source": target.source,
            "bom": target.bom,
            "newline": newline,
        }
        if target.path.notes:
            data["path_notes"] = list(target.path.notes)
        if args.start_line is None and args.end_line is None:
            if len(text) > MAX_FILE_BYTES and len(text.encode("utf-8")) > MAX_FILE_BYTES:
                raise ToolError("too_large", f"{clip_quote(rel)} is over {MAX_FILE_BYTES} bytes ({len(lines)} lines): read it "
                                             "in ranges with start_line and end_line")
            return ToolResult(ok=True, content=text, data=data)
        start = args.start_line or 1
        if start > max(len(lines), 1):
            raise ToolError("out_of_range", f"{clip_quote(rel)} has {len(lines)} lines; start_line {start} is past the end")
        end = min(args.end_line or len(lines), len(lines))
        width = len(str(end))
        shown, size = [], 0
        for n in range(start, end + 1):  # a page holds at most MAX_FILE_BYTES of lines
            row = f"{n:>{width}}\t{lines[n - 1]}"
            size += len(row) + 1
            if size > MAX_FILE_BYTES and shown:
                end = n - 1
                break
            shown.append(row)
        data.update(start_line=start, end_line=end)
        return ToolResult(ok=True, content="\n".join(shown), data=data)


class CreateFileArgs(BaseModel):
    """Arguments of create_file."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description=_PATH + " Missing parent folders are created.")
    content: str = Field(description="The complete content of the file.")
    overwrite: bool = Field(False, description="Replace the file if it already exists. Default false.")


class CreateFile(FileTool):
    """Create a file (or replace one, with overwrite)."""

    name: ClassVar[str] = "create_file"
    description: ClassVar[str] = (
        "Create a new text file with the given content, creating missing parent folders; returns the path "
        "and its line count. Use it for new files only. Refuses to overwrite an existing file unless "
        "overwrite is true (then the whole file is replaced); to change an existing file use edit_file "
        "instead, which keeps the rest of the file as it is."
    )
    Args: ClassVar[type[BaseModel]] = CreateFileArgs

    async def plan(self, args: CreateFileArgs, ctx: ToolContext) -> FileChange:  # type: ignore[override]
        target = load_target(ctx, args.path)
        rel = target.path.rel
        if target.exists and not args.overwrite:
            how = "use edit_file, or set overwrite" if ctx.offers("edit_file") else "set overwrite"
            raise ToolError("exists", f"{clip_quote(rel)} already exists; {how} to replace it")
        check_creatable(ctx, target)
        new_text = match_style(target.text, args.content)
        diff = unified_diff(target.text, new_text, rel)
        created = not target.exists

        async def apply() -> ToolResult:
            await write_target(ctx, target, new_text)
            verb = "Created" if created else "Overwrote"
            lines = len(split_lines(new_text))
            return ToolResult(
                ok=True,
                content=f"{verb} {rel} ({lines} lines)",
                data=result_data(rel, diff, target.source, created=created),
            )

        return FileChange(rel=rel, diff=diff, apply=apply, data={}, before=target.text or "", after=new_text)


class DeleteFileArgs(BaseModel):
    """Arguments of delete_file."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description=_PATH)


def _old_text_for_diff(path: os.PathLike[str], rel: str) -> tuple[str | None, str]:
    """The text to show as removed, or None with a one-line summary for binary/large files."""
    try:
        return decode_text(read_bytes(path, label=clip_quote(rel)), rel).text, ""
    except ToolError as exc:
        return None, f"{rel}: {exc.message}"


class DeleteFile(FileTool):
    """Delete one file (a symlink is removed itself, not its target)."""

    name: ClassVar[str] = "delete_file"
    description: ClassVar[str] = (
        "Delete one file of the workspace; returns what was deleted. Folders are refused. A symbolic link "
        "is removed, not the file it points to. A file open in the editor is refused: ask the user to "
        "close it. Use it only for files the task needs removed."
    )
    Args: ClassVar[type[BaseModel]] = DeleteFileArgs

    async def plan(self, args: DeleteFileArgs, ctx: ToolContext) -> FileChange:  # type: ignore[override]
        """The dry run: the diff of the deletion (refused while the file is open in the editor)."""
        wp = resolve_path(ctx.root, args.path)
        rel, entry = wp.rel, wp.entry
        _refuse_if_open(ctx, wp, "delete")
        old: str | None = None
        if os.path.islink(entry):
            diff = f"deleted symlink {rel} -> {os.readlink(entry)}\n"
        elif not os.path.exists(entry):
            raise ToolError("not_found", f"{clip_quote(rel)} does not exist")
        elif os.path.isdir(entry):
            raise ToolError("is_directory", f"{clip_quote(rel)} is a folder; delete_file only deletes files")
        else:
            check_writable(entry, label=clip_quote(rel))  # like rm, which asks before removing a write-protected file
            old, summary = _old_text_for_diff(entry, rel)
            diff = unified_diff(old, None, rel) if old is not None else f"deleted {summary}\n"
        before = os.lstat(entry)

        async def apply() -> ToolResult:
            try:
                now = os.lstat(entry)
            except FileNotFoundError:
                raise ToolError("stale", f"{clip_quote(rel)} was removed since it was read") from None
            if (now.st_ino, now.st_mtime_ns, now.st_size) != (before.st_ino, before.st_mtime_ns, before.st_size):
                raise ToolError("stale", f"{clip_quote(rel)}: file changed since it was read")
            if ctx.write_listener is not None:
                ctx.write_listener(entry, None)
            try:
                os.unlink(entry)
            except OSError as exc:
                raise ToolError("io_error", f"cannot delete {clip_quote(rel)}: {exc.strerror}") from None
            return ToolResult(ok=True, content=f"Deleted {rel}", data=result_data(rel, diff, "disk"))

        return FileChange(rel=rel, diff=diff, apply=apply, data={}, before=old, after="" if old is not None else None)


def _refuse_if_open(ctx: ToolContext, wp: Any, verb: str) -> None:
    """Refuse to delete or move a file that is open in the editor: its buffer (maybe
    with unsaved work) would be left behind on a path that no longer exists.

    Raises:
        ToolError: ``open_in_editor``.
    """
    for path in {Path(wp.entry), Path(wp.resolved)}:
        if ctx.documents.get(path) is not None:
            raise ToolError("open_in_editor",
                            f"{clip_quote(wp.rel)} is open in the editor; cannot {verb} it (ask the user to close it first)")


def _move_no_replace(src: Path, dst: Path, dst_rel: str) -> None:
    """Move ``src`` to ``dst`` without ever replacing a ``dst`` that appeared meanwhile.

    A hard link fails atomically when ``dst`` exists; where hard links are not
    supported the move falls back to a checked rename.

    Raises:
        ToolError: ``exists``; OSError for other failures.
    """
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        raise ToolError("exists", f"{clip_quote(dst_rel)} already exists") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EXDEV, errno.ENOTSUP, errno.EMLINK, errno.EOPNOTSUPP):
            raise
        if os.path.lexists(dst):
            raise ToolError("exists", f"{clip_quote(dst_rel)} already exists") from None
        os.rename(src, dst)
        return
    os.unlink(src)


def _announce_move(ctx: ToolContext, src: os.PathLike[str], dst: os.PathLike[str]) -> None:
    listener = ctx.write_listener
    assert listener is not None
    listener(src, None)  # type: ignore[arg-type]
    if not os.path.islink(src):
        try:
            listener(dst, read_bytes(src))  # type: ignore[arg-type]
        except ToolError:
            pass  # too large to fingerprint: the watcher will report it


class RenameFileArgs(BaseModel):
    """Arguments of rename_file."""

    model_config = ConfigDict(extra="forbid")
    path: str = Field(description=_PATH)
    new_path: str = Field(description="New path, relative to the workspace folder. Must not exist yet.")


class RenameFile(FileTool):
    """Rename or move one file inside the workspace, never over an existing file."""

    name: ClassVar[str] = "rename_file"
    description: ClassVar[str] = (
        "Rename or move one file inside the workspace; returns the old and new path. Missing parent "
        "folders of new_path are created. Refuses when new_path already exists. Folders are refused, and "
        "so is a file open in the editor. To move a file, use it rather than create_file plus "
        "delete_file."
    )
    Args: ClassVar[type[BaseModel]] = RenameFileArgs

    def content_paths(self, args: BaseModel) -> list[str]:
        """The source: renaming a file kept from the model (``.env`` to ``env.txt``) would let
        a later read show it unasked, so such a rename is asked about."""
        return [args.path] if isinstance(args, RenameFileArgs) else []

    async def plan(self, args: RenameFileArgs, ctx: ToolContext) -> FileChange:  # type: ignore[override]
        """The dry run: which file moves where (refused while either path is open in the editor)."""
        src = resolve_path(ctx.root, args.path)
        dst = resolve_path(ctx.root, args.new_path)
        _refuse_if_open(ctx, src, "rename")
        _refuse_if_open(ctx, dst, "rename onto")
        if not os.path.lexists(src.entry):
            raise ToolError("not_found", f"{clip_quote(src.rel)} does not exist")
        if os.path.isdir(src.entry) and not os.path.islink(src.entry):
            raise ToolError("is_directory", f"{clip_quote(src.rel)} is a folder; rename_file only moves files")
        if os.path.lexists(dst.entry):
            raise ToolError("exists", f"{clip_quote(dst.rel)} already exists")
        check_creatable(ctx, dst)
        diff = f"rename from {src.rel}\nrename to {dst.rel}\n"
        text = None if os.path.islink(src.entry) else _old_text_for_diff(src.entry, src.rel)[0]

        async def apply() -> ToolResult:
            if os.path.lexists(dst.entry):
                raise ToolError("exists", f"{clip_quote(dst.rel)} already exists")
            try:
                dst.entry.parent.mkdir(parents=True, exist_ok=True)
                if ctx.write_listener is not None:
                    _announce_move(ctx, src.entry, dst.entry)
                _move_no_replace(src.entry, dst.entry, dst.rel)
            except FileNotFoundError:
                raise ToolError("stale", f"{clip_quote(src.rel)} was removed since it was read") from None
            except OSError as exc:
                raise ToolError("io_error", f"cannot rename {clip_quote(src.rel)}: {exc.strerror}") from None
            data = result_data(src.rel, diff, "disk", new_path=dst.rel)
            return ToolResult(ok=True, content=f"Renamed {src.rel} to {dst.rel}", data=data)

        return FileChange(rel=src.rel, diff=diff, apply=apply, data={"new_path": dst.rel}, before=text, after=text)
