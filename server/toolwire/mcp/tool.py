"""An MCP server's tool as a :class:`~toolwire.tools.base.Tool`: the scheduler validates, asks
about and runs it as it does the built-in tools.

Its name, description and input schema are the server's (the name as
:func:`toolwire.mcp.naming.offered_name` gives it), per instance. Arguments are validated
with ``jsonschema`` against the input schema (the dialect its ``$schema`` names, JSON Schema
2020-12 when none: MCP 2025-11-25 "Tools", ``inputSchema``); arguments that fail are never
sent. A ``$ref`` to another document is never fetched: such a schema leaves the checking to the
server. The tool touches no workspace path through Toolwire (:meth:`McpTool.paths` is empty),
so no lock, checkpoint or irreversible rule applies; ``read_only`` is False whatever the
server's ``readOnlyHint`` says (hints are never trusted to skip a question).
"""

from __future__ import annotations

import functools
import json
import logging
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel

from toolwire.mcp.naming import offered_name
from toolwire.redaction import shared
from toolwire.tools.base import ArgumentsInvalid, Tool, ToolContext, ToolResult, double_encoded
from toolwire.workspace.errors import bounded_message

if TYPE_CHECKING:
    import mcp_types

    from toolwire.mcp.connection import McpConnection

# The MCP SDK, its types and jsonschema are imported when a session first uses an MCP tool, not
# with this module: a server start without MCP servers never pays for them (tests/test_cold_start.py).

__all__ = ["McpArguments", "McpTool", "CALL_TIMEOUT", "IMAGE_INPUT", "MAX_PROBLEMS"]

log = logging.getLogger(__name__)

#: ``ToolContext.extra`` key: seconds one ``tools/call`` may take (the ``mcpCallTimeout`` setting).
CALL_TIMEOUT = "mcp_call_timeout"
#: ``ToolContext.extra`` key: the ``imageInput`` setting (``"auto"``, True or False).
IMAGE_INPUT = "image_input"
#: Validation problems named in one message; the rest are counted.
MAX_PROBLEMS = 8
_DEFAULT_TIMEOUT = 60.0  # mcpCallTimeout's default, for a call made outside a session


class McpArguments(BaseModel):
    """An MCP call's validated arguments, as the model sent them (defaults are the server's to fill)."""

    arguments: dict[str, Any]


