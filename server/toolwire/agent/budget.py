"""The budgets of a turn, and what each front-end offers when one is spent.

* Tools per model request (``maxTools``): which tools are offered is chosen in
  :mod:`toolwire.tools.selection`; here every request logs how many it offers, and
  the first request of a session that leaves tools out tells the user, once per
  session (a :class:`~toolwire.agent.events.SessionWarning` on the turn's sink; a
  later change of the budget that leaves out other tools tells again).
* Model requests per turn (``maxModelRequests``): a turn that reaches the cap ends
  ``max_turn_requests`` with :func:`cap_message`; Continue
  (:meth:`toolwire.agent.host.SessionHost.continue_turn`) runs the next turn with
  :data:`CONTINUE_PROMPT` on the same history. Each front-end only offers it: the
  panel's Continue button and ``toolwire/session/continue`` (LSP), the ``/continue``
  command (ACP), ``--continue N`` (``toolwire run``).
"""

from __future__ import annotations

import logging

from toolwire.agent.events import SessionWarning, Sink
from toolwire.agent.session import Session

log = logging.getLogger(__name__)

__all__ = ["CONTINUE_PROMPT", "CAP_STOP", "announce_request", "cap_message", "continue_refusal"]

#: The stop reason of a turn that reached ``maxModelRequests``.
CAP_STOP = "max_turn_requests"

#: The user message of a Continue: the model reads it after the whole history of the stopped turn.
CONTINUE_PROMPT = ("Continue the task from where you stopped: the last turn ran out of model requests (the "
                   "maxModelRequests setting). Everything done so far is above; do not redo finished steps.")


def cap_message(max_requests: int) -> str:
    """The message of a turn that ended :data:`CAP_STOP` after ``max_requests`` requests (each
    front-end adds how it continues)."""
    return f"the turn stopped after {max_requests} model requests (the maxModelRequests setting)"


def continue_refusal(last_stop: str | None, in_history: bool = True) -> str | None:
    """Why a Continue cannot run after a last turn that ended ``last_stop`` (None: no turn yet)
    and whose messages are ``in_history`` or not (an undo with ``rewind`` dropped them); None when it can."""
    if last_stop == CAP_STOP and not in_history:
        return ("there is no turn to continue (the last turn was undone and removed from the conversation): send "
                "a new prompt")
    if last_stop == CAP_STOP:
        return None
    ended = f"the last turn ended {last_stop}" if last_stop else "the session has no turn yet"
    return f"there is no turn to continue ({ended}): Continue resumes a turn that stopped with {CAP_STOP}"


def announce_request(session: Session, sink: Sink, turn_id: str, number: int) -> None:
    """Log the tools model request ``number`` of turn ``turn_id`` offers; warn once about tools left out."""
    selection = session.tool_selection
    offered = len(session.registry.names())
    left_out = selection.left_out if selection is not None else ()
    log.info("turn %s: model request %d of at most %d offers %d tools (maxTools %d, %d left out)", turn_id, number,
             session.settings.max_model_requests, offered, session.settings.max_tools, len(left_out))
    told = session.tools_warning
    if selection is None or not left_out or (told is not None and told.names == left_out):
        return
    message = selection.left_out_message()
    assert message is not None
    log.warning("session %s: %s", session.id, message)
    session.tools_warning = SessionWarning("tools_left_out", message, left_out)
    sink.emit(session.tools_warning)
