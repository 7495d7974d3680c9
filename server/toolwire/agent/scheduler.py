"""Validation, approval and parallel execution of one response's tool calls.

Policy, in call order:

1. Unknown tool or arguments that do not validate → ``errored``; never runs.
2. Permission: ``deny`` → ``canceled`` (``policy_denied``); a file tool whose plan
   fails (``no_match``, ``not_found``, …) → ``errored`` with the plan's code, never asked
   about (a call naming a file kept from the model is asked about showing it first);
   ``ask`` → the user is asked (one request at a time, in call order) while calls already approved run;
   ``auto`` → runs. A change whose prior state the turn cannot record
   (:mod:`toolwire.agent.recordable`) is asked about even under ``auto`` or an
   "allow always" rule, its subject marked ``irreversible`` (unless the
   ``allowIrreversible`` setting); when no client can be asked it ends ``errored``
   (``not_undoable``). So is a call that would show the model a file kept from it
   (:mod:`toolwire.agent.exclusion`), its subject naming the file in ``excluded``; it
   runs with that file allowed for that call only, and ends ``errored`` (``excluded``)
   when no client can be asked.
3. Rejection policy for siblings: a rejection cancels only that call
   (``canceled``/``rejected``, the user's reason goes to the model); the other
   calls of the response are still asked about and run. Every call gets exactly
   one result either way.
4. Execution: calls run in parallel (at most ``max_parallel_tools``) unless they
   touch the same path (per-path locks, taken in call order) or the tool is a
   barrier (commit, branch switch), which waits for every earlier call and runs
   alone. A call that changes a path is asked about only after the earlier
   calls on that path finished, so the diff it shows is the one it will make.
   Each call runs under ``tool_timeout`` (an MCP tool's under ``mcp_call_timeout``).
5. Results are appended to the conversation in call order, whatever order the
   tools finished in; the images calls returned follow the results of their
   response in one ``user`` message (:meth:`Conversation.add_images`).

An MCP tool (:class:`toolwire.mcp.tool.McpTool`) changes nothing Toolwire can record: no
checkpoint is taken around it and the irreversible rule does not apply to it.

One tool's run itself (checkpoints, timeout, the tool-call log) and the text the model gets
for a finished call are in :mod:`toolwire.agent.tool_runs`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from toolwire.agent.call_ids import turn_call_id
from toolwire.agent.checkpoints import Checkpointer
from toolwire.agent.events import AgentEvent, Approver, PermissionAnswer, PlanUpdate, SessionInfo
from toolwire.agent.exclusion import allowed_files, call_exclusions, not_asked_message as not_allowed_message
from toolwire.agent.exclusion import rejected_note, subject_entries
from toolwire.agent.permissions import Decision, build_subject, plain_subject
from toolwire.agent.problem_watch import Baseline, NotOpen, ProblemWatch
from toolwire.agent.recordable import not_asked_message
from toolwire.agent.session import Session
from toolwire.agent.tool_runs import checkpointed, log_call, model_result_text
from toolwire.mcp.tool import McpTool
from toolwire.streaming.changes import snapshot
from toolwire.streaming.merger import StreamMerger
from toolwire.streaming.state import CallError, CancelReason, Status, ToolCallState
from toolwire.tools.base import ArgumentsInvalid, ImagePart, Tool, ToolResult
from toolwire.tools.plan import UpdatePlan, plan_entries
from toolwire.workspace.errors import tool_error_in
from toolwire.workspace.locks import overlaps

log = logging.getLogger(__name__)

class WaitClock:
    """The time some approval of the turn waited for the user: the union of the intervals in
    which at least one permission request was open (requests open together count once).
    Used as a context manager around each request."""

    def __init__(self) -> None:
        self._open = 0
        self._since = 0.0
        self._total = 0.0

    def __enter__(self) -> WaitClock:
        if self._open == 0:
            self._since = time.monotonic()
        self._open += 1
        return self

    def __exit__(self, *exc: object) -> None:
        self._open -= 1
        if self._open == 0:
            self._total += time.monotonic() - self._since

    def seconds(self) -> float:
        """The time waited so far (an open request counts up to now)."""
        return self._total + (time.monotonic() - self._since if self._open else 0.0)


class Scheduler:
    """Runs the tool calls of each response of one turn.

    Args:
        session: The session (tools, policy, locks, conversation, settings).
        push: Called with a call (and ``force=True``) after each status change.
        approver: Asks the user when the policy says ``ask``.
    """

    def __init__(self, session: Session, push: Callable[..., None], approver: Approver) -> None:
        self.session = session
        self.push = push
        self.approver = approver
        self.waiting = WaitClock()
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._calls: dict[str, ToolCallState] = {}
        self._in_history: list[ToolCallState] = []
        self._recorded: set[int] = set()
        self._ends: set[int] = set()  # the last call of each response in the history
        self._images: dict[int, tuple[ImagePart, ...]] = {}  # per call: the images the model is shown
        self._shown: list[tuple[str, str, tuple[ImagePart, ...]]] = []  # recorded, waiting for their response's end
        self._pending: ResponseRun | None = None
        self._allowed: dict[str, frozenset[Path]] = {}  # call id -> excluded files the user allowed for it
        self._hunks: dict[str, list[dict[str, Any]]] = {}  # call id -> its answer per hunk, some rejected
        self._problems = ProblemWatch()  # problems after every edit of an open file
        self.scope: anyio.CancelScope | None = None  # set by owners that may stop every call at once
        self.checkpointer: Checkpointer | None = None  # set by a turn: checkpoints around writing tools
        self.announce: Callable[[AgentEvent], None] | None = None  # set by owners: events other than calls
        self.plan: PlanUpdate | None = None  # the latest plan an update_plan call of this scheduler gave

    # ------------------------------------------------------------ helpers
    def _set(self, call: ToolCallState, status: Status, **kw: Any) -> None:
        call.transition(status, **kw)
        self.push(call, force=True)

    def cancel_call(self, call_id: str) -> bool:
        """Cancel one call (before or while it runs). False if unknown or already finished."""
        call = self._calls.get(call_id)
        if call is None or call.status.terminal:
            return False
        scope = self._scopes.get(call_id)
        if scope is not None:
            scope.cancel()  # asking or running: the owner of the scope settles the call
        else:
            # queued (waiting for an earlier call, or not dispatched yet): it never starts
            self._set(call, Status.CANCELED, cancel_reason=CancelReason.CALL_CANCELLED)
        return True

    def settle_provider_calls(self, calls: list[ToolCallState]) -> None:
        """Calls the provider ran itself (server tools): recorded as done, never run here."""
        for call in calls:
            if call.status is Status.GENERATED:
                self._set(call, Status.CALLING)
                call.result = {"ok": True, "content": "executed by the provider", "data": None, "errorCode": None}
                self._set(call, Status.DONE)

    def record_missing_results(self) -> None:
        """Append a result for every finished call in the history that has none yet.

        Results go in call order, so recording stops at the first call that is
        not terminal yet (the turn's cleanup settles it and calls this again). The
        images of a response's calls follow its last result.
        """
        conversation = self.session.conversation
        limit = self.session.settings.result_limit
        for call in self._in_history:
            if not call.status.terminal:
                return
            if id(call) not in self._recorded:
                self._recorded.add(id(call))
                conversation.add_tool_result(call.id, model_result_text(call, limit))
                if images := self._images.pop(id(call), ()):
                    self._shown.append((call.name, call.id, images))
                if id(call) in self._ends and self._shown:
                    conversation.add_images(self._shown)
                    self._shown = []

    def streaming_merger(self) -> StreamMerger | None:
        """The merger of the response being streamed (not yet in the history), or None."""
        run = self._pending
        return run.merger if run is not None else None

    def find(self, call_id: str) -> ToolCallState | None:
        """The call with this id that this scheduler has dispatched (or been given), or None."""
        return self._calls.get(call_id)

    # --------------------------------------------------------------- main
    def open_response(self) -> "ResponseRun":
        """Start dispatching a new response's calls (see :class:`ResponseRun`)."""
        run = ResponseRun(self)
        self._pending = run
        return run

    def record_response(self, merger: StreamMerger, calls: list[ToolCallState]) -> None:
        """Append the assistant message holding ``calls`` and, in call order, the
        result of every call that is finished (the rest follow as they finish)."""
        self._pending = None
        # A call that never got a name is not one the model can be answered about
        # (endpoints refuse a tool call named ""); the client still saw it errored.
        calls = [c for c in calls if c.name]
        self.assign_ids(calls)
        reasoning = (merger.reasoning_field, merger.reasoning) if merger.reasoning_field else None
        self.session.conversation.add_assistant(
            merger.text, [(c.id, c.name, merger.arguments_for_model(c)) for c in calls], reasoning,
            items=merger.output_items,
        )
        self._in_history.extend(calls)
        if calls:
            self._ends.add(id(calls[-1]))
        self.record_missing_results()

    def flush_pending(self) -> None:
        """On cancellation: put the response being streamed into the history, so
        calls that already ran are never lost from the conversation."""
        run, self._pending = self._pending, None
        if run is not None and run.merger is not None:
            calls = [c for c in run.merger.calls if c.kind == "function"]
            if calls:
                self.record_response(run.merger, calls)

    def assign_ids(self, calls: list[ToolCallState]) -> None:
        """Give each call its session-unique id (:mod:`toolwire.agent.call_ids`; a call
        already pushed keeps the id it was shown with) and index it for :meth:`cancel_call`."""
        for call in calls:
            self.session.call_ids.settle(call, turn_call_id(self.session.turns, call.index))
            self._calls[call.id] = call

    async def run_calls(self, calls: list[ToolCallState]) -> None:
        """Validate, approve and run complete calls (client-fed mode); every call is
        terminal when this returns normally."""
        self.assign_ids(calls)  # every call can be cancelled from now on, queued ones too
        run = ResponseRun(self)
        for call in calls:
            run.offer(call)
        run.close()
        await run.dispatch()

    def _plan(self, call: ToolCallState) -> tuple[Tool, Any] | None:
        """Look the tool up and validate the arguments; an error ends the call ``errored``."""
        session = self.session
        tool = session.registry.get(call.name)
        if tool is None:
            known = ", ".join(session.registry.names())
            why = session.mcp.unavailable(call.name) if session.mcp is not None else None
            self._set(call, Status.ERRORED, error=CallError(
                "unknown_tool", f"there is no tool named {call.name!r}{f': {why}' if why else ''}; "
                                f"available tools: {known}"))
            return None
        try:
            args = tool.validate(call.arguments or {})
        except ArgumentsInvalid as exc:
            self._set(call, Status.ERRORED, error=CallError("invalid_arguments", str(exc)))
            return None
        # ``call.arguments`` stays what the model sent: the validated ``args`` (defaults filled
        # in, values coerced) go to the tool; re-sending the arguments with the defaults added
        # would put a large call's arguments on the wire twice (issue 12, goal 1).
        return tool, args

    async def _dispatch(self, call: ToolCallState, run: "ResponseRun", tg: Any,
                        limiter: anyio.CapacityLimiter, running: list[tuple[frozenset[str], anyio.Event]]) -> None:
        if call.status is not Status.GENERATED:
            return
        self.assign_ids([call])
        if run.broken is not None:
            self._set(call, Status.ERRORED, error=CallError(
                "stream_error", f"not run: the response broke ({run.broken})", retryable=True))
            return
        planned = self._plan(call)
        if planned is None:
            return
        tool, args = planned
        keys = frozenset(self.session.locks.key(p) for p in self.session.lock_paths(tool.paths(args)))
        if not tool.read_only:
            # The approval shows the exact change, so it is computed on the file as
            # the earlier calls on the same paths leave it: wait for them first.
            for other_keys, event in running:
                if overlaps(other_keys, keys):
                    await event.wait()
        if call.status.terminal:  # cancelled while it waited
            return
        subject = await self._approve(call, tool, args, run)
        if subject is None:
            return
        if run.broken is not None:  # the response broke while it was being approved
            self._set(call, Status.ERRORED, error=CallError(
                "stream_error", f"not run: the response broke ({run.broken})", retryable=True))
            return
        done = anyio.Event()
        if tool.barrier:
            for _, event in running:
                await event.wait()
        if call.status.terminal:
            return
        # A change approved as undoable must be recorded before it is made (strict); one
        # approved knowing it cannot be, or run unasked under allowIrreversible, need not.
        strict = "irreversible" not in subject and not (not subject and self.session.settings.allow_irreversible)
        job = _Job(call, tool, args, subject, anyio.CancelScope(), done, strict)
        self._scopes[call.id] = job.scope
        tg.start_soon(self._run_one, job, limiter)
        running.append((keys, done))
        if tool.barrier:
            await done.wait()

    async def _approve(self, call: ToolCallState, tool: Tool, args: Any,
                       run: "ResponseRun | None" = None) -> dict[str, Any] | None:
        """Apply the permission policy; returns the subject the user approved ({} when
        no question was needed), or None when the call must not run.

        While the question is open, ``run`` (the call's response) may break: the
        question is then withdrawn and the call ends ``errored`` (``stream_error``).
        """
        session = self.session
        decision = session.policy.decide(tool, args)
        if decision is Decision.DENY:
            self._set(call, Status.CANCELED, cancel_reason=CancelReason.POLICY_DENIED)
            return None
        checkpointer = self.checkpointer
        outside = checkpointer is None or tool.read_only or isinstance(tool, McpTool)
        irreversible = None if outside else await checkpointer.unrecordable(tool, args)
        withheld = call_exclusions(tool, args, session.tool_context())
        if decision is Decision.AUTO and not withheld and (irreversible is None or session.settings.allow_irreversible):
            return {"irreversible": {"reason": irreversible}} if irreversible else {}
        if not (withheld and tool.read_only):  # a read's question shows no text: fetch none before the answer
            await session.prepare_documents(tool.paths(args))
        ctx = session.tool_context()
        ctx.allowed_excluded = allowed_files(withheld)  # the user sees what they are asked about
        try:
            subject = await build_subject(tool, args, ctx)
        except Exception as exc:  # a file tool's plan failed: the change cannot happen, so nobody is asked
            if not withheld:
                self._plan_failed(call, tool, exc)
                return None
            # Its error could tell the model what a file kept from it holds (a near match): the
            # question is only about showing that file; allowed, the call runs and fails as planned.
            subject, irreversible = plain_subject(tool, args), None
        if irreversible is not None:
            subject["irreversible"] = {"reason": irreversible}
        if withheld:
            subject["excluded"] = subject_entries(withheld)
        if call.status.terminal:  # cancelled while the subject was built: do not ask
            return None
        if run is not None and run.broken is not None:
            return {}  # not asked: _dispatch ends it errored
        scope = anyio.CancelScope()
        self._scopes[call.id] = scope
        if run is not None:
            run.asking[call.id] = scope
        answer = None
        try:
            with scope, self.waiting:
                answer = await self.approver.request_permission(snapshot(call), subject)
        finally:
            self._scopes.pop(call.id, None)
            if run is not None:
                run.asking.pop(call.id, None)
        if call.status.terminal:
            return None
        if run is not None and run.broken is not None:
            return {}  # withdrawn because the response broke: _dispatch ends it errored
        if answer is not None and answer.option == "unavailable" and withheld:
            self._set(call, Status.ERRORED, error=CallError("excluded", not_allowed_message(withheld)))
            return None
        if answer is not None and answer.option == "unavailable" and irreversible is not None:
            self._set(call, Status.ERRORED, error=CallError("not_undoable", not_asked_message(irreversible)))
            return None
        if answer is None or scope.cancelled_caught or answer.option == "unavailable":
            self._set(call, Status.CANCELED, cancel_reason=CancelReason.CALL_CANCELLED)
            return None
        hunks = answer.hunks if answer.option in ("allow_once", "allow_always") else None
        if hunks is not None and all(h.accepted for h in hunks):
            hunks = None  # every hunk accepted: the whole call, as answered
        if hunks is not None and not any(h.accepted for h in hunks):  # every hunk rejected: a rejection
            reasons = [f"hunk {h.index + 1}: {h.reason}" for h in hunks if h.reason]
            reason = "; ".join(([answer.reason] if answer.reason else []) + reasons)
            answer = PermissionAnswer("reject", reason or None)
        if answer.option in ("reject", "cancelled"):
            call.result = {"reason": answer.reason} if answer.reason else None
            if withheld:
                call.result = (call.result or {}) | {"withheld": rejected_note(withheld)}
            self._set(call, Status.CANCELED, cancel_reason=CancelReason.REJECTED)
            return None
        if answer.option == "allow_always" and hunks is None:  # the tool's policy only: an excluded file is
            session.policy.remember_always(tool, args, session.root)  # asked about each call; a partial edit never
        if hunks is not None:
            self._hunks[call.id] = [{"index": h.index, "accepted": h.accepted, **({"reason": h.reason} if h.reason else {})}
                                    for h in hunks]
        if withheld:
            self._allowed[call.id] = allowed_files(withheld)
        return subject

    def _plan_failed(self, call: ToolCallState, tool: Tool, exc: Exception) -> None:
        """End a call whose plan failed before any question: ``errored`` with the plan's code, its
        error given to the model as the call's result (as when the tool itself fails)."""
        error = tool_error_in(exc)
        if error is not None:
            failure = ToolResult.failure(error.code, error.message, error.data)
        else:
            log.error("call %s (%s): its plan failed", call.id, tool.name, exc_info=exc)
            failure = ToolResult.failure("tool_failed", f"{type(exc).__name__}: {exc}")
        if not call.status.terminal:
            self._finish(call, failure)

    async def _run_one(self, job: "_Job", limiter: anyio.CapacityLimiter) -> None:
        """Run one approved call under its own cancel scope, the limiter and its path locks.

        A failure in what surrounds the tool (checkpoints, locks, documents; the tool's
        own failures are results already) ends this call ``errored`` and leaves its
        siblings and the turn running: a :class:`ToolError` with its own code and
        message, anything else (a bug) as ``internal_error``. Cancellation propagates.
        """
        call, tool = job.call, job.tool
        started = time.monotonic()
        try:
            await self._run_job(job, limiter)
        except Exception as exc:
            error = tool_error_in(exc)
            if error is not None:  # an expected failure met before the tool ran (e.g. a path refused)
                failure = ToolResult.failure(error.code, error.message, error.data)
                code, message = error.code, error.message
            else:
                log.exception("call %s (%s) failed around its tool", call.id, tool.name)
                failure = None
                code, message = "internal_error", f"the call was stopped by an internal error: {type(exc).__name__}: {exc}"
            if not call.status.terminal:
                call.result = failure.to_wire() if failure is not None else call.result
                self._set(call, Status.ERRORED, error=CallError(code, message))
        finally:
            self._scopes.pop(call.id, None)
            self._allowed.pop(call.id, None)
            self._hunks.pop(call.id, None)
            job.done.set()
            log_call(self.session, call, tool, started)

    async def _run_job(self, job: "_Job", limiter: anyio.CapacityLimiter) -> None:
        """The work of :meth:`_run_one`: locks, the ``calling`` status, the tool between its checkpoints.

        An edit of a file open in the editor then waits for the editor's problems to settle
        (:mod:`toolwire.agent.problem_watch`) after its locks and its slot are released and
        ``job.done`` is set, so later calls go on meanwhile; the call is finished after that.
        A call cancelled while it waits is finished with the edit's result as it was.
        """
        call, tool, args, subject, scope = job.call, job.tool, job.args, job.subject, job.scope
        session = self.session
        result: ToolResult | None = None
        baseline: Baseline | NotOpen | None = None
        try:
            with scope:
                async with limiter:
                    paths = session.lock_paths(tool.paths(args))
                    async with session.locks.hold(paths):
                        if call.status.terminal:
                            return
                        self._set(call, Status.CALLING)
                        if tool.writes_tree:
                            session.tree_write_started()
                        try:
                            await session.prepare_documents(tool.paths(args))
                            allowed = self._allowed.get(call.id, frozenset())
                            editor = session.editor_intel()
                            wait = session.settings.diagnostics_wait
                            baseline = await self._problems.before(tool, args, session.root, session.documents, editor,
                                                                   wait)
                            result = (await self._still_approved(tool, args, subject, allowed)
                                      or await checkpointed(session, self.checkpointer, tool, args, job.strict, allowed,
                                                              call.id, self._hunks.get(call.id)))
                        finally:
                            if tool.writes_tree:
                                session.tree_write_finished()
                        # the first call of the session in a folder with an AGENTS.md carries it;
                        # the tool has run, so a failure to read the rules never turns its result
                        # into an error (the rules are given with a later call instead)
                        try:
                            result.instructions = session.nested_rules(tool.paths(args), call.id)
                        except Exception:
                            log.exception("call %s (%s): nested project rules not read", call.id, tool.name)
                        if result.instructions is not None and self.announce is not None:
                            if (listing := session.rules.take_change()) is not None:
                                self.announce(SessionInfo(listing))
                        if not isinstance(baseline, Baseline):  # finished under its locks, as every call that does not settle
                            if baseline is not None:  # a file the editor does not have open: said so, nothing waited for
                                await self._problems.after(baseline, result, session.documents, editor, wait,
                                                           session.model_exclude(), session.root, allowed)
                            self._finish(call, result)
                            return
                if baseline is not None:
                    job.done.set()  # the calls after it on these paths may run while it settles
                    try:
                        await self._problems.after(baseline, result, session.documents, editor, wait,
                                                   session.model_exclude(), session.root, allowed)
                    except Exception:  # the edit is made: a failure to check it must not undo its result
                        log.exception("call %s (%s): the problems after the edit could not be checked", call.id, tool.name)
            if result is not None and not call.status.terminal:
                self._finish(call, result)
                return
            if scope.cancelled_caught and not call.status.terminal:
                self._set(call, Status.CANCELED, cancel_reason=CancelReason.CALL_CANCELLED)
        finally:  # the next edit of the file may take its baseline once this call is finished
            self._problems.release(baseline)

    def _finish(self, call: ToolCallState, result: ToolResult) -> None:
        """End a call that ran with its tool's result: ``done``, or ``errored`` with its code. A done
        ``update_plan`` call's plan becomes :attr:`plan` and is announced (a :class:`PlanUpdate`)."""
        call.result = result.to_wire()
        if result.images and result.ok:
            self._images[id(call)] = result.images
        if result.error_code == "timeout":
            message = result.content.removeprefix("Error (timeout): ")
            self._set(call, Status.ERRORED, error=CallError("timeout", message, retryable=True))
        elif result.ok:
            self._set(call, Status.DONE)
            if call.name == UpdatePlan.name and (entries := plan_entries(result.data)) is not None:
                self.plan = PlanUpdate(entries)
                if self.announce is not None:
                    self.announce(self.plan)
        else:
            code = result.error_code or "tool_failed"
            message = result.content.removeprefix(f"Error ({code}): ")
            self._set(call, Status.ERRORED, error=CallError(code, message))

    async def _still_approved(self, tool: Tool, args: Any, subject: dict[str, Any],
                              allowed: frozenset[Path] = frozenset()) -> ToolResult | None:
        """None when the change about to be made is the one the user approved; a
        ``stale`` failure when the file changed in between, so the diff would differ."""
        if subject.get("kind") != "edit" or "diff" not in subject:
            return None
        ctx = self.session.tool_context()
        ctx.allowed_excluded = allowed
        try:
            now = await build_subject(tool, args, ctx)
        except Exception:  # the plan fails now: the file is no longer what was approved
            now = {}
        if now.get("diff") == subject.get("diff"):
            return None
        return ToolResult.failure(
            "stale", f"{subject.get('path')} changed after you approved the edit; nothing was written (read it again)")

@dataclass(slots=True, eq=False)
class _Job:
    """An approved call about to run: what runs, what was approved, how it is cancelled, when it
    is done, and whether its prior state must be recorded before it runs (``strict``)."""

    call: ToolCallState
    tool: Tool
    args: Any
    subject: dict[str, Any]
    scope: anyio.CancelScope
    done: anyio.Event
    strict: bool = True


class ResponseRun:
    """Dispatches one response's calls as they complete, while the model streams on.

    The stream side calls :meth:`offer` for each call the moment it is complete,
    then :meth:`close`; :meth:`dispatch` (a task) validates, asks and starts each
    call in the order offered, and returns when every started call is finished.
    Calls are handed over through a memory object stream, so the streaming code
    never waits on tools.

    Attributes:
        merger: The response's merger, once streaming started (for the history).
        broken: Set when the stream broke (:meth:`break_off`): calls offered but
            not started yet then end ``errored`` (``stream_error``) instead of running,
            and open permission requests of the response are withdrawn.
        asking: Cancel scopes of this response's open permission requests, by call id.
    """

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self._send, self._receive = anyio.create_memory_object_stream[ToolCallState](math.inf)
        self._offered: set[int] = set()
        self.merger: StreamMerger | None = None
        self.broken: str | None = None
        self.asking: dict[str, anyio.CancelScope] = {}

    def break_off(self, reason: str) -> None:
        """The stream broke: calls not started yet will not run; open questions are withdrawn
        (protocol.md, ``toolwire/session/prompt``: "If the stream then breaks…")."""
        self.broken = reason
        for scope in list(self.asking.values()):
            scope.cancel()

    def offer(self, call: ToolCallState) -> None:
        """Hand over a complete client call (once; later offers are ignored)."""
        if call.kind != "function" or id(call) in self._offered or call.status is not Status.GENERATED:
            return
        self._offered.add(id(call))
        self._send.send_nowait(call)

    def close(self) -> None:
        """No more calls will be offered."""
        self._send.close()

    async def dispatch(self) -> None:
        """Run offered calls until :meth:`close` and all started calls finished."""
        scheduler = self._scheduler
        limiter = anyio.CapacityLimiter(scheduler.session.settings.max_parallel_tools)
        running: list[tuple[frozenset[str], anyio.Event]] = []
        async with self._receive, anyio.create_task_group() as tg:
            async for call in self._receive:
                await scheduler._dispatch(call, self, tg, limiter, running)
