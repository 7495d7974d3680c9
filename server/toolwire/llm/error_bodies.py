"""What an endpoint's error body says, wherever it says it.

OpenAI puts an error's text in ``error.message`` and the refused field in
``error.param``; other servers and gateways put them elsewhere, and the rules
that read them (:mod:`toolwire.llm.request_params`, :mod:`toolwire.llm.context_errors`)
must see them all:

* FastAPI-based servers (vLLM's and others' 422s): ``{"detail": "…"}`` or
  ``{"detail": [{"loc": ["body", "stream_options"], "msg": "Extra inputs are not
  permitted"}]}``; the SDK's own message for a streamed request is then only
  ``Error code: 422``.
* Gateways that wrap the provider's answer: OpenRouter's ``{"error": {"message":
  "Provider returned error", "metadata": {"raw": "{\\"error\\": {…}}"}}}`` (the
  provider's body as a JSON string), LiteLLM's message quoting the provider's body.
* Plain-text bodies (a proxy's ``Unrecognized request argument supplied: …``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: How deep a body is searched (a wrapped body inside a wrapped body is 2-3 levels).
_MAX_DEPTH = 8


@dataclass(frozen=True, slots=True)
class ErrorTerms:
    """The parts of an error body the rules read.

    Attributes:
        params: Every field path it names: ``param`` values, and FastAPI ``loc``
            lists joined with ``.`` (``body.stream_options``), outermost first.
        text: Its texts (``message``, ``detail``, ``msg``, a wrapped provider's
            message, …), outermost first, joined with `` | ``.
    """

    params: tuple[str, ...]
    text: str


def error_terms(body: Any, fallback: str = "") -> ErrorTerms:
    """The :class:`ErrorTerms` of an error body.

    Args:
        body: The decoded body (the SDK's ``APIStatusError.body``: the ``error``
            object, the whole JSON body, or the raw text when it was not JSON).
        fallback: Text used when the body holds none (the SDK's message).
    """
    params: list[str] = []
    texts: list[str] = []
    _walk(body, params, texts, 0)
    text = " | ".join(dict.fromkeys(t for t in texts if t.strip())) or fallback
    return ErrorTerms(tuple(dict.fromkeys(params)), text)


def _walk(value: Any, params: list[str], texts: list[str], depth: int) -> None:
    if depth > _MAX_DEPTH:
        return
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in ("{", "["):  # a wrapped body, sent as a JSON string
            try:
                _walk(json.loads(stripped), params, texts, depth + 1)
                return
            except ValueError:
                pass
        texts.append(value)
    elif isinstance(value, dict):
        for key in ("message", "msg", "detail", "error"):  # the texts first, in this order
            if key in value:
                _walk(value[key], params, texts, depth + 1)
        param, loc = value.get("param"), value.get("loc")
        if isinstance(param, str) and param:
            params.append(param)
        if isinstance(loc, list) and loc and all(isinstance(p, (str, int)) for p in loc):
            params.append(".".join(str(p) for p in loc))
        for key, item in value.items():
            if key not in ("message", "msg", "detail", "error", "param", "loc") and isinstance(item, (dict, list, str)):
                if isinstance(item, str) and key not in ("raw", "body", "reason", "description"):
                    continue  # codes, types, names: not the error's wording
                _walk(item, params, texts, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _walk(item, params, texts, depth + 1)
