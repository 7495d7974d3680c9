"""Server settings: one model, every field defaulted, camelCase on the wire.

Settings reach the server as LSP ``initializationOptions`` (and, per session, as
``toolwire/session/new`` params, and from ``toolwire run --settings``). They are
strict: an unknown key or a bad value is never silently replaced. Each front-end
reports what :func:`parse_settings` refuses: the CLI exits 2, ``session/new``
answers InvalidParams, ``initialize`` sends ``window/showMessage`` (the refused
entries are then not applied; everything else is).
"""

from __future__ import annotations

import difflib
from urllib.parse import urlsplit
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from toolwire.mcp.config import ServerConfig, parse_servers
from toolwire.mcp.naming import PREFIX as MCP_PREFIX, split_key
from toolwire.redaction import redact_url
from toolwire.workspace.model_exclude import DEFAULT_PATTERNS, pattern_problem

PermissionMode = Literal["auto", "ask", "deny"]


class Settings(BaseModel):
    """Everything configurable, with its default (protocol.md, "Settings")."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")
    model: str = Field("replay", description=(
        "Model spec: replay, replay:SCRIPT, openai:MODEL (Chat Completions) or openai-responses:MODEL (the "
        "Responses API)."))
    base_url: str | None = Field(None, description=(
        "OpenAI-compatible endpoint for openai: and openai-responses: models."))
    api_key: str | None = Field(None, repr=False, description="API key; default from TOOLWIRE_API_KEY or OPENAI_API_KEY.")
    temperature: float | None = Field(0.0, ge=0.0, le=2.0, description=(
        "Sampling temperature, sent as the request's temperature; null: not sent (the endpoint's default applies)."))
    stream_usage: bool | None = Field(True, description=(
        "Ask for token usage at the end of each streamed response (stream_options.include_usage); "
        "false or null: stream_options is not sent."))
    store: bool = Field(False, description=(
        "openai-responses: models: let the provider keep responses (store); false: nothing is kept, every "
        "request carries the history it needs, reasoning with its encrypted content."))
    reasoning_effort: str | None = Field(None, max_length=40, description=(
        "openai-responses: models: reasoning.effort (e.g. low, medium, high); null: not sent."))
    reasoning_summary: str | None = Field(None, max_length=40, description=(
        "openai-responses: models: reasoning.summary (auto, concise, detailed); null: not sent."))
    max_model_requests: int = Field(25, ge=1, le=200, description=(
        "Model requests per turn before the turn stops (max_turn_requests; the turn can then be continued)."))
    max_tools: int = Field(20, ge=1, le=128, description=(
        "Tools offered in one model request: the built-in tools first, in their fixed order, then tools from "
        "elsewhere; the rest are left out (named in one warning per session) and cannot be called. 128 is "
        "OpenAI's limit of tools per request."))
    tool_timeout: float = Field(60.0, gt=0, description="Seconds a tool call may run.")
    git_timeout: float = Field(30.0, gt=0, description="Seconds a git subprocess may run.")
    editor_timeout: float = Field(10.0, gt=0, le=600, description=(
        "Seconds the editor has to answer one question of the editor tools (get_diagnostics, search_symbols, "
        "find_symbol: toolwire/editor/* requests); a client that does not answer in time gives the call an "
        "editor_timeout error."))
    max_parallel_tools: int = Field(4, ge=1, le=64, description="Tool calls running at once.")
    result_limit: int = Field(5000, ge=200, description="Characters of a tool result sent to the model.")
    context_window: int = Field(128_000, ge=1000, description="The model's context window, in tokens.")
    tool_calling: Literal["native", "text"] = Field(
        "native", description="native: the API's tool calls; text: calls and results written as plain text."
    )
    permissions: dict[str, PermissionMode] = Field(
        default_factory=dict, description="Per-tool override: tool name -> auto | ask | deny."
    )
    model_retries: int = Field(3, ge=0, le=10, description=(
        "Retries of a model request that failed before any of its response arrived (HTTP 429, 5xx, connection "
        "failures), with exponential backoff from 1 s capped at 8 s, or the endpoint's Retry-After up to 60 s."))
    connect_timeout: float = Field(10.0, gt=0, le=600, description="Seconds to connect to the model endpoint.")
    read_timeout: float = Field(120.0, gt=0, le=3600, description=(
        "Seconds without any data from the model endpoint (before or during a response) before the request fails."))
    replay_log: str | None = Field(None, description="Replay models append every request to this file.")
    tool_call_log: str | None = Field(None, description="Opt-in JSONL log of tool calls.")
    allow_irreversible: bool = Field(False, description=(
        "Let the permission policy and allow-always rules run a change whose prior state the turn cannot record "
        "(it cannot be undone) without asking; by default such a change is always asked about."))
    project_instructions: bool = Field(True, description=(
        "Give the model the project's rules files: the root AGENTS.md (else CLAUDE.md, "
        ".github/copilot-instructions.md, .cursorrules, .clinerules) in the system prompt, a nested AGENTS.md "
        "with the first result of a call in its folder; false: none is read."))
    checkpoint_max_bytes: int = Field(64 * 1024 * 1024, ge=1, le=1024 * 1024 * 1024, description=(
        "Largest file (bytes) a turn's checkpoint keeps; changing a larger one cannot be undone."))
    ripgrep_path: str | None = Field(None, description=(
        "The rg executable the editor ships (the VS Code client sends VS Code's own); list_files and search_files "
        "use it when the server's environment and PATH have none."))
    model_exclude: list[str] = Field(default_factory=lambda: list(DEFAULT_PATTERNS), description=(
        "Gitignore-style globs of files kept from the model: listed, never read, searched or shown unless the "
        "user allows it for one call (an approval naming the file); [] excludes nothing."))
    diagnostics_wait: float = Field(1.5, ge=0, le=60, description=(
        "Seconds an edit of a file open in the editor waits for the editor's problems to settle (its first "
        "toolwire/editor/diagnosticsChanged for the file, then 250 ms without another) before its result names "
        "the new problems; when it runs out the result says 'problems may not be final'. 0: not waited for."))
    mcp_servers: dict[str, ServerConfig] = Field(default_factory=dict, description=(
        "MCP servers by name, in the order their tools are offered: {\"type\": \"stdio\", \"command\", \"args\", "
        "\"env\", \"envFile\", \"cwd\"} or {\"type\": \"http\", \"url\", \"headers\"} (streamable HTTP), each with an "
        "optional \"tools\" allowlist; ${workspaceFolder}, ${userHome} and ${env:NAME} are expanded."))
    mcp_workspace_servers: bool = Field(False, description=(
        "Also start the servers of the workspace's .vscode/mcp.json (its \"servers\" object); the VS Code client "
        "sends true only in a trusted workspace."))
    mcp_start_timeout: float = Field(30.0, gt=0, le=600, description=(
        "Seconds an MCP server has to start and list its tools before it is failed; a turn waits at most this "
        "long for servers still starting before its first model request."))
    mcp_call_timeout: float = Field(60.0, gt=0, le=3600, description=(
        "Seconds one MCP tools/call may run (instead of toolTimeout)."))
    session_retention_days: int = Field(30, ge=1, le=3650, description=(
        "Days a saved session is kept after it was last used (at most 200 per workspace, the least recently "
        "used removed first)."))
    image_input: Literal["auto"] | bool = Field("auto", description=(
        "Whether image parts are sent to the model: auto (the default) or true sends them, false never; an MCP "
        "image result the model is not sent is described in text."))

    def __repr_args__(self) -> Any:
        """The repr's fields, ``baseUrl``'s user info and key-like query values masked
        (``apiKey`` is left out: ``repr=False``)."""
        for name, value in super().__repr_args__():
            yield name, redact_url(value) if name == "base_url" and isinstance(value, str) else value

    @field_validator("base_url")
    @classmethod
    def _endpoint_url(cls, value: str | None) -> str | None:
        """An http(s) URL with a host and a valid port; the problem never quotes the value
        (it may hold a password or a key)."""
        if value is None:
            return None
        try:
            parts = urlsplit(value)
            host = parts.hostname
        except ValueError:  # e.g. an unclosed [ of an IPv6 address
            host = None
        if not host or parts.scheme.lower() not in ("http", "https"):
            raise ValueError("must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434/v1")
        try:
            port = parts.port
        except ValueError:
            port = 0
        if port == 0:
            raise ValueError("its port must be a number from 1 to 65535")
        return value

    @field_validator("model_exclude")
    @classmethod
    def _globs(cls, value: list[str]) -> list[str]:
        for pattern in value:
            problem = pattern_problem(pattern)
            if problem is not None:
                raise ValueError(problem)
        return value

    @field_validator("mcp_servers", mode="before")
    @classmethod
    def _servers(cls, value: Any) -> Any:
        """The entries validated by :func:`toolwire.mcp.config.parse_servers` (its problems never
        quote an ``env`` or ``headers`` value)."""
        return parse_servers(value)

    @field_validator("image_input", mode="before")
    @classmethod
    def _image_switch(cls, value: Any) -> Any:
        """``"auto"``, true or false, nothing else (one problem, not one per member of the union)."""
        if value is True or value is False or value == "auto":
            return value
        shown = repr(value)
        raise ValueError(f"must be \"auto\", true or false (got {shown if len(shown) <= 60 else shown[:60] + '…'})")

    @field_validator("permissions")
    @classmethod
    def _known_tools(cls, value: dict[str, PermissionMode]) -> dict[str, PermissionMode]:
        known = permission_keys()
        for name in value:
            if name.startswith(MCP_PREFIX):  # shape only: the servers and their tools are known later
                if split_key(name) is None:
                    raise ValueError(f"{name!r} is not an MCP permission key: use mcp__<server> or "
                                     "mcp__<server>__<tool> (names with each character outside [A-Za-z0-9_-] as '_')")
            elif name not in known:
                raise ValueError(f"unknown tool or group {name!r}{_did_you_mean(name, sorted(known))}; use a tool "
                                 f"name, <tool>.<action>, a group ({', '.join(GROUPS)}) or mcp__<server>[__<tool>]")
        return value


#: Permission groups (:mod:`toolwire.agent.permissions`): file-changing tools, mutating
#: git tools, read-only tools, anything else.
GROUPS = ("edits", "git", "read", "other")


def permission_keys() -> set[str]:
    """Every valid ``permissions`` key: tool names, ``<tool>.<action>`` for tools with an
    ``action`` argument (e.g. ``git_branch.switch``), and the :data:`GROUPS`."""
    from toolwire.tools import every_tool  # lazily: settings sit below every layer

    keys = set(GROUPS)
    for tool in every_tool():
        function = tool.definition()["function"]
        keys.add(function["name"])
        action = function.get("parameters", {}).get("properties", {}).get("action", {})
        for value in action.get("enum", []):
            keys.add(f"{function['name']}.{value}")
    return keys


#: Settings whose values are secrets (:mod:`toolwire.redaction`): never echoed in a problem.
SECRET_KEYS = ("apiKey", "api_key", "baseUrl", "base_url", "mcpServers", "mcp_servers")

#: The settings keys as they are written on the wire (camelCase).
KEYS: tuple[str, ...] = tuple(field.alias or name for name, field in Settings.model_fields.items())


def _did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _describe(err: dict[str, Any]) -> str:
    loc = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
        return f"unknown setting {loc!r}{_did_you_mean(loc, KEYS)}"
    value = repr(err.get("input"))
    value = value if len(value) <= 60 else value[:60] + "…"
    if err["loc"] and str(err["loc"][0]) in SECRET_KEYS:  # never echo a secret, even a bad one
        value = f"a value of type {type(err.get('input')).__name__}"
    if err["type"] == "value_error":  # our own validators say what they got
        return f"setting {loc}: {err['msg'].removeprefix('Value error, ')}"
    return f"setting {loc}: {err['msg']} (got {value})"


def parse_settings(raw: Any) -> tuple[Settings, list[str]]:
    """Validate settings strictly; refused entries are reported, never silently replaced.

    Args:
        raw: The options object from the client (any JSON value; None = defaults).

    Returns:
        The settings and the problems, one sentence per refused entry (an unknown
        key, with a suggestion when one is close; or a bad value, naming the
        setting, the rule and the value given), empty when everything was valid.
        When there are problems the settings hold every valid entry and leave the
        refused ones out; the caller must report the problems (CLI: exit 2,
        ``session/new``: InvalidParams, ``initialize``: ``window/showMessage``).
    """
    if raw is None:
        return Settings(), []
    if not isinstance(raw, dict):
        return Settings(), [f"settings must be a JSON object, not {type(raw).__name__}"]
    try:  # strict: a value of the wrong JSON type is refused, never converted ("0.5", true, 1 for a number or a switch)
        return Settings.model_validate(raw, strict=True), []
    except ValidationError as exc:
        errors = exc.errors()
    problems = [_describe(err) for err in errors]
    bad = {str(err["loc"][0]) for err in errors if err["loc"]}
    kept = {key: value for key, value in raw.items() if key not in bad}
    try:
        return Settings.model_validate(kept, strict=True), problems
    except ValidationError:
        return Settings(), problems
