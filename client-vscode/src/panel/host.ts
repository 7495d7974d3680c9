/**
 * The host side of the chat panel, the coordinator: owns the conversation's session on the server,
 * forwards `toolwire/session/update` to the webview, holds permission requests open until the user
 * answers (in the card, or in a notification when the panel is hidden), runs turns (prompt,
 * continue, stop, per-call cancel), review in the diff editor and undo. Its features live beside it:
 * history.ts (past conversations, export), chips.ts (the `@` picker, context chips, files kept from
 * the model), models.ts (the model picker), hunks-answer.ts (per-hunk answers), follow.ts
 * (follow-along); ports.ts holds the interfaces it talks through.
 *
 * No `vscode` import: everything the editor does goes through {@link PanelUi}, and
 * the server through {@link PanelServer}, so the Node test harness runs this exact
 * code against a real `toolwire serve`.
 */
import type {
  HunkAnswer,
  Params,
  PromptResult,
  RequestPermissionParams,
  RequestPermissionResult,
  Result,
  SessionUpdateParams,
} from "../protocol";
import { displayText } from "../display";
import { automaticAnswer, notificationText } from "../permission";
import { CONTINUE_LABEL } from "./messages";
import type { ContextChip, HostMessage, HostSnapshot, PendingPermission, UndoOutcome, UndoRequest, WebviewMessage } from "./messages";
import { ContextChips, type PromptBlocks } from "./chips";
import { FollowAlong } from "./follow";
import { DEMO_PROMPT, deleteSession, exportConversation, listSessions, openSession, type HistoryHost } from "./history";
import { answerHunks, hunkAnswers, reviewHunks } from "./hunks-answer";
import { listModels, models, selectModel, type ModelsHost } from "./models";
import { send, type CancelSignal, type Held, type PanelServer, type PanelUi, type RpcConnection, type Session, type SessionMemory, type WebviewPort } from "./ports";

export type { CancelSignal, OpenOptions, PanelServer, PanelUi, PreviewResult, ResourceBlock, RpcConnection, SessionMemory, WebviewPort } from "./ports";
export { PROBLEMS_MIME } from "./ports";
export { excludedQuestion } from "./chips";
export { changedLines } from "./follow";
export { hunkAnswers } from "./hunks-answer";

/** The panel's host logic; one per window. */
export class PanelHost {
  private session: Session | undefined;
  private port: WebviewPort | undefined;
  private queue: HostMessage[] = [];
  private flushScheduled = false;
  private readonly held = new Map<string, Held>();
  private nextRequest = 0;
  private running = false;
  private turnState: string | null = null;
  private readonly follow: FollowAlong;
  private readonly chips: ContextChips;
  /** What history.ts and models.ts take of this host. */
  private readonly features: HistoryHost & ModelsHost;
  /** The next new session runs the offline demo (`replay`), whatever the model setting. */
  private demo = false;

