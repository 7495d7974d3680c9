"""Edit and git tools. ``default_registry()`` returns the tools a session offers."""

from __future__ import annotations

from toolwire.tools.base import Registry
from toolwire.tools.edit import EditFile, MultiEdit
from toolwire.tools.files import CreateFile, DeleteFile, ReadFile, RenameFile
from toolwire.tools.git import GitAdd, GitBranch, GitCommit, GitLog, GitRestore, GitStatus
from toolwire.tools.gitdiff import GitDiff, GitShow
from toolwire.tools.listing import ListFiles
from toolwire.tools.searching import SearchFiles

__all__ = ["default_registry"]


def default_registry() -> Registry:
    """Every tool, reads first, then edits, then git (read-only before mutating).

    Returns:
        A new :class:`Registry` of fresh tool instances: read_file, list_files, search_files, create_file,
        edit_file, multi_edit, delete_file, rename_file, git_status, git_diff,
        git_log, git_show, git_add, git_restore, git_commit, git_branch.
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
        ]
    )
