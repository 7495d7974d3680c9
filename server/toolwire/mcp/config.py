"""MCP server configuration: the ``mcpServers`` setting, ``.vscode/mcp.json``, and the servers
one session uses.

An entry has the shape people write in VS Code's ``mcp.json``: ``{"type": "stdio", "command",
"args", "env", "envFile", "cwd"}`` or ``{"type": "http", "url", "headers"}`` (streamable HTTP),
plus Toolwire's optional ``tools`` allowlist (the server's tool names, in the order they are
offered). ``type`` may be left out when ``command`` (stdio) or ``url`` (http) says it.
Unknown keys and bad values are refused like every other setting; ``type: "sse"`` (the
older HTTP transport) is refused with a pointer to ``http``.

:func:`resolve_servers` turns the configured entries (the setting's, the workspace file's when
the user opted in, a front-end's such as ACP's ``session/new``) into the :class:`ServerSpec`
list a session starts: variables expanded, ``envFile`` read, ``cwd`` made absolute.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Union
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, ValidationInfo, field_validator
from pydantic.alias_generators import to_camel

from toolwire.mcp.files import WORKSPACE_FILE, read_env_file, read_jsonc
from toolwire.mcp.naming import clean
from toolwire.mcp.variables import Expander, uses_input
from toolwire.redaction import Redactor, redact_url

__all__ = ["MAX_SERVER_NAME", "StdioServerConfig", "HttpServerConfig", "ServerConfig", "ServerOrigin", "ServerSpec",
           "parse_servers", "register_secrets", "resolve_servers"]

#: Longest server name (characters).
MAX_SERVER_NAME = 64

#: Where an entry came from: the ``mcpServers`` setting, the workspace's ``.vscode/mcp.json``,
#: or a front-end (ACP's ``session/new``).
ServerOrigin = Literal["settings", "workspace", "acp"]

_WHERE = {"settings": "the mcpServers setting", "workspace": str(WORKSPACE_FILE),
          "acp": "the editor's mcpServers"}


class _Entry(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


#: A header's name: an HTTP token (RFC 9110 "Tokens").
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
#: A header's value: visible ASCII, spaces and tabs (what HTTP clients send).
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


class StdioServerConfig(_Entry):
    """A server Toolwire starts as a process and talks to over its stdin and stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict, repr=False)
    env_file: str | None = None
    cwd: str | None = None
    tools: list[str] | None = None

    @field_validator("command", "args", "env_file", "cwd")
    @classmethod
    def _no_nul(cls, value: Any, info: ValidationInfo) -> Any:
        """No NUL character: a process cannot be given one (the value is never quoted)."""
        if any("\0" in text for text in ([value] if isinstance(value, str) else value or [])):
            raise ValueError(f"{to_camel(info.field_name or '')} must not contain a NUL character")
        return value

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        """Names a process environment can hold, values without NUL (values never quoted)."""
        for name, text in value.items():
            if not name or "=" in name or "\0" in name:
                raise ValueError("env: a variable name must not be empty nor contain '=' or a NUL character")
            if "\0" in text:
                raise ValueError(f"env.{name} must not contain a NUL character")
        return value


class HttpServerConfig(_Entry):
    """A server reached over streamable HTTP at ``url``."""

    type: Literal["http"] = "http"
    url: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict, repr=False)
    tools: list[str] | None = None

    def __repr_args__(self) -> Any:
        """The repr's fields, the URL's user info and key-like query values masked (``headers`` left out)."""
        for name, value in super().__repr_args__():
            yield name, redact_url(value) if name == "url" else value

    @field_validator("headers")
    @classmethod
    def _header_shape(cls, value: dict[str, str]) -> dict[str, str]:
        """Names that are HTTP tokens, values of visible ASCII (values never quoted)."""
        for name, text in value.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError("headers: a header name must be letters, digits and !#$%&'*+.^_`|~- only")
            if not _HEADER_VALUE.fullmatch(text):
                raise ValueError(f"headers.{name} must be visible ASCII characters, spaces and tabs only")
        return value

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        """An http(s) URL with a host; one holding a ``${…}`` variable is checked once expanded."""
        if "${" not in value:
            _check_url(value)
        return value


