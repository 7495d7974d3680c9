"""What a tool is, what it returns, and the registry the agent looks tools up in.

A tool is a class with a pydantic argument model (its JSON Schema is exactly what
the model sees), a few flags the scheduler and the permission policy read, and an
async ``run``; a tool whose schema is only known at run time (an MCP server's,
:mod:`toolwire.mcp.tool`) overrides :meth:`Tool.definition` and :meth:`Tool.validate`
per instance. A tool failure is a result (error as data): tools raise
:class:`ToolError` for expected failures and the runner turns it, or any other
exception, into a :class:`ToolResult` with ``ok=False``; nothing escapes the loop.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ValidationError

from toolwire.tools.descriptions import offered_description
from toolwire.tools.editor_intel import EditorIntel
from toolwire.tools.gitrepo import GitCache
from toolwire.tools.planmemo import PlanMemo
from toolwire.workspace.documents import Documents, NoOpenDocuments
from toolwire.workspace.errors import ToolError, bounded_message
from toolwire.workspace.model_exclude import ModelExclude, withheld
from toolwire.workspace.paths import WorkspacePath

__all__ = [
    "ToolError",
    "ImagePart",
    "ToolResult",
    "ToolContext",
    "Tool",
    "ArgumentsInvalid",
    "validate_arguments",
    "double_encoded",
    "Registry",
]


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image a tool returned, for the model (an image part, :mod:`toolwire.agent.conversation`).

    Attributes:
        mime_type: Its media type (``image/png``).
        data: Its bytes, base64-encoded (valid base64: checked by whoever made the part).
        size: How many bytes it is, decoded.
    """

    mime_type: str
    data: str
    size: int


@dataclass(slots=True)
class ToolResult:
    """The outcome of running one tool call.

    Attributes:
        ok: False when the tool failed.
        content: Text for the model (the tool message content).
        data: Structured result for the client (JSON-serializable), or None.
        error_code: Set when ``ok`` is False.
        instructions: Project rules the model is given with this result (nested
            ``AGENTS.md`` blocks, :mod:`toolwire.agent.project_rules`), after ``content``; None when none.
        images: Images the model is shown after the call's tool message, when it takes images
            (an MCP tool's, :mod:`toolwire.mcp.results`); the client sees them in ``data``, never here.
    """

    ok: bool
    content: str
    data: dict[str, Any] | None = None
    error_code: str | None = None
    instructions: str | None = None
    images: tuple[ImagePart, ...] = ()

    @classmethod
    def failure(cls, code: str, message: str, data: dict[str, Any] | None = None) -> "ToolResult":
        """A failed result whose content tells the model what went wrong (``message`` kept
        bounded: :func:`toolwire.workspace.errors.bounded_message`)."""
        return cls(ok=False, content=f"Error ({code}): {bounded_message(message)}", data=data, error_code=code)

    def to_wire(self) -> dict[str, Any]:
        """``{"ok", "content", "data", "errorCode", "instructions"?}`` for the client."""
        out = {"ok": self.ok, "content": self.content, "data": self.data, "errorCode": self.error_code}
        if self.instructions is not None:
            out["instructions"] = self.instructions
        return out


