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
        """True when an error's ``param`` or message names this field (whole words only)."""
        if param and any(param == w or param.startswith(w + ".") for w in self.words):
            return True
        return any(re.search(rf"(?<![\w.]){re.escape(w)}(?!\w)", message) for w in self.words)


#: Every optional field, in the order it is put in the body.
OPTIONAL_PARAMS: tuple[OptionalParam, ...] = (
    OptionalParam("temperature", "temperature", ("temperature",), lambda r: r.temperature),
    OptionalParam("stream_options", "streamUsage", ("stream_options", "include_usage"),
                  lambda r: {"include_usage": True} if r.stream_usage else None),
)


def optional_fields(request: ModelRequest, left_out: Iterable[str] = ()) -> dict[str, Any]:
    """The optional fields to send for ``request``: each row's value, except ``None``
    values and the names in ``left_out`` (those the endpoint refused)."""
    skip = set(left_out)
    out: dict[str, Any] = {}
    for param in OPTIONAL_PARAMS:
        value = param.value(request)
        if value is not None and param.name not in skip:
            out[param.name] = value
    return out


def refused_param(body: dict[str, Any], param: str | None, message: str) -> OptionalParam | None:
    """The optional field of ``body`` that an error refuses, or None.

    Args:
        body: The request body that was refused.
        param: The error's ``param`` field (OpenAI's error object), if any.
        message: The error's message.

    Returns:
        The first row of :data:`OPTIONAL_PARAMS` that was sent in ``body`` and is
        named by ``param`` or, failing that, by the message.
    """
    sent = [p for p in OPTIONAL_PARAMS if p.name in body]
    for row in sent:  # the param field is exact: it wins over words in the message
        if row.named_in(param, ""):
            return row
    for row in sent:
        if row.named_in(None, message):
            return row
    return None
