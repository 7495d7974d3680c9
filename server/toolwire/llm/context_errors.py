"""Telling a context-length-exceeded error from other HTTP 400s, and reading the sizes it states.

Wordings (each is a test input in ``tests/test_context_errors.py``):

* OpenAI: ``code: "context_length_exceeded"``, ``This model's maximum context length
  is 8192 tokens. However, your messages resulted in 9000 tokens. …``
* vLLM: ``This model's maximum context length is 4096 tokens. However, you requested
  5000 tokens (4000 in the messages, 1000 in the completion). …``; newer
  releases ``… maximum context length is 4096 tokens and your request has 5000 input
  tokens …``; ``The decoder prompt (length 5000) is longer than the maximum model
  length of 4096``.
* llama.cpp server: ``type: "exceed_context_size_error"`` with ``n_prompt_tokens``
  and ``n_ctx``; ``request (5000 tokens) exceeds the available context size (4096
  tokens), try increasing it``; older builds ``the request exceeds the available
  context size, try increasing it``.
* Ollama: ``the input length exceeds the context length``; ``prompt too long;
  exceeded max context length by 1200 tokens`` (no window stated).
* Mistral: ``Prompt contains 140000 tokens, too large for model with 131072 maximum
  context length``.
* Others seen behind OpenAI-compatible gateways: OpenRouter's ``This endpoint's maximum
  context length is N tokens. However, you requested about M tokens``; Anthropic's
  ``prompt is too long: 215000 tokens > 200000 maximum``; Together's ``The input (N
  tokens) is longer than the model's context length (M tokens)``; LM Studio's ``Input
  length N exceeds context length M`` and ``… is greater than the context length``;
  llama.cpp's HTTP 500 ``Context size has been exceeded.``; SGLang's and LiteLLM's
  ``Requested token count exceeds the model's maximum context length of N tokens. You
  requested a total of M tokens: K tokens from the input messages and …``; ``Input
  length (N) exceeds model's maximum context length (M).``; Google's ``The input token
  count (N) exceeds the maximum number of tokens allowed (M)``; xAI's ``This model's
  maximum prompt length is M but the request contains N tokens``; Bedrock's ``Input is
  too long for requested model.``; an HTTP 413 (``request_too_large``); Fireworks' ``The
  prompt is too long: N, model maximum context length: M``; Cohere's ``total number of
  tokens in the prompt cannot exceed M - received N``; Hugging Face TGI's ```inputs`
  tokens + `max_new_tokens` must be <= M. Given: N `inputs` tokens``; LM Studio's ``…
  the model is loaded with context length of only M tokens``; ``input length (N tokens)
  exceeds the model's context length (M tokens)``; ``The number of tokens in the prompt
  (N) exceeds the maximum context length (M)``; ``prompt length N exceeds maximum input
  length M``; ``Prompt length (N) exceeds the maximum allowed (M)``.

The error may come as an HTTP 400 (or 413, 422, 5xx) or, from servers that start the
stream first (llama.cpp before late 2025, SGLang), as the first event of an HTTP 200
stream; :mod:`toolwire.llm.openai_model` reads both.
"""

from __future__ import annotations

import re
from typing import Any

#: Error ``code``/``type`` values that mean the request is over the context window.
CODES = frozenset({"context_length_exceeded", "exceed_context_size_error", "model_context_window_exceeded"})

#: Message wordings that mean the same (lower-cased text is searched).
_WORDINGS = re.compile(
    r"context_length_exceeded|exceed_context_size|exceeds the available context size"
    r"|maximum context length is \d+|input length exceeds the context length|prompt too long|prompt is too long"
    r"|longer than the maximum model length|too large for model with \d+ maximum context length"
    r"|exceeds the context window|longer than the model's context length|exceeds context length \d+"
    r"|greater than the context length|context size has been exceeded|context window is full"
    r"|maximum context length of \d+|exceeds model's maximum context length|maximum number of tokens allowed"
    r"|maximum prompt length is \d+|input is too long for requested model|request_too_large"
    r"|tokens in the prompt cannot exceed|exceeds the model's context length|exceeds the maximum context length"
    r"|max_new_tokens` must be <= \d+|loaded with context length of only|exceeds maximum input length"
    r"|prompt length \(?\d+\)? exceeds")

