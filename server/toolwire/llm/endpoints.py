"""What the process learned about each endpoint and model, kept for the rest of its life.

Keyed by :func:`endpoint_key` (base URL and model), so every session on the
same endpoint and model benefits, whoever learned it first:

* the optional request parameters it refused (:mod:`toolwire.llm.request_params`);
* the context window it stated in a context-length error (lower than the
  ``contextWindow`` setting), which the turn's shrinking rule then uses;
* that its model takes no images (:mod:`toolwire.llm.image_input`).

Nothing here is written to disk: a restarted server learns again (one refused
request each).
"""

from __future__ import annotations

from typing import Any

_refused: dict[str, set[str]] = {}
_windows: dict[str, int] = {}
_no_images: set[str] = set()


def endpoint_key(model: Any) -> str:
    """The key a model's endpoint and model name are remembered under: its
    ``endpoint_key`` attribute (``"<base URL> <model>"`` for ``openai:`` models),
    else its ``model_id``."""
    return getattr(model, "endpoint_key", None) or model.model_id


def refused(key: str) -> frozenset[str]:
    """Names of the optional parameters the endpoint and model refused."""
    return frozenset(_refused.get(key, ()))


def remember_refused(key: str, name: str) -> bool:
    """Note that ``key`` refuses the parameter ``name``; True the first time (log it then)."""
    names = _refused.setdefault(key, set())
    if name in names:
        return False
    names.add(name)
    return True


def context_window(key: str, configured: int) -> int:
    """The effective context window in tokens: ``configured`` (the ``contextWindow``
    setting), or the smaller window the endpoint stated for this model."""
    learned = _windows.get(key)
    return configured if learned is None else min(configured, learned)


def remember_context_window(key: str, tokens: int) -> int:
    """Lower the remembered window of ``key`` to ``tokens`` (never raise it); returns
    the remembered value."""
    tokens = max(1, int(tokens))
    current = _windows.get(key)
    _windows[key] = tokens if current is None else min(current, tokens)
    return _windows[key]


def accepts_images(key: str) -> bool:
    """False once ``key`` refused a request for its image parts."""
    return key not in _no_images


def remember_no_images(key: str) -> bool:
    """Note that ``key`` takes no images; True the first time (log it then)."""
    if key in _no_images:
        return False
    _no_images.add(key)
    return True
