/**
 * The host side of the chat panel: owns the conversation's session on the server,
 * forwards `toolwire/session/update` to the webview, holds permission requests open
 * until the user answers (in the card, or in a notification when the panel is
 * hidden), and runs what the webview asks for (prompt, stop, per-call cancel,
 * review in the diff editor, undo).
 *
 * No `vscode` import: everything the editor does goes through {@link PanelUi}, and
 * the server through {@link PanelServer}, so the Node test harness runs this exact
 * code against a real `toolwire serve`.
 */
import type {
  HunkAnswer,
  Method,
  Params,
  PromptResult,
  RequestPermissionParams,
  RequestPermissionResult,
  Result,
  SessionUpdateParams,
  SubjectHunk,
  ToolCallPreviewResult,
  ToolCallUpdateWire,
  ResourceBlock,
} from "../protocol";
import { displayText } from "../display";
import { automaticAnswer, notificationText } from "../permission";
import type { Approval } from "../settings";
import { CONTINUE_LABEL } from "./messages";
import { conversationMarkdown, DEMO_PROMPT } from "./history";
import type { ContextChip, HostMessage, HostSnapshot, PendingPermission, UndoOutcome, UndoRequest, WebviewMessage } from "./messages";

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

/** The question put before a file kept from the model is attached (protocol.md "Files kept from the model"). */
export function excludedQuestion(path: string, pattern: string): string {
  return `${path} is kept from the model (pattern ${pattern}). Send its content with this prompt?`;
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
function send<M extends Method>(rpc: RpcConnection, method: M, params: Params<M>): Promise<Result<M>> {
  return rpc.sendRequest<Result<M>>(method, params);
}

interface Held {
  params: RequestPermissionParams;
  settle(result: RequestPermissionResult): void;
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

const EDIT_TOOLS = new Set(["create_file", "edit_file", "multi_edit", "delete_file", "rename_file"]);

/** The panel's host logic; one per window. */
export class PanelHost {
  private session: { id: string; generation: number; rpc: RpcConnection } | undefined;
  private port: WebviewPort | undefined;
  private queue: HostMessage[] = [];
  private flushScheduled = false;
  private readonly held = new Map<string, Held>();
  /** Chips of files kept from the model that the user allowed for the next prompt ({@link PanelHost.attachExcluded}). */
  private readonly allowedExcluded = new Set<string>();
  private nextRequest = 0;
  private running = false;
  private turnState: string | null = null;
  private readonly diffs = new Map<string, string>();
  private readonly followed = new Set<string>();
  /** Paths whose changed lines follow-along highlighted. */
  private readonly highlighted = new Set<string>();
  /** Done edits' files and changed lines not shown yet: another edit's approval was in view. */
  private readonly deferred = new Map<string, [number, number][]>();
  /** The next new session runs the offline demo (`replay`), whatever the model setting. */
  private demo = false;

  constructor(
    private readonly server: PanelServer,
    private readonly ui: PanelUi,
    private readonly memory?: SessionMemory,
  ) {}

  /** Connects the webview; returns a function that disconnects it. */
  attach(port: WebviewPort): () => void {
    this.port = port;
    return () => {
      if (this.port === port) {
        this.port = undefined;
        this.queue = [];
      }
    };
  }

  /** The session the panel shows, if any. */
  get sessionId(): string | undefined {
    return this.session?.id;
  }

  /** Number of permission requests waiting for the user. */
  get waiting(): number {
    return this.held.size;
  }

  /** Handles a message from the webview. Errors are shown, never thrown. */
  async receive(message: WebviewMessage): Promise<void> {
    try {
      switch (message.type) {
        case "ready":
          await this.resync();
          void this.listSessions().catch(() => undefined); // the welcome's past conversations
          // the header's picker names the model setting; the endpoint is asked when the picker is opened
          this.post({ type: "models", active: this.ui.settings().model ?? "replay", models: [] });
          break;
        case "resync":
          await this.resync();
          break;
        case "prompt":
          await this.prompt(message.text, message.chips ?? []);
          break;
        case "mention":
          await this.mention(message.query);
          break;
        case "attachExcluded":
          await this.attachExcluded(message.chip);
          break;
        case "continue":
          await this.continueTurn();
          break;
        case "stop":
          await this.stop();
          break;
        case "newConversation":
          await this.newConversation();
          break;
        case "cancelCall":
          await this.cancelCall(message.toolCallId);
          break;
        case "answer":
          this.answer(message.requestId, message.optionId, message.reason, message.hunks);
          break;
        case "review":
          await this.review(message.toolCallId);
          break;
        case "openFile":
          this.ui.openFile(message.path, undefined, placeOf(message.line, message.column));
          break;
        case "openLink":
          if (/^https?:\/\//i.test(message.href)) {
            this.ui.openLink(message.href); // never command:, file: or anything else
          }
          break;
        case "undoTurn":
          await this.undoTurn(message.turnId, message.request);
          break;
        case "copy":
          this.ui.copy(message.text);
          break;
        case "listSessions":
          await this.listSessions();
          break;
        case "openSession":
          await this.openSession(message.sessionId);
          break;
        case "deleteSession":
          await this.deleteSession(message.sessionId);
          break;
        case "exportConversation":
          await this.exportConversation();
          break;
        case "listModels":
          await this.listModels();
          break;
        case "selectModel":
          await this.selectModel(message.spec);
          break;
        case "setApiKey":
          await this.ui.setApiKey?.();
          break;
        case "tryDemo":
          await this.tryDemo();
          break;
      }
    } catch (error) {
      this.ui.error(error instanceof Error ? error.message : String(error));
    }
  }

  /** A `toolwire/session/update` from the server. */
  onUpdate(params: SessionUpdateParams): void {
    // `streamId` marks a client-fed stream's update (absent, or null, for the session's own turns).
    if (params.sessionId !== this.session?.id || params.streamId != null) {
      return;
    }
    const update = params.update;
    if (update.sessionUpdate === "turn") {
      this.running = update.state !== "ended";
      this.turnState = update.state === "ended" ? null : update.state;
      this.reportStatus();
      if (update.state === "ended") {
        // The turn may be undoable now. Asked here, not when the prompt answers, so a turn
        // this host did not start (taken up after a window reload, a code action's) counts too.
        void this.refreshTurns().catch(() => undefined);
      }
    } else if (update.sessionUpdate === "tool_call") {
      this.follow(update.toolCall);
    }
    this.post({ type: "update", params });
  }

  /**
   * Answers `toolwire/session/requestPermission`: automatically when the
   * `toolwire.approval` setting says so, else when the user answers in the card or
   * the notification. A request the server withdraws answers `cancelled` and
   * disappears from the panel.
   */
  requestPermission(params: RequestPermissionParams, token?: CancelSignal): Promise<RequestPermissionResult> {
    const automatic = automaticAnswer(this.ui.settings().approval, params.options, params.subject);
    if (automatic !== undefined) {
      return Promise.resolve(automatic);
    }
    if (params.subject.kind === "edit") {
      this.diffs.set(params.toolCall.toolCallId, params.subject.diff);
      if (!this.waitingOnOtherEdit(params.toolCall.toolCallId)) {
        this.showWaiting(params);
      }
    }
    const requestId = `r${++this.nextRequest}`;
    return new Promise<RequestPermissionResult>((resolve) => {
      let listener: { dispose(): void } | undefined;
      const settle = (result: RequestPermissionResult): void => {
        if (!this.held.delete(requestId)) {
          return;
        }
        listener?.dispose();
        this.ui.closeReview?.(params.toolCall.toolCallId);
        // The next edit still waiting (asked while this one waited): its file now.
        const next = [...this.held.values()].find((h) => h.params.subject.kind === "edit");
        if (next !== undefined) {
          this.showWaiting(next.params);
        } else {
          for (const [path, lines] of this.deferred) {
            this.ui.openFile(path, lines, undefined, { pinned: true });
          }
          this.deferred.clear();
        }
        this.post({ type: "permissionGone", requestId });
        this.reportStatus();
        resolve(result);
      };
      this.held.set(requestId, { params, settle });
      listener = token?.onCancellationRequested(() => settle({ outcome: { outcome: "cancelled" } }));
      this.post({ type: "permission", pending: { requestId, params } });
      this.reportStatus();
      if (token?.isCancellationRequested) {
        settle({ outcome: { outcome: "cancelled" } });
        return;
      }
      if (this.port === undefined || !this.port.visible) {
        void this.ui.notifyPermission(notificationText(params), params).then((choice) => {
          if (!this.held.has(requestId)) {
            return; // answered in the panel or withdrawn meanwhile
          }
          if (choice === "open") {
            this.ui.reveal();
          } else if (choice === "allow_once") {
            this.answerKind(requestId, "allow_once");
          } else if (choice === "reject") {
            this.answerKind(requestId, "reject_once");
          }
        });
      }
    });
  }

  /** Sends a prompt in the panel's conversation (starting one if needed); resolves when the turn ends. */
  async prompt(text: string, chips: readonly ContextChip[] = []): Promise<PromptResult | undefined> {
    if (text.trim() === "" && chips.length === 0) {
      return undefined;
    }
    if (this.running) {
      this.ui.error("A turn is already running; stop it first.");
      return undefined;
    }
    const session = await this.ensureSession();
    const prompt: Exclude<Params<"toolwire/session/prompt">["prompt"], string> = text.trim() === "" ? [] : [{ type: "text", text }];
    const attached: ContextChip[] = [];
    for (const chip of chips) {
      const block = await this.ui.resource?.(chip);
      if (block === undefined) {
        this.ui.error(`Could not read ${chip.label}; it was not attached.`);
        continue;
      }
      // only a chip the user allowed here (attachExcluded) carries the allowance; the server refuses the others
      prompt.push(this.allowedExcluded.delete(allowKey(chip)) ? { ...block, _meta: { toolwire: { allowExcluded: true } } } : block);
      attached.push(chip);
    }
    if (prompt.length === 0) {
      return undefined;
    }
    return this.runTurn(text, () => send(session.rpc, "toolwire/session/prompt", { sessionId: session.id, prompt }), attached);
  }

  /**
   * The `@` picker chose a file kept from the model (findFiles' `excluded`): the user is asked (a modal
   * warning); **Send** adds the chip, allowed for the next prompt that carries it.
   */
  async attachExcluded(chip: ContextChip): Promise<void> {
    if (chip.excluded !== undefined && (await this.allowExcluded({ ...chip, excluded: chip.excluded }))) {
      this.post({ type: "attach", chip });
    }
  }

  /** Asks the user about `chip`, a file kept from the model by `chip.excluded`; **Send** allows it for the next prompt that carries it. */
  private async allowExcluded(chip: ContextChip & { excluded: string }): Promise<boolean> {
    if (!(await this.askExcluded(chip.path, chip.excluded))) {
      return false;
    }
    this.allowedExcluded.add(allowKey(chip));
    return true;
  }

  /** The one question about the workspace file `path`, kept from the model by `pattern`: true on **Send**. */
  private async askExcluded(path: string, pattern: string): Promise<boolean> {
    return this.ui.confirmExcluded !== undefined && (await this.ui.confirmExcluded(displayText(path), displayText(pattern)));
  }

  /**
   * A code action (`toolwire.runAction`) on the workspace file `path` (server.ts asks before running it):
   * undefined when the file is not kept from the model, else whether the user said **Send** to the same
   * question as the picker's (the action then carries `allowExcluded`; nothing is kept for a prompt).
   */
  async confirmAction(path: string): Promise<boolean | undefined> {
    const pattern = await this.keptBy(path);
    return pattern === undefined ? undefined : this.askExcluded(path, pattern);
  }

  /**
   * Chips built outside the picker (Attach Selection, Ask About Selection, Fix Diagnostics in File):
   * the server says which of their files are kept from the model (findFiles' `excluded` of the exact
   * path) and the user is asked as the picker asks; the chips (marked), or undefined when the user
   * cancelled one.
   */
  async confirmChips(chips: readonly ContextChip[]): Promise<ContextChip[] | undefined> {
    const out: ContextChip[] = [];
    for (const chip of chips) {
      const pattern = chip.excluded ?? (await this.keptBy(chip.path));
      if (pattern === undefined) {
        out.push(chip);
        continue;
      }
      const marked = { ...chip, excluded: pattern };
      if (!(await this.allowExcluded(marked))) {
        return undefined;
      }
      out.push(marked);
    }
    return out;
  }

  /** The `modelExclude` pattern that keeps the workspace file `path` from the model (the server's findFiles), else undefined. */
  private async keptBy(path: string): Promise<string | undefined> {
    const session = await this.ensureSession();
    const { files } = await send(session.rpc, "toolwire/workspace/findFiles", { sessionId: session.id, query: path, limit: 50 });
    const excluded = files.find((file) => file.path === path)?.excluded;
    return typeof excluded === "string" ? excluded : undefined;
  }

  /**
   * **Attach Selection**: a chip for the prompt box, shown there until the prompt is sent or it is
   * removed; a file kept from the model is asked about first ({@link PanelHost.confirmChips}).
   * False when the user cancelled (nothing attached).
   */
  async attachChip(chip: ContextChip): Promise<boolean> {
    const [allowed] = (await this.confirmChips([chip])) ?? [];
    if (allowed === undefined) {
      return false;
    }
    this.post({ type: "attach", chip: allowed });
    return true;
  }

  /** A chip for the prompt box as given, not asked about (the server refuses a file kept from the model in it). */
  attachUnasked(chip: ContextChip): void {
    this.post({ type: "attach", chip });
  }

  /**
   * The `@` picker's choices for `query`: the selection, the current file's problems and the open
   * editors that match, then the workspace's files (`toolwire/workspace/findFiles`, fuzzy).
   */
  async mention(query: string): Promise<ContextChip[]> {
    const context = this.ui.editorContext?.() ?? { open: [] };
    const needle = query.toLowerCase();
    const fits = (chip: ContextChip) => needle === "" || chip.label.toLowerCase().includes(needle);
    const items: ContextChip[] = [];
    for (const chip of [context.selection, context.problems, ...context.open]) {
      if (chip !== undefined && fits(chip)) {
        items.push(chip);
      }
    }
    const seen = new Set(items.filter((c) => c.kind === "file").map((c) => c.path));
    try {
      const session = await this.ensureSession();
      const { files } = await send(session.rpc, "toolwire/workspace/findFiles", { sessionId: session.id, query, limit: 50 });
      const kept = new Map(files.flatMap((file) => (typeof file.excluded === "string" ? [[file.path, file.excluded] as const] : [])));
      for (const [index, chip] of items.entries()) {
        const pattern = kept.get(chip.path); // an open editor's (or its selection's) file kept from the model
        if (pattern !== undefined) {
          items[index] = { ...chip, excluded: pattern };
        }
      }
      for (const file of files) {
        if (!seen.has(file.path)) {
          const chip: ContextChip = { kind: "file", path: file.path, label: file.path, source: "workspace" };
          items.push(typeof file.excluded === "string" ? { ...chip, excluded: file.excluded } : chip);
        }
      }
    } catch (error) {
      this.ui.error(`Could not list the workspace's files: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.post({ type: "mentions", query, items });
    return items;
  }

  /**
   * **Continue**: after a turn that stopped at the request cap (`max_turn_requests`), runs the
   * next turn on the same history (`toolwire/session/continue`: the server writes the prompt
   * the model reads); the transcript shows {@link CONTINUE_LABEL} as the user's message.
   */
  async continueTurn(): Promise<PromptResult | undefined> {
    if (this.running) {
      this.ui.error("A turn is already running; stop it first.");
      return undefined;
    }
    const session = this.requireSession();
    return this.runTurn(CONTINUE_LABEL, () => send(session.rpc, "toolwire/session/continue", { sessionId: session.id }));
  }

  /** Runs one turn (`request` answers when it ends), shown after the user's `text`. */
  private async runTurn(text: string, request: () => Promise<PromptResult>, chips: ContextChip[] = []): Promise<PromptResult> {
    this.running = true;
    this.reportStatus();
    this.post(chips.length > 0 ? { type: "prompt", text, chips } : { type: "prompt", text });
    try {
      const result = await request();
      this.post({
        type: "turnResult", stopReason: result.stopReason, message: result.message ?? undefined, usage: result.usage,
        errorCode: result.errorCode ?? undefined, notice: result.notice ?? undefined,
      });
      return result;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.post({ type: "turnResult", stopReason: "error", message });
      throw error;
    } finally {
      this.running = false;
      this.turnState = null;
      this.reportStatus();
      void this.listSessions().catch(() => undefined); // saved when the turn ended: its title and turns
    }
  }

  /** Stops the running turn (`toolwire/session/cancel`). */
  async stop(): Promise<void> {
    const session = this.session;
    if (session !== undefined) {
      const params: Params<"toolwire/session/cancel"> = { sessionId: session.id };
      await session.rpc.sendNotification("toolwire/session/cancel", params);
    }
  }

  /** Cancels one call without ending the turn (`toolwire/toolCall/cancel`). */
  async cancelCall(toolCallId: string): Promise<boolean> {
    const session = this.requireSession();
    const { cancelled } = await send(session.rpc, "toolwire/toolCall/cancel", {
      sessionId: session.id,
      toolCallId,
    });
    return cancelled;
  }

  /** Ends the conversation (closing its session: its saved file stays in the history) and clears the panel. */
  async newConversation(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    this.memory?.set(undefined);
    for (const held of [...this.held.values()]) {
      held.settle({ outcome: { outcome: "cancelled" } });
    }
    this.post({ type: "reset", snapshot: null });
    if (session !== undefined) {
      await send(session.rpc, "toolwire/session/close", { sessionId: session.id }).catch(() => undefined);
    }
    await this.listSessions().catch(() => undefined); // the old one is in the history
  }

  /** Sends the webview the workspace's saved conversations (`toolwire/session/list`). */
  async listSessions(): Promise<void> {
    const { cwd } = this.ui.settings();
    if (cwd === undefined) {
      this.post({ type: "history", sessions: [] });
      return;
    }
    const { rpc } = await this.server.connection();
    const { sessions } = await send(rpc, "toolwire/session/list", { cwd });
    this.post({ type: "history", sessions });
  }

  /** Reopens a saved (or open) conversation (`toolwire/session/load`); the current one stays in the history. */
  async openSession(sessionId: string): Promise<void> {
    if (this.running) {
      this.ui.error("A turn is running; stop it before opening another conversation.");
      return;
    }
    const { rpc, generation } = await this.server.connection();
    const { cwd } = this.ui.settings();
    const loaded = await send(rpc, "toolwire/session/load", cwd === undefined ? { sessionId } : { sessionId, cwd });
    const old = this.session;
    this.dropHeld();
    this.session = { id: loaded.sessionId, generation, rpc };
    this.memory?.set(loaded.sessionId);
    if (old !== undefined && old.id !== loaded.sessionId) {
      await send(old.rpc, "toolwire/session/close", { sessionId: old.id }).catch(() => undefined); // its file stays
    }
    await this.resync();
    this.post({
      type: "session",
      sessionId: loaded.sessionId,
      model: loaded.model ?? null,
      instructions: loaded.instructions ?? [],
      mcpServers: loaded.mcpServers ?? [],
    });
    await this.refreshTurns().catch(() => undefined);
    await this.listSessions().catch(() => undefined); // the one left is in the history
  }

  /** Deletes a saved conversation (`toolwire/session/delete`); the open one is cleared first. */
  async deleteSession(sessionId: string): Promise<void> {
    const { rpc } = await this.server.connection();
    const { cwd } = this.ui.settings();
    if (this.session?.id === sessionId) {
      if (this.running) {
        this.ui.error("A turn is running in this conversation; stop it before deleting it.");
        return;
      }
      this.session = undefined;
      this.memory?.set(undefined);
      this.dropHeld();
      this.post({ type: "reset", snapshot: null });
    }
    await send(rpc, "toolwire/session/delete", cwd === undefined ? { sessionId } : { sessionId, cwd });
    await this.listSessions();
  }

  /** The open conversation as Markdown (from its snapshot), shown in a new editor; returns the text. */
  async exportConversation(): Promise<string> {
    const session = this.requireSession();
    const snapshot = await send(session.rpc, "toolwire/session/snapshot", { sessionId: session.id });
    const { cwd } = this.ui.settings();
    // the title the history shows (the snapshot has none); none while the conversation is unsaved
    const listed = cwd === undefined ? undefined : await send(session.rpc, "toolwire/session/list", { cwd }).catch(() => undefined);
    const text = conversationMarkdown(snapshot, listed?.sessions.find((s) => s.sessionId === session.id)?.title);
    await this.ui.showMarkdown?.(text);
    return text;
  }

  /** Sends the webview the models to switch to (`toolwire/models/list`). */
  async listModels(): Promise<void> {
    const listed = await this.models();
    this.post({ type: "models", active: listed.active, models: listed.models });
  }

  /** The models to switch to (`toolwire/models/list`, for the panel's session if any): the picker's and Select Model's. */
  async models(): Promise<Result<"toolwire/models/list">> {
    const { rpc, generation } = await this.server.connection();
    const session = this.session !== undefined && this.session.generation === generation ? this.session : undefined;
    return send(rpc, "toolwire/models/list", session === undefined ? {} : { sessionId: session.id });
  }

  /**
   * Switches the model (the header's picker, **Toolwire: Select Model**): the open conversation's
   * next turns use it (`toolwire/session/setModel`) and it becomes the `toolwire.model` setting,
   * the model of new conversations. Refused while a turn runs, and for a spec the server cannot
   * use (its words shown): then nothing changes and the picker shows the model in use again.
   */
  async selectModel(spec: string): Promise<void> {
    const { generation } = await this.server.connection();
    const session = this.session !== undefined && this.session.generation === generation ? this.session : undefined;
    if (session !== undefined) {
      if (this.running) {
        await this.listModels().catch(() => undefined); // the picker shows the model in use again
        this.ui.error("A turn is running; change the model after it ends.");
        return;
      }
      try {
        const { model } = await send(session.rpc, "toolwire/session/setModel", { sessionId: session.id, model: spec });
        this.post({ type: "sessionModel", model });
      } catch (error) {
        await this.listModels().catch(() => undefined);
        throw error;
      }
    }
    await this.ui.setModel?.(spec);
    this.post({ type: "models", active: spec, models: [] });
    await this.listModels().catch(() => undefined);
  }

  /** **Try the offline demo**: a new conversation on `replay` with a sample prompt. */
  async tryDemo(): Promise<PromptResult | undefined> {
    if (this.running) {
      this.ui.error("A turn is already running; stop it first.");
      return undefined;
    }
    await this.newConversation();
    this.demo = true;
    return this.prompt(DEMO_PROMPT);
  }

  private dropHeld(): void {
    for (const held of [...this.held.values()]) {
      held.settle({ outcome: { outcome: "cancelled" } });
    }
  }

  /** Opens the diff editor on a pending edit (`toolwire/toolCall/preview`). */
  async review(toolCallId: string): Promise<void> {
    const session = this.requireSession();
    const preview = await send(session.rpc, "toolwire/toolCall/preview", { sessionId: session.id, toolCallId });
    const target = preview.newPath ? `${preview.path} → ${preview.newPath}` : preview.path;
    await this.ui.showDiff(preview, displayText(`${target} (proposed by Toolwire)`), toolCallId);
  }

  /**
   * Undoes a turn (`toolwire/session/undoTurn`; the last one when `turnId` is null) and shows
   * the outcome; `request` carries `partial`, `force` and `rewind` (absent: false, none).
   */
  async undoTurn(turnId: string | null, request: UndoRequest = {}): Promise<UndoOutcome> {
    const session = this.requireSession();
    const params = {
      sessionId: session.id,
      ...(turnId === null ? {} : { turnId }),
      ...(request.partial ? { partial: true } : {}),
      ...(request.force && request.force.length > 0 ? { force: request.force } : {}),
      ...(request.rewind ? { rewind: true } : {}),
    };
    const outcome = await send(session.rpc, "toolwire/session/undoTurn", params);
    this.post({ type: "undo", outcome, request });
    for (const p of outcome.paths) {
      if (p.outcome === "restored" && this.highlighted.delete(p.path)) {
        this.ui.undone(p.path, `Undone by Toolwire (turn ${outcome.turnId ?? "?"}): back to its state before the turn`);
      }
    }
    await this.refreshTurns();
    return outcome;
  }

  /** Tells the webview which turns can be undone now (from the snapshot's `turns`). */
  private async refreshTurns(): Promise<void> {
    const session = this.session;
    if (session === undefined) {
      return;
    }
    const snapshot = await send(session.rpc, "toolwire/session/snapshot", { sessionId: session.id });
    if (Array.isArray(snapshot.turns)) {
      this.post({ type: "turns", turns: snapshot.turns });
    }
  }

  /** Sends the webview a fresh state: the session's snapshot plus the requests held open. */
  async resync(): Promise<void> {
    const session = this.session;
    if (session === undefined) {
      this.post({ type: "reset", snapshot: null });
      return;
    }
    const snapshot = await send(session.rpc, "toolwire/session/snapshot", { sessionId: session.id });
    const permissions: PendingPermission[] = [...this.held].map(([requestId, { params }]) => ({ requestId, params }));
    const full: HostSnapshot = { ...snapshot, permissions };
    this.post({ type: "reset", snapshot: full });
  }

  /**
   * Shows a session the server started on its own (a code action's
   * `toolwire.runAction` answers `{sessionId, turnId}` and runs the turn in the
   * background): the panel switches to it and rebuilds from its snapshot.
   */
  async adopt(sessionId: string): Promise<void> {
    const { rpc, generation } = await this.server.connection();
    if (this.session?.id === sessionId && this.session.generation === generation) {
      return;
    }
    if (this.running && this.session !== undefined) {
      // never taken away from a turn that runs: the code action's conversation is in the history
      this.post({ type: "notice", text: "A code action started a new conversation; it is in the history." });
      void this.listSessions().catch(() => undefined);
      return;
    }
    const replaced = this.session !== undefined;
    this.session = { id: sessionId, generation, rpc };
    this.memory?.set(sessionId);
    this.running = true;
    this.reportStatus();
    await this.resync();
    if (replaced) {
      this.post({ type: "notice", text: "A code action opened this new conversation; the one you were in is in Past conversations." });
    }
    this.ui.reveal();
    void this.listSessions().catch(() => undefined); // the conversation it replaced stays in the history
  }

  /**
   * A (new) connection to the server is up. When it is the same server process (a
   * `--socket` server the window reconnected to, e.g. after a window reload), the
   * panel's session, or the one remembered from before the reload, is still there:
   * the panel takes it up again and rebuilds from its snapshot; open approvals come
   * back as the server sends them again. Otherwise the session is gone.
   */
  async serverRestarted(): Promise<void> {
    const sessionId = this.session?.id ?? this.memory?.get();
    if (sessionId === undefined) {
      return;
    }
    try {
      const { rpc, generation } = await this.server.connection();
      const snapshot = await send(rpc, "toolwire/session/snapshot", { sessionId });
      this.session = { id: sessionId, generation, rpc };
      this.running = snapshot.running === true;
      // The turn's state from before the reload is not in the snapshot: a response being
      // streamed means a model request, anything else running means tools.
      this.turnState = !this.running ? null : snapshot.streaming ? "model_request" : "running_tools";
      this.reportStatus();
      await this.resync();
      return;
    } catch {
      // Another server process (or the session was closed): start afresh.
    }
    this.memory?.set(undefined);
    if (this.session === undefined) {
      return;
    }
    this.session = undefined;
    this.running = false;
    this.turnState = null;
    for (const held of [...this.held.values()]) {
      held.settle({ outcome: { outcome: "cancelled" } });
    }
    this.post({ type: "notice", text: "The Toolwire server restarted; the next prompt starts a new conversation." });
    this.reportStatus();
  }

  private answer(requestId: string, optionId: string, reason?: string, hunks?: readonly HunkAnswer[]): void {
    const held = this.held.get(requestId);
    if (held === undefined || !held.params.options.some((o) => o.optionId === optionId)) {
      return; // withdrawn meanwhile, or not an offered option
    }
    const outcome: RequestPermissionResult["outcome"] =
      reason !== undefined && reason.trim() !== "" ? { outcome: "selected", optionId, reason: reason.trim() } : { outcome: "selected", optionId };
    if (hunks !== undefined) {
      const checked = hunkAnswers(held.params, hunks);
      if (checked === undefined) {
        return; // not an answer about this subject's hunks (the server would cancel the call)
      }
      outcome.hunks = checked;
    }
    held.settle({ outcome });
  }

  /**
   * Answers the waiting approval of call `toolCallId` hunk by hunk (allow once, with `hunks`: every
   * hunk of its subject once), as the card's per-hunk review does. False when none waits or the
   * answer does not fit its subject's hunks.
   */
  answerHunks(toolCallId: string, hunks: readonly HunkAnswer[]): boolean {
    for (const [requestId, held] of this.held) {
      if (held.params.toolCall.toolCallId !== toolCallId) {
        continue;
      }
      const option = held.params.options.find((o) => o.kind === "allow_once");
      if (option === undefined || hunkAnswers(held.params, hunks) === undefined) {
        return false;
      }
      this.answer(requestId, option.optionId, undefined, hunks);
      return !this.held.has(requestId);
    }
    return false;
  }

  /**
   * The diff editor's **Accept or Reject Hunks…**: lets the user choose the hunks of the waiting
   * edit of call `toolCallId` (`PanelUi.pickHunks`) and answers with them. `"none"` when no approval
   * of that call waits or its subject has no hunks, `"dismissed"` when the user chose nothing.
   */
  async reviewHunks(toolCallId: string): Promise<"answered" | "dismissed" | "none"> {
    const held = [...this.held.values()].find((h) => h.params.toolCall.toolCallId === toolCallId);
    const subject = held?.params.subject;
    if (subject === undefined || subject.kind !== "edit" || !subject.hunks || subject.hunks.length === 0 || this.ui.pickHunks === undefined) {
      return "none";
    }
    const picked = await this.ui.pickHunks(subject.hunks, displayText(subject.path));
    if (picked === undefined) {
      return "dismissed";
    }
    return this.answerHunks(toolCallId, picked) ? "answered" : "none";
  }

  /**
   * Answers a waiting approval with its allow-once or reject option (the **Allow Once** and
   * **Reject** commands and keybindings, the diff editor's **Accept** / **Reject**): the one of
   * call `toolCallId` when given, else the one waiting longest. False when none waits.
   */
  answerWaiting(kind: "allow_once" | "reject_once", toolCallId?: string): boolean {
    for (const [requestId, held] of this.held) {
      if (toolCallId === undefined || held.params.toolCall.toolCallId === toolCallId) {
        const before = this.held.size;
        this.answerKind(requestId, kind);
        return this.held.size < before;
      }
    }
    return false;
  }

  private answerKind(requestId: string, kind: "allow_once" | "reject_once"): void {
    const option = this.held.get(requestId)?.params.options.find((o) => o.kind === kind);
    if (option !== undefined) {
      this.answer(requestId, option.optionId);
    }
  }

  /**
   * Follow-along: reveals the file an edit call targets once its path is known, and its changed
   * lines when the edit is done, each in a pinned tab. While an edit's approval waits, its file
   * stays in view: a later call's file is not opened over it (it is when that call is done).
   */
  private follow(call: ToolCallUpdateWire): void {
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

  /** Follow-along: the file of an edit whose approval waits, pinned (a new file: nothing to show yet). */
  private showWaiting(params: RequestPermissionParams): void {
    const subject = params.subject;
    if (subject.kind === "edit" && subject.tool !== "create_file" && this.ui.settings().followAlong) {
      this.followed.add(params.toolCall.toolCallId);
      this.ui.openFile(subject.path, undefined, undefined, { pinned: true });
    }
  }

  /** True while an edit's approval other than call `toolCallId`'s waits. */
  private waitingOnOtherEdit(toolCallId: string): boolean {
    for (const { params } of this.held.values()) {
      if (params.subject.kind === "edit" && params.toolCall.toolCallId !== toolCallId) {
        return true;
      }
    }
    return false;
  }

  private async ensureSession(): Promise<{ id: string; rpc: RpcConnection }> {
    const { rpc, generation } = await this.server.connection();
    if (this.session !== undefined && this.session.generation === generation) {
      return this.session;
    }
    const { model, cwd } = this.ui.settings();
    if (cwd === undefined) {
      throw new Error("Open a local folder first.");
    }
    const spec = this.demo ? "replay" : model;
    this.demo = false;
    const params = spec === undefined ? { cwd } : { cwd, model: spec };
    const created = await send(rpc, "toolwire/session/new", params);
    this.session = { id: created.sessionId, generation, rpc };
    this.memory?.set(created.sessionId);
    this.post({ type: "reset", snapshot: null });
    this.post({
      type: "session",
      sessionId: created.sessionId,
      model: created.model ?? null,
      instructions: created.instructions ?? [],
      mcpServers: created.mcpServers ?? [],
    });
    return this.session;
  }

  private requireSession(): { id: string; rpc: RpcConnection } {
    if (this.session === undefined) {
      throw new Error("No conversation yet.");
    }
    return this.session;
  }

  private reportStatus(): void {
    this.ui.status({ running: this.running, waiting: this.held.size, turnState: this.turnState });
  }

  private post(message: HostMessage): void {
    if (this.port === undefined) {
      return; // the webview asks for a reset when it loads
    }
    this.queue.push(message);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const messages = this.queue;
    this.queue = [];
    if (messages.length > 0 && this.port !== undefined) {
      this.port.post(messages.length === 1 ? messages[0] : { type: "batch", messages });
    }
  }
}

/** The diff an edit's result carries (`result.data.diff`, protocol.md), if any. */
function resultDiff(call: ToolCallUpdateWire): string | undefined {
  const data = call.result && "data" in call.result ? call.result.data : undefined;
  const diff = data !== null && typeof data === "object" ? (data as { diff?: unknown }).diff : undefined;
  return typeof diff === "string" ? diff : undefined;
}

/** A 1-based line and column from the page, or undefined when either is not a positive whole number. */
function placeOf(line: unknown, column: unknown): { line: number; column: number } | undefined {
  const ok = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 1;
  return ok(line) ? { line, column: ok(column) ? column : 1 } : undefined;
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

/** Which chip an allowance of {@link PanelHost.attachExcluded} is for (its kind, file and label). */
function allowKey(chip: ContextChip): string {
  return JSON.stringify([chip.kind, chip.path, chip.label]);
}
