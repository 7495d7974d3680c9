/**
 * The panel's history (Past conversations), host side: listing the workspace's saved conversations,
 * opening and deleting one, exporting the open one as Markdown (from its `toolwire/session/snapshot`;
 * the Markdown itself is pure), and the offline demo's sample prompt. No `vscode` import.
 */
import type { SnapshotResult } from "../protocol";
import type { HostMessage } from "./messages";
import { send, type PanelServer, type PanelUi, type Session } from "./ports";

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

/** `text` as an inline code span: delimited by a backtick run longer than any in it (padded when it starts or ends with one). */
function code(text: string): string {
  const flat = text.replace(/[\r\n]+/g, " ");
  const longest = Math.max(0, ...(flat.match(/`+/g) ?? []).map((run) => run.length));
  const ticks = "`".repeat(longest + 1);
  const pad = flat.startsWith("`") || flat.endsWith("`") || flat === "" ? " " : "";
  return `${ticks}${pad}${flat}${pad}${ticks}`;
}

/** `text` on one line, what inline Markdown or HTML would take escaped: shown literally (a title). */
function literal(text: string): string {
  return text.replace(/\s+/g, " ").trim().replace(/[\\`*_[\]<>#!~&|]/g, "\\$&")
    .replace(/:\/\//g, "\\://") // no bare-URL autolink (GFM)
    .replace(/\bwww\./gi, (w) => `${w.slice(0, 3)}\\.`);
}

/**
 * A message's Markdown, closed off so it cannot swallow what follows: a code fence it leaves
 * open (a stopped answer cut mid-block, a user's stray ```) is closed, and an HTML block that
 * only its end token closes (`<!--`, `<script`, `<pre`, `<style`, `<textarea`, `<?`, `<!X`,
 * `<![CDATA[`, CommonMark's types 1–5) has its `<` escaped when that token never comes.
 */
export function closedMarkdown(body: string): string {
  const lines = body.split(/\r\n|\r|\n/);
  let fence: { char: string; length: number } | null = null;
  const HTML_OPEN: [RegExp, RegExp][] = [
    [/^ {0,3}<(script|pre|style|textarea)(\s|>|$)/i, /<\/(script|pre|style|textarea)>/i],
    [/^ {0,3}<!--/, /-->/],
    [/^ {0,3}<\?/, /\?>/],
    [/^ {0,3}<![a-zA-Z]/, />/],
    [/^ {0,3}<!\[CDATA\[/, /\]\]>/],
  ];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const marker = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(line);
    if (fence !== null) {
      if (marker !== null && marker[1][0] === fence.char && marker[1].length >= fence.length && marker[2].trim() === "") {
        fence = null;
      }
      continue;
    }
    if (marker !== null && !(marker[1][0] === "`" && marker[2].includes("`"))) {
      fence = { char: marker[1][0], length: marker[1].length };
      continue;
    }
    for (const [open, close] of HTML_OPEN) {
      const start = open.exec(line);
      if (start !== null) {
        const rest = [line.slice(start[0].length), ...lines.slice(i + 1)].join("\n");
        if (!close.test(rest)) {
          lines[i] = line.replace("<", "\\<");
        }
        break;
      }
    }
  }
  if (fence !== null) {
    lines.push(fence.char.repeat(fence.length));
  }
  return lines.join("\n");
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
  const heading = title?.trim() ? literal(title) : "Toolwire conversation";
  const out: string[] = [`# ${heading}`, "", `Model: ${code(snapshot.model)} · session ${code(snapshot.sessionId)}`];
  for (const m of messages) {
    if (m?.role === "user" && m.toolImages !== true) {
      const typed = typeof m.userText === "string" ? m.userText : text(m.content);
      out.push("", "## You", "", closedMarkdown(typed));
    } else if (m?.role === "assistant") {
      const said = text(m.content);
      out.push("", "## Toolwire");
      if (said !== "") {
        out.push("", closedMarkdown(said));
      }
      for (const call of m.tool_calls ?? []) {
        const name = typeof call.function?.name === "string" ? call.function.name : "?";
        const args = typeof call.function?.arguments === "string" ? call.function.arguments : "";
        out.push("", `**Tool call ${code(name)}**`, "", fenced(args, "json"));
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

/** What the history needs of the panel host. */
export interface HistoryHost {
  readonly server: PanelServer;
  readonly ui: PanelUi;
  post(message: HostMessage): void;
  session(): Session | undefined;
  /** The panel's session becomes `session` (remembered across window reloads). */
  setSession(session: Session | undefined): void;
  requireSession(): Session;
  running(): boolean;
  /** Withdraws the approvals held open (answered `cancelled`). */
  dropHeld(): void;
  resync(): Promise<void>;
  refreshTurns(): Promise<void>;
}

/** Sends the webview the workspace's saved conversations (`toolwire/session/list`). */
export async function listSessions(host: HistoryHost): Promise<void> {
  const { cwd } = host.ui.settings();
  if (cwd === undefined) {
    host.post({ type: "history", sessions: [] });
    return;
  }
  const { rpc } = await host.server.connection();
  const { sessions } = await send(rpc, "toolwire/session/list", { cwd });
  host.post({ type: "history", sessions });
}

/** Reopens a saved (or open) conversation (`toolwire/session/load`); the current one stays in the history. */
export async function openSession(host: HistoryHost, sessionId: string): Promise<void> {
  if (host.running()) {
    host.ui.error("A turn is running; stop it before opening another conversation.");
    return;
  }
  const { rpc, generation } = await host.server.connection();
  const { cwd } = host.ui.settings();
  const loaded = await send(rpc, "toolwire/session/load", cwd === undefined ? { sessionId } : { sessionId, cwd });
  const old = host.session();
  host.dropHeld();
  host.setSession({ id: loaded.sessionId, generation, rpc });
  if (old !== undefined && old.id !== loaded.sessionId) {
    await send(old.rpc, "toolwire/session/close", { sessionId: old.id }).catch(() => undefined); // its file stays
  }
  await host.resync();
  host.post({
    type: "session",
    sessionId: loaded.sessionId,
    model: loaded.model ?? null,
    instructions: loaded.instructions ?? [],
    mcpServers: loaded.mcpServers ?? [],
  });
  await host.refreshTurns().catch(() => undefined);
  await listSessions(host).catch(() => undefined); // the one left is in the history
}

/** Deletes a saved conversation (`toolwire/session/delete`); the open one is cleared first. */
export async function deleteSession(host: HistoryHost, sessionId: string): Promise<void> {
  const { rpc } = await host.server.connection();
  const { cwd } = host.ui.settings();
  if (host.session()?.id === sessionId) {
    if (host.running()) {
      host.ui.error("A turn is running in this conversation; stop it before deleting it.");
      return;
    }
    host.setSession(undefined);
    host.dropHeld();
    host.post({ type: "reset", snapshot: null });
  }
  await send(rpc, "toolwire/session/delete", cwd === undefined ? { sessionId } : { sessionId, cwd });
  await listSessions(host);
}

/** The open conversation as Markdown (from its snapshot), shown in a new editor; returns the text. */
export async function exportConversation(host: HistoryHost): Promise<string> {
  const session = host.requireSession();
  const snapshot = await send(session.rpc, "toolwire/session/snapshot", { sessionId: session.id });
  const { cwd } = host.ui.settings();
  // the title the history shows (the snapshot has none); none while the conversation is unsaved
  const listed = cwd === undefined ? undefined : await send(session.rpc, "toolwire/session/list", { cwd }).catch(() => undefined);
  const text = conversationMarkdown(snapshot, listed?.sessions.find((s) => s.sessionId === session.id)?.title);
  await host.ui.showMarkdown?.(text);
  return text;
}
