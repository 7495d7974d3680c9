/**
 * What a permission dialog says and how its answer maps onto the offered
 * options. Pure: the dialog itself is in ask.ts.
 */
import { displayText } from "./display";
import type { McpSubject, PermissionOption, PermissionOptionKind, RequestPermissionParams, RequestPermissionResult } from "./protocol";
import type { Approval } from "./settings";

/** The dialog's buttons, in the order shown. Dismissing the dialog counts as "Reject". */
export const CHOICES = ["Allow once", "Allow always", "Reject"] as const;

/** A button of the permission dialog. */
export type Choice = (typeof CHOICES)[number];

const KINDS: Record<Choice, readonly PermissionOptionKind[]> = {
  "Allow once": ["allow_once"],
  "Allow always": ["allow_always"],
  Reject: ["reject_once"],
};

/** Longest diff shown in the dialog; the full diff goes to the log. */
const MAX_DETAIL_LINES = 60;

/** The buttons worth showing for `options` (a button whose kind is not offered is left out). */
export function choicesFor(options: readonly PermissionOption[]): Choice[] {
  return CHOICES.filter((choice) => choice === "Reject" || findOption(choice, options) !== undefined);
}

/**
 * Maps the user's choice onto the request's options.
 *
 * @param choice The button pressed; `undefined` when the dialog was dismissed (= reject).
 * @returns `selected` with the matching option id, or `cancelled` when the server
 *   offered no option of that kind.
 */
export function permissionOutcome(
  choice: Choice | undefined,
  options: readonly PermissionOption[],
): RequestPermissionResult {
  const option = findOption(choice ?? "Reject", options);
  if (option === undefined) {
    return { outcome: { outcome: "cancelled" } };
  }
  return { outcome: { outcome: "selected", optionId: option.optionId } };
}

/**
 * "This change cannot be undone: <reason>" for a subject the server marked
 * `irreversible` (its prior state cannot be recorded, so undo cannot take it back);
 * `undefined` otherwise. Every question about such a change opens with it.
 */
export function irreversibleNotice(subject: RequestPermissionParams["subject"]): string | undefined {
  return "irreversible" in subject && subject.irreversible ? `This change cannot be undone: ${subject.irreversible.reason}` : undefined;
}

/**
 * "Kept from the model (modelExclude): config/.env (pattern '.env'). Allowing shows it to
 * the model for this call only." for a subject naming files the server's `modelExclude`
 * setting keeps from the model; `undefined` otherwise. Every question about such a call
 * opens with it (the server's words: agent/events.py, `excluded_notice`).
 */
export function excludedNotice(subject: RequestPermissionParams["subject"]): string | undefined {
  const files = ("excluded" in subject ? subject.excluded : undefined) ?? [];
  if (files.length === 0) {
    return undefined;
  }
  const named = files.map((file) => `${file.path} (pattern '${file.pattern}')`).join(", ");
  return `Kept from the model (modelExclude): ${named}. Allowing shows it to the model for this call only.`;
}

/**
 * The server's hints about an MCP tool, in words (`Hints from the server, not checked:
 * read-only, not destructive, open world.`), or `undefined` when it gave none. They are
 * shown, never used to allow a call.
 */
export function hintsText(hints: McpSubject["hints"]): string | undefined {
  const words: string[] = [];
  if (hints.readOnlyHint != null) {
    words.push(hints.readOnlyHint ? "read-only" : "not read-only");
  }
  if (hints.destructiveHint != null) {
    words.push(hints.destructiveHint ? "destructive" : "not destructive");
  }
  if (hints.openWorldHint != null) {
    words.push(hints.openWorldHint ? "open world (reaches outside this computer)" : "closed world");
  }
  return words.length === 0 ? undefined : `Hints from the server, not checked: ${words.join(", ")}.`;
}

/**
 * "Toolwire cannot undo what this tool does" (the server's words, `undo`) for an MCP tool
 * not marked read-only; `undefined` otherwise. Every question about such a call opens with it.
 */
export function undoNotice(subject: RequestPermissionParams["subject"]): string | undefined {
  return subject.kind === "mcp" && subject.undo ? subject.undo : undefined;
}

/** What every question opens with: the excluded files, then why undo cannot take it back. */
function notices(subject: RequestPermissionParams["subject"]): string | undefined {
  const irreversible = irreversibleNotice(subject);
  const excluded = excludedNotice(subject);
  const undo = undoNotice(subject);
  const parts = [excluded, irreversible === undefined ? undefined : `${irreversible}.`, undo === undefined ? undefined : `${undo}.`]
    .filter((p) => p !== undefined);
  return parts.length === 0 ? undefined : parts.join(" ");
}

/**
 * The answer the `toolwire.approval` setting gives without asking: `auto` allows
 * once, `deny` rejects (with the reason for the model); `ask` gives none. `auto`
 * never allows a change marked irreversible, nor a call naming a file kept from the
 * model (only the user may allow that, per call): it rejects it, saying why.
 */
