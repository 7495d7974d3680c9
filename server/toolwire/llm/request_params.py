"""Optional request parameters: the body fields Toolwire sends that an endpoint may refuse.

Every optional field of a Chat Completions request Toolwire makes is one row of
:data:`OPTIONAL_PARAMS`, and every row follows the same rule (protocol.md,
"Request parameters"):

* its setting leaves it out: ``null`` (or ``false`` for a switch) = not sent;
* an HTTP 400 (or 422) whose error names it, in its ``param`` field or its
  message, makes the request be sent again once without it; the endpoint and
  model are remembered as refusing it for the rest of the process
  (:mod:`toolwire.llm.endpoints`), and that is logged once.

Wordings this was written against: OpenAI's reasoning models answer
``Unsupported value: 'temperature' does not support 0 with this model. Only the
default (1) value is supported.`` (``param: "temperature"``) or ``Unsupported
parameter: 'temperature' …``; older Ollama, some gateways and some Azure API
versions answer ``Unrecognized request argument supplied: stream_options``.
A later optional parameter is one more row here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from toolwire.llm.base import ModelRequest


@dataclass(frozen=True, slots=True)
class OptionalParam:
    """One optional body field.

    Attributes:
        name: The body field (``temperature``, ``stream_options``).
        setting: The setting that leaves it out, as written on the wire.
        words: Names an error may give it, in ``param`` or in the message
            (the field itself first, then any sub-field).
        value: Its value for a request; None = not sent.
    """

    name: str
    setting: str
    words: tuple[str, ...]
    value: Callable[[ModelRequest], Any]

    def named_in(self, param: str | None, message: str) -> bool:
        """True when an error's ``param`` or message names this field (whole words, any case).

        ``param`` may be a path: ``stream_options.include_usage``,
        ``stream_options[include_usage]``, FastAPI's ``body.stream_options``.
        """
        if param and _field_of(param) in self.words:
            return True
        return any(re.search(rf"(?<![\w.]){re.escape(w)}(?!\w)", message, re.I) for w in self.words)


def _field_of(param: str) -> str:
    """The body field a ``param`` path starts with, past a ``body`` or ``$`` root."""
    parts = [p for p in re.split(r"[.\[\]/'\"]+", param) if p]
    if parts and parts[0] in ("body", "$"):
        parts = parts[1:]
    return parts[0] if parts else ""


#: Every optional field, in the order it is put in the body.
OPTIONAL_PARAMS: tuple[OptionalParam, ...] = (
    OptionalParam("temperature", "temperature", ("temperature",), lambda r: r.temperature),
    OptionalParam("stream_options", "streamUsage", ("stream_options", "include_usage"),
                  lambda r: {"include_usage": True} if r.stream_usage else None),
)


def _reasoning(request: ModelRequest) -> dict[str, str] | None:
    out = {k: v for k, v in (("effort", request.reasoning_effort), ("summary", request.reasoning_summary)) if v}
    return out or None


#: The Responses API's optional fields (:mod:`toolwire.llm.responses_model`), the same rule.
#: ``include`` asks for reasoning's encrypted content when nothing is stored (``store: false``).
RESPONSES_PARAMS: tuple[OptionalParam, ...] = (
    OptionalParam("temperature", "temperature", ("temperature",), lambda r: r.temperature),
    OptionalParam("store", "store", ("store",), lambda r: r.store),
    OptionalParam("include", "store", ("include", "reasoning.encrypted_content"),
                  lambda r: None if r.store else ["reasoning.encrypted_content"]),
    OptionalParam("reasoning", "reasoningEffort", ("reasoning", "effort", "summary"), _reasoning),
)


def optional_fields(request: ModelRequest, left_out: Iterable[str] = (),
                    table: tuple[OptionalParam, ...] = OPTIONAL_PARAMS) -> dict[str, Any]:
    """The optional fields to send for ``request``: each row's value, except ``None``
    values and the names in ``left_out`` (those the endpoint refused)."""
    skip = set(left_out)
    out: dict[str, Any] = {}
    for param in table:
        value = param.value(request)
        if value is not None and param.name not in skip:
            out[param.name] = value
    return out


def refused_param(body: dict[str, Any], params: Iterable[str], message: str,
                  table: tuple[OptionalParam, ...] = OPTIONAL_PARAMS) -> OptionalParam | None:
    """The optional field of ``body`` that an error refuses, or None.

    Args:
        body: The request body that was refused.
        params: The field paths the error names (OpenAI's ``param``, FastAPI's
            ``loc``, a wrapped provider's ``param``:
            :func:`toolwire.llm.error_bodies.error_terms`), outermost first.
        message: The error's texts.

    Returns:
        The first row of :data:`OPTIONAL_PARAMS` that was sent in ``body`` and is
        named by a param or, failing that, by the message.
    """
    sent = [p for p in table if p.name in body]
    for param in params:  # a param is exact: it wins over words in the message
        for row in sent:
            if row.named_in(param, ""):
                return row
    for row in sent:
        if row.named_in(None, message):
            return row
    return None
