/**
 * Answering an edit's approval hunk by hunk (issue 26): checking an answer against the subject's
 * hunks, the card's per-hunk answer and the diff editor's **Accept or Reject Hunks…**. The quick
 * pick's items are in hunks.ts. No `vscode` import.
 */
import type { HunkAnswer, RequestPermissionParams } from "../protocol";
import { displayText } from "../display";
import type { Held, PanelUi } from "./ports";

/** Answers held request `requestId` with `optionId` and these hunks (PanelHost's `answer`). */
export type AnswerWithHunks = (requestId: string, optionId: string, reason: undefined, hunks: readonly HunkAnswer[]) => void;

/**
 * Answers the waiting approval of call `toolCallId` hunk by hunk (allow once, with `hunks`: every
 * hunk of its subject once). False when none waits or the answer does not fit its subject's hunks.
 */
export function answerHunks(held: ReadonlyMap<string, Held>, answer: AnswerWithHunks, toolCallId: string, hunks: readonly HunkAnswer[]): boolean {
  for (const [requestId, waiting] of held) {
    if (waiting.params.toolCall.toolCallId !== toolCallId) {
      continue;
    }
    const option = waiting.params.options.find((o) => o.kind === "allow_once");
    if (option === undefined || hunkAnswers(waiting.params, hunks) === undefined) {
      return false;
    }
    answer(requestId, option.optionId, undefined, hunks);
    return !held.has(requestId);
  }
  return false;
}

/**
 * The diff editor's **Accept or Reject Hunks…**: lets the user choose the hunks of the waiting
 * edit of call `toolCallId` (`PanelUi.pickHunks`) and answers with them. `"none"` when no approval
 * of that call waits or its subject has no hunks, `"dismissed"` when the user chose nothing.
 */
export async function reviewHunks(
  held: ReadonlyMap<string, Held>, ui: PanelUi, answer: AnswerWithHunks, toolCallId: string,
): Promise<"answered" | "dismissed" | "none"> {
  const waiting = [...held.values()].find((h) => h.params.toolCall.toolCallId === toolCallId);
  const subject = waiting?.params.subject;
  if (subject === undefined || subject.kind !== "edit" || !subject.hunks || subject.hunks.length === 0 || ui.pickHunks === undefined) {
    return "none";
  }
  const picked = await ui.pickHunks(subject.hunks, displayText(subject.path));
  if (picked === undefined) {
    return "dismissed";
  }
  return answerHunks(held, answer, toolCallId, picked) ? "answered" : "none";
}

/**
 * `hunks` as the answer about `params`' subject's hunks: every hunk once (by index, in order),
 * `accepted` a boolean, a non-empty trimmed `reason` kept; undefined when it does not fit.
 */
export function hunkAnswers(params: RequestPermissionParams, hunks: readonly HunkAnswer[]): HunkAnswer[] | undefined {
  const subject = params.subject;
  if (subject.kind !== "edit" || !subject.hunks || subject.hunks.length === 0 || hunks.length !== subject.hunks.length) {
    return undefined;
  }
  const out: HunkAnswer[] = [];
  const sorted = [...hunks].sort((a, b) => a.index - b.index);
  for (const [i, hunk] of sorted.entries()) {
    if (hunk.index !== i || typeof hunk.accepted !== "boolean") {
      return undefined;
    }
    const reason = typeof hunk.reason === "string" ? hunk.reason.trim() : "";
    out.push(reason !== "" ? { index: i, accepted: hunk.accepted, reason } : { index: i, accepted: hunk.accepted });
  }
  return out;
}
