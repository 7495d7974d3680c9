"""The turn's rules for one model request: retries, the context budget, empty answers.

Plain functions the turn (:mod:`toolwire.agent.turn`) applies around each request:

* :func:`retry_delay`: how long to wait before retrying a failed request
  (the ``modelRetries`` setting);
* :func:`history_budget`, :func:`estimate_tokens`, :func:`lowered_window` and
  :func:`too_large_message`: the shrinking rule (old tool results give way when
  the history passes :data:`CONTEXT_FILL` of the window) and what happens when
  the endpoint still answers that the request is over its context window;
* :func:`is_empty` and :func:`empty_answer_message`: a response with no text,
  no reasoning and no tool call is not a successful answer.
"""

from __future__ import annotations

import json
import math
import random
import unicodedata
from typing import Any

from toolwire.agent.conversation import message_chars
from toolwire.llm.base import ContextLengthError, ModelError
from toolwire.streaming.merger import TRUNCATING_FINISH, StreamMerger

#: Longest ``Retry-After`` the turn waits for; an endpoint asking for more ends the turn.
MAX_RETRY_AFTER = 60.0
#: Rough characters per token, for the context budget (OpenAI's rule of thumb for English and code).
CHARS_PER_TOKEN = 4
#: Fraction of the context window the history may fill before old tool results are dropped.
CONTEXT_FILL = 0.8
#: Without a window stated in a context-length error, the window is lowered to this
#: fraction of the request's estimated size.
UNSTATED_WINDOW = 0.75

#: Start of the turn's message for a response with nothing in it.
EMPTY_ANSWER = "the model returned an empty answer"


def retry_delay(error: ModelError, attempt: int) -> float | None:
    """Seconds to wait before retry number ``attempt`` (1-based), or None not to retry.

    The endpoint's ``Retry-After`` wins when it gave one (None when it is over
    :data:`MAX_RETRY_AFTER`); otherwise exponential backoff from 1 s, capped at
    8 s, with jitter (a random 50-100 % of it) so clients do not retry in step.
    """
    if error.retry_after is not None:
        return error.retry_after if error.retry_after <= MAX_RETRY_AFTER else None
    return min(8.0, 0.5 * 2**attempt) * (0.5 + random.random() / 2)


def estimate_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """A request's size in tokens, estimated at :data:`CHARS_PER_TOKEN` characters of
    its JSON (messages and tool definitions) a token, an image as
    :data:`toolwire.agent.conversation.IMAGE_CHARS` characters."""
    chars = sum(message_chars(m) for m in messages) + len(json.dumps(tools, ensure_ascii=False))
    return math.ceil(chars / CHARS_PER_TOKEN)


def estimate_answer_tokens(merger: StreamMerger) -> int:
    """A response's size in tokens, estimated at :data:`CHARS_PER_TOKEN` characters a token:
    its text, its reasoning and its calls' argument text (for an endpoint that reported none)."""
    chars = len(merger.text) + len(merger.reasoning) + sum(len(c.arguments_text) for c in merger.calls)
    return math.ceil(chars / CHARS_PER_TOKEN)


def history_budget(window: int, tools: list[dict[str, Any]]) -> int:
    """Characters the history may hold: :data:`CONTEXT_FILL` of ``window`` tokens, less
    what the tool definitions take (they are sent with every request)."""
    tool_chars = len(json.dumps(tools, ensure_ascii=False)) if tools else 0
    return max(0, int(window * CHARS_PER_TOKEN * CONTEXT_FILL) - tool_chars)


def lowered_window(error: ContextLengthError, estimated: int) -> int:
    """The context window to use after ``error``, in the units of :func:`estimate_tokens`.

    The window the error states; when the endpoint also gave its own count of the
    request and that is more than ``estimated`` (its tokenizer counts more than
    :data:`CHARS_PER_TOKEN` characters make), the window is scaled down by the same
    ratio, so the shrunk request fits by the endpoint's count too. Without a stated
    window: :data:`UNSTATED_WINDOW` of ``estimated``.
    """
    if not error.limit:
        return max(1, int(UNSTATED_WINDOW * estimated))
    if error.requested and error.requested > estimated:
        return max(1, int(error.limit * estimated / error.requested))
    return error.limit


def too_large_message(error: ContextLengthError, estimated: int, window: int) -> str:
    """The turn's message when a request is still over the context window after the
    shrinking rule: how large it was, the limit (the stated one, else ``window``), and
    what to do."""
    counted = f"; {error.requested} by the endpoint's count" if error.requested else ""
    return (f"the request does not fit the model's context window: about {estimated} tokens (estimated{counted}) "
            f"against a window of {error.limit or window} tokens, even after dropping old tool results. Start a new "
            "session or shorten the prompt, or give the model a larger context (llama.cpp --ctx-size, Ollama "
            f"num_ctx, vLLM --max-model-len) and set the contextWindow setting to it. The endpoint said: {error}")


#: Finish reasons of a normal end (OpenAI chat, Responses, Anthropic, Gemini, Cohere,
#: Bedrock, Vercel): an empty answer's message does not name them.
NORMAL_FINISH = frozenset({"stop", "completed", "end_turn", "STOP", "COMPLETE", "stop_sequence", "end"})
#: Finish reasons that say a filter withheld the answer (OpenAI/Azure ``content_filter``,
#: Gemini's ``SAFETY`` and friends, Bedrock's ``guardrail_intervened``/``content_filtered``,
#: Anthropic's ``refusal``).
FILTER_FINISH = frozenset({"content_filter", "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
                           "IMAGE_SAFETY", "guardrail_intervened", "content_filtered", "refusal", "ERROR_TOXIC"})


def _visible(text: str) -> bool:
    """True when ``text`` has a character that shows: white space and invisible format
    characters (U+200B ZERO WIDTH SPACE, U+FEFF, U+2060 …, Unicode category Cf) count as none."""
    return any(not c.isspace() and unicodedata.category(c) != "Cf" for c in text)


def is_empty(merger: StreamMerger) -> bool:
    """True for a response with no text (white space and invisible format characters
    count as none), no reasoning and no tool call, that was not cut short by a token
    limit (that is ``max_tokens``)."""
    if merger.calls or merger.errors or _visible(merger.text) or _visible(merger.reasoning):
        return False
    return not any(reason in TRUNCATING_FINISH for reason in merger.finish_reasons)


def empty_answer_message(merger: StreamMerger, retries: int) -> str:
    """The turn's message for an empty answer, after ``retries`` retries of it; it names
    the finish reason unless it is a normal end (:data:`NORMAL_FINISH`), and says so when
    a content filter withheld the answer (:data:`FILTER_FINISH`)."""
    reasons = [r for r in merger.finish_reasons if r and r not in NORMAL_FINISH]
    filtered = next((r for r in reasons if r in FILTER_FINISH), None)
    why = f" (finish reason {reasons[0]!r})" if reasons else ""
    again = ", also when asked again" if retries else " (not asked again: the modelRetries setting is 0)"
    if filtered is not None:
        return (f"{EMPTY_ANSWER}: the endpoint's content filter withheld it (finish reason {filtered!r}){again}. "
                "Rephrase the prompt, or check the filter settings of the endpoint's deployment")
    return (f"{EMPTY_ANSWER}: no text and no tool call{why}{again}. Send the prompt again or rephrase it; "
            "if this model keeps answering nothing, check the model setting, or try toolCalling: \"text\" "
            "for a model without native tool calls")
