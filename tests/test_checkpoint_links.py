"""Checkpoint contents kept as hard links (no copy of a large file before an edit),
and made copies whenever the workspace file was not replaced."""

from __future__ import annotations

import os
from pathlib import Path

from toolwire.agent.checkpoint_store import CheckpointStore
from toolwire.agent.checkpoints import Checkpointer, TurnCheckpoint
from toolwire.tools import default_registry
from toolwire.tools.base import ToolContext, ToolError, validate_arguments
from toolwire.workspace.digest import sha256_hex

REG = default_registry()


def setup(tmp_path: Path, text: bytes) -> tuple[Path, Checkpointer, CheckpointStore]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "f.txt").write_bytes(text)
    store = CheckpointStore(root, tmp_path / "state")
    record = TurnCheckpoint(session_id="s", turn_id="t1", root=str(root))
    return root, Checkpointer(record, ToolContext(root), store), store


async def edit(checkpointer: Checkpointer, root: Path, old: str, new: str) -> bool:
    tool = REG.get("edit_file")
    assert tool is not None
    args = validate_arguments(tool, {"path": "f.txt", "old_string": old, "new_string": new})
    step = await checkpointer.before(tool, args)
    try:
        return (await tool.run(args, ToolContext(root))).ok
    except ToolError:
        return False
    finally:
        await checkpointer.after(step)


async def test_the_before_content_is_the_old_file_itself_once_the_edit_replaced_it(tmp_path: Path) -> None:
    before = b"".join(b"line %d\n" % n for n in range(1000))
    root, checkpointer, store = setup(tmp_path, before)
    inode = os.stat(root / "f.txt").st_ino
    assert await edit(checkpointer, root, "line 500\n", "LINE 500\n")
    obj = store.objects / sha256_hex(before)
    assert os.stat(obj).st_ino == inode and os.stat(obj).st_nlink == 1  # linked, now the store's alone
    assert store.get(sha256_hex(before)) == before
    assert checkpointer.record.paths["f.txt"].before.digest == sha256_hex(before)


async def test_a_file_the_tool_did_not_replace_gets_a_copy_that_later_writes_cannot_reach(tmp_path: Path) -> None:
    before = b"alpha\nbeta\n"
    root, checkpointer, store = setup(tmp_path, before)
    assert not await edit(checkpointer, root, "no such text", "x")  # the tool fails: the file stays in place
    obj = store.objects / sha256_hex(before)
    assert os.stat(obj).st_nlink == 1 and os.stat(obj).st_ino != os.stat(root / "f.txt").st_ino
    with open(root / "f.txt", "r+b") as fh:  # an editor saving in place
        fh.write(b"ALPHA")
    assert store.get(sha256_hex(before)) == before


async def test_a_file_with_another_hard_link_is_copied(tmp_path: Path) -> None:
    before = b"shared\n"
    root, checkpointer, store = setup(tmp_path, before)
    os.link(root / "f.txt", tmp_path / "elsewhere.txt")
    assert await edit(checkpointer, root, "shared", "mine")
    obj = store.objects / sha256_hex(before)
    assert os.stat(obj).st_ino != os.stat(tmp_path / "elsewhere.txt").st_ino
    (tmp_path / "elsewhere.txt").write_bytes(b"changed through the other link\n")
    assert store.get(sha256_hex(before)) == before


def test_a_damaged_or_shared_content_under_the_same_name_is_written_again(tmp_path: Path) -> None:
    """A content whose name is already taken by a truncated copy, or by a file still linked to a
    workspace file (a crash between link and unshare, then the file changed in place), is stored
    again rather than trusted: undo must find the bytes the checkpoint was taken with."""
    store = CheckpointStore(tmp_path / "ws", tmp_path / "state")
    data = b"the content\n" * 10
    digest = store.put(data)
    (store.objects / digest).write_bytes(data[:5])  # truncated
    assert store.put(data) == digest and store.get(digest) == data
    outside = tmp_path / "linked.txt"
    os.link(store.objects / digest, outside)  # shared with another file, which then changes in place
    with open(outside, "r+b") as fh:
        fh.write(b"X")
    assert store.put(data) == digest and store.get(digest) == data
    assert outside.read_bytes().startswith(b"X")  # the other file is left as it is


async def test_a_file_open_in_the_editor_is_copied_not_linked(tmp_path: Path) -> None:
    """The edit of an open file goes to its buffer and the editor's save (before it answers
    the edit) may rewrite the file in place: its content before must be a copy of its own."""
    from toolwire.workspace.documents import NoOpenDocuments, OpenDocument

    root, _, store = setup(tmp_path, b"\xef\xbb\xbfopen text\n")  # on disk with a BOM: the buffer's bytes differ
    path = (root / "f.txt").resolve()

    class Open(NoOpenDocuments):
        def get(self, p: Path) -> OpenDocument | None:
            return OpenDocument(path=path, text="open text\n", version=1) if p == path else None

    record = TurnCheckpoint(session_id="s", turn_id="t1", root=str(root))
    checkpointer = Checkpointer(record, ToolContext(root, documents=Open()), store)
    tool = REG.get("edit_file")
    assert tool is not None
    args = validate_arguments(tool, {"path": "f.txt", "old_string": "open", "new_string": "shut"})
    await checkpointer.before(tool, args)
    digest = record.paths["f.txt"].before.digest
    assert digest is not None and os.stat(store.objects / digest).st_nlink == 1
    with open(root / "f.txt", "r+b") as fh:  # the editor saves in place
        fh.write(b"\xef\xbb\xbfshut")
    assert store.get(digest) == b"\xef\xbb\xbfopen text\n"
