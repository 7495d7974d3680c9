/**
 * The panel's history helpers, host side and pure: a conversation exported as Markdown (from its
 * `toolwire/session/snapshot`, nothing asked of the server), and the offline demo's sample prompt.
 */
import type { SnapshotResult } from "../protocol";

/** What **Try the offline demo** asks (the embedded `replay` model answers with its demo text). */
export const DEMO_PROMPT = "Show me what Toolwire can do.";

interface ExportMessage {
  role?: unknown;
  content?: unknown;
  userText?: unknown;
  toolImages?: unknown;
  tool_calls?: { id?: unknown; function?: { name?: unknown; arguments?: unknown } }[];
  tool_call_id?: unknown;
}

function text(content: unknown): string {
  if (typeof content === "string") {
    return content;
  }
  if (Array.isArray(content)) {
    return content.map((part) => (part && typeof part === "object" && typeof part.text === "string" ? part.text : "")).join("");
  }
  return "";
}

/** A fence longer than any backtick run of `body`. */
function fenced(body: string, info = ""): string {
  const longest = Math.max(2, ...(body.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${info}\n${body}\n${fence}`;
}

/** Results longer than this are cut in the export. */
const RESULT_LIMIT = 2000;

/**
 * The conversation as Markdown: a title, then each user message (what the user typed), each
 * answer, and each tool call with its arguments and (cut) result, in order.
 */
export function conversationMarkdown(snapshot: SnapshotResult, title?: string | null): string {
  const messages = snapshot.messages as ExportMessage[];
  const results = new Map<string, string>();
  for (const m of messages) {
    if (m?.role === "tool" && typeof m.tool_call_id === "string") {
      results.set(m.tool_call_id, text(m.content));
    }
  }
  const out: string[] = [`# ${title ?? "Toolwire conversation"}`, "", `Model: \`${snapshot.model}\` · session \`${snapshot.sessionId}\``];
  for (const m of messages) {
    if (m?.role === "user" && m.toolImages !== true) {
      const typed = typeof m.userText === "string" ? m.userText : text(m.content);
      out.push("", "## You", "", typed);
    } else if (m?.role === "assistant") {
      const said = text(m.content);
      out.push("", "## Toolwire");
      if (said !== "") {
        out.push("", said);
      }
      for (const call of m.tool_calls ?? []) {
        const name = typeof call.function?.name === "string" ? call.function.name : "?";
        const args = typeof call.function?.arguments === "string" ? call.function.arguments : "";
        out.push("", `**Tool call \`${name}\`**`, "", fenced(args, "json"));
        const result = typeof call.id === "string" ? results.get(call.id) : undefined;
        if (result !== undefined) {
          const shown = result.length > RESULT_LIMIT ? `${result.slice(0, RESULT_LIMIT)}\n[… ${result.length - RESULT_LIMIT} more characters]` : result;
          out.push("", "Result:", "", fenced(shown));
        }
      }
    }
  }
  return `${out.join("\n")}\n`;
}
