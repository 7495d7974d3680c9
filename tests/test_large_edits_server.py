"""Large files through the real server over stdio: a 10 MB edit byte for byte (BOM,
CRLF, non-ASCII text kept), its undo and redo, the 16 MiB edit limit, paged reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import ToolwireTestClient, new_session, prompt, write_script
from undo_helpers import redo, undo

from toolwire.workspace.fs import MAX_EDIT_BYTES, MAX_FILE_BYTES

pytestmark = pytest.mark.asyncio(loop_scope="module")

BOM = b"\xef\xbb\xbf"


def crlf_text(size: int) -> tuple[bytes, list[str]]:
    """A UTF-8 file with a BOM and CRLF line endings, non-ASCII on every line, about ``size`` bytes."""
    lines = [f"línea {n}: día «{n % 97}» – 🙂 texto\r\n" for n in range(size // 40 + 1)]
    return BOM + "".join(lines).encode("utf-8"), lines


def final(client: ToolwireTestClient, sid: str, call_id: str) -> dict[str, Any]:
    return client.tool_calls(sid)[call_id][-1]


async def test_a_10_mb_edit_is_byte_exact_and_undone_and_redone_exactly(client: ToolwireTestClient, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    before, lines = crlf_text(10_000_000)
    assert len(before) > 10_000_000
    (root / "big.txt").write_bytes(before)
    old = lines[len(lines) // 2]
    # The model writes LF; the file's CRLF is kept, and the new line gets CRLF too.
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "id": "e1", "arguments": {
            "path": "big.txt", "old_string": old.replace("\r\n", "\n"), "new_string": "cambiada ✓\nsegunda\n"}}]},
        {"text": "ok"}])
    sid = await new_session(client, root, script)
    await prompt(client, sid)
    call = final(client, sid, "e1")
    assert call["status"] == "done", call
    after = BOM + "".join(lines).replace(old, "cambiada ✓\r\nsegunda\r\n", 1).encode("utf-8")
    assert (root / "big.txt").read_bytes() == after
    # The approval showed the change alone, numbered as in the whole file; the result's diff is it.
    asked = client.permission_requests[sid][-1]
    diff = call["result"]["data"]["diff"]
    assert len(diff) < 2000 and f"-{old[:-2]}\n" in diff and "+cambiada ✓\n+segunda\n" in diff
    assert f"@@ -{len(lines) // 2 - 2}," in diff and asked["subject"]["diff"] == diff

    undone = await undo(client, sid)
    assert undone["status"] == "undone", undone
    assert (root / "big.txt").read_bytes() == before
    redone = await redo(client, sid)
    assert redone["status"] == "redone", redone
    assert (root / "big.txt").read_bytes() == after


async def test_edits_up_to_16_mib_run_and_a_larger_file_is_refused(client: ToolwireTestClient, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    row = b"x" * 63 + b"\n"
    at_limit = row * (MAX_EDIT_BYTES // len(row) - 1) + b"last line\n"
    at_limit += b"y" * (MAX_EDIT_BYTES - len(at_limit) - 1) + b"\n"
    assert len(at_limit) == MAX_EDIT_BYTES
    (root / "limit.txt").write_bytes(at_limit)
    (root / "over.txt").write_bytes(at_limit + b"z")
    edit = {"old_string": "last line\n", "new_string": "LAST LINE\n"}
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "edit_file", "id": "ok", "arguments": {"path": "limit.txt", **edit}},
                        {"name": "edit_file", "id": "over", "arguments": {"path": "over.txt", **edit}}]},
        {"text": "ok"}])
    sid = await new_session(client, root, script)
    await prompt(client, sid)
    assert final(client, sid, "ok")["status"] == "done"
    assert (root / "limit.txt").read_bytes() == at_limit.replace(b"last line\n", b"LAST LINE\n")
    refused = final(client, sid, "over")
    assert refused["status"] == "errored" and refused["error"]["code"] == "too_large", refused
    assert f"over the {MAX_EDIT_BYTES}-byte limit" in refused["error"]["message"]
    assert (root / "over.txt").read_bytes() == at_limit + b"z"


async def test_files_over_2_mib_are_read_in_pages(client: ToolwireTestClient, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    text = "".join(f"row {n}\n" for n in range(400_000))  # ~4.4 MB
    assert len(text) > MAX_FILE_BYTES
    (root / "big.txt").write_text(text)
    script = write_script(tmp_path / "s.jsonl", [
        {"tool_calls": [{"name": "read_file", "id": "whole", "arguments": {"path": "big.txt"}},
                        {"name": "read_file", "id": "range", "arguments": {"path": "big.txt", "start_line": 300_000,
                                                                           "end_line": 300_002}},
                        {"name": "read_file", "id": "page", "arguments": {"path": "big.txt", "start_line": 1}}]},
        {"text": "ok"}])
    sid = await new_session(client, root, script)
    await prompt(client, sid)
    whole = final(client, sid, "whole")
    assert whole["status"] == "errored" and whole["error"]["code"] == "too_large"
    assert "start_line" in whole["error"]["message"]
    ranged = final(client, sid, "range")["result"]
    assert ranged["content"] == "300000\trow 299999\n300001\trow 300000\n300002\trow 300001"
    page = final(client, sid, "page")["result"]
    assert page["data"]["start_line"] == 1 and page["data"]["end_line"] < 400_000
    assert len(page["content"].encode()) <= MAX_FILE_BYTES