@dataclass(slots=True)
class ToolContext:
    """What a running tool may use.

    Attributes:
        root: The workspace folder (absolute, resolved). Paths in arguments are
            relative to it and must resolve inside it.
        documents: Open editor buffers (edits to open files go through them).
        git_timeout: Seconds a git subprocess may run before it is killed.
        extra: Room for later settings without changing signatures.
        write_listener: Told ``(resolved path, new bytes or None)`` right before
            a tool writes or deletes a file on disk (the file watcher uses it
            to ignore the server's own writes). Optional.
        git: Cached repository facts for the git tools (the session's cache,
            cleared when a turn starts or the tree changes; a fresh one by default).
        plans: Edit plans kept between an edit's approval and its run
            (:mod:`toolwire.tools.planmemo`; the session's, a fresh one by default).
        model_exclude: Files whose content is kept from the model unless the user
            allows it for one call (the ``modelExclude`` setting,
            :mod:`toolwire.workspace.model_exclude`; the default patterns by default).
        ripgrep: The ``rg`` the editor offers (setting ``ripgrepPath``), for
            :func:`toolwire.tools.engine.find_engine`; None by default.
        allowed_excluded: The excluded files (resolved absolute paths) the user allowed
            for this call: the approval named them (:mod:`toolwire.agent.exclusion`);
            empty otherwise.
        editor: The editor's intelligence (problems, symbols, definitions, references:
            :mod:`toolwire.tools.editor_intel`), bounded by ``editorTimeout``; None when the
            front-end has none (ACP, ``toolwire run``) or the client declared none of it.
    """

    root: Path
    documents: Documents = field(default_factory=NoOpenDocuments)
    git_timeout: float = 30.0
    extra: dict[str, Any] = field(default_factory=dict)
    write_listener: Callable[[Path, bytes | None], None] | None = None
    git: GitCache = field(default_factory=GitCache)
    plans: PlanMemo = field(default_factory=PlanMemo)
    model_exclude: ModelExclude = field(default_factory=ModelExclude)
    ripgrep: str | None = None
    allowed_excluded: frozenset[Path] = frozenset()
    editor: EditorIntel | None = None

    def offers(self, name: str) -> bool:
        """Whether the session's requests offer the tool ``name`` (``extra["offered"]``; True when
        the call has no session), so a result names only tools the model can call."""
        offered = self.extra.get("offered")
        return offered is None or name in offered

    def excluded(self, target: WorkspacePath) -> str | None:
        """The ``modelExclude`` pattern that keeps ``target`` from the model in this call, or
        None (not excluded, or allowed for this call)."""
        if target.resolved in self.allowed_excluded:
            return None
        return self.model_exclude.match_target(self.root, target)

    def refuse_excluded(self, target: WorkspacePath) -> None:
        """Stop a call before it reads a file kept from the model and not allowed for it.

        Raises:
            ToolError: ``excluded``, saying which pattern and what to do next.
        """
        pattern = self.excluded(target)
        if pattern is not None:
            raise ToolError("excluded", f"{withheld(target.rel, pattern)}: not read. The user is asked when a "
                                        "call names such a file; if they did not allow it, do without it or ask them.",
                            {"path": target.rel, "pattern": pattern})


