"""Completion rules: when a streamed call becomes ``generated`` and when ``errored``.

A call completes when the provider closes it (block stop, item done, call end)
or when the stream finishes. Then, in this order:

1. No name ever arrived: ``missing_name``.
2. No argument text arrived but the provider gave the arguments whole as an
   object (Gemini ``args``, Anthropic ``content_block_start.input``, Vertex
   ``partialArgs``): they are written out as compact JSON (``{}`` stays ``""``,
   as the model sent no text) and used.
3. The text is parsed strictly (``json.loads``); empty text means ``{}``.

   * The text stops early (a correct beginning of JSON) and the stream was
     cut (error event, dropped connection, a max-tokens finish, a call
     never closed in a format that closes calls, or no finish reason at all
     in a format that does not: :func:`stream_cut`): ``truncated``, retryable,
     with the cause, the length received and the last characters. Empty
     text is ``{}``, not an early stop, also in a cut stream (an OpenAI
     stream without a finish reason cannot tell a call with no arguments
     from one cut right after its name; the stream's anomaly says so).
   * The text stops early although the call was closed: ``incomplete_json``.
   * Any other syntax error: ``invalid_json``; valid JSON that is not an
     object: ``not_object``.
   * The text parses, but a format that closes calls never closed this one,
     or an error ended the stream while the call was open: ``truncated`` /
     ``stream_error``, retryable. A finish reason claiming success (``tool_calls``,
     ``tool_use``, ``STOP``) never overrides this.

Nothing is ever repaired: the raw text is kept byte for byte for the model's
retry. Unknown tool names are the agent's concern, not this module's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from toolwire.streaming.delta import StreamError
from toolwire.streaming.partial import ArgumentsError, PATH_KEYS, duplicate_keys, fix_surrogates, parse_strict, snippet
from toolwire.streaming.state import CallError, Status, ToolCallState

#: Finish reasons that mean the model ran out of room (OpenAI chat and
#: Responses, Anthropic, Gemini, Bedrock, Cohere, Vercel).
TRUNCATING_FINISH = frozenset(
    {"length", "max_tokens", "MAX_TOKENS", "max_output_tokens", "MAX_TOKENS_REACHED", "model_context_window_exceeded"}
)

#: Finish reasons that claim the model asked for tools.
TOOL_FINISH = frozenset({"tool_calls", "tool_use", "TOOL_CALL", "function_call", "tool-calls"})


def stream_error_sentence(error: StreamError) -> str:
    """The clause used in call errors for a provider error event."""
    return f"the provider reported an error: {error.message}" + (f" ({error.code})" if error.code else "")


def _label(call: ToolCallState) -> str:
    return f"tool call {call.name or '(no name)'!r} ({call.id or f'#{call.index}'})"


def _whole_text(whole: object) -> str:
    """Compact JSON for arguments given whole; ``""`` for an empty object.

    Raises:
        ValueError: the object holds NaN/Infinity or something JSON cannot hold.
    """
    if isinstance(whole, dict) and not whole:
        return ""
    return json.dumps(whole, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@dataclass(slots=True, frozen=True)
class Cut:
    """Why the stream may have cut a call short.

    Attributes:
        kind: ``error`` (a provider error event, a dropped connection),
            ``length`` (a max-tokens finish), ``unclosed`` (a format that
            closes calls ended without closing this one) or ``no_finish``
            (an OpenAI-style stream ended without any finish reason).
        clause: The cause in words, e.g. ``"the response stopped (max_tokens)"``.
    """

    kind: str
    clause: str


def complete_call(call: ToolCallState, *, cut: Cut | None, explicit_ends: bool) -> None:
    """Move a ``generating`` call to ``generated`` or ``errored`` (see the module docstring).

    Args:
        call: The call; its fragments are joined once here.
        cut: Why the stream may have cut this call short, or None when the
            provider closed it or the stream ended cleanly.
        explicit_ends: The format closes every call, so an unclosed call was cut off.
    """
    label = _label(call)
    if call.fragments:
        joined = fix_surrogates(call.arguments_text)
        call.fragments[:] = [joined] if joined else []
    text = call.arguments_text
    if not call.name:
        call.transition(
            Status.ERRORED, error=CallError("missing_name", f"{label}: the stream never gave the tool's name")
        )
        return
    if not text.strip() and call.whole_arguments is not None:
        whole = call.whole_arguments
        twice = duplicate_keys(whole)
        if twice:
            call.transition(Status.ERRORED, error=CallError(
                "duplicate_key", f"{label}: arguments name {twice[0]!r} more than once; which value is meant "
                                 "is ambiguous, so the call is refused"))
            return
        if not isinstance(whole, dict):
            call.transition(
                Status.ERRORED,
                error=CallError("not_object", f"{label}: arguments must be an object, got {type(whole).__name__}"),
            )
            return
        try:
            text = _whole_text(whole)
        except ValueError as exc:
            call.transition(
                Status.ERRORED, error=CallError("invalid_json", f"{label}: arguments cannot be written as JSON: {exc}")
            )
            return
        call.fragments[:] = [text] if text else []
        call.arguments_size = len(text)
    try:
        arguments = parse_strict(text)
    except ArgumentsError as exc:
        if exc.code == "incomplete_json" and cut is not None:
            message = (
                f"{label}: {cut.clause} inside the arguments ({exc.detail}; {len(text)} characters received, "
                f"ending {snippet(text, len(text))!r})"
            )
            call.transition(Status.ERRORED, error=CallError("truncated", message, retryable=True))
        else:
            call.transition(Status.ERRORED, error=CallError(exc.code, f"{label}: {exc}"))
        return
    if cut is not None and cut.kind == "error":
        call.transition(
            Status.ERRORED,
            error=CallError("stream_error", f"{label}: {cut.clause} while the call was open", retryable=True),
        )
        return
    if cut is not None and explicit_ends:
        call.transition(
            Status.ERRORED,
            error=CallError(
                "truncated",
                f"{label}: {cut.clause}; the arguments parse ({len(text)} characters) but the provider never "
                "closed the call, so they may be incomplete",
                retryable=True,
            ),
        )
        return
    call.arguments = arguments
    call.partial = arguments
    if call.path is None:
        for key in PATH_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                call.path = value
                break
    call.transition(Status.GENERATED)


def stream_cut(*, stream_error: str | None, finish_reasons: list[str], explicit_ends: bool) -> Cut | None:
    """Why the end of the stream may have cut open calls short, or None.

    Args:
        stream_error: The stream's failure, if it failed.
        finish_reasons: Finish reasons as the provider spelled them.
        explicit_ends: The format closes every call.
    """
    truncated_by = next((r for r in finish_reasons if r in TRUNCATING_FINISH), None)
    if stream_error is not None:
        return Cut("error", stream_error)
    if truncated_by is not None:
        return Cut("length", f"the response stopped ({truncated_by})")
    if explicit_ends:
        return Cut("unclosed", "the stream ended before the provider closed the call")
    if not finish_reasons:
        return Cut("no_finish", "the stream ended without a finish reason")
    return None


def stream_anomalies(calls: list[ToolCallState], finish_reasons: list[str], errors: list[StreamError]) -> list[str]:
    """Named oddities of a whole stream (the openai-agents-python habit): a finish
    reason claiming tool calls when none came, no finish reason at all, calls without ids."""
    out = []
    if not calls and any(r in TOOL_FINISH for r in finish_reasons):
        out.append("finish reason says tool calls but none came")
    if any(c.kind == "function" for c in calls) and not finish_reasons and not errors:
        out.append("stream ended with no finish reason")
    out.extend(f"stream ended with no id for call #{c.index}" for c in calls if not c.id)
    return out
