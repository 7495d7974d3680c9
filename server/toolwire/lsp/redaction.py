"""Keeping API keys out of what the server writes: logs and error messages.

:class:`Redactor` removes every key it has seen (from ``initializationOptions``,
``workspace/didChangeConfiguration``, ``session/new`` settings or the environment),
and anything that looks like one (``apiKey: "…"``, ``Bearer …``), from every log
record of the process and from turn error messages sent to the client. Kept apart
from :mod:`toolwire.lsp.config` so the server can install it before ``initialize``
without importing the settings models (see :mod:`toolwire.lsp.boot`).
"""

from __future__ import annotations

import logging
import os
import re

#: Environment variables an API key may come from (as the openai model reads them).
API_KEY_ENV = ("TOOLWIRE_API_KEY", "OPENAI_API_KEY")

#: Shortest value treated as a secret (shorter ones would redact ordinary words).
MIN_SECRET = 6

_KEY_VALUE = re.compile(r"""(?i)(api[_-]?key['"]?\s*[:=]\s*)(['"])(?:(?!\2).)*\2""")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s'\",}]+")


class Redactor(logging.Filter):
    """Removes secrets from text and from log records (attach it to log handlers).

    Every value given to :meth:`add` is replaced by ``***`` wherever it appears;
    ``apiKey: "…"`` / ``'api_key': '…'`` pairs and ``Bearer …`` tokens are masked
    even before their value is known (pygls logs a message before its handler runs).
    """

    def __init__(self) -> None:
        super().__init__()
        self._secrets: set[str] = set()
        for name in API_KEY_ENV:
            self.add(os.environ.get(name))

    def add(self, secret: str | None) -> None:
        """Remember a secret (values shorter than :data:`MIN_SECRET` are ignored)."""
        if secret and len(secret) >= MIN_SECRET:
            self._secrets.add(secret)

    def redact(self, text: str) -> str:
        """``text`` with every known secret and key-like value replaced by ``***``."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        text = _KEY_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}***{m.group(2)}", text)
        return _BEARER.sub(r"\1***", text)

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record's message (and traceback) without secrets; never drops it."""
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: keep the raw text
            message = str(record.msg)
        record.msg, record.args = self.redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
            record.exc_info = None  # formatted already; the handler uses exc_text
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True

    def install(self) -> None:
        """Attach to every handler of the root logger (once)."""
        for handler in logging.getLogger().handlers:
            if self not in handler.filters:
                handler.addFilter(self)
