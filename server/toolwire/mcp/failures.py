"""Why a server's run ended, in the one sentence its status carries (``error``).

The sentences (protocol.md, "MCP servers' lifecycle and states"): ``command not found: x``,
``working folder not found: /w``, ``working folder is not a folder: /w``, ``cannot run x:
Permission denied``, ``cannot run /bin: it is a folder``, ``exited during start (code 1)``,
``exited (signal 9)``, ``did not start within 30 s`` (told by the connection at its deadline),
``http://host/mcp answered HTTP 401 Unauthorized``, ``cannot reach http://host/mcp: …``, ``the
connection to http://host/mcp was lost``, ``initialize failed: …``, ``tools/list failed: …``
(an error answer), ``tools/list answered an invalid ListToolsResult (2 problems):
tools.12.inputSchema.properties: Input should be a valid dictionary`` (an answer MCP's types
refuse). URLs have their user info and key-like query values masked; the caller removes the
other secrets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import anyio
import httpx2
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from toolwire.mcp.config import HttpServerConfig, StdioServerConfig
from toolwire.redaction import redact_url

__all__ = ["RunEnd", "reason"]


@dataclass(frozen=True, slots=True)
class RunEnd:
    """How a run that Toolwire did not stop ended.

    Attributes:
        gone: The server went away by itself (its process exited, its stream ended).
        ready: It had been ready.
        returncode: A stdio server's exit status (negative: the signal), None when unknown.
        http_error: The first HTTP error status of the start (``"401 Unauthorized"``).
        failure: What was raised, if anything (exception groups are looked into).
        step: The request of the start under way when it failed (``initialize``, ``tools/list``).
    """

    gone: bool
    ready: bool
    returncode: int | None = None
    http_error: str | None = None
    failure: BaseException | None = None
    step: str = "initialize"


def reason(config: StdioServerConfig | HttpServerConfig, end: RunEnd) -> str:
    """The sentence for ``end`` of a server configured as ``config``."""
    if end.gone and isinstance(config, StdioServerConfig):
        during = " during start" if not end.ready else ""
        if end.returncode is None:
            return f"closed its output{during}"
        how = f"code {end.returncode}" if end.returncode >= 0 else f"signal {-end.returncode}"
        return f"exited{during} ({how})"
    if isinstance(config, HttpServerConfig):
        url = redact_url(config.url)
        if end.http_error is not None:
            return f"{url} answered HTTP {end.http_error}"
        if end.gone or end.failure is None:
            return f"the connection to {url} was lost"
    leaf = _leaf(end.failure)
    if isinstance(config, StdioServerConfig) and isinstance(leaf, OSError):
        if isinstance(leaf, FileNotFoundError) and config.cwd is not None and leaf.filename == config.cwd:
            return f"working folder not found: {config.cwd}"
        if isinstance(leaf, NotADirectoryError) and config.cwd is not None and leaf.filename == config.cwd:
            return f"working folder is not a folder: {config.cwd}"
        if isinstance(leaf, PermissionError) and os.path.isdir(os.path.join(config.cwd or "", config.command)):
            return f"cannot run {config.command}: it is a folder"
        if isinstance(leaf, FileNotFoundError):
            return f"command not found: {config.command}"
        return f"cannot run {config.command}: {leaf.strerror or leaf}"
    if isinstance(leaf, httpx2.HTTPError) and isinstance(config, HttpServerConfig):
        return f"cannot reach {redact_url(config.url)}: {leaf}"
    if isinstance(leaf, MCPError):
        return f"{end.step} failed: {leaf.message}"
    if isinstance(leaf, ValidationError):
        first = leaf.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(answer)"
        count = leaf.error_count()
        return (f"{end.step} answered an invalid {leaf.title} ({count} problem{'s' if count > 1 else ''}): "
                f"{where}: {first['msg']}")
    return f"{type(leaf).__name__}: {leaf}" if leaf is not None else "the server went away"


def _leaf(exc: BaseException | None) -> BaseException | None:
    """The first exception inside (nested) exception groups that is not a cancellation."""
    while isinstance(exc, BaseExceptionGroup):
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (inner or list(exc.exceptions))[0]
    return exc
