// Per-hunk review in the diff editor (issue 26): the quick pick's items and the answer it makes.
// No vscode import, so the Node tests run it.
import { displayText } from "../display";
import type { HunkAnswer, SubjectHunk } from "../protocol";

/** A quick pick item for one hunk: its number and header, its first changed lines. */
export function hunkItem(hunk: SubjectHunk): { label: string; description: string; detail: string } {
  const changed = hunk.diff.split("\n").filter((line) => line.startsWith("+") || line.startsWith("-"));
  const shown = changed.slice(0, 3).map((line) => displayText(line.length > 80 ? `${line.slice(0, 80)}…` : line));
  return {
    label: `Hunk ${hunk.index + 1}`,
    description: displayText(hunk.header),
    detail: shown.join("  ⏎  ") + (changed.length > 3 ? `  (+${changed.length - 3} more lines)` : ""),
  };
}

/** The answer for every hunk: accepted when its index is in `accepted`, else rejected with `reason`. */
export function hunkChoices(hunks: readonly SubjectHunk[], accepted: ReadonlySet<number>, reason?: string): HunkAnswer[] {
  const why = reason?.trim() ?? "";
  return hunks.map((hunk) => accepted.has(hunk.index) ? { index: hunk.index, accepted: true }
    : why !== "" ? { index: hunk.index, accepted: false, reason: why } : { index: hunk.index, accepted: false });
}
