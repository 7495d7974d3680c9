"""``workspace/didChangeConfiguration``: the LSP way settings change while the server runs.

``{"settings": {"toolwire": {...}}}`` (the shape VS Code's language client sends for
``synchronize.configurationSection``) changes the server's settings; without a
``toolwire`` object the section is pulled with ``workspace/configuration``. Each
session gets them for its NEXT turn (:meth:`toolwire.agent.host.SessionHost.change_settings`):
a running turn is never touched, the server never restarted. Secrets that arrive
this way are registered with the process's redactor first (by the host).

The functions are given the server as the narrow :class:`MessageWindow` and
:class:`ConfigurationClient`, never more of it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

if TYPE_CHECKING:
    from toolwire.agent.host import SessionHost
    from toolwire.redaction import Redactor

__all__ = ["SECTION", "apply_configuration", "pull_section", "section_of", "warn"]

log = logging.getLogger(__name__)

#: The configuration section Toolwire's settings live under.
SECTION = "toolwire"


class MessageWindow(Protocol):
    """Where a warning is shown to the user (a pygls server)."""

    def window_show_message(self, params: types.ShowMessageParams) -> None:
        """Send ``window/showMessage``."""


class ConfigurationClient(Protocol):
    """What applying changed settings needs of the server."""

    @property
    def host(self) -> "SessionHost":
        """The sessions, which take the settings for their next turn."""

    @property
    def client_capabilities(self) -> types.ClientCapabilities | None:
        """What the connected client declared in ``initialize``."""

    @property
    def redactor(self) -> "Redactor":
        """Keeps secrets out of the log."""

    def workspace_configuration_async(self, params: types.ConfigurationParams) -> Awaitable[Any]:
        """Send ``workspace/configuration`` and give its answer."""


def section_of(settings: Any) -> dict[str, Any] | None:
    """The ``toolwire`` object inside ``didChangeConfiguration`` settings, or None when absent."""
    if isinstance(settings, dict):
        section = settings.get(SECTION)
        if isinstance(section, dict):
            return section
    return None


def warn(server: MessageWindow, text: str) -> None:
    """Tell the user (``window/showMessage``, warning) and log it; ``text`` has no secret left."""
    log.warning("%s", text)
    server.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=f"Toolwire: {text}"))


async def apply_configuration(server: ConfigurationClient, raw: Any) -> None:
    """``workspace/didChangeConfiguration``: new server settings for every session's next turn.

    Args:
        server: The server, as far as settings go.
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


async def pull_section(server: ConfigurationClient) -> dict[str, Any] | None:
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