def _check_url(url: str) -> None:
    """Raise ValueError unless ``url`` is an http:// or https:// URL with a host (never quoting it)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        host = None
    if not host or parts.scheme.lower() not in ("http", "https"):
        raise ValueError("url must be an http:// or https:// URL with a host (streamable HTTP)")


def _kind(raw: Any) -> str | None:
    if isinstance(raw, BaseModel):
        return getattr(raw, "type", None)
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind is None:
        return "stdio" if "command" in raw else "http" if "url" in raw else None
    return kind if isinstance(kind, str) else None


ServerConfig = Annotated[
    Union[Annotated[StdioServerConfig, Tag("stdio")], Annotated[HttpServerConfig, Tag("http")]],
    Discriminator(_kind),
]

_MODELS: dict[str, type[StdioServerConfig] | type[HttpServerConfig]] = {
    "stdio": StdioServerConfig, "http": HttpServerConfig}


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _entry_problems(model: type[_Entry], exc: ValidationError) -> list[str]:
    """One phrase per pydantic error, naming the key and the rule, never the value given."""
    keys = [f.alias or n for n, f in model.model_fields.items()]
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden" and len(err["loc"]) == 1:
            out.append(f"unknown key {loc!r}{_did_you_mean(loc, keys)}")
        elif err["type"] == "missing":
            out.append(f"{loc} is required")
        elif err["type"] == "value_error":
            out.append(err["msg"].removeprefix("Value error, "))
        else:
            out.append(f"{loc}: {err['msg']}")
    return out


def _parse_entry(name: str, raw: Any) -> StdioServerConfig | HttpServerConfig:
    """One entry, validated strictly (a value of the wrong JSON type is refused, never converted).

    Raises:
        ValueError: ``server 'NAME': …`` saying what is wrong, never quoting a value.
    """
    if isinstance(raw, (StdioServerConfig, HttpServerConfig)):
        return raw
    if not isinstance(raw, dict):
        raise ValueError(f"server {name!r} must be an object, not {type(raw).__name__}")
    kind = raw.get("type")
    if kind == "sse":
        raise ValueError(f"server {name!r}: type 'sse' (the older HTTP+SSE transport) is not supported; "
                         f"use \"type\": \"http\" (streamable HTTP)")
    if kind is not None and kind not in _MODELS:
        raise ValueError(f"server {name!r}: type must be 'stdio' or 'http'")
    kind = _kind(raw)
    if kind is None:
        raise ValueError(f"server {name!r} needs a command (stdio) or a url (http)")
    model = _MODELS[kind]
    try:
        return model.model_validate(raw, strict=True)
    except ValidationError as exc:
        raise ValueError(f"server {name!r}: {', '.join(_entry_problems(model, exc))}") from None


def _name_problem(name: str) -> str | None:
    if not name:
        return "a server name must not be empty"
    if len(name) > MAX_SERVER_NAME:
        return f"server name {name[:24]!r}… is longer than {MAX_SERVER_NAME} characters"
    cleaned = clean(name)
    if "__" in cleaned or cleaned.endswith("_"):
        shown = f" (as {cleaned!r}: each character outside [A-Za-z0-9_-] becomes '_')" if cleaned != name else ""
        return (f"server name {name!r}{shown} must not contain '__' nor end with '_': its tools are named "
                "mcp__<server>__<tool>")
    return None


def parse_servers(raw: Any) -> dict[str, StdioServerConfig | HttpServerConfig]:
    """Validate an ``mcpServers`` object (name → entry), keeping its order.

    A name is 1 to :data:`MAX_SERVER_NAME` characters; cleaned (:func:`toolwire.mcp.naming.clean`)
    it must not contain ``__`` nor end with ``_`` (the tool names ``mcp__<server>__<tool>`` must
    say where the server's name ends), nor equal another server's cleaned name.

    Raises:
        ValueError: one sentence per refused entry, joined by ``; ``; secrets (``env`` and
            ``headers`` values, the URL) are never quoted.
    """
    if not isinstance(raw, dict):
        raise ValueError(f"must be an object of servers by name, not {type(raw).__name__}")
    servers: dict[str, StdioServerConfig | HttpServerConfig] = {}
    problems: list[str] = []
    seen: dict[str, str] = {}
    for name, entry in raw.items():
        problem = _name_problem(name)
        if problem is None and clean(name) in seen:
            problem = f"servers {seen[clean(name)]!r} and {name!r} have the same tool names (mcp__{clean(name)}__…); rename one"
        if problem is not None:
            problems.append(problem)
            continue
        seen[clean(name)] = name
        try:
            servers[name] = _parse_entry(name, entry)
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("; ".join(problems))
    return servers


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """A server one session uses, ready to start.

    Attributes:
        name: As configured.
        config: The entry with its variables expanded; for stdio, ``envFile`` merged into ``env``
            (``env`` wins; ``env_file`` is then None) and ``cwd`` absolute (default: the workspace).
        origin: Where the entry came from (:data:`ServerOrigin`).
        key: A stable hash of the name and the expanded config: sessions share a running server
            when their specs' keys are equal.
        secrets: The values ``${env:NAME}`` expanded to (registered as secrets: they may sit in
            ``args`` or the URL, where nothing else marks them).
    """

    name: str
    config: StdioServerConfig | HttpServerConfig
    origin: ServerOrigin
    key: str
    secrets: tuple[str, ...] = field(default=(), repr=False)


def _spec_key(name: str, config: StdioServerConfig | HttpServerConfig) -> str:
    text = json.dumps([name, config.model_dump(mode="json", by_alias=True)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _expanded(name: str, config: StdioServerConfig | HttpServerConfig, origin: ServerOrigin, root: Path,
              expand: Expander) -> ServerSpec:
    """The spec of one entry.

    Raises:
        ValueError: its envFile cannot be read, its expanded URL is not http(s), or an expanded
            value breaks the entry's rules (a NUL, a header value not visible ASCII); never quoting a secret.
    """
    if isinstance(config, HttpServerConfig):
        url = expand(config.url)
        _check_url(url)
        resolved: StdioServerConfig | HttpServerConfig = config.model_copy(update={
            "url": url, "headers": {k: expand(v) for k, v in config.headers.items()}})
    else:
        env = {k: expand(v) for k, v in config.env.items()}
        if config.env_file is not None:
            path = root / expand(config.env_file)
            try:
                env = {**read_env_file(path), **env}
            except OSError as exc:
                raise ValueError(f"its envFile {str(path)!r} cannot be read: {exc.strerror or exc}") from None
        cwd = root / expand(config.cwd) if config.cwd is not None else root
        resolved = config.model_copy(update={
            "command": expand(config.command), "args": [expand(a) for a in config.args], "env": env,
            "env_file": None, "cwd": str(Path(os.path.abspath(cwd)))})
    try:  # what a variable or the envFile brought in meets the entry's rules too (a NUL, a header's characters)
        type(resolved).model_validate(resolved.model_dump(by_alias=True))
    except ValidationError as exc:
        raise ValueError(f"once expanded, {', '.join(_entry_problems(type(resolved), exc))}") from None
    return ServerSpec(name=name, config=resolved, origin=origin, key=_spec_key(name, resolved),
                      secrets=tuple(dict.fromkeys(expand.secrets)))


def _each(raw: Any, where: str, warnings: list[str]) -> list[tuple[str, StdioServerConfig | HttpServerConfig]]:
    """The valid entries of the raw object ``raw``; each refused one is a warning."""
    if not isinstance(raw, Mapping):
        warnings.append(f"{where}: the servers must be an object of servers by name; none of them is started")
        return []
    found = []
    for name, entry in raw.items():
        try:
            found += list(parse_servers({str(name): entry}).items())
        except ValueError as exc:
            warnings.append(f"{where}: {exc}; that server is not started")
    return found


def _workspace_entries(root: Path, warnings: list[str]) -> list[tuple[str, StdioServerConfig | HttpServerConfig]]:
    """The servers of ``root``'s ``.vscode/mcp.json`` (none, without a warning, when it does not exist)."""
    path = root / WORKSPACE_FILE
    if not path.exists() and not path.is_symlink():
        return []
    try:
        data = read_jsonc(path)
    except (OSError, ValueError) as exc:
        warnings.append(f"{WORKSPACE_FILE} cannot be used: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}; "
                        f"none of its servers is started")
        return []
    if not isinstance(data, dict):
        warnings.append(f"{WORKSPACE_FILE} must be a JSON object with a \"servers\" object; none of its servers is started")
        return []
    if "servers" not in data:
        return []
    # VS Code's own keys: "dev" (watch/debug a server being developed), "gallery" and
    # "version" (where VS Code installed it from); they change nothing of how it runs.
    servers = data["servers"]
    if isinstance(servers, dict):
        servers = {name: ({k: v for k, v in entry.items() if k not in ("dev", "gallery", "version")}
                          if isinstance(entry, dict) else entry) for name, entry in servers.items()}
    return _each(servers, str(WORKSPACE_FILE), warnings)


def resolve_servers(configured: Mapping[str, StdioServerConfig | HttpServerConfig], *, root: Path,
                    workspace_file: bool, extra: Mapping[str, Any] | None = None,
                    origin_extra: ServerOrigin = "acp", env: Mapping[str, str] = os.environ,
                    home: str | None = None) -> tuple[list[ServerSpec], list[str]]:
    """The servers a session in ``root`` uses, and the warnings for the user.

    Args:
        configured: The ``mcpServers`` setting (parsed).
        root: The session's folder: ``${workspaceFolder}``, the base of a relative ``cwd`` or
            ``envFile``, the default ``cwd``, and where ``.vscode/mcp.json`` is read.
        workspace_file: Also read ``.vscode/mcp.json`` (the ``mcpWorkspaceServers`` setting).
        extra: Raw entries from a front-end (ACP's ``session/new``), parsed here.
        origin_extra: The origin of ``extra``'s entries.
        env: Where ``${env:NAME}`` is read.
        home: ``${userHome}`` (default: the user's home folder).

    Returns:
        The specs in order: the setting's entries, then the workspace file's, then ``extra``'s;
        and the warnings, one sentence each, never quoting a secret: a refused entry of the
        workspace file or ``extra`` (the others are still used), a name already used (the later
        entry is skipped), an entry whose envFile cannot be read or whose URL is not http(s),
        and ONE warning naming every server skipped for using ``${input:…}``.
    """
    warnings: list[str] = []
    candidates: list[tuple[str, StdioServerConfig | HttpServerConfig, ServerOrigin]] = [
        (name, config, "settings") for name, config in configured.items()]
    if workspace_file:
        candidates += [(n, c, "workspace") for n, c in _workspace_entries(root, warnings)]
    if extra:
        candidates += [(n, c, origin_extra) for n, c in _each(extra, _WHERE[origin_extra], warnings)]
    expand_home = home if home is not None else str(Path.home())
    specs: list[ServerSpec] = []
    taken: dict[str, tuple[str, ServerOrigin]] = {}  # cleaned name -> (name, origin)
    asking: list[str] = []
    for name, config, origin in candidates:
        if clean(name) in taken:
            first, first_origin = taken[clean(name)]
            clash = (f"{_WHERE[first_origin]} has a server of that name already" if first == name else
                     f"its tools would have the names of {first!r}'s of {_WHERE[first_origin]} (mcp__{clean(name)}__…)")
            warnings.append(f"MCP server {name!r} of {_WHERE[origin]} is not started: {clash}")
            continue
        taken[clean(name)] = (name, origin)
        if uses_input(config):
            asking.append(name)
            continue
        try:
            specs.append(_expanded(name, config, origin, root, Expander(root, expand_home, env)))
        except ValueError as exc:
            warnings.append(f"MCP server {name!r} is not started: {exc}")
    if asking:
        names = ", ".join(repr(n) for n in asking)
        warnings.append(f"MCP server{'s' if len(asking) > 1 else ''} {names} {'are' if len(asking) > 1 else 'is'} "
                        "not started: ${input:…} variables are VS Code's own prompts, which Toolwire cannot show; "
                        "give the value in env or envFile, or as ${env:NAME}")
    return specs, warnings


def register_secrets(redactor: Redactor, specs: Iterable[ServerSpec]) -> None:
    """Register the secrets of ``specs`` with ``redactor``: env values (``add_env``), header
    values (``add_header``), the URL (``add_url``) and what ``${env:…}`` expanded to (``add``)."""
    for spec in specs:
        config = spec.config
        if isinstance(config, HttpServerConfig):
            redactor.add_url(config.url)
            for name, value in config.headers.items():
                redactor.add_header(name, value)
        else:
            for name, value in config.env.items():
                redactor.add_env(name, value)
        for value in spec.secrets:
            redactor.add(value)
