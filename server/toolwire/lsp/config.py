"""``workspace/didChangeConfiguration``: the LSP way settings change while the server runs.

``{"settings": {"toolwire": {...}}}`` (the shape VS Code's language client sends for
``synchronize.configurationSection``) changes the server's settings; without a
``toolwire`` object the section is pulled with ``workspace/configuration``. Each
session gets them for its NEXT turn (:meth:`toolwire.agent.host.SessionHost.change_settings`):
a running turn is never touched, the server never restarted. Secrets that arrive
this way are registered with the process's redactor first (by the host).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsprotocol import types

if TYPE_CHECKING:
    from toolwire.lsp.boot import ToolwireServer

__all__ = ["SECTION", "apply_configuration", "pull_section", "section_of", "warn"]

log = logging.getLogger(__name__)

#: The configuration section Toolwire's settings live under.
SECTION = "toolwire"


def section_of(settings: Any) -> dict[str, Any] | None:
    """The ``toolwire`` object inside ``didChangeConfiguration`` settings, or None when absent."""
    if isinstance(settings, dict):
        section = settings.get(SECTION)
        if isinstance(section, dict):
            return section
    return None


def warn(server: "ToolwireServer", text: str) -> None:
    """Tell the user (``window/showMessage``, warning) and log it; ``text`` has no secret left."""
    log.warning("%s", text)
    server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=f"Toolwire: {text}"))


async def apply_configuration(server: "ToolwireServer", raw: Any) -> None:
    """``workspace/didChangeConfiguration``: new server settings for every session's next turn.

    Args:
        server: The server.
        raw: The notification's ``settings``. Without a ``toolwire`` object in it,
            the section is asked for with ``workspace/configuration`` when the
            client supports that, else the notification is ignored.
    """
    sent = section_of(raw)
    if sent is None:
        sent = await pull_section(server)
    if sent is None:
        return
    server.host.change_settings(sent)  # refused keys are told as warnings


async def pull_section(server: "ToolwireServer") -> dict[str, Any] | None:
    """The ``toolwire`` section through ``workspace/configuration``, or None when the
    client cannot answer it."""
    caps = server.client_capabilities
    if not (caps and caps.workspace and caps.workspace.configuration):
        return None
    try:
        answer = await server.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)]))
    except Exception as exc:  # noqa: BLE001 - the client could not answer
        log.warning("workspace/configuration failed: %s", server.redactor.redact(str(exc)))
        return None
    value = answer[0] if isinstance(answer, list) and answer else None
    return value if isinstance(value, dict) else None
