"""Permission policy (pure) and permission subjects (dry runs of the real tools)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from toolwire.agent.permissions import Decision, PermissionPolicy, build_subject
from toolwire.tools import default_registry
from toolwire.tools.base import ToolContext, ToolError, validate_arguments

REG = default_registry()
ROOT = Path("/ws")


def args(tool_name: str, /, **arguments: Any) -> tuple[Any, Any]:
    tool = REG.get(tool_name)
    assert tool is not None
    return tool, validate_arguments(tool, arguments)


def test_defaults() -> None:
    policy = PermissionPolicy()
    assert policy.decide(*args("read_file", path="a.py")) is Decision.AUTO
    for name in ("git_status",):
        assert policy.decide(*args(name)) is Decision.AUTO
    assert policy.decide(*args("git_diff")) is Decision.AUTO
    assert policy.decide(*args("git_log")) is Decision.AUTO
    assert policy.decide(*args("git_show", rev="HEAD")) is Decision.AUTO
    assert policy.decide(*args("git_branch", action="list")) is Decision.AUTO
    assert policy.decide(*args("edit_file", path="a.py", old_string="a", new_string="b")) is Decision.ASK
    assert policy.decide(*args("create_file", path="a.py", content="")) is Decision.ASK
    assert policy.decide(*args("delete_file", path="a.py")) is Decision.ASK
    assert policy.decide(*args("git_commit", message="m")) is Decision.ASK
    assert policy.decide(*args("git_branch", action="switch", name="x")) is Decision.ASK
    assert policy.decide(*args("git_add", paths=["a"])) is Decision.ASK


def test_overrides_most_specific_wins() -> None:
    policy = PermissionPolicy({"edits": "auto", "delete_file": "ask", "git_branch.create": "deny", "git_log": "deny"})
    assert policy.decide(*args("edit_file", path="a", old_string="a", new_string="b")) is Decision.AUTO
    assert policy.decide(*args("multi_edit", path="a", edits=[{"old_string": "a", "new_string": "b"}])) is Decision.AUTO
    assert policy.decide(*args("delete_file", path="a")) is Decision.ASK
    assert policy.decide(*args("git_branch", action="create", name="x")) is Decision.DENY
    assert policy.decide(*args("git_branch", action="switch", name="x")) is Decision.ASK
    assert policy.decide(*args("git_log")) is Decision.DENY
    with pytest.raises(ValueError):
        PermissionPolicy({"edit_file": "sometimes"})


def test_allow_always_matches_only_the_same_action() -> None:
    policy = PermissionPolicy()
    policy.remember_always(*args("edit_file", path="src/a.py", old_string="x", new_string="y"), ROOT)
    # the same action on the same file with other content: approved
    assert policy.decide(*args("edit_file", path="./src/a.py", old_string="p", new_string="q")) is Decision.AUTO
    assert policy.decide(*args("edit_file", path="/ws/src/a.py", old_string="p", new_string="q")) is Decision.AUTO
    # never a larger or different one
    assert policy.decide(*args("edit_file", path="src/b.py", old_string="x", new_string="y")) is Decision.ASK
    assert policy.decide(*args("edit_file", path="src/a.py", old_string="x", new_string="y", replace_all=True)) is Decision.ASK
    assert policy.decide(*args("delete_file", path="src/a.py")) is Decision.ASK
    assert policy.decide(*args("multi_edit", path="src/a.py", edits=[{"old_string": "x", "new_string": "y"}])) is Decision.ASK


def test_allow_always_git_add_paths_are_a_set() -> None:
    policy = PermissionPolicy()
    policy.remember_always(*args("git_add", paths=["x"]), ROOT)
    assert policy.decide(*args("git_add", paths=["./x"])) is Decision.AUTO
    assert policy.decide(*args("git_add", paths=["x", "y"])) is Decision.ASK
    assert policy.decide(*args("git_add", paths=["."])) is Decision.ASK
    assert policy.decide(*args("git_restore", paths=["x"])) is Decision.ASK


def test_allow_always_rename_is_directional_and_commit_scoped_by_paths() -> None:
    policy = PermissionPolicy()
    policy.remember_always(*args("rename_file", path="a", new_path="b"), ROOT)
    assert policy.decide(*args("rename_file", path="a", new_path="b")) is Decision.AUTO
    assert policy.decide(*args("rename_file", path="b", new_path="a")) is Decision.ASK
    policy.remember_always(*args("git_commit", message="one", paths=["a"]), ROOT)
    assert policy.decide(*args("git_commit", message="two", paths=["a"])) is Decision.AUTO
    assert policy.decide(*args("git_commit", message="two")) is Decision.ASK
    policy.remember_always(*args("git_branch", action="switch", name="main"), ROOT)
    assert policy.decide(*args("git_branch", action="switch", name="other")) is Decision.ASK


def test_outside_paths_are_never_remembered_and_deny_wins() -> None:
    policy = PermissionPolicy({"delete_file": "deny"})
    policy.remember_always(*args("edit_file", path="../x", old_string="a", new_string="b"), ROOT)
    assert policy.decide(*args("edit_file", path="../x", old_string="a", new_string="b")) is Decision.ASK
    policy.remember_always(*args("delete_file", path="a"), ROOT)
    assert policy.decide(*args("delete_file", path="a")) is Decision.DENY
    policy.remember_always(*args("edit_file", path="a", old_string="a", new_string="b"), ROOT)
    policy.forget()
    assert policy.decide(*args("edit_file", path="a", old_string="a", new_string="b")) is Decision.ASK


async def test_edit_subject_is_the_exact_diff_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\r\n")
    tool, a = args("edit_file", path="a.py", old_string="x = 1", new_string="x = 2")
    subject = await build_subject(tool, a, ToolContext(tmp_path))
    assert subject == {
        "kind": "edit",
        "tool": "edit_file",
        "path": "a.py",
        "diff": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n",
        "diffstat": {"added": 1, "removed": 1},
        "hunks": [{"index": 0, "header": "@@ -1 +1 @@", "diff": "-x = 1\n+x = 2\n"}],
    }
    assert (tmp_path / "a.py").read_bytes() == b"x = 1\r\n"
    result = await tool.run(a, ToolContext(tmp_path))
    assert result.data["diff"] == subject["diff"]


async def test_subject_for_rename_git_and_failures(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\n")
    rename = await build_subject(*args("rename_file", path="a.py", new_path="b.py"), ToolContext(tmp_path))
    assert rename["kind"] == "edit" and rename["new_path"] == "b.py"
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    git = await build_subject(*args("git_add", paths=["a.py"]), ToolContext(tmp_path))
    assert git["kind"] == "git" and git["cwd"] == str(tmp_path)
    assert git["argv"][0] == "git" and git["argv"][-3:] == ["add", "--", "a.py"]
    # A plan that fails is no subject: there is nothing to approve (the scheduler ends the call errored).
    with pytest.raises(ToolError) as bad:
        await build_subject(*args("edit_file", path="a.py", old_string="zzz", new_string="y"), ToolContext(tmp_path))
    assert bad.value.code == "no_match"
    with pytest.raises(ToolError) as outside:
        await build_subject(*args("delete_file", path="../etc"), ToolContext(tmp_path))
    assert outside.value.code == "outside_workspace"


def test_always_for_a_small_edit_never_approves_a_larger_one_on_the_same_file(tmp_path):
    from toolwire.agent.permissions import Decision, PermissionPolicy
    from toolwire.tools import default_registry
    from toolwire.tools.base import validate_arguments

    registry = default_registry()
    edit, multi = registry.get("edit_file"), registry.get("multi_edit")
    policy = PermissionPolicy()
    one_line = validate_arguments(edit, {"path": "a.txt", "old_string": "line 7", "new_string": "LINE 7"})
    policy.remember_always(edit, one_line, tmp_path)
    another_line = validate_arguments(edit, {"path": "a.txt", "old_string": "line 9", "new_string": "LINE 9"})
    assert policy.decide(edit, another_line) is Decision.AUTO
    whole_file = validate_arguments(edit, {"path": "a.txt", "old_string": "\n".join(f"line {i}" for i in range(200)),
                                           "new_string": ""})
    assert policy.decide(edit, whole_file) is Decision.ASK
    one = validate_arguments(multi, {"path": "a.txt", "edits": [{"old_string": "a", "new_string": "b"}]})
    policy.remember_always(multi, one, tmp_path)
    three = validate_arguments(multi, {"path": "a.txt", "edits": [{"old_string": x, "new_string": "y"} for x in "abc"]})
    assert policy.decide(multi, three) is Decision.ASK


def test_a_commit_of_whatever_is_staged_is_never_approved_in_advance(tmp_path):
    from toolwire.agent.permissions import Decision, PermissionPolicy
    from toolwire.tools import default_registry
    from toolwire.tools.base import validate_arguments

    commit = default_registry().get("git_commit")
    policy = PermissionPolicy()
    staged = validate_arguments(commit, {"message": "one"})
    policy.remember_always(commit, staged, tmp_path)
    assert policy.decide(commit, validate_arguments(commit, {"message": "two"})) is Decision.ASK
    named = validate_arguments(commit, {"message": "one", "paths": ["a.txt"]})
    policy.remember_always(commit, named, tmp_path)
    assert policy.decide(commit, validate_arguments(commit, {"message": "other", "paths": ["a.txt"]})) is Decision.AUTO
    assert policy.decide(commit, validate_arguments(commit, {"message": "x", "paths": ["a.txt", "b.txt"]})) is Decision.ASK


def test_actions_of_unknown_size_are_never_approved_in_advance(tmp_path):
    from toolwire.agent.permissions import Decision, PermissionPolicy
    from toolwire.tools import default_registry
    from toolwire.tools.base import validate_arguments

    registry = default_registry()
    (tmp_path / "src").mkdir()
    cases = [
        ("create_file", {"path": "c.txt", "content": "x\n", "overwrite": True}),
        ("edit_file", {"path": "a.txt", "old_string": "X", "new_string": "Y", "replace_all": True}),
        ("multi_edit", {"path": "a.txt", "edits": [{"old_string": "X", "new_string": "Y", "replace_all": True}]}),
        ("git_commit", {"message": "m", "paths": ["."]}),
        ("git_commit", {"message": "m", "paths": ["src"]}),
        ("git_add", {"paths": ["src/"]}),
    ]
    for name, arguments in cases:
        tool = registry.get(name)
        args = validate_arguments(tool, arguments)
        policy = PermissionPolicy()
        policy.remember_always(tool, args, tmp_path)
        assert policy.decide(tool, args) is Decision.ASK, (name, arguments)
