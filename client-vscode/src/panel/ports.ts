/**
 * What the panel host talks to, shared by host.ts and its feature modules (history, chips, models,
 * hunks-answer, follow): the server connection, the webview, the editor ({@link PanelUi}), and the
 * typed `send`. No `vscode` import.
 */
import type {
  HunkAnswer,
  Method,
  Params,
  RequestPermissionParams,
  RequestPermissionResult,
  Result,
  SubjectHunk,
  ToolCallPreviewResult,
  ResourceBlock,
} from "../protocol";
import type { Approval } from "../settings";
import type { ContextChip, HostMessage } from "./messages";

/** The JSON-RPC calls the panel makes (a LanguageClient or a vscode-jsonrpc connection). */
export interface RpcConnection {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  sendNotification(method: string, params: unknown): Promise<void> | void;
}

/** Where the panel gets its server connection from. */
export interface PanelServer {
  /**
   * The running server, started if needed. `generation` changes whenever the
   * server process does (sessions do not survive it).
   *
   * @throws Error when the server cannot be started.
   */
  connection(): Promise<{ rpc: RpcConnection; generation: number }>;
}

/** The webview as the host sees it. */
export interface WebviewPort {
  post(message: HostMessage): void;
  /** False while the view is collapsed or behind another view. */
  readonly visible: boolean;
}

/** The editor's side of things, implemented with `vscode` in view.ts and by the test harness. */
export interface PanelUi {
  /** Settings read when needed (a change applies to the next use). */
  settings(): { model: string | undefined; approval: Approval; followAlong: boolean; cwd: string | undefined };
  /**
   * Shown when a permission request arrives while the panel is hidden: `message`
   * (permission.ts `notificationText`, in display form) is the line to show.
   * Resolves with the user's choice, or `undefined` when dismissed.
   */
  notifyPermission(message: string, params: RequestPermissionParams): Promise<"open" | "allow_once" | "reject" | undefined>;
  /** Opens the editor's diff view of the pending edit of call `toolCallId`. */
  showDiff(preview: PreviewResult, title: string, toolCallId: string): Promise<void>;
  /** The approval of call `toolCallId` is answered or withdrawn: its diff views are closed. */
  closeReview?(toolCallId: string): void;
  /**
   * Lets the user accept or reject each hunk of an edit waiting for approval (the diff editor's
   * **Accept or Reject Hunks…**): the answer for every hunk, or undefined when dismissed.
   */
  pickHunks?(hunks: readonly SubjectHunk[], path: string): Promise<HunkAnswer[] | undefined>;
  /**
   * Opens a workspace-relative path in an editor, highlighting the 1-based line ranges of
   * `highlight`, with the cursor at `at` (1-based line and column) when given.
   */
  openFile(path: string, highlight?: readonly [number, number][], at?: { line: number; column: number }, options?: OpenOptions): void;
  /**
   * An undo put workspace-relative `path` back (`message` says so): its follow-along highlight
   * is replaced by that message.
   */
  undone(path: string, message: string): void;
  /** Opens an http(s) link outside the editor. */
  openLink(href: string): void;
  copy(text: string): void;
  /** Something the user must know (a failed request). */
  error(message: string): void;
  /** Number of approvals waiting, and the turn's state, for the status item. */
  status(state: { running: boolean; waiting: number; turnState: string | null }): void;
  /** Brings the panel into view. */
  reveal(): void;
  /** Sets the `toolwire.model` setting: the model of new conversations. */
  setModel?(spec: string): Promise<void>;
  /** Runs **Toolwire: Set API Key**. */
  setApiKey?(): Promise<void>;
  /** Shows an exported conversation (Markdown) in a new untitled editor. */
  showMarkdown?(text: string): Promise<void>;
  /**
   * The editor's context for the `@` picker: the active editor's selection (when not empty), its
   * problems (when it has some), the open editors' files (workspace-relative). Without it the
   * picker offers workspace files only.
   */
  editorContext?(): { selection?: ContextChip; problems?: ContextChip; open: ContextChip[] };
  /**
   * A chip as the prompt's embedded resource: the buffer's text (saved or not; of the chip's range
   * for a selection), or the file's problems one a line (`mimeType` {@link PROBLEMS_MIME});
   * undefined when it cannot be read.
   */
  resource?(chip: ContextChip): Promise<ResourceBlock | undefined>;
  /**
   * Asks the user (a modal warning) whether the text of `path`, kept from the model by `pattern`, is sent
   * with this prompt: true for **Send**. Without it such a file is never attached.
   */
  confirmExcluded?(path: string, pattern: string): Promise<boolean>;
}

/** The `mimeType` of a resource holding the editor's problems of its file (protocol.md). */
export const PROBLEMS_MIME = "text/x-toolwire-problems";

/** A `toolwire/session/prompt` embedded resource block (protocol.md; the generated wire type). */
export type { ResourceBlock };

/** How follow-along opens a file: `pinned` in a tab of its own (not the preview tab the next file replaces). */
export interface OpenOptions {
  pinned?: boolean;
}

/** Result of `toolwire/toolCall/preview` (protocol.md). */
export type PreviewResult = ToolCallPreviewResult;

/** Sends the `toolwire/` request `method`, its params and result typed by the generated method table. */
export function send<M extends Method>(rpc: RpcConnection, method: M, params: Params<M>): Promise<Result<M>> {
  return rpc.sendRequest<Result<M>>(method, params);
}

/** A thing the server can cancel (a `vscode.CancellationToken` or vscode-jsonrpc's). */
export interface CancelSignal {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

/** Where the panel keeps its session id across window reloads (VS Code's workspaceState). */
export interface SessionMemory {
  get(): string | undefined;
  set(sessionId: string | undefined): void;
}

/** The panel's session on the server (`generation`: the server process it lives in). */
export interface Session {
  id: string;
  generation: number;
  rpc: RpcConnection;
}

/** A permission request held open until the user answers it. */
export interface Held {
  params: RequestPermissionParams;
  settle(result: RequestPermissionResult): void;
}