class McpTool(Tool):
    """One tool a server lists.

    Args:
        connection: The running server (:class:`toolwire.mcp.connection.McpConnection`).
        listed: The tool as its ``tools/list`` gave it.
        hashed: Name it with the hash (:func:`toolwire.mcp.naming.offered_name`): its plain name is taken.

    Attributes:
        name: The name the model calls (``mcp__<server>__<tool>``, at most 64 characters).
        server: The server's name as configured.
        original: The tool's name on the server.
        description: The server's description (secrets removed, like its results').
        input_schema: The server's input schema (the ``parameters`` the model sees; secrets removed).
        annotations: The server's hints (MCP ``ToolAnnotations``, camelCase keys), None when none.
    """

    Args: ClassVar[type[BaseModel]] = McpArguments
    read_only: ClassVar[bool] = False

    def __init__(self, connection: McpConnection, listed: mcp_types.Tool, *, hashed: bool = False) -> None:
        self.connection = connection
        self.server = connection.name
        self.original = listed.name
        self.name = offered_name(self.server, listed.name, hashed=hashed)
        redactor = shared()  # a server may quote its own env or headers: its secrets never reach the model
        self.description = redactor.redact_content(listed.description or "")
        self.input_schema = redactor.redact_data(listed.input_schema)
        hints = listed.annotations.model_dump(by_alias=True, exclude_none=True) if listed.annotations else {}
        self.annotations = hints or None

    @functools.cached_property
    def _validator(self) -> Any:
        """The input schema's validator, made at the first call: a server may list thousands of
        tools, built again whenever its list changes, and checking a schema takes milliseconds."""
        return _validator(json.dumps(self.input_schema, sort_keys=True), self.name)

    def source(self) -> dict[str, str]:
        """``{"mcpServer", "tool"}``: where the tool comes from (``toolwire/tools/list``)."""
        return {"mcpServer": self.server, "tool": self.original}

    def hint(self, key: str) -> bool | None:
        """The server's ``key`` hint (``readOnlyHint``, ``destructiveHint``, …), None when not given."""
        value = (self.annotations or {}).get(key)
        return value if isinstance(value, bool) else None

    def definition(self, offered: Any = None) -> dict[str, Any]:  # type: ignore[override]
        """``{"type": "function", "function": {name, description, parameters}}``: the server's
        description and input schema as given (``offered`` is not used: the text is the server's)."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.input_schema}}

    def paths(self, args: BaseModel) -> list[str]:
        """No path: what the tool touches is the server's business, not a workspace path Toolwire locks."""
        return []

    def validate(self, arguments: dict[str, Any]) -> McpArguments:
        """The arguments checked against the input schema; an object or array sent as a JSON
        string is decoded where the schema wants one (then the decoded arguments are checked).

        Raises:
            ArgumentsInvalid: ``invalid arguments for NAME: path: message; ...`` (the
                validator's messages, at most :data:`MAX_PROBLEMS`).
        """
        if not isinstance(arguments, dict):
            raise ArgumentsInvalid(f"invalid arguments for {self.name}: (arguments): must be a JSON object")
        problems = self._problems(arguments)
        if problems:
            fixed = double_encoded(self.input_schema, arguments)
            if fixed is not None:  # what the model meant: its problems are the ones to name
                problems = self._problems(fixed)
                if not problems:
                    return McpArguments(arguments=fixed)
            shown = problems[:MAX_PROBLEMS]
            if len(problems) > len(shown):
                shown.append(f"and {len(problems) - len(shown)} more")
            raise ArgumentsInvalid(bounded_message(f"invalid arguments for {self.name}: {'; '.join(shown)}"))
        return McpArguments(arguments=arguments)

    def _problems(self, arguments: dict[str, Any]) -> list[str]:
        """One ``path: message`` per validation error, in the order of the arguments' paths."""
        if self._validator is None:
            return []
        try:
            errors = sorted(self._validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
        except Exception as exc:  # noqa: BLE001 - a schema the validator cannot follow (a $ref it cannot resolve)
            log.warning("%s: arguments not validated: the input schema cannot be used (%s: %s)", self.name,
                        type(exc).__name__, exc)
            return []
        return [f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {bounded_message(e.message)}"
                for e in errors]

    async def run(self, args: McpArguments, ctx: ToolContext) -> ToolResult:  # type: ignore[override]
        """Call the tool on its server; its answer mapped by :func:`toolwire.mcp.results.to_result`."""
        from toolwire.mcp.results import to_result

        timeout = ctx.extra.get(CALL_TIMEOUT, _DEFAULT_TIMEOUT)
        answer = await self.connection.call(self.original, args.arguments, timeout=timeout)
        limit = ctx.extra.get("result_limit")
        return to_result(answer, limit=limit if isinstance(limit, int) else None,
                         show_images=ctx.extra.get(IMAGE_INPUT, "auto") is not False)


@functools.lru_cache(maxsize=1024)
def _validator(schema_text: str, name: str) -> Any:
    """A validator of the schema ``schema_text`` (JSON) in its dialect, or None (logged) when it
    is not a valid schema: the server then checks the arguments itself. Kept per schema: checking
    one takes milliseconds, and a server's tools are built again whenever its list changes."""
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.validators import validator_for
    from referencing import Registry

    schema = json.loads(schema_text)
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        log.warning("%s: its input schema is not valid JSON Schema (%s); arguments are sent unchecked", name,
                    exc.message)
        return None
    # The schemas a ``$ref`` may name besides the input schema's own parts: none. Without a registry
    # jsonschema fetches a ``$ref`` URL itself (a blocking ``urlopen``, no timeout): a server's schema
    # would make Toolwire request any address, and hang its event loop on one that never answers.
    return cls(schema, registry=Registry())