  constructor(
    private readonly server: PanelServer,
    private readonly ui: PanelUi,
    private readonly memory?: SessionMemory,
  ) {
    this.follow = new FollowAlong(this.ui, () => [...this.held.values()].map((h) => h.params));
    this.chips = new ContextChips(this.ui, (message) => this.post(message), () => this.ensureSession());
    this.features = {
      server: this.server,
      ui: this.ui,
      post: (message) => this.post(message),
      session: () => this.session,
      setSession: (session) => {
        this.session = session;
        this.memory?.set(session?.id);
      },
      requireSession: () => this.requireSession(),
      running: () => this.running,
      dropHeld: () => this.dropHeld(),
      resync: () => this.resync(),
      refreshTurns: () => this.refreshTurns(),
    };
  }

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
      this.follow.follow(update.toolCall);
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
    this.follow.asked(params);
    const requestId = `r${++this.nextRequest}`;
    return new Promise<RequestPermissionResult>((resolve) => {
      let listener: { dispose(): void } | undefined;
      const settle = (result: RequestPermissionResult): void => {
        if (!this.held.delete(requestId)) {
          return;
        }
        listener?.dispose();
        this.ui.closeReview?.(params.toolCall.toolCallId);
        this.follow.settled();
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
    const prompt: PromptBlocks = text.trim() === "" ? [] : [{ type: "text", text }];
    const attached = await this.chips.addResources(prompt, chips);
    if (prompt.length === 0) {
      return undefined;
    }
    return this.runTurn(text, () => send(session.rpc, "toolwire/session/prompt", { sessionId: session.id, prompt }), attached);
  }

  /**
   * The `@` picker chose a file kept from the model (findFiles' `excluded`): the user is asked (a modal
   * warning); **Send** adds the chip, allowed for the next prompt that carries it.
   */
  attachExcluded(chip: ContextChip): Promise<void> {
    return this.chips.attachExcluded(chip);
  }

  /**
   * Chips built outside the picker (Attach Selection, Ask About Selection, Fix Diagnostics in File):
   * the user is asked about files kept from the model as the picker asks; the chips (marked), or
   * undefined when the user cancelled one.
   */
  confirmChips(chips: readonly ContextChip[]): Promise<ContextChip[] | undefined> {
    return this.chips.confirmChips(chips);
  }

  /**
   * A code action (`toolwire.runAction`) on the workspace file `path`: undefined when the file is not
   * kept from the model, else whether the user said **Send** to the picker's question (chips.ts).
   */
  confirmAction(path: string): Promise<boolean | undefined> {
    return this.chips.confirmAction(path);
  }

  /** **Attach Selection**: a chip for the prompt box, asked about first when kept from the model. False when cancelled. */
  attachChip(chip: ContextChip): Promise<boolean> {
    return this.chips.attachChip(chip);
  }

  /** A chip for the prompt box as given, not asked about (the server refuses a file kept from the model in it). */
  attachUnasked(chip: ContextChip): void {
    this.chips.attachUnasked(chip);
  }

  /** The `@` picker's choices for `query` (the editor's context, then the workspace's files). */
  mention(query: string): Promise<ContextChip[]> {
    return this.chips.mention(query);
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
  listSessions(): Promise<void> {
    return listSessions(this.features);
  }

  /** Reopens a saved (or open) conversation (`toolwire/session/load`); the current one stays in the history. */
  openSession(sessionId: string): Promise<void> {
    return openSession(this.features, sessionId);
  }

  /** Deletes a saved conversation (`toolwire/session/delete`); the open one is cleared first. */
  deleteSession(sessionId: string): Promise<void> {
    return deleteSession(this.features, sessionId);
  }

  /** The open conversation as Markdown (from its snapshot), shown in a new editor; returns the text. */
  exportConversation(): Promise<string> {
    return exportConversation(this.features);
  }

  /** Sends the webview the models to switch to (`toolwire/models/list`). */
  listModels(): Promise<void> {
    return listModels(this.features);
  }

  /** The models to switch to (`toolwire/models/list`, for the panel's session if any): the picker's and Select Model's. */
  models(): Promise<Result<"toolwire/models/list">> {
    return models(this.features);
  }

  /** Switches the model (the header's picker, **Toolwire: Select Model**; models.ts `selectModel`). */
  selectModel(spec: string): Promise<void> {
    return selectModel(this.features, spec);
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
    this.follow.undone(outcome);
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
    return answerHunks(this.held, (requestId, optionId, reason, answer) => this.answer(requestId, optionId, reason, answer), toolCallId, hunks);
  }

  /**
   * The diff editor's **Accept or Reject Hunks…** for the waiting edit of call `toolCallId`
   * (hunks-answer.ts `reviewHunks`): `"none"` when there is nothing to pick from.
   */
  reviewHunks(toolCallId: string): Promise<"answered" | "dismissed" | "none"> {
    return reviewHunks(this.held, this.ui, (requestId, optionId, reason, answer) => this.answer(requestId, optionId, reason, answer), toolCallId);
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

  private requireSession(): Session {
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

/** A 1-based line and column from the page, or undefined when either is not a positive whole number. */
function placeOf(line: unknown, column: unknown): { line: number; column: number } | undefined {
  const ok = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 1;
  return ok(line) ? { line, column: ok(column) ? column : 1 } : undefined;
}
