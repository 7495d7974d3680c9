"""Large files: edits up to 16 MiB (diffs sized by the change), reads in pages above 2 MiB."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolwire.tools import default_registry
from toolwire.tools.base import ToolContext, ToolError, ToolResult, validate_arguments
from toolwire.workspace.fs import MAX_EDIT_BYTES, MAX_FILE_BYTES

REG = default_registry()


async def call(ctx: ToolContext, name: str, **arguments: Any) -> ToolResult:
    tool = REG.get(name)
    assert tool is not None
    return await tool.run(validate_arguments(tool, arguments), ctx)


def big_file(path: Path, size: int) -> list[str]:
    lines = [f"line {n}: some text of the file, padded like code ({n % 97})\n" for n in range(size // 60 + 1)]
    path.write_text("".join(lines), encoding="utf-8")
    return lines


async def test_edit_file_on_a_10_mb_file_writes_exactly_the_change_and_a_small_diff(tmp_path):
    lines = big_file(tmp_path / "big.txt", 10_000_000)
    ctx = ToolContext(tmp_path)
    target = lines[len(lines) // 2]
    result = await call(ctx, "edit_file", path="big.txt", old_string=target, new_string="CHANGED\n")
    assert result.ok, result.content
    after = (tmp_path / "big.txt").read_text(encoding="utf-8")
    assert after == "".join(lines).replace(target, "CHANGED\n", 1)
    diff = result.data["diff"]
    assert len(diff) < 2000 and f"-{target}" in diff and "+CHANGED\n" in diff
    assert f"@@ -{len(lines) // 2 - 2}," in diff  # numbered as in the whole file


async def test_files_over_16_mib_are_refused_for_edits(tmp_path):
    (tmp_path / "huge.txt").write_bytes(b"x\n" * (MAX_EDIT_BYTES // 2 + 1))
    with pytest.raises(ToolError) as err:
        await call(ToolContext(tmp_path), "edit_file", path="huge.txt", old_string="x", new_string="y")
    assert err.value.code == "too_large"


async def test_reads_above_2_mib_are_paged(tmp_path):
    lines = big_file(tmp_path / "big.txt", 3 * MAX_FILE_BYTES)
    ctx = ToolContext(tmp_path)
    with pytest.raises(ToolError) as err:
        await call(ctx, "read_file", path="big.txt")
    assert err.value.code == "too_large" and "start_line" in err.value.message
    page = await call(ctx, "read_file", path="big.txt", start_line=10, end_line=12)
    assert page.content.splitlines() == [f"{n}\t{lines[n - 1].rstrip()}" for n in (10, 11, 12)]
    whole = await call(ctx, "read_file", path="big.txt", start_line=1)  # asks for everything: one page
    shown = whole.content.count("\n") + 1
    assert whole.data["start_line"] == 1 and whole.data["end_line"] == shown < len(lines)
    assert len(whole.content.encode()) <= MAX_FILE_BYTES
    following = await call(ctx, "read_file", path="big.txt", start_line=shown + 1, end_line=shown + 1)
    assert following.content == f"{shown + 1}\t{lines[shown].rstrip()}"


async def test_an_edit_is_planned_once_from_approval_to_run_while_the_file_reads_the_same(tmp_path, monkeypatch):
    """The approval's plan is reused by the re-check and the run (one plan of the 10 MB text);
    a file changed in between is planned again, on its new text."""
    import toolwire.tools.edit as edit_module
    from toolwire.agent.permissions import build_subject

    lines = big_file(tmp_path / "big.txt", 10_000_000)
    planned: list[int] = []
    real = edit_module.plan_edit

    def counting(text, edits, *, label):
        planned.append(len(text or ""))
        return real(text, edits, label=label)

    monkeypatch.setattr(edit_module, "plan_edit", counting)
    ctx = ToolContext(tmp_path)
    tool = REG.get("edit_file")
    assert tool is not None
    target = lines[len(lines) // 3]
    args = validate_arguments(tool, {"path": "big.txt", "old_string": target, "new_string": "CHANGED\n"})
    subject = await build_subject(tool, args, ctx)  # the approval
    again = await build_subject(tool, args, ctx)  # the re-check right before the run
    assert again["diff"] == subject["diff"] and len(planned) == 1
    # Something else changes the file before the run: planned again, on the new text.
    changed = "".join(lines).replace(lines[0], "first line changed elsewhere\n", 1)
    (tmp_path / "big.txt").write_text(changed, encoding="utf-8")
    result = await tool.run(args, ctx)
    assert result.ok and len(planned) == 2
    assert (tmp_path / "big.txt").read_text(encoding="utf-8") == changed.replace(target, "CHANGED\n", 1)
    assert len(ctx.plans) == 0  # applied: the plan is dropped


async def test_a_reused_plan_still_refuses_a_file_changed_before_the_write(tmp_path):
    """Reusing a plan never skips the write's own check: bytes changed after the last
    plan make the write stale and leave the other writer's bytes."""
    lines = big_file(tmp_path / "big.txt", 3_000_000)
    ctx = ToolContext(tmp_path)
    tool = REG.get("edit_file")
    assert tool is not None
    args = validate_arguments(tool, {"path": "big.txt", "old_string": lines[7], "new_string": "X\n"})
    change = await tool.plan(args, ctx)
    other = "".join(lines).replace(lines[9], "theirs\n", 1)
    (tmp_path / "big.txt").write_text(other, encoding="utf-8")
    with pytest.raises(ToolError) as err:
        await change.apply()
    assert err.value.code == "stale"
    assert (tmp_path / "big.txt").read_text(encoding="utf-8") == other