class Tool(ABC):
    """Base class of every tool.

    Class attributes:
        name: The name the model calls.
        description: What the model reads about the tool.
        Args: The pydantic model of the arguments.
        read_only: True when the tool changes nothing (runs without asking by default).
        barrier: True when the tool affects the whole tree (commit, branch
            switch): it runs alone, after the calls before it.
        writes_tree: True when the tool changes working-tree files other than
            through the workspace layer (git restore, branch switch), so the
            workspace watcher must not report those changes as external.
        shows_content: True when the result may carry text of the files the path
            arguments name (read_file, git_diff, the edits' match errors): a call
            naming a file kept from the model (``modelExclude``) is asked about,
            even where the policy runs it unasked (:mod:`toolwire.agent.exclusion`).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[BaseModel]]
    read_only: ClassVar[bool] = False
    barrier: ClassVar[bool] = False
    writes_tree: ClassVar[bool] = False
    shows_content: ClassVar[bool] = False

    def paths(self, args: BaseModel) -> list[str]:
        """The workspace-relative paths the call touches (for per-path locks):
        the ``path`` and ``new_path`` arguments and every entry of ``paths``."""
        out = []
        for key in ("path", "new_path"):
            value = getattr(args, key, None)
            if isinstance(value, str):
                out.append(value)
        out.extend(p for p in getattr(args, "paths", None) or [] if isinstance(p, str))
        return out

    def validate(self, arguments: dict[str, Any]) -> BaseModel:
        """The arguments the model sent, validated for :meth:`run` (the scheduler calls it
        before anything else): :func:`validate_arguments` against :attr:`Args`.

        Raises:
            ArgumentsInvalid: with every failing field named.
        """
        return validate_arguments(self, arguments)

    def content_paths(self, args: BaseModel) -> list[str]:
        """The path arguments whose file a call may show the model or take out of
        ``modelExclude`` (:mod:`toolwire.agent.exclusion`): every path of a tool that
        ``shows_content``, none otherwise."""
        return self.paths(args) if self.shows_content else []

    @abstractmethod
    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        """Run the call. Raise :class:`ToolError` for expected failures."""

    @classmethod
    def definition(cls, offered: Collection[str] | None = None) -> dict[str, Any]:
        """The OpenAI-style tool definition: ``{"type": "function", "function": {name, description, parameters}}``;
        with ``offered`` (the names one request offers) its description names no other tool
        (:mod:`toolwire.tools.descriptions`)."""
        description = cls.description
        if offered is not None:
            description = offered_description(description, cls.name, offered, _known_names())
        return {
            "type": "function",
            "function": {
                "name": cls.name,
                "description": description,
                "parameters": cls.Args.model_json_schema(),
            },
        }


def _known_names() -> frozenset[str]:
    """The names of Toolwire's own tool classes (those a description may name)."""
    out: set[str] = set()
    stack = list(Tool.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("toolwire.") and isinstance(getattr(cls, "name", None), str):
            out.add(cls.name)
    return frozenset(out)


class ArgumentsInvalid(ValueError):
    """Arguments did not validate against the tool's model. ``message`` names the fields."""


def validate_arguments(tool: Tool, arguments: dict[str, Any]) -> BaseModel:
    """Validate ``arguments`` for ``tool``.

    An object or array argument sent double-encoded as a JSON string is decoded
    only where the schema expects an object or array and the decoded value then
    validates; a string argument whose content happens to be JSON stays a string.

    Raises:
        ArgumentsInvalid: with every failing field named.
    """
    try:
        return tool.Args.model_validate(arguments)
    except ValidationError as first:
        fixed = double_encoded(tool.Args.model_json_schema(), arguments)
        if fixed is not None:
            try:
                return tool.Args.model_validate(fixed)
            except ValidationError:
                pass
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}" for err in first.errors()
        )
        raise ArgumentsInvalid(f"invalid arguments for {tool.name}: {problems}") from None


def double_encoded(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any] | None:
    """``arguments`` with each string decoded from JSON where ``schema`` (a JSON Schema of an
    object) expects an object or an array and not a string, and the string is such JSON; None
    when no argument was decoded (validate the result again: the decoding is only a guess)."""
    props = schema.get("properties")
    if not isinstance(props, dict):
        return None
    changed = False
    out = dict(arguments)
    for key, value in arguments.items():
        if not isinstance(value, str) or key not in props:
            continue
        types = _types(props[key])
        if "string" in types or not types & {"object", "array"}:
            continue
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            continue
        if isinstance(decoded, (dict, list)):
            out[key] = decoded
            changed = True
    return out if changed else None


def _types(prop: Any) -> set[Any]:
    """The JSON types a property's schema allows (a ``$ref`` counts as an object), through one
    level of ``anyOf``/``oneOf``; empty when it says none."""
    if not isinstance(prop, dict):
        return set()
    out: set[Any] = set()
    alternatives = [prop]
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list):
            alternatives.extend(alt for alt in prop[key] if isinstance(alt, dict))
    for alt in alternatives:
        kind = alt.get("type")
        out.update(k for k in (kind if isinstance(kind, list) else [kind]) if isinstance(k, str))
        if "$ref" in alt:
            out.add("object")
    return out


class Registry:
    """The tools a session offers, by name, in a stable order."""

    def __init__(self, tools: list[Tool]) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._definitions: list[dict[str, Any]] | None = None

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def tools(self) -> list[Tool]:
        """The tools in registration order."""
        return list(self._tools.values())

    def definitions(self) -> list[dict[str, Any]]:
        """OpenAI-style definitions of every tool, for the model request (built once:
        the tools of a registry never change); no description names a tool the registry
        does not hold."""
        if self._definitions is None:
            self._definitions = [tool.definition(self._tools) for tool in self._tools.values()]
        return self._definitions
