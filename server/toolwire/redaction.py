"""One redaction for every secret the process is given (protocol.md, "Redaction").

A :class:`Redactor` knows the secrets Toolwire was given and replaces them by
:data:`REDACTED` (``***``) in text (messages, errors, log records) and in JSON data
(what a front-end sends). What counts as a secret:

* API keys (the ``apiKey`` setting; :data:`API_KEY_ENV`, the only variables of the
  inherited environment that are read as secrets: the environment is never
  redacted wholesale);
* of any URL (``baseUrl``, :data:`URL_ENV`, an MCP server's URL): its user info
  and the values of key-like query parameters (:func:`is_key_name`: ``key``,
  ``api-key``, ``token``, ``sig``, ``password``, …);
* header values the user configures (:meth:`Redactor.add_header`);
* the values of ``env`` entries the user configures for a subprocess
  (:meth:`Redactor.add_env`).

A registered value of :data:`MIN_SECRET` (8) or more characters is replaced
wherever it occurs (as written, JSON-escaped and percent-decoded). A shorter one is
replaced only in its structural place, where it cannot be an ordinary word: URL
user info (``http://***@host``), the query value (``?token=***``), the header
value (``X-Api-Key: ***``, ``"X-Api-Key": "***"``), ``NAME=***`` and
``"NAME": "***"`` of an env entry. URL user info and key-like query values are
masked in *every* URL, registered or not. Log records and error text
(:meth:`Redactor.redact`) also mask quoted key-like fields (``"apiKey": "…"``) and
``Bearer …`` credentials; content a client shows (:meth:`Redactor.redact_content`)
keeps them as the model or a file wrote them.

This module is a leaf (the standard library and :mod:`toolwire.secret_names`
only): every layer and front-end may use it. :func:`shared` is the process's
redactor, the one attached to its log handlers; the LSP server, the ACP agent,
``toolwire run`` and (later) the MCP hosting register what they are given with it.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from toolwire.secret_names import FIELD_NAMES, FIELD_SUFFIXES, KEY_NAMES, KEY_SUFFIXES, is_field_name, is_key_name

__all__ = ["API_KEY_ENV", "EXACT_FIELDS", "EXACT_METHODS", "FIELD_NAMES", "FIELD_SUFFIXES", "KEY_NAMES", "KEY_SUFFIXES",
           "MIN_SECRET", "REDACTED", "URL_ENV", "RedactingWriter", "Redactor", "is_field_name", "is_key_name",
           "redact_url", "shared"]

#: What a secret is replaced by.
REDACTED = "***"

#: Shortest registered value replaced wherever it occurs; shorter ones are replaced
#: only in their structural place (they could be ordinary words).
MIN_SECRET = 8

#: Environment variables an API key may come from (as the openai model reads them).
API_KEY_ENV = ("TOOLWIRE_API_KEY", "OPENAI_API_KEY")

#: Environment variables holding a URL Toolwire uses: the openai SDK reads the first
#: when ``baseUrl`` is not set, httpx the proxies (``http://user:pass@proxy:3128``).
#: Their user info and key-like query values are secrets.
URL_ENV = ("OPENAI_BASE_URL", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")

#: Fields sent exactly as written in every message (protocol.md, "Redaction"): the
#: tool-call arguments the model wrote (clients rebuild them from offsets, and the
#: model never saw a secret Toolwire was given; ACP calls them ``rawInput``).
EXACT_FIELDS = frozenset({"argumentsDelta", "argumentsText", "partialArguments", "arguments", "rawInput"})

#: Methods whose messages are sent exactly as written: they carry file contents to
#: write (LSP ``workspace/applyEdit``, ACP ``fs/write_text_file``).
EXACT_METHODS = frozenset({"workspace/applyEdit", "fs/write_text_file"})

# User info runs to the last "@" before the host: a password may hold a raw "@".
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^\s/?#\"'<>\\]+)@")
# A query (or fragment: OAuth's #access_token=) value ends at the next parameter, the
# fragment, white space or a quote, and
# before a ``:``, ``,``, ``.`` or ``)`` that ends the sentence ("…&token=***: refused").
_QUERY_VALUE = re.compile(r"([?&;#]([A-Za-z0-9_.\-%\[\]]+)=)((?:[^&#\s\"'<>\\,;:.)\]]|[:.,)\]](?=[^\s&#\"'<>]))+)")
_FIELD_VALUE = re.compile(r"""(?<![\w-])(["']?)([A-Za-z][\w-]*)\1(\s*[:=]\s*)(["'])((?:(?!\4)[^\\]|\\.)*)\4""")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s'\",;}\]]+")
_AUTHORIZATION = re.compile(r"""(?i)\b((?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:[a-z]+\s+)?)[^\s"',;}\]]+""")


def redact_url(url: str) -> str:
    """``url`` with its user info and key-like query values replaced by ``***``
    (nothing needs to be registered: every URL is treated so)."""
    return Redactor(env={}).redact(url)


def _forms(value: str) -> set[str]:
    """The forms a secret may take in text: as given, JSON-escaped, percent-decoded."""
    forms = {value, json.dumps(value)[1:-1], unquote(value)}
    return {form for form in forms if form}


class Redactor(logging.Filter):
    """Removes secrets from text, JSON data and log records (a filter on log handlers).

    Args:
        env: Where :data:`API_KEY_ENV` and :data:`URL_ENV` are read (default
            ``os.environ``; ``{}`` for a redactor that knows nothing yet). No other
            variable is read.

    Thread-safe: registration and redaction may happen on any thread.
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._anywhere: frozenset[str] = frozenset()  # every form of every long secret
        self._pattern: re.Pattern[str] | None = None
        self._headers: dict[str, set[str]] = {}  # lower-case header name -> short values
        self._envs: dict[str, set[str]] = {}  # env name -> short values
        self._named: tuple[re.Pattern[str], ...] | None = None
        env = os.environ if env is None else env
        for name in API_KEY_ENV:
            self.add(env.get(name))
        for name in URL_ENV:
            self.add_url(env.get(name))

    # -- registration --------------------------------------------------------

    def add(self, secret: str | None) -> None:
        """Register an API key or any other secret value. Values of :data:`MIN_SECRET`
        or more characters are replaced wherever they occur; shorter ones only where
        the structural patterns find them (``Bearer …``, ``"apiKey": "…"``)."""
        if not isinstance(secret, str) or len(secret.strip()) < MIN_SECRET:
            return
        with self._lock:
            forms = self._anywhere | {f for f in _forms(secret) if len(f) >= MIN_SECRET}
            if forms != self._anywhere:
                self._anywhere = frozenset(forms)
                ordered = sorted(forms, key=len, reverse=True)  # longest first: no partial replacement
                self._pattern = re.compile("|".join(map(re.escape, ordered)))

    def add_url(self, url: str | None) -> None:
        """Register a URL's secrets: its user name and password (each, and the
        ``user:password`` pair with its HTTP Basic form), and the value of every
        key-like query parameter. Its structural places are masked in any case."""
        if not isinstance(url, str) or not url:
            return
        try:
            parts = urlsplit(url.strip())
        except ValueError:
            return
        userinfo, at, _ = parts.netloc.rpartition("@")
        if at and userinfo:
            user, _, password = userinfo.partition(":")
            for value in (user, password, userinfo, unquote(userinfo)):
                self.add(value)
            self.add(base64.b64encode(unquote(userinfo).encode()).decode())
        for piece in re.split(r"[&;]", parts.query):
            name, eq, value = piece.partition("=")
            if eq and is_key_name(name):
                self.add(value)

    def add_header(self, name: str, value: str | None) -> None:
        """Register a header the user configured (e.g. for an MCP server): its value
        is replaced wherever it occurs (8+ characters) and always as ``Name: ***``
        / ``"Name": "***"``. A ``Bearer``/``Basic`` scheme word is kept visible."""
        if not isinstance(value, str) or not value:
            return
        scheme, space, credential = value.partition(" ")
        self.add(credential if space and scheme.lower() in _SCHEMES and credential else value)
        with self._lock:
            self._headers.setdefault(name.lower(), set()).add(value)
            self._named = None

    def add_env(self, name: str, value: str | None) -> None:
        """Register an ``env`` entry the user configured for a subprocess (an MCP
        server's): its value is replaced wherever it occurs (8+ characters) and
        always as ``NAME=***`` / ``"NAME": "***"``. Inherited variables are never
        registered this way (only :data:`API_KEY_ENV` is read)."""
        if not isinstance(value, str) or not value:
            return
        self.add(value)
        with self._lock:
            self._envs.setdefault(name, set()).add(value)
            self._named = None

    def add_settings(self, raw: Any) -> None:
        """Register the secrets of a settings object as the client sent it (valid or
        not): ``apiKey``, ``baseUrl``, and ``headers`` / ``env`` objects at any depth
        (their values), and any URL value of a ``url`` / ``baseUrl`` field. The entries of
        ``mcpServers`` are read by what they hold, whatever a server is named (a server named
        ``env`` is not an ``env`` object)."""
        if isinstance(raw, Mapping):
            for key, value in raw.items():
                low = str(key).lower().replace("_", "")
                if low == "mcpservers" and isinstance(value, Mapping):
                    for entry in value.values():
                        self.add_settings(entry)
                elif low == "apikey":
                    self.add(value if isinstance(value, str) else None)
                elif low in ("baseurl", "url") and isinstance(value, str):
                    self.add_url(value)
                elif low == "headers" and isinstance(value, Mapping):
                    for name, header in value.items():
                        self.add_header(str(name), header if isinstance(header, str) else None)
                elif low == "env" and isinstance(value, Mapping):
                    for name, entry in value.items():
                        self.add_env(str(name), entry if isinstance(entry, str) else None)
                else:
                    self.add_settings(value)
        elif isinstance(raw, list):
            for item in raw:
                self.add_settings(item)

    # -- redaction -----------------------------------------------------------

    def _named_patterns(self) -> tuple[re.Pattern[str], ...]:
        """The structural patterns of the registered header and env names (built once
        per registration): ``Name: value`` (to the end of the line) and ``"Name":
        "value"`` for headers, any case; ``NAME=value`` and ``"NAME": "value"`` for
        env entries, case as written."""
        with self._lock:
            if self._named is None:
                patterns = []
                quoted = r"""(?P<q>["'])(?:(?!(?P=q))[^\\]|\\.)*(?P=q)"""
                if self._headers:
                    names = "|".join(map(re.escape, sorted(self._headers, key=len, reverse=True)))
                    patterns.append(re.compile(rf"""(?i)(?P<head>(?<![\w-])(["']?)(?:{names})\2\s*[:=]\s*)"""
                                               rf"""(?:{quoted}|[^\s"'][^\r\n"']*)"""))
                if self._envs:
                    names = "|".join(map(re.escape, sorted(self._envs, key=len, reverse=True)))
                    patterns.append(re.compile(rf"""(?P<head>(?<![\w-])(["']?)(?:{names})\2(?:\s*:\s*|=))"""
                                               rf"""(?:{quoted}|[^\s"',;&]+)"""))
                self._named = tuple(patterns)
            return self._named

    def redact_content(self, text: str) -> str:
        """``text`` with every registered secret (8+ characters), every URL's user info
        and key-like query values, and the values of registered headers and env
        entries in their place replaced by ``***``: the rule for content a client
        shows (messages, results, diffs), where a quoted ``"password": "…"`` the
        model or a file wrote is shown as it is."""
        if not text:
            return text
        pattern = self._pattern
        if pattern is not None:
            text = pattern.sub(REDACTED, text)
        if "://" in text and "@" in text:
            text = _URL_USERINFO.sub(rf"\1{REDACTED}@", text)
        if "=" in text:
            text = _QUERY_VALUE.sub(_mask_query, text)
        if ":" in text or "=" in text:
            for named in self._named_patterns():
                text = named.sub(_mask_named, text)
        return text

    def redact(self, text: str) -> str:
        """:meth:`redact_content`, and also the values of quoted key-like fields
        (``"apiKey": "…"``, ``'password': '…'``, :func:`is_field_name`) and
        ``Bearer …`` / ``Authorization: …`` credentials, registered or not: the rule
        for log records and error text, where libraries dump settings and headers."""
        text = self.redact_content(text)
        if not text:
            return text
        if ":" in text or "=" in text:
            text = _FIELD_VALUE.sub(_mask_field, text)
        if "earer" in text or "EARER" in text:
            text = _BEARER.sub(rf"\1{REDACTED}", text)
        if "uthorization" in text or "UTHORIZATION" in text:
            text = _AUTHORIZATION.sub(rf"\1{REDACTED}", text)
        return text

    def redact_data(self, data: Any, keep: Iterable[str] = ()) -> Any:
        """A copy of JSON data with every string redacted by :meth:`redact_content`
        (dict keys stay as they are).

        Args:
            data: Dicts, lists, tuples and scalars.
            keep: Keys whose values are passed on untouched (exact text a client
                must get as it was written, e.g. tool-call argument pieces).
        """
        keep = frozenset(keep)
        return self._walk(data, keep)

    def redact_message(self, message: Any) -> Any:
        """A JSON-RPC message (a dict) to send, redacted: every string but those of
        :data:`EXACT_FIELDS`, and nothing of a message of :data:`EXACT_METHODS`."""
        if isinstance(message, dict) and message.get("method") in EXACT_METHODS:
            return message
        return self._walk(message, EXACT_FIELDS)

    def _walk(self, data: Any, keep: frozenset[str]) -> Any:
        if isinstance(data, str):
            return self.redact_content(data)
        if isinstance(data, dict):
            return {k: (v if k in keep else self._walk(v, keep)) for k, v in data.items()}
        if isinstance(data, (list, tuple)):
            return [self._walk(v, keep) for v in data]
        return data

    # -- logging -------------------------------------------------------------

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

    def install(self, logger: logging.Logger | None = None) -> None:
        """Attach to every handler of ``logger`` (the root logger by default), once each;
        call again after handlers were replaced."""
        for handler in (logger or logging.getLogger()).handlers:
            if self not in handler.filters:
                handler.addFilter(self)

    def install_excepthook(self) -> None:
        """Print uncaught exceptions (the interpreter's last words on stderr) redacted."""
        import traceback

        def hook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
            sys.stderr.write(self.redact("".join(traceback.format_exception(kind, value, tb))))

        sys.excepthook = hook


class RedactingWriter:
    """A text stream whose writes are redacted (``toolwire run``'s stdout and stderr).

    Args:
        stream: The stream written to (``sys.stdout``, ``sys.stderr``).
        redactor: The redactor (default :func:`shared`).
        content: Redact as content a user reads (:meth:`Redactor.redact_content`:
            the model's text, results) rather than as log and error text.
    """

    def __init__(self, stream: Any, redactor: Redactor | None = None, *, content: bool = False) -> None:
        self.stream = stream
        self.redactor = redactor or shared()
        self._redact = self.redactor.redact_content if content else self.redactor.redact

    def write(self, text: str) -> int:
        """Write ``text`` redacted; returns the length of what was given."""
        self.stream.write(self._redact(text))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())


def _mask_query(match: re.Match[str]) -> str:
    return f"{match.group(1)}{REDACTED}" if is_key_name(match.group(2)) else match.group(0)


def _mask_field(match: re.Match[str]) -> str:
    if not match.group(5) or not is_field_name(match.group(2)) or match.group(5) == REDACTED:
        return match.group(0)
    quote = match.group(4)
    return f"{match.group(1)}{match.group(2)}{match.group(1)}{match.group(3)}{quote}{REDACTED}{quote}"


#: Authorization schemes kept visible before a masked credential (``Bearer ***``).
_SCHEMES = ("bearer", "basic", "token", "digest")


def _mask_named(match: re.Match[str]) -> str:
    """``Name: ***`` / ``"Name": "***"`` for a match of :meth:`Redactor._named_patterns`
    (an authorization scheme word before the value stays: ``Bearer ***``)."""
    quote = match.group("q") or ""
    value = match.group(0)[len(match.group("head")) + len(quote):]
    scheme, space, _ = value.partition(" ")
    kept = f"{scheme} " if space and scheme.lower() in _SCHEMES else ""
    return f"{match.group('head')}{quote}{kept}{REDACTED}{quote}"


_SHARED: Redactor | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> Redactor:
    """The process's redactor: the one on its log handlers, which every front-end
    registers its secrets with (created on first use, reading :data:`API_KEY_ENV`
    and :data:`URL_ENV`)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Redactor()
        return _SHARED