export function automaticAnswer(
  approval: Approval,
  options: readonly PermissionOption[],
  subject?: RequestPermissionParams["subject"],
): RequestPermissionResult | undefined {
  switch (approval) {
    case "ask":
      return undefined;
    case "auto": {
      const notice = subject ? irreversibleNotice(subject) : undefined;
      const excluded = subject ? excludedNotice(subject) : undefined;
      if (notice === undefined && excluded === undefined) {
        return permissionOutcome("Allow once", options);
      }
      const result = permissionOutcome("Reject", options);
      if (result.outcome.outcome === "selected") {
        result.outcome.reason =
          notice !== undefined
            ? `${notice}. toolwire.approval is auto, which never allows such a change: tell the user (they can allow it with toolwire.approval set to ask).`
            : `${excluded} toolwire.approval is auto, which never allows a file kept from the model: tell the user (they can allow it with toolwire.approval set to ask).`;
      }
      return result;
    }
    case "deny": {
      const result = permissionOutcome("Reject", options);
      if (result.outcome.outcome === "selected") {
        result.outcome.reason = "Edits are turned off in this editor (toolwire.approval is deny).";
      }
      return result;
    }
  }
}

/**
 * The one line a notification shows for a request that arrives while the panel is
 * hidden, in display form (src/display.ts): the subject's paths and argv as the
 * server sent them (git's quoted form), the tool's name with escapes; opened by
 * "This change cannot be undone: <reason>" for a subject marked irreversible.
 */
export function notificationText(params: RequestPermissionParams): string {
  const { subject } = params;
  const target =
    subject.kind === "edit"
      ? ` ${subject.path}${subject.new_path ? ` → ${subject.new_path}` : ""}`
      : subject.kind === "git"
        ? `: ${subject.argv.join(" ")}`
        : subject.kind === "mcp"
          ? ` (${mcpOrigin(subject)})`
          : "";
  const notice = notices(subject);
  return displayText(`${notice === undefined ? "" : `${notice} `}Toolwire wants to run ${subject.tool || params.toolCall.name || "a tool"}${target}.`);
}

/** The dialog's message (one line) and detail (diff, command line or arguments), in display form. */
export function permissionPrompt(params: RequestPermissionParams): { message: string; detail: string } {
  const { message, detail } = promptWords(params);
  const notice = notices(params.subject);
  return { message: displayText(notice === undefined ? message : `${notice} ${message}`), detail: displayText(detail, "\n\t") };
}

function promptWords(params: RequestPermissionParams): { message: string; detail: string } {
  const { subject } = params;
  const tool = subject.tool || params.toolCall.name || "a tool";
  switch (subject.kind) {
    case "edit": {
      const target = subject.new_path ? `${subject.path} → ${subject.new_path}` : subject.path;
      return { message: `Toolwire wants to ${tool}: ${target}`, detail: clip(subject.diff) };
    }
    case "git":
      return { message: `Toolwire wants to ${tool}`, detail: `${subject.command ?? subject.argv.map(quote).join(" ")}\nin ${subject.cwd}` };
    case "tool":
      return { message: `Toolwire wants to ${tool}`, detail: clip(JSON.stringify(subject.arguments ?? {}, null, 2)) };
    case "mcp": {
      const hints = hintsText(subject.hints);
      return {
        message: `Toolwire wants to run ${tool} (${mcpOrigin(subject)})`,
        detail: (hints === undefined ? "" : `${hints}\n\n`) + clip(JSON.stringify(subject.arguments ?? {}, null, 2)),
      };
    }
  }
}

/** `get_current_time from the MCP server time`: where an MCP tool comes from. */
export function mcpOrigin(subject: McpSubject): string {
  return `${subject.serverTool} from the MCP server ${subject.server}`;
}

/** The full text behind the dialog's detail, for the log. */
export function permissionLogText(params: RequestPermissionParams): string {
  const { subject } = params;
  switch (subject.kind) {
    case "edit":
      return subject.diff;
    case "git":
      return subject.argv.map(quote).join(" ");
    case "tool":
    case "mcp":
      return JSON.stringify(subject.arguments ?? {}, null, 2);
  }
}

function findOption(choice: Choice, options: readonly PermissionOption[]): PermissionOption | undefined {
  for (const kind of KINDS[choice]) {
    const option = options.find((o) => o.kind === kind);
    if (option !== undefined) {
      return option;
    }
  }
  return undefined;
}

function clip(text: string): string {
  const lines = text.split("\n");
  if (lines.length <= MAX_DETAIL_LINES) {
    return text;
  }
  const rest = lines.length - MAX_DETAIL_LINES;
  return [...lines.slice(0, MAX_DETAIL_LINES), `… ${rest} more lines (full text in the Toolwire log)`].join("\n");
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
