/**
 * The one typed message union between the extension host (host.ts) and the chat
 * webview (src/webview). Both sides import these types; nothing else crosses.
 * Pure types (and the one label both sides show): no `vscode`, no DOM.
 */
import type { HunkAnswer, InstructionsFile, McpServerStatusWire, ModelChoiceWire, RequestPermissionParams, SavedSessionWire, SessionUpdateParams, SnapshotResult, StopReason, TurnSummary, UndoTurnResult, Usage } from "../protocol";

/**
 * The label of **Continue** (a turn that stopped at the request cap goes on with the same
 * history: `toolwire/session/continue`), on its button and as the user's entry of that turn;
 * what the model reads is the server's continue prompt.
 */
export const CONTINUE_LABEL = "Continue";

/** An LSP range (0-based lines and characters). */
export interface ChipRange {
  start: { line: number; character: number };
  end: { line: number; character: number };
}

/**
 * A piece of context attached to a prompt (the `@` picker, **Attach Selection**, Ask About
 * Selection): a chip in the prompt box, sent as an embedded resource (`toolwire/session/prompt`'s
 * `resource` block; the host reads the buffer's text, saved or not).
 */
export interface ContextChip {
  /** A whole file, a selection of it (`range`), or the editor's problems of the file. */
  kind: "file" | "selection" | "problems";
  /** The file: workspace-relative, as findFiles and the editor name it. */
  path: string;
  /** A selection's range. */
  range?: ChipRange;
  /** What the chip shows (`src/a.py`, `src/a.py:3-7`, `Problems in src/a.py`). */
  label: string;
  /** Where the `@` picker found it (its group). */
  source?: "selection" | "problems" | "open" | "workspace";
  /**
   * The `modelExclude` pattern keeping the file from the model (findFiles' `excluded`): the picker marks
   * it, and the host asks the user before the chip is added (protocol.md "Files kept from the model").
   */
  excluded?: string;
}

/** 1-based first and last line of a range: one ending at character 0 of a later line ends on the line before. */
export function rangeLines(range: ChipRange): [number, number] {
  const last = range.end.character === 0 && range.end.line > range.start.line ? range.end.line - 1 : range.end.line;
  return [range.start.line + 1, last + 1];
}

/** A selection chip's label: `src/a.py:3-7` (`:3` for one line). */
export function selectionLabel(path: string, range: ChipRange): string {
  const [first, last] = rangeLines(range);
  return first === last ? `${path}:${first}` : `${path}:${first}-${last}`;
}

/** A permission request the host is holding open, with the id the webview answers with. */
export interface PendingPermission {
  requestId: string;
  params: RequestPermissionParams;
}

/**
 * The snapshot as the host sends it: the server's (whose `turns` say how each turn
 * ended, with its usage), plus the requests the host holds open.
 */
export interface HostSnapshot extends SnapshotResult {
  /** Open permission requests (the host's, which it can still answer). */
  permissions: PendingPermission[];
}

/** Result of `toolwire/session/undoTurn` (protocol.md). */
export type UndoOutcome = UndoTurnResult;

/**
 * How an undo was asked (the `undoTurn` params besides the ids): a `blocked` outcome's
 * **Undo the rest** asks again with `partial`, **Overwrite** with the path added to `force`.
 */
export interface UndoRequest {
  partial?: boolean;
  force?: string[];
  /** Also drop the turn from the conversation the model sees ("Undo and forget"). */
  rewind?: boolean;
}

/** Host → webview. */
export type HostMessage =
  /** Replace everything with this state (after a reload, a gap, a new conversation). */
  | { type: "reset"; snapshot: HostSnapshot | null }
  | { type: "update"; params: SessionUpdateParams }
  /** A new conversation started on the server (`toolwire/session/new`). */
  | { type: "session"; sessionId: string; model: string | null; instructions: InstructionsFile[]; mcpServers: McpServerStatusWire[] }
  /** The open conversation's model changed (`toolwire/session/setModel`). */
  | { type: "sessionModel"; model: string }
  | { type: "prompt"; text: string; chips?: ContextChip[] }
  /** The `@` picker's choices for `query` (selection, problems, open editors, then findFiles). */
  | { type: "mentions"; query: string; items: ContextChip[] }
  /** **Attach Selection**: a chip to add to the prompt box. */
  | { type: "attach"; chip: ContextChip }
  | { type: "turnResult"; stopReason: StopReason; message?: string; usage?: Usage; errorCode?: string; notice?: string }
  /** The workspace's saved conversations (`toolwire/session/list`), the most recent first. */
  | { type: "history"; sessions: SavedSessionWire[] }
  /** The models to switch to (`toolwire/models/list`). */
  | { type: "models"; active: string; models: ModelChoiceWire[] }
  | { type: "permission"; pending: PendingPermission }
  | { type: "permissionGone"; requestId: string }
  | { type: "undo"; outcome: UndoOutcome; request?: UndoRequest }
  /** The session's turns changed (a turn ended, or was undone): which can be undone now. */
  | { type: "turns"; turns: TurnSummary[] }
  | { type: "notice"; text: string }
  /** Several messages at once, applied in order (the host batches per tick). */
  | { type: "batch"; messages: HostMessage[] };

/** Webview → host. */
export type WebviewMessage =
  /** The page loaded (first time, after being hidden, after a reload): send a reset. */
  | { type: "ready" }
  /** The reducer hit a gap in the update stream: send a reset from a fresh snapshot. */
  | { type: "resync" }
  | { type: "prompt"; text: string; chips?: ContextChip[] }
  /** The prompt box's `@` picker asks for the choices of `query` (answered with `mentions`). */
  | { type: "mention"; query: string }
  /** The `@` picker's choice of a file kept from the model: the host asks the user, then sends `attach` (Send) or nothing. */
  | { type: "attachExcluded"; chip: ContextChip }
  /** **Continue** a turn that stopped at the request cap (`toolwire/session/continue`). */
  | { type: "continue" }
  | { type: "stop" }
  | { type: "newConversation" }
  /** Asks for the workspace's saved conversations (answered with `history`). */
  | { type: "listSessions" }
  | { type: "openSession"; sessionId: string }
  | { type: "deleteSession"; sessionId: string }
  /** Exports the open conversation as Markdown (built from its snapshot). */
  | { type: "exportConversation" }
  /** Asks for the models (answered with `models`). */
  | { type: "listModels" }
  | { type: "selectModel"; spec: string }
  | { type: "setApiKey" }
  /** Runs the offline demo (`replay`) on a sample prompt in a new conversation. */
  | { type: "tryDemo" }
  | { type: "cancelCall"; toolCallId: string }
  /** An approval's answer; `hunks`: the answer per hunk of an edit subject with `hunks` (every hunk once). */
  | { type: "answer"; requestId: string; optionId: string; reason?: string; hunks?: HunkAnswer[] }
  | { type: "review"; toolCallId: string }
  /** Opens a workspace file; at `line` and `column` (1-based) when given (a problem's place). */
  | { type: "openFile"; path: string; line?: number; column?: number }
  | { type: "openLink"; href: string }
  | { type: "undoTurn"; turnId: string | null; request?: UndoRequest }
  | { type: "copy"; text: string };
