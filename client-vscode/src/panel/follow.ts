/**
 * Follow-along: reveals the file an edit call targets once its path is known, and its changed
 * lines when the edit is done, each in a pinned tab. While an edit's approval waits, its file
 * stays in view: a later call's file is not opened over it (it is when that call is done). An undo
 * replaces the highlight of a file it put back. No `vscode` import.
 */
import type { RequestPermissionParams, ToolCallUpdateWire } from "../protocol";
import type { UndoOutcome } from "./messages";
import type { PanelUi } from "./ports";

const EDIT_TOOLS = new Set(["create_file", "edit_file", "multi_edit", "delete_file", "rename_file"]);

/** Follow-along's state, one per panel host; `waiting` lists the approvals held open now. */
export class FollowAlong {
  private readonly diffs = new Map<string, string>();
  private readonly followed = new Set<string>();
  /** Paths whose changed lines follow-along highlighted. */
  private readonly highlighted = new Set<string>();
  /** Done edits' files and changed lines not shown yet: another edit's approval was in view. */
  private readonly deferred = new Map<string, [number, number][]>();

  constructor(
    private readonly ui: PanelUi,
    private readonly waiting: () => Iterable<RequestPermissionParams>,
  ) {}

  /** A tool call update: its file (and, once done, its changed lines) shown. */
  follow(call: ToolCallUpdateWire): void {
    if (!call.path || call.kind !== "function" || !EDIT_TOOLS.has(call.name) || !this.ui.settings().followAlong) {
      return;
    }
    if (call.status === "done" && call.name !== "delete_file") {
      this.followed.add(call.toolCallId);
      const lines = changedLines(resultDiff(call) ?? this.diffs.get(call.toolCallId) ?? "");
      if (lines.length > 0) {
        this.highlighted.add(call.path);
      }
      if (this.waitingOnOtherEdit(call.toolCallId)) {
        this.deferred.set(call.path, lines); // shown when no approval waits any more
      } else {
        this.ui.openFile(call.path, lines, undefined, { pinned: true });
      }
    } else if (!this.followed.has(call.toolCallId) && call.status !== "done" && !this.waitingOnOtherEdit(call.toolCallId)) {
      this.followed.add(call.toolCallId);
      this.ui.openFile(call.path, undefined, undefined, { pinned: true });
    }
  }

  /** An edit's approval is asked (before it is held): its diff kept, its file shown unless another edit's waits. */
  asked(params: RequestPermissionParams): void {
    if (params.subject.kind === "edit") {
      this.diffs.set(params.toolCall.toolCallId, params.subject.diff);
      if (!this.waitingOnOtherEdit(params.toolCall.toolCallId)) {
        this.showWaiting(params);
      }
    }
  }

  /** An approval was answered or withdrawn (no longer held): the next waiting edit's file, else the deferred ones. */
  settled(): void {
    // The next edit still waiting (asked while this one waited): its file now.
    const next = [...this.waiting()].find((params) => params.subject.kind === "edit");
    if (next !== undefined) {
      this.showWaiting(next);
    } else {
      for (const [path, lines] of this.deferred) {
        this.ui.openFile(path, lines, undefined, { pinned: true });
      }
      this.deferred.clear();
    }
  }

  /** An undo's outcome: each restored file follow-along highlighted gets the undo's message instead. */
  undone(outcome: UndoOutcome): void {
    for (const p of outcome.paths) {
      if (p.outcome === "restored" && this.highlighted.delete(p.path)) {
        this.ui.undone(p.path, `Undone by Toolwire (turn ${outcome.turnId ?? "?"}): back to its state before the turn`);
      }
    }
  }

  /** The file of an edit whose approval waits, pinned (a new file: nothing to show yet). */
  private showWaiting(params: RequestPermissionParams): void {
    const subject = params.subject;
    if (subject.kind === "edit" && subject.tool !== "create_file" && this.ui.settings().followAlong) {
      this.followed.add(params.toolCall.toolCallId);
      this.ui.openFile(subject.path, undefined, undefined, { pinned: true });
    }
  }

  /** True while an edit's approval other than call `toolCallId`'s waits. */
  private waitingOnOtherEdit(toolCallId: string): boolean {
    for (const params of this.waiting()) {
      if (params.subject.kind === "edit" && params.toolCall.toolCallId !== toolCallId) {
        return true;
      }
    }
    return false;
  }
}

/** The diff an edit's result carries (`result.data.diff`, protocol.md), if any. */
function resultDiff(call: ToolCallUpdateWire): string | undefined {
  const data = call.result && "data" in call.result ? call.result.data : undefined;
  const diff = data !== null && typeof data === "object" ? (data as { diff?: unknown }).diff : undefined;
  return typeof diff === "string" ? diff : undefined;
}

/**
 * The 1-based line ranges `[first, last]` of the new file that a unified diff adds
 * or changes (its `+` lines), for highlighting after an edit.
 */
export function changedLines(diff: string): [number, number][] {
  const ranges: [number, number][] = [];
  let line = 0;
  for (const text of diff.split("\n")) {
    const hunk = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(text);
    if (hunk !== null) {
      line = Number(hunk[1]);
    } else if (line > 0 && text.startsWith("+") && !text.startsWith("+++")) {
      const last = ranges[ranges.length - 1];
      if (last !== undefined && last[1] === line - 1) {
        last[1] = line;
      } else {
        ranges.push([line, line]);
      }
      line++;
    } else if (line > 0 && (text.startsWith(" ") || text === "")) {
      line++;
    }
  }
  return ranges;
}
