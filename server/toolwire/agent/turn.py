"""One turn: stream → merge → validate → approve → run → results → next request.

The outer loop only inspects what each model response produced: no client tool
calls ends the turn; otherwise their results are appended in call order and the
model is asked again, up to ``Settings.max_model_requests`` requests. The first request
waits for the session's MCP servers still starting (``mcpStartTimeout``), and each request
offers the tools they list then, a list a ``tools/list_changed`` asked for waited for at most
2 s (:meth:`Session.refresh_tools`). A call is
handed to the scheduler (:mod:`toolwire.agent.scheduler`) the moment it is
complete, so it can be approved and run while the model is still streaming the
rest of the response; if the stream then breaks, calls not started yet do not run.

Invariants (each has a test): every call of the turn is terminal before
:meth:`Turn.run` returns; every call id the model sent gets exactly one result,
in call order; after a cancel nothing new starts and every open call ends
``canceled`` (``turn_cancelled``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import anyio

from toolwire.agent.budget import CAP_STOP, announce_request, cap_message
from toolwire.agent.call_ids import turn_call_id
from toolwire.agent.checkpoints import Checkpointer, TurnCheckpoint, TurnUsage
from toolwire.agent.failure_streak import FailureStreak
from toolwire.agent.images import image_input
from toolwire.agent.overview import add_overview
from toolwire.agent.events import (Approver, MessageChunk, PlanUpdate, SessionInfo, Sink, TurnUpdate, UsageUpdate,
                                   call_changed)
from toolwire.agent.request_rules import (empty_answer_message, estimate_answer_tokens, estimate_tokens,
                                          history_budget, is_empty, lowered_window, retry_delay, too_large_message)
from toolwire.agent.scheduler import ResponseRun, Scheduler
from toolwire.agent.tool_runs import model_result_text
from toolwire.agent.session import Session
from toolwire.agent.text_tools import TextToolCallReader, to_text_messages
from toolwire.llm import endpoints
from toolwire.llm.base import ContextLengthError, ModelError, ModelRequest
from toolwire.llm.image_input import without_images
from toolwire.streaming.completion import stream_error_sentence
from toolwire.streaming.delta import TextDelta, Usage
from toolwire.streaming.decoding import BrokenStream, PayloadDecoder
from toolwire.streaming.merger import TRUNCATING_FINISH, StreamMerger
from toolwire.streaming.state import CallError, CancelReason, Status, ToolCallState
from toolwire.tools.base import ImagePart

log = logging.getLogger(__name__)

#: Seconds between two pushes of a call that is still streaming its arguments.
PUSH_INTERVAL = 0.05
# Retries of a model request that failed before any of its response arrived: the
# ``modelRetries`` setting. The turn is the only retry layer (the openai SDK's own
# retries are off). The rules for one request: :mod:`toolwire.agent.request_rules`.
@dataclass(slots=True)
class TurnOutcome:
    """How a turn ended: ``stop_reason`` (``end_turn``, ``max_tokens``,
    ``max_turn_requests``, ``cancelled``, ``error``), token usage, and a message
    for ``error``."""

    stop_reason: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    message: str | None = None
    #: ``{"reasoningTokens"?, "cachedTokens"?}`` when the endpoint reported them.
    usage_details: dict[str, int] | None = None
    #: Why an ``error`` turn failed, for a front-end to word (``no_api_key``), else None.
    error_code: str | None = None
    #: Something a front-end shows beside the answer (``demo_finished``: the offline demo's script is done).
    notice: str | None = None

    def to_wire(self) -> dict:
        """``{"stopReason", "usage": {"inputTokens", "outputTokens"}, "message"?, "errorCode"?, "notice"?}``."""
        out: dict = {
            "stopReason": self.stop_reason,
            "usage": {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens,
                      **(self.usage_details or {})},
        }
        if self.message:
            out["message"] = self.message
        if self.error_code:
            out["errorCode"] = self.error_code
        if self.notice:
            out["notice"] = self.notice
        return out


@dataclass(slots=True)
class _Response:
    merger: StreamMerger
    stream_error: str | None
    error_code: str | None = None


class Turn:
    """Runs one prompt to completion.

    Args:
        session: The session the turn belongs to.
        sink: Receives every update, in order.
        approver: Asks the user about calls the policy says ``ask`` for.

    Attributes:
        id: The turn id, unique in the session (``"t1"``, ``"t2"``…), known from
            construction (the session's turn counter is advanced here).
        calls: Every call of the turn, in the order it was first pushed.
        outcome: How the turn ended, once it did.
    """

    def __init__(self, session: Session, sink: Sink, approver: Approver) -> None:
        self.session = session
        self.sink = sink
        self.approver = approver
        session.turns += 1
        self.id = f"t{session.turns}"
        self.calls: list[ToolCallState] = []
        self.outcome: TurnOutcome | None = None
        self.checkpoint: TurnCheckpoint | None = None
        self.scheduler = Scheduler(session, self._push, approver)
        self.scheduler.announce = sink.emit
        self._scope: anyio.CancelScope | None = None
        self._cancel_requested = False
        self._cancel_reason = CancelReason.TURN_CANCELLED
        self._tools_running = False
        self._input_tokens: int | None = None
        self._output_tokens: int | None = None
        self._details: dict[str, int] = {}  # reasoningTokens, cachedTokens: the turn's totals, when reported
        self._started = time.monotonic()
        self._last_push: dict[int, float] = {}
        self._failures = FailureStreak()
        self._response_usage: list[int | None] = [None, None]
        self._response_details: dict[str, int] = {}

    # ----------------------------------------------------------- control
    def cancel(self, reason: CancelReason = CancelReason.TURN_CANCELLED) -> None:
        """Cancel the turn (``toolwire/session/cancel``, or ``shutdown``): the stream
        is closed, pending permission requests withdrawn, running tools cancelled,
        and every open call ends ``canceled`` with ``reason``."""
        self._cancel_requested = True
        self._cancel_reason = reason
        if self._scope is not None:
            self._scope.cancel()

    def cancel_call(self, call_id: str) -> bool:
        """Cancel one call, even one still streaming; the turn goes on.

        Returns:
            False for an unknown or already finished call.
        """
        if self.scheduler.cancel_call(call_id):
            return True
        for call in self.calls:
            if call.id == call_id and call.status in (Status.GENERATING, Status.GENERATED):
                # not handed to the scheduler yet: the merger refuses its later deltas
                call.transition(Status.CANCELED, cancel_reason=CancelReason.CALL_CANCELLED)
                self._push(call, force=True)
                return True
        return False

    @property
    def plan(self) -> PlanUpdate | None:
        """The turn's plan: the latest an ``update_plan`` call of the turn gave, None before one."""
        return self.scheduler.plan

    def streaming_response(self) -> dict[str, str] | None:
        """The model response being streamed now and not yet in the conversation:
        ``{"text", "reasoning"}`` so far, or None between responses."""
        merger = self.scheduler.streaming_merger()
        if merger is None:
            return None
        return {"text": merger.text, "reasoning": merger.reasoning}

    # -------------------------------------------------------------- run
    async def run(self, prompt: str, images: Sequence[ImagePart] = (), shown: str | None = None) -> TurnOutcome:
        """Run the turn of ``prompt`` (and its ``images``, image parts of the user message);
        ``shown``: the user's entry of it when it differs from what the model reads (attachments,
        a code action's template: :mod:`toolwire.agent.prompt_blocks`).

        Returns:
            The outcome; a cancelled turn returns ``stop_reason="cancelled"``
            rather than raising. If the task running this is cancelled from
            outside (``$/cancelRequest``), cleanup still happens, shielded,
            and the cancellation propagates with :attr:`outcome` set.
        """
        session = self.session
        session.git_cache.clear()  # repository facts are cached within a turn only
        self.checkpoint = session.begin_checkpoint(self.id)
        self.scheduler.checkpointer = Checkpointer(self.checkpoint, session.tool_context(), session.checkpoint_store(),
                                                   session.settings.checkpoint_max_bytes)
        rules = session.compose_prompt()  # the system prompt of every request of this turn
        session.conversation.start_turn(self.id)
        session.conversation.add_user(prompt + session.take_notes(self.id), typed=prompt if shown is None else shown,
                                      images=images)
        self.sink.emit(TurnUpdate("started", turn_id=self.id))
        if rules is not None:
            self.sink.emit(SessionInfo(rules))
        outcome: TurnOutcome
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                if self._cancel_requested:
                    scope.cancel()
                outcome = await self._loop()
            if scope.cancelled_caught:
                outcome = self._cancelled_outcome()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                self._finish(self._cancelled_outcome())
            raise
        except Exception as exc:  # a bug: never leave calls open
            log.exception("turn failed")
            message = f"internal error: {type(exc).__name__}: {exc}"
            outcome = TurnOutcome("error", message=message)
            self._settle(error=CallError("internal_error", f"the call was stopped by an {message}"))
        self._finish(outcome)
        return outcome

    def _duration_ms(self) -> int:
        """The turn's time so far without the time it waited for the user's approvals."""
        return max(0, int((time.monotonic() - self._started - self.scheduler.waiting.seconds()) * 1000))

    def _cancelled_outcome(self) -> TurnOutcome:
        self._settle(self._cancel_reason)
        return TurnOutcome("cancelled")

    def _finish(self, outcome: TurnOutcome) -> None:
        outcome.input_tokens = self._input_tokens
        outcome.output_tokens = self._output_tokens
        outcome.usage_details = dict(self._details) or None
        self.outcome = outcome
        duration = self._duration_ms()
        self.session.end_checkpoint(self.checkpoint, outcome.stop_reason, message=outcome.message, usage=TurnUsage(
            input_tokens=self._input_tokens, output_tokens=self._output_tokens, duration_ms=duration),
            error_code=outcome.error_code, notice=outcome.notice)
        self.session.conversation.repair()
        self.sink.emit(UsageUpdate(self._input_tokens, self._output_tokens, duration,
                                   details=dict(self._details) or None))
        self.sink.emit(TurnUpdate("ended", outcome.stop_reason, outcome.message, turn_id=self.id,
                                  error_code=outcome.error_code, notice=outcome.notice))

    def _settle(self, reason: CancelReason = CancelReason.TURN_CANCELLED, *, error: CallError | None = None) -> None:
        """End every open call (``canceled`` with ``reason``, or ``errored`` with
        ``error``) and give each call in the history a result."""
        for call in self.calls:
            if not call.status.terminal:
                if error is not None:
                    call.transition(Status.ERRORED, error=error)
                else:
                    call.transition(Status.CANCELED, cancel_reason=reason)
                self._push(call, force=True)
        self.scheduler.flush_pending()
        self.scheduler.record_missing_results()

    async def _loop(self) -> TurnOutcome:
        session = self.session
        await session.wait_for_servers()  # MCP servers: restarted if due, waited for while starting
        await add_overview(session.conversation.messages, session.tool_context())  # the session's first request
        for number in range(1, session.settings.max_model_requests + 1):
            await session.refresh_tools()  # an MCP server's tools changed since the last request
            session.conversation.repair()
            self._fit()
            run = self.scheduler.open_response()
            async with anyio.create_task_group() as tg:
                tg.start_soon(run.dispatch)
                try:
                    response = await self._request(run, number)
                finally:
                    run.close()
                merger = response.merger
                client_calls = [c for c in merger.calls if c.kind == "function"]
            # every call of the response is terminal here: ran, refused, or errored
            self.scheduler.settle_provider_calls([c for c in merger.calls if c.kind != "function"])
            self.scheduler.record_response(merger, client_calls)
            if response.stream_error:
                return TurnOutcome("error", message=response.stream_error, error_code=response.error_code)
            if not client_calls:
                if any(r in TRUNCATING_FINISH for r in merger.finish_reasons):
                    return TurnOutcome("max_tokens")
                return TurnOutcome("end_turn", notice=getattr(session.model, "notice", None))
            repeated = self._failures.check(client_calls)
            if repeated is not None:
                return TurnOutcome("repeated_tool_failure", message=repeated)
        return TurnOutcome(CAP_STOP, message=cap_message(session.settings.max_model_requests))

    # ---------------------------------------------------------- streaming
    def _window(self) -> int:
        """The effective context window: the setting, or less if the endpoint said so."""
        return endpoints.context_window(endpoints.endpoint_key(self.session.model), self.session.settings.context_window)

    def _fit(self) -> None:
        """The shrinking rule: old tool results give way until the history fits its budget."""
        budget = history_budget(self._window(), self.session.registry.definitions())
        if shrunk := self.session.conversation.fit(budget):
            log.info("dropped %d old tool results to fit the context window", shrunk)
            self.session.rules.forget_calls(self.session.conversation.last_dropped)  # their rules blocks too

    def _build_request(self) -> ModelRequest:
        session = self.session
        messages = [dict(m) for m in session.conversation.messages]
        if image_input(session) is False:  # the endpoint refused images, or the setting is false
            messages = without_images(messages)
        tools = session.registry.definitions()
        if session.settings.tool_calling == "text":
            messages, tools = to_text_messages(messages, tools), []
        settings = session.settings
        return ModelRequest(messages=messages, tools=tools, temperature=settings.temperature,
                            stream_usage=bool(settings.stream_usage), store=settings.store,
                            reasoning_effort=settings.reasoning_effort, reasoning_summary=settings.reasoning_summary)

    def _refit(self, error: ContextLengthError, request: ModelRequest) -> ModelRequest:
        """A context-length error: lower the window (remembered for the endpoint and model),
        apply the shrinking rule, and build the request again."""
        estimated = estimate_tokens(request.messages, request.tools)
        window = endpoints.remember_context_window(endpoints.endpoint_key(self.session.model),
                                                   lowered_window(error, estimated))
        log.warning("the request (about %d tokens) is over the model's context window; the window is now %d tokens "
                    "for this endpoint and model, and the request is sent again smaller (%s)", estimated, window, error)
        self._fit()
        return self._build_request()

    async def _request(self, run: ResponseRun, number: int) -> _Response:
        session = self.session
        request = self._build_request()
        announce_request(session, self.sink, self.id, number)
        self.sink.emit(TurnUpdate("model_request", turn_id=self.id))
        self._tools_running = False
        attempt = 0
        refitted = asked_again = False
        while True:
            merger, received, error = await self._stream_once(request, run)
            reported = self._add_usage()  # every attempt's tokens count, an empty answer's too
            if isinstance(error, ContextLengthError):  # raised before any of the answer arrived
                if not refitted:  # the shrinking rule, once
                    refitted = True
                    request = self._refit(error, request)
                    continue
                error = ModelError(too_large_message(error, estimate_tokens(request.messages, request.tools),
                                                     self._window()))
                break
            if error is None and is_empty(merger):
                if asked_again or attempt >= session.settings.model_retries:
                    break
                asked_again, attempt = True, attempt + 1  # an empty answer is asked again once
                log.warning("the model returned an empty answer; asking again (retry %d)", attempt)
                continue
            if error is None or received or not error.retryable or attempt >= session.settings.model_retries:
                break
            delay = retry_delay(error, attempt + 1)
            if delay is None:
                break
            attempt += 1
            log.warning("model request failed (%s); retry %d in %.1fs", error, attempt, delay)
            await anyio.sleep(delay)
        self._tell_context(request, merger, reported)
        failure = str(error) if error is not None else None
        if failure is not None and attempt:
            failure += f" (after {attempt} {'retry' if attempt == 1 else 'retries'}: the modelRetries setting)"
        if failure is None and is_empty(merger):
            failure = empty_answer_message(merger, int(asked_again))
        if failure is not None:
            run.break_off(failure)
        for call in merger.finish(stream_error=failure):
            self._push(call, force=True)
            run.offer(call)
        if failure is None and merger.errors:  # an error event inside an otherwise readable stream
            failure = stream_error_sentence(merger.errors[0])
        return _Response(merger, failure, error.code if error is not None else None)

    def _text_tools(self):
        """In text tool-calling mode, the wrapper that reads calls out of the text; else None."""
        return TextToolCallReader if self.session.settings.tool_calling == "text" else None

    def _add_usage(self) -> tuple[int | None, int | None]:
        """Add the response's token counts to the turn's (unknown stays None); returns them."""
        inp, out = self._response_usage
        if inp is not None:
            self._input_tokens = (self._input_tokens or 0) + inp
        if out is not None:
            self._output_tokens = (self._output_tokens or 0) + out
        self._response_usage = [None, None]
        for key, value in self._response_details.items():
            self._details[key] = self._details.get(key, 0) + value
        self._response_details = {}
        return inp, out

    def _tell_context(self, request: ModelRequest, merger: StreamMerger, reported: tuple[int | None, int | None]) -> None:
        """The usage update after a model request: the turn's totals so far, and how much of the
        context window the request and its answer fill (estimated where the endpoint said nothing)."""
        prompt, answer = reported
        used = (estimate_tokens(request.messages, request.tools) if prompt is None else prompt) + (
            estimate_answer_tokens(merger) if answer is None else answer)
        duration = self._duration_ms()
        self.sink.emit(UsageUpdate(self._input_tokens, self._output_tokens, duration,
                                   context_used=used, context_size=self._window(), details=dict(self._details) or None))

    async def _stream_once(self, request: ModelRequest, run: ResponseRun) -> tuple[StreamMerger, bool, ModelError | None]:
        model = self.session.model
        decoder = PayloadDecoder(model.format, wrap=self._text_tools())
        merger = run.merger = StreamMerger()
        received = False
        error: ModelError | None = None
        stream = model.stream(request)
        try:
            async for frame in stream:
                received = True
                try:
                    events = decoder.feed_frame(frame)
                except BrokenStream as exc:
                    raise ModelError(f"the stream is broken: {exc}") from None
                merger.explicit_ends = decoder.explicit_ends
                self._absorb(merger, events, run)
            if decoder.format is None and decoder.held:
                raise ModelError("the model's stream matched no known format")
            self._absorb(merger, decoder.close(), run)
        except ModelError as exc:
            error = exc
        finally:
            with anyio.CancelScope(shield=True):
                await stream.aclose()
        merger.anomalies.extend(decoder.anomalies)
        for anomaly in merger.anomalies:
            log.warning("stream anomaly: %s", anomaly)
        return merger, received, error

    def _absorb(self, merger: StreamMerger, events: list, run: ResponseRun) -> None:
        changed: dict[int, ToolCallState] = {}
        for event in events:
            if type(event) is TextDelta:
                if event.text:
                    self.sink.emit(MessageChunk(event.text, event.channel))
                merger.apply(event)
                continue
            if type(event) is Usage:  # within one response, later figures replace earlier ones
                if event.input_tokens is not None:
                    self._response_usage[0] = event.input_tokens
                if event.output_tokens is not None:
                    self._response_usage[1] = event.output_tokens
                self._response_details = {k: v for k, v in (("reasoningTokens", event.reasoning_tokens),
                                                            ("cachedTokens", event.cached_tokens)) if v is not None}
            call = merger.apply(event)
            if call is not None:
                changed[id(call)] = call
        for call in changed.values():
            self._push(call)
            if call.status is Status.GENERATED:
                run.offer(call)  # complete: it may run while the model streams on

    def _push(self, call: ToolCallState, *, force: bool = False) -> None:
        """Send the call's snapshot; while it streams, at most every :data:`PUSH_INTERVAL` s."""
        if call.status is Status.CALLING and not self._tools_running:
            self._tools_running = True  # the first tool of this response starts
            self.sink.emit(TurnUpdate("running_tools", turn_id=self.id))
        now = time.monotonic()
        key = id(call)
        first = key not in self._last_push
        if first:
            self.calls.append(call)
        if not (force or first or call.status is not Status.GENERATING or now - self._last_push[key] >= PUSH_INTERVAL):
            return
        self._last_push[key] = now
        # one stable id, unique in the session, from the first snapshot on (providers
        # reuse ids across responses and turns; some send none)
        self.session.call_ids.settle(call, turn_call_id(self.session.turns, call.index))
        self.sink.emit(call_changed(call))


__all__ = ["Turn", "TurnOutcome", "model_result_text"]
