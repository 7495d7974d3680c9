"""Which project rules file is read, and how much of it (:mod:`toolwire.agent.project_rules`),
on real files: the fallback order, what is not a rules file, the 32 KiB bound."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolwire.agent.project_rules import LIMIT, ROOT_FILES, ProjectRules, RulesSource
from toolwire.workspace.documents import MemoryDocuments, NoOpenDocuments


def root_file(root: Path, documents=None) -> str | None:
    rules = ProjectRules()
    rules.read_root(RulesSource(root, documents or NoOpenDocuments()))
    return rules.root_file.path if rules.root_file else None


def write(root: Path, rel: str, text: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


@pytest.mark.parametrize("present", range(len(ROOT_FILES)))
def test_the_first_file_that_exists_in_the_fallback_order_is_read(tmp_path, present):
    for rel in ROOT_FILES[present:]:  # this one and every later one exist
        write(tmp_path, rel, f"from {rel}\n")
    assert ROOT_FILES == ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", ".cursorrules", ".clinerules")
    assert root_file(tmp_path) == ROOT_FILES[present]
    rules = ProjectRules()
    rules.read_root(RulesSource(tmp_path))
    assert rules.prompt_block().endswith(f"\nfrom {ROOT_FILES[present]}")


def test_no_rules_file_gives_no_block(tmp_path):
    rules = ProjectRules()
    rules.read_root(RulesSource(tmp_path))
    assert (rules.root_file, rules.prompt_block(), rules.listing()) == (None, "", ())


def test_a_folder_named_like_a_rules_file_is_skipped(tmp_path):
    (tmp_path / ".clinerules").mkdir()  # Cline's folder form
    (tmp_path / ".clinerules" / "a.md").write_text("x\n")
    assert root_file(tmp_path) is None
    (tmp_path / "AGENTS.md").mkdir()
    write(tmp_path, ".cursorrules", "cursor\n")
    assert root_file(tmp_path) == ".cursorrules"


def test_a_symlink_that_leaves_the_workspace_is_not_read(tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("SECRET\n")
    root = tmp_path / "ws"
    root.mkdir()
    os.symlink(outside, root / "AGENTS.md")
    write(root, "CLAUDE.md", "claude\n")
    assert root_file(root) == "CLAUDE.md"
    os.symlink("CLAUDE.md", root / ".cursorrules")  # inside the workspace: a link is fine
    (root / "CLAUDE.md").rename(root / "c.md")
    os.remove(root / ".cursorrules")
    os.symlink("c.md", root / ".cursorrules")
    assert root_file(root) == ".cursorrules"


def test_an_open_buffer_counts_and_wins_over_the_disk(tmp_path):
    write(tmp_path, "CLAUDE.md", "claude\n")
    docs = MemoryDocuments()
    docs.open(tmp_path / "AGENTS.md", "buffer only\n")  # created in the editor, not saved
    rules = ProjectRules()
    rules.read_root(RulesSource(tmp_path, docs))
    assert rules.root_file.to_wire() == {"path": "AGENTS.md", "bytes": 12, "truncated": False}
    assert rules.prompt_block().endswith("\nbuffer only")


def test_the_setting_off_reads_nothing(tmp_path):
    write(tmp_path, "AGENTS.md", "rules\n")
    write(tmp_path, "sub/AGENTS.md", "sub rules\n")
    rules = ProjectRules()
    rules.read_root(RulesSource(tmp_path, enabled=False))
    assert rules.listing() == ()
    assert rules.nested_for(RulesSource(tmp_path, enabled=False), [tmp_path / "sub" / "x"]) is None
    assert rules.listing() == ()


def test_nested_files_are_given_once_and_never_for_the_root_or_outside(tmp_path):
    root = tmp_path / "ws"
    write(root, "AGENTS.md", "root\n")
    write(root, "a/AGENTS.md", "A\n")
    write(root, "a/b/AGENTS.md", "B\n")
    docs = NoOpenDocuments()
    rules = ProjectRules()
    rules.read_root(RulesSource(root, docs))
    assert rules.nested_for(RulesSource(root, docs), [root / "top.txt", root, tmp_path / "elsewhere" / "a" / "x"]) is None
    block = rules.nested_for(RulesSource(root, docs), [root / "a" / "b"])  # a folder itself counts
    assert block == ("Instructions from a/AGENTS.md (apply to files under a/):\nA\n\n"
                     "Instructions from a/b/AGENTS.md (apply to files under a/b/):\nB")
    assert rules.nested_for(RulesSource(root, docs), [root / "a" / "b" / "c.txt", root / "a" / "x.txt"]) is None
    assert [f.path for f in rules.listing()] == ["AGENTS.md", "a/AGENTS.md", "a/b/AGENTS.md"]
    assert rules.take_change() == rules.listing() and rules.take_change() is None


def test_32_kib_in_all_root_and_nested_together(tmp_path):
    write(tmp_path, "AGENTS.md", "é" * 20_000)  # 40 000 bytes: a cut never splits a character
    write(tmp_path, "s/AGENTS.md", "n" * 99 + "\n")
    write(tmp_path, "t/AGENTS.md", "small\n")
    docs = NoOpenDocuments()
    rules = ProjectRules()
    rules.read_root(RulesSource(tmp_path, docs))
    assert rules.root_file.to_wire() == {"path": "AGENTS.md", "bytes": 40_000, "truncated": True}
    assert "[... AGENTS.md cut: it is 40000 bytes and 32568 are shown;" in rules.root_text
    assert len(rules.root_text.encode()) <= LIMIT
    left = LIMIT - len(rules.root_text.encode())  # what the root's text and marker leave: under 200 bytes
    assert 6 < left < 100
    block = rules.nested_for(RulesSource(tmp_path, docs), [tmp_path / "t" / "f"])  # fits in what is left
    assert block == "Instructions from t/AGENTS.md (apply to files under t/):\nsmall"
    block = rules.nested_for(RulesSource(tmp_path, docs), [tmp_path / "s" / "f"])  # does not: nothing of it, a marker
    assert block == ("Instructions from s/AGENTS.md (apply to files under s/):\n[... s/AGENTS.md cut: it is 100 bytes "
                     "and 0 are shown; project instructions are limited to 32 KiB in all ...]")
    assert [f.to_wire() for f in rules.listing()[1:]] == [{"path": "t/AGENTS.md", "bytes": 6, "truncated": False},
                                                         {"path": "s/AGENTS.md", "bytes": 100, "truncated": True}]


def test_a_rules_file_kept_from_the_model_by_model_exclude_is_not_read(tmp_path):
    from toolwire.workspace.model_exclude import ModelExclude

    write(tmp_path, "AGENTS.md", "secret-ish\n")
    write(tmp_path, "CLAUDE.md", "claude\n")
    write(tmp_path, "sub/AGENTS.md", "sub\n")
    os.symlink("AGENTS.md", tmp_path / ".cursorrules")
    keep = ModelExclude(["AGENTS.md"]).match  # no slash: the name in any folder
    rules = ProjectRules()
    rules.read_root(RulesSource(tmp_path, excluded=keep))
    assert rules.root_file.path == "CLAUDE.md"
    assert rules.nested_for(RulesSource(tmp_path, excluded=keep), [tmp_path / "sub" / "f"]) is None
    (tmp_path / "CLAUDE.md").unlink()
    rules.read_root(RulesSource(tmp_path, excluded=keep))
    assert rules.root_file is None  # .cursorrules links to the excluded AGENTS.md: not read either
