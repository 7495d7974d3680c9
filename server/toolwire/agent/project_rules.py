"""Project rules: the instructions a workspace gives the model (``AGENTS.md`` and its cousins).

* The root file is the workspace's ``AGENTS.md`` or, when there is none, the first that
  exists of :data:`ROOT_FILES`. It is read when the session opens and again when each
  turn starts, and appended to the base system prompt as a block of its own
  (:meth:`ProjectRules.prompt_block`); the system prompt is set at turn start only, so
  every request of a turn carries the same one. The watchers report a change of it
  between turns (:meth:`ProjectRules.read_root` from the host's watcher callback), so
  the front-end hears of it (a ``session_info`` update) before the next turn uses it.
* A nested ``AGENTS.md`` (in a folder below the root) is read the first time a tool of
  the session names a path in or below its folder; its text is added to that call's
  result (:meth:`ProjectRules.nested_for`), once per session, as a block headed
  ``Instructions from sub/AGENTS.md (apply to files under sub/):``. Every such file
  between the root and the path is added, outermost first.
* What the editor shows is what is read: an open document's unsaved text counts, and a
  file created in the editor but not saved yet exists (through the session's
  :class:`~toolwire.workspace.documents.Documents`; ACP sessions read the disk, their
  client's buffers reaching the server one file at a time). A folder, a file that
  leaves the workspace through a symlink or a path inside ``.git`` is not read.
* Bounded: :data:`LIMIT` bytes in all, root and nested together. What does not fit is
  cut at the end, with a marker naming the file, its size and how much is shown.
* Rules are data from the workspace: their text only ever reaches the model, marked as
  the project's, never a setting, a permission or anything Toolwire acts on.

With the ``projectInstructions`` setting false nothing is read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from toolwire.workspace.documents import Documents, NoOpenDocuments
from toolwire.workspace.errors import ToolError
from toolwire.workspace.paths import is_inside, resolve_path

__all__ = ["LIMIT", "NESTED_FILE", "ROOT_FILES", "ProjectRules", "RulesFile", "RulesSource", "nested_header",
           "root_header"]

#: The root rules file, in order of preference: the first that exists is read.
ROOT_FILES = ("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md", ".cursorrules", ".clinerules")
#: The name of a nested rules file.
NESTED_FILE = "AGENTS.md"
#: Bytes (UTF-8) of rules text given to the model in all, root and nested together (32 KiB).
LIMIT = 32 * 1024
#: Bytes of the budget a cut file keeps for its marker.
MARKER_ROOM = 200


@dataclass(slots=True, frozen=True)
class RulesFile:
    """A rules file the model is given (the wire's ``instructions`` entries).

    Attributes:
        path: Workspace-relative, ``/`` between folders.
        bytes: Size of its whole text, in UTF-8 bytes (as the editor shows it).
        truncated: Only part of it reached the model (:data:`LIMIT`).
    """

    path: str
    bytes: int
    truncated: bool

    def to_wire(self) -> dict[str, object]:
        """``{"path", "bytes", "truncated"}``."""
        return {"path": self.path, "bytes": self.bytes, "truncated": self.truncated}


@dataclass(slots=True, frozen=True)
class RulesSource:
    """Where a session's rules are read from.

    Attributes:
        root: The workspace folder (absolute, resolved).
        documents: The editor's buffers (an open one is read instead of the disk).
        enabled: The ``projectInstructions`` setting: False reads nothing.
        excluded: The ``modelExclude`` rule (workspace-relative path → the pattern that keeps
            it from the model, or None); an excluded rules file is not read.
    """

    root: Path
    documents: Documents = field(default_factory=NoOpenDocuments)
    enabled: bool = True
    excluded: Callable[[str], str | None] | None = None


def root_header(path: str) -> str:
    """The line that opens the root file's block in the system prompt."""
    return (f"Instructions from {path} (the project's own rules, read from the workspace, not from Toolwire; "
            "apply to the whole workspace):")


def nested_header(folder: str) -> str:
    """The line that opens a nested file's block in a call's result (``folder`` ends with ``/``)."""
    return f"Instructions from {folder}{NESTED_FILE} (apply to files under {folder}):"


def _cut(path: str, text: str, size: int, budget: int) -> tuple[str, bool]:
    """``text`` within ``budget`` UTF-8 bytes; a cut one ends with a marker naming ``path``."""
    data = text.encode("utf-8")
    if len(data) <= budget and len(data) == size:
        return text, False
    # the marker's room is kept out of the budget, so text and marker together fit it
    shown = data[: max(0, budget - MARKER_ROOM)].decode("utf-8", "ignore")  # never half a character
    kept = len(shown.encode("utf-8"))
    marker = (f"[... {path} cut: it is {size} bytes and {kept} are shown; project instructions are limited to "
              f"{LIMIT // 1024} KiB in all ...]")
    return (shown.rstrip("\n") + "\n" + marker) if shown else marker, True


def _read(source: RulesSource, rel: str) -> tuple[str, int] | None:
    """The text of the workspace file ``rel`` as the editor shows it, at most :data:`LIMIT`
    bytes of it, and the size of the whole; None when there is no such readable file (or
    ``modelExclude`` keeps it, or the file it links to, from the model)."""
    try:
        found = resolve_path(source.root, rel)
    except (ToolError, OSError, ValueError):  # outside the workspace, in .git, unresolvable
        return None
    resolved = found.resolved
    if source.excluded is not None:
        target = resolved.relative_to(Path(source.root).resolve()).as_posix()
        if source.excluded(rel) is not None or source.excluded(target) is not None:
            return None
    try:
        doc = source.documents.get(resolved)
    except ToolError:  # a buffer the editor cannot serve now: the disk copy
        doc = None
    if doc is not None:
        return doc.text, len(doc.text.encode("utf-8"))
    try:
        if not resolved.is_file():
            return None
        with resolved.open("rb") as fh:
            data = fh.read(LIMIT + 4)  # a character cut at LIMIT is dropped whole
            size = max(len(data), fh.seek(0, 2))
    except OSError:
        return None
    text = data.decode("utf-8", "replace").removeprefix("\ufeff")
    return text, size if len(data) > LIMIT else len(text.encode("utf-8"))


def _is_folder(path: Path) -> bool:
    """True when ``path`` is a folder; False for anything the system refuses to look at
    (a name over the file system's limit, a folder it may not read)."""
    try:
        return path.is_dir()
    except OSError:
        return False


@dataclass(slots=True, eq=False)
class ProjectRules:
    """One session's project rules: the root file in force, the nested files given so far.

    Attributes:
        root_file: The root rules file (None: none exists, or the setting is off).
        root_text: What of it the system prompt carries (cut to what fits).
        nested: Nested files given to the model, by folder (``"sub/"``), in order.
        nested_bytes: Bytes of nested text given so far (counted against :data:`LIMIT`).
        announced: The list the front-end was last told (``session/new``, ``session_info``).
        given_in: By folder, the turn and the call whose result carried its block, and the
            bytes it took (:meth:`forget_turn`, :meth:`forget_calls`).
    """

    root_file: RulesFile | None = None
    root_text: str = ""
    nested: dict[str, RulesFile] = field(default_factory=dict)
    nested_bytes: int = 0
    announced: tuple[RulesFile, ...] = ()
    given_in: dict[str, tuple[str | None, str | None, int]] = field(default_factory=dict)

    def listing(self) -> tuple[RulesFile, ...]:
        """The files the model is given: the root file first, then the nested ones in the order read."""
        return ((self.root_file,) if self.root_file is not None else ()) + tuple(self.nested.values())

    def read_root(self, source: RulesSource) -> None:
        """Read the root rules file again (session start, turn start, a watcher report)."""
        self.root_file, self.root_text = None, ""
        if not source.enabled:
            return
        for rel in ROOT_FILES:
            found = _read(source, rel)
            if found is None:
                continue
            text, size = found
            self.root_text, truncated = _cut(rel, text, size, LIMIT - self.nested_bytes)
            self.root_file = RulesFile(rel, size, truncated)
            return

    def prompt_block(self) -> str:
        """What the system prompt carries after the base prompt: ``""`` without a root file."""
        if self.root_file is None:
            return ""
        return f"{root_header(self.root_file.path)}\n{self.root_text.rstrip()}"

    def nested_for(self, source: RulesSource, paths: list[Path], turn: str | None = None,
                   call: str | None = None) -> str | None:
        """The blocks of the nested rules files a call touching ``paths`` is the first to reach.

        Args:
            source: Where they are read from.
            paths: The absolute, resolved paths the call names (those outside the workspace are skipped).
            turn: The turn the call belongs to (for :meth:`forget_turn`).
            call: The call's id (for :meth:`forget_calls`).

        Returns:
            The blocks, outermost folder first, separated by a blank line; None when there is none.
        """
        if not source.enabled:
            return None
        real = Path(source.root).resolve()
        blocks: list[str] = []
        for path in paths:
            if not is_inside(path, real) or path == real or ".." in path.parts:
                continue  # outside, the root, or a path the tools refuse (left unresolved: sub/../..)
            parts = path.relative_to(real).parts
            folders = [parts[:n] for n in range(1, len(parts))]
            if _is_folder(path):
                folders.append(parts)
            for folder in folders:
                name = "/".join(folder) + "/"
                if name in self.nested:
                    continue
                rel = name + NESTED_FILE
                found = _read(source, rel)
                if found is None:
                    continue
                text, size = found
                used = len(self.root_text.encode("utf-8")) if self.root_file is not None else 0
                shown, truncated = _cut(rel, text, size, LIMIT - used - self.nested_bytes)
                self.nested[name] = RulesFile(rel, size, truncated)
                self.given_in[name] = (turn, call, len(shown.encode("utf-8")))
                self.nested_bytes += self.given_in[name][2]
                blocks.append(f"{nested_header(name)}\n{shown.rstrip()}")
        return "\n\n".join(blocks) or None

    def forget_turn(self, turn: str) -> None:
        """Turn ``turn`` left the conversation (undone and forgotten): the nested files its
        calls carried are given again to the next call that reaches their folders."""
        self._forget([name for name, (given, _, _) in self.given_in.items() if given == turn])

    def forget_calls(self, calls: list[str]) -> None:
        """The results of ``calls`` were dropped from the history (the context window's
        shrinking rule): the nested files they carried are given again to the next call
        that reaches their folders."""
        dropped = set(calls)
        self._forget([name for name, (_, call, _) in self.given_in.items() if call in dropped])

    def _forget(self, names: list[str]) -> None:
        for name in names:
            self.nested_bytes -= self.given_in.pop(name)[2]
            del self.nested[name]

    def take_change(self) -> tuple[RulesFile, ...] | None:
        """The list, when it differs from the one the front-end was last told (which it now is); else None."""
        now = self.listing()
        if now == self.announced:
            return None
        self.announced = now
        return now
