/**
 * The words the panel shows for the wire's stop reasons and call statuses: words people use
 * ("Done", "Stopped"), one spelling everywhere ("Cancelled", never "canceled"). Pure: used by
 * the webview and the host.
 */

/** How a turn ended, for its end line (`stopReason`, protocol.md). */
export function stopWords(stopReason: string): string {
  switch (stopReason) {
    case "end_turn":
      return "Done";
    case "cancelled":
      return "Stopped";
    case "max_turn_requests":
      return "Stopped: request limit reached";
    case "max_tokens":
      return "Stopped: the answer hit the length limit";
    case "repeated_tool_failure":
      return "Stopped: the same tool kept failing";
    case "refusal":
      return "Stopped: the model refused";
    case "error":
      return "Failed";
    default:
      return `Stopped (${stopReason.replace(/_/g, " ")})`;
  }
}

/**
 * A turn's end line: its stop reason's words, except a turn that only wants an API key
 * (`errorCode` `no_api_key`), which is not a failure to show in red on a first run.
 */
export function endWords(stopReason: string, errorCode?: string): string {
  return errorCode === "no_api_key" ? "Needs an API key" : stopWords(stopReason);
}

/** The advice under a `no_api_key` turn, after its end line's "Needs an API key" (the panel's words, not the server's). */
export const NO_KEY_ADVICE = "Set one for the model endpoint (kept in VS Code's secret storage), or choose another model.";

/** A call's status on its card's badge. */
export function statusWords(status: string): string {
  switch (status) {
    case "generating":
      return "Writing";
    case "generated":
      return "Waiting";
    case "calling":
      return "Running";
    case "done":
      return "Done";
    case "errored":
      return "Failed";
    case "canceled":
      return "Cancelled";
    case "history":
      return "Earlier turn";
    default:
      return status;
  }
}

/** Why a call was cancelled (`cancelReason`). */
export function cancelWords(reason: string | undefined): string {
  switch (reason) {
    case "rejected":
      return "Rejected";
    case "turn_cancelled":
      return "Stopped with the turn";
    case "call_cancelled":
      return "Cancelled";
    case "policy_denied":
      return "Denied by your settings";
    case "timeout":
      return "Timed out";
    case "shutdown":
      return "Stopped: the server shut down";
    case undefined:
      return "Cancelled";
    default:
      return reason.replace(/_/g, " ");
  }
}

/** The header's words for the turn's state. */
export function turnWords(state: { running: boolean; turnState: string | null; waiting: number }): string {
  if (state.waiting > 0) {
    return "waiting for your approval";
  }
  if (!state.running) {
    return "";
  }
  return state.turnState === "running_tools" ? "running tools…" : "generating…";
}

/** What an undo did to a path or git action (`outcome`). */
export function outcomeWords(outcome: string): string {
  switch (outcome) {
    case "restored":
      return "Restored";
    case "kept":
      return "Kept";
    case "not_undoable":
      return "Not undoable";
    default:
      return outcome.replace(/_/g, " ");
  }
}

/** The line on a call's card after an undo of its turn (what happened to its file). */
export function undoneWords(undo: { outcome: string; reason?: string }): string {
  const why = undo.reason ? ` — ${undo.reason}` : "";
  switch (undo.outcome) {
    case "restored":
      return "Undone: the file is back to its state before the turn";
    case "kept":
      return `Not undone: the file was kept${why}`;
    case "undone":
      return "Undone with its turn";
    default:
      return `Not undone${why}`;
  }
}
