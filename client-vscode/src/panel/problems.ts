/**
 * The problems an edit introduced, as an edit's result carries them in `data.diagnostics`
 * (protocol.md, "Problems after an edit"), read for the card under the edit. The result is
 * the server's, but its texts come from language servers and the model's files: every field
 * is checked here, shown as text (display form) by the webview, never as markup.
 * Pure: no `vscode`, no DOM.
 */
import type { CallResult } from "../protocol";

/** One new problem, 1-based line and column. */
export interface NewProblem {
  path: string;
  line: number;
  column: number;
  severity: "error" | "warning" | "info" | "hint";
  source: string | null;
  code: string | null;
  message: string;
}

/** What the card shows under an edit. */
export type EditProblems =
  | { checked: false }
  | { checked: true; new: NewProblem[]; resolved: number; final: boolean };

const SEVERITIES = new Set(["error", "warning", "info", "hint"]);

/** `data.diagnostics` of a call's result, or undefined when it has none (or it is not that shape). */
export function problemsOf(result: CallResult | undefined): EditProblems | undefined {
  if (result === undefined || !("data" in result)) {
    return undefined;
  }
  const raw = (result.data as { diagnostics?: unknown } | null | undefined)?.diagnostics;
  if (typeof raw !== "object" || raw === null) {
    return undefined;
  }
  const d = raw as { checked?: unknown; new?: unknown; resolved?: unknown; final?: unknown };
  if (d.checked === false) {
    return { checked: false };
  }
  if (d.checked !== true) {
    return undefined;
  }
  const problems = Array.isArray(d.new) ? d.new.map(problemOf).filter((p): p is NewProblem => p !== undefined) : [];
  const resolved = typeof d.resolved === "number" && Number.isInteger(d.resolved) && d.resolved > 0 ? d.resolved : 0;
  return { checked: true, new: problems, resolved, final: d.final !== false };
}

function problemOf(value: unknown): NewProblem | undefined {
  const p = value as Record<string, unknown> | null;
  if (typeof p !== "object" || p === null) {
    return undefined;
  }
  const { path, line, column, severity, source, code, message } = p;
  if (typeof path !== "string" || path === "" || !positive(line) || !positive(column) || typeof message !== "string") {
    return undefined;
  }
  return {
    path,
    line,
    column,
    severity: typeof severity === "string" && SEVERITIES.has(severity) ? (severity as NewProblem["severity"]) : "error",
    source: typeof source === "string" && source !== "" ? source : null,
    code: typeof code === "string" && code !== "" ? code : typeof code === "number" ? String(code) : null,
    message,
  };
}

function positive(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1;
}

/** The line above the list: `2 new problems, 1 fixed`, `No new problems`, `Problems not checked: …`. */
export function problemsHeadline(problems: EditProblems): string {
  if (!problems.checked) {
    return "Problems not checked: the file is not open in the editor";
  }
  const count = problems.new.length;
  const parts = [count === 0 ? "No new problems" : `${count} new problem${count === 1 ? "" : "s"}`];
  if (problems.resolved > 0) {
    parts.push(`${problems.resolved} fixed`);
  }
  return `${parts.join(", ")}${problems.final ? "" : " (may not be final)"}`;
}
