"""Edit and git tools. ``default_registry()`` returns the built-in tools; ``session_tools()``
every tool a session could offer (the built-in ones, then the editor tools its client declared)."""

from __future__ import annotations

from toolwire.tools.base import Registry
from toolwire.tools.base import Tool
from toolwire.tools.edit import EditFile, MultiEdit
from toolwire.tools.editor_intel import EditorFeatures
from toolwire.tools.editor_tools import all_editor_tools, editor_tools
from toolwire.tools.files import CreateFile, DeleteFile, ReadFile, RenameFile
from toolwire.tools.git import GitAdd, GitBranch, GitCommit, GitLog, GitRestore, GitStatus
from toolwire.tools.gitdiff import GitDiff, GitShow
from toolwire.tools.listing import ListFiles
from toolwire.tools.plan import UpdatePlan
from toolwire.tools.searching import SearchFiles

__all__ = ["default_registry", "session_tools", "every_tool"]


def default_registry() -> Registry:
    """Every tool, reads first, then edits, then git (read-only before mutating), then the plan
    (a help the model can work without: the first built-in a smaller ``maxTools`` leaves out).

    Returns:
        A new :class:`Registry` of fresh tool instances: read_file, list_files, search_files, create_file,
        edit_file, multi_edit, delete_file, rename_file, git_status, git_diff,
        git_log, git_show, git_add, git_restore, git_commit, git_branch, update_plan.
    """
    return Registry(
        [
            ReadFile(),
            ListFiles(),
            SearchFiles(),
            CreateFile(),
            EditFile(),
            MultiEdit(),
            DeleteFile(),
            RenameFile(),
            GitStatus(),
            GitDiff(),
            GitLog(),
            GitShow(),
            GitAdd(),
            GitRestore(),
            GitCommit(),
            GitBranch(),
            UpdatePlan(),
        ]
    )


def session_tools(features: EditorFeatures | None = None) -> list[Tool]:
    """Every tool a session could offer, in the order of the ``maxTools`` budget
    (:mod:`toolwire.tools.selection`): the built-in tools of :func:`default_registry`, then
    the editor tools the client declared (:func:`toolwire.tools.editor_tools.editor_tools`:
    get_diagnostics, search_symbols, find_symbol; none for ``features`` None)."""
    return [*default_registry().tools(), *editor_tools(features)]


def every_tool() -> list[Tool]:
    """Every tool any session can have (the built-in and every editor tool): what the
    ``permissions`` setting and the system prompt may name."""
    return [*default_registry().tools(), *all_editor_tools()]
