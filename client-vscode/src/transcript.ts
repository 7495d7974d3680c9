/**
 * The text shown for one turn: one line per tool-call status change, the
 * assistant's message, and the stop reason. Pure: no `vscode`, no I/O.
 */
import type { PromptResult, SessionUpdate, ToolCallBrief, ToolCallStatus } from "./protocol";

/**
 * The identity and status fields every form of a call carries: a `tool_call` update's
 * `toolCall`, a full snapshot, a `toolwire/toolCalls/merge` brief (protocol.md).
 */
type CallStatus = ToolCallBrief;

interface Seen {
  rev: number;
  status: ToolCallStatus;
}

/**
 * Remembers the newest `rev` seen for each tool call so stale or repeated
 * updates can be dropped.
 *
 * Calls are keyed by `toolCallId`; a call whose id is not known yet is keyed by
 * its index in the current model response until the id arrives.
 */
export class ToolCallTracker {
  private readonly seen = new Map<string, Seen>();

  /**
   * Records `call` and says what it brings.
   *
   * @returns `"stale"` when its rev is not greater than the last seen for the call,
   *   `"status"` when its status differs from the last seen (or it is new),
   *   `"detail"` otherwise (same status, newer rev).
   */
  accept(call: CallStatus): "stale" | "status" | "detail" {
    const byIndex = `#${call.index}`;
    const key = call.toolCallId || byIndex;
    let last = this.seen.get(key);
    if (last === undefined && key !== byIndex) {
      last = this.seen.get(byIndex);
      this.seen.delete(byIndex);
    }
    if (last !== undefined && call.rev <= last.rev) {
      return "stale";
    }
    this.seen.set(key, { rev: call.rev, status: call.status });
    return last?.status === call.status ? "detail" : "status";
  }

  /** Forgets calls known only by index; the next model response reuses indexes. */
  newResponse(): void {
    for (const key of [...this.seen.keys()]) {
      if (key.startsWith("#")) {
        this.seen.delete(key);
      }
    }
  }
}

/** One line describing a call's status, e.g. `edit_file hello.txt: done`. */
export function describeCall(call: CallStatus): string {
  const name = call.name || "(tool)";
  const target = call.path ? ` ${call.path}` : "";
  let line = `${name}${target}: ${call.status}`;
  if (call.status === "errored" && call.error) {
    line += ` (${call.error.code}: ${call.error.message})`;
  } else if (call.status === "canceled" && call.cancelReason) {
    line += ` (${call.cancelReason})`;
  } else if (call.status === "done" && call.result && "ok" in call.result && !call.result.ok) {
    line += ` (failed${call.result.errorCode ? `: ${call.result.errorCode}` : ""})`;
  }
  if (call.result && "reason" in call.result) {
    line += `: ${call.result.reason}`;
  }
  return line;
}

/**
 * Turns session updates into transcript lines for one turn.
 *
 * Assistant text arrives in chunks; they are buffered and joined once, when
 * something else needs a line (a tool call, the end of the turn).
 */
export class Transcript {
  private readonly calls = new ToolCallTracker();
  private chunks: string[] = [];

  /** Lines to show for `update`; often none. */
  update(update: SessionUpdate): string[] {
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        this.chunks.push(update.content.text);
        return [];
      case "tool_call": {
        const fresh = this.calls.accept(update.toolCall);
        if (fresh !== "status") {
          return [];
        }
        return [...this.flushText(), `  ${describeCall(update.toolCall)}`];
      }
      case "turn":
        if (update.state === "model_request") {
          this.calls.newResponse();
        }
        return this.flushText();
      case "workspace_change":
        return [...this.flushText(), `  (changed outside Toolwire: ${update.paths.join(", ")})`];
      case "agent_thought_chunk":
      case "usage":
        return [];
      default:
        return []; // a kind this client does not know yet
    }
  }

  /** Lines for the end of the turn: any unflushed text, then the stop reason and usage. */
  end(result: PromptResult): string[] {
    const { inputTokens, outputTokens } = result.usage ?? { inputTokens: null, outputTokens: null };
    const usage = inputTokens === null && outputTokens === null ? "" : `, tokens in/out ${inputTokens ?? "?"}/${outputTokens ?? "?"}`;
    const why = result.message ? ` (${result.message})` : "";
    return [...this.flushText(), `Stop reason: ${result.stopReason}${why}${usage}`];
  }

  private flushText(): string[] {
    if (this.chunks.length === 0) {
      return [];
    }
    const text = this.chunks.join("");
    this.chunks = [];
    return text.trim() === "" ? [] : [text.trimEnd()];
  }
}