#: Wordings that state the window, in tokens (first group).
_LIMITS = (
    re.compile(r"maximum context length is (\d+)"),
    re.compile(r"available context size \((\d+) tokens?\)"),
    re.compile(r"maximum model length of (\d+)"),
    re.compile(r"too large for model with (\d+) maximum context length"),
    re.compile(r"model's context length \((\d+) tokens?\)"),
    re.compile(r"exceeds context length (\d+)"),
    re.compile(r"tokens? > (\d+) maximum"),
    re.compile(r"maximum context length of (\d+)"),
    re.compile(r"maximum context length \((\d+)\)"),
    re.compile(r"maximum number of tokens allowed \((\d+)\)"),
    re.compile(r"maximum prompt length is (\d+)"),
    re.compile(r"maximum context length: (\d+)"),
    re.compile(r"prompt cannot exceed (\d+)"),
    re.compile(r"must be <= (\d+)"),
    re.compile(r"context length of only (\d+)"),
    re.compile(r"maximum input length (\d+)"),
    re.compile(r"exceeds the maximum allowed \((\d+)\)"),
)

#: Wordings that state the request's size, in tokens (first group).
_REQUESTED = (  # the input's share first, when the total also counts the completion
    re.compile(r"\((\d+) in the messages"),
    re.compile(r"(\d+) tokens from the input messages"),
    re.compile(r"requested a total of (\d+)"),
    re.compile(r"input length \((\d+)\)"),
    re.compile(r"input token count \((\d+)\)"),
    re.compile(r"request contains (\d+) tokens"),
    re.compile(r"(?:you requested|resulted in|your request has) (?:about )?(\d+) (?:input )?tokens"),
    re.compile(r"the input \((\d+) tokens?\)"),
    re.compile(r"input length (\d+) exceeds"),
    re.compile(r"prompt is too long: (\d+) tokens"),
    re.compile(r"request \((\d+) tokens?\) exceeds"),
    re.compile(r"decoder prompt \(length (\d+)\)"),
    re.compile(r"prompt contains (\d+) tokens"),
    re.compile(r"prompt is too long: (\d+)"),
    re.compile(r"cannot exceed \d+ - received (\d+)"),
    re.compile(r"input length \((\d+) tokens?\)"),
    re.compile(r"given: (\d+) `inputs` tokens"),
    re.compile(r"tokens in the prompt \((\d+)\)"),
    re.compile(r"prompt length \(?(\d+)\)? exceeds"),
)


def _number(patterns: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for pattern in patterns:
        if match := pattern.search(text):
            return int(match.group(1))
    return None


def _int(value: Any) -> int | None:
    return value if type(value) is int and value > 0 else None


def context_sizes(error: Any, message: str) -> tuple[int | None, int | None] | None:
    """``(window, requested)`` in tokens when an HTTP 400's error says the request is
    over the model's context window (either may be None: not stated); None for any
    other error.

    Args:
        error: The error object of the body (``body["error"]``, a dict), a string
            (Ollama sends ``{"error": "…"}``), or None.
        message: The error's message.
    """
    fields = error if isinstance(error, dict) else {}
    text = message.replace(",", "").lower()
    coded = any(str(fields.get(k)) in CODES for k in ("code", "type"))
    if not coded and not _WORDINGS.search(text):
        return None
    window = _int(fields.get("n_ctx")) or _number(_LIMITS, text)
    requested = _int(fields.get("n_prompt_tokens")) or _number(_REQUESTED, text)
    return window, requested
