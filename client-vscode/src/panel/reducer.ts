/**
 * The panel's store and its one reducer: the ONLY place in the client that knows
 * the wire form of `toolwire/session/update` (protocol.md, "toolwire/session/update",
 * and COORDINATION wire decision 1).
 *
 * Two wire forms of `tool_call` updates are accepted:
 * - whole snapshots (every update carries `argumentsText`, `partialArguments`, `arguments`);
 * - appended pieces: `argumentsDelta: {offset, text}` where `offset` is the length of
 *   the text before the piece in Unicode code points; `argumentsText` only when the
 *   text changed other than by appending; `partialArguments`/`arguments` only when
 *   they changed (absent = unchanged).
 * A piece whose offset is past the current length is a gap: it is dropped and the
 * state asks for a `toolwire/session/snapshot` (`needsSnapshot`); a piece that
 * overlaps the text (offset below its length) adds only its part past the text.
 *
 * Pure: no DOM, no `vscode`, no I/O. Every function returns a new state object
 * (the view compares references), and never mutates the one it was given.
 */
import type {
  CallErrorWire,
  CallResult,
  CancelReason,
  InstructionsFile,
  McpServerUpdate,
  ModelChoiceWire,
  PermissionOption,
  PlanEntryWire,
  RequestPermissionParams,
  SavedSessionWire,
  SessionUpdate,
  StopReason,
  ToolCallStatus,
  ToolCallUpdateWire,
  ToolCallWire,
  TurnState,
  UsageCounts,
} from "../protocol";
import { displayPath } from "../display";
import type { ContextChip, HostMessage, HostSnapshot, PendingPermission, UndoOutcome, UndoRequest } from "./messages";
import { endWords, NO_KEY_ADVICE, statusWords } from "./words";

/** A tool call as the panel shows it. */
export interface CallView {
  /** Store key: `toolCallId`, or `#<response>:<index>` until the id arrives. */
  key: string;
  toolCallId: string;
  index: number;
  name: string;
  kind: string;
  /** `null` for calls of earlier turns known only from the conversation history. */
  status: ToolCallStatus | null;
  rev: number;
  path: string | null;
  argumentsText: string;
  /** Length of `argumentsText` in Unicode code points (the unit of `argumentsDelta.offset`). */
  argumentsLength: number;
  partialArguments: Record<string, unknown> | null;
  arguments: Record<string, unknown> | null;
  error?: CallErrorWire;
  cancelReason?: CancelReason;
  result?: CallResult;
  /** For calls of earlier turns: the text the model received as the result. */
  historyResult?: string;
  /** What an undo of the call's turn did to its file (`toolwire/session/undoTurn`'s `paths`). */
  undo?: { outcome: string; reason?: string };
}

/** One item of the transcript, in the order it appeared. */
export type Entry =
  /** `chips`: the context attached to it, as sent (after a reload the text names them: `Attached: …`). */
  | { kind: "user"; id: string; text: string; chips?: readonly ContextChip[] }
  | { kind: "assistant"; id: string; text: string }
  | { kind: "thought"; id: string; text: string }
  | { kind: "call"; id: string }
  /** The turn's plan (`update_plan`): one per turn, right after its user message, replaced by each `plan` update. */
  | { kind: "plan"; id: string; steps: readonly PlanEntryWire[] }
  | {
      kind: "turnEnd";
      id: string;
      turnId: string | null;
      stopReason: StopReason;
      message?: string;
      usage?: Usage;
      /** Why an `error` turn failed, for the buttons it gets (`no_api_key`: **Set API Key**). */
      errorCode?: string;
      /** `demo_finished`: the offline demo is over (**Select model**, **Set API Key**). */
      notice?: string;
      undo?: UndoOutcome;
      /** How the undo shown was asked (for a blocked one's "Undo the rest" and "Overwrite"). */
      undoRequest?: UndoRequest;
    }
  | {
      kind: "notice";
      id: string;
      text: string;
      /** The files a workspace-change notice names (display form); absent for other notices. */
      paths?: readonly string[];
    };

/** The whole state of the panel. */
export interface PanelState {
  sessionId: string | null;
  model: string | null;
  /** True while a turn runs (from the prompt until its `ended` update). */
  running: boolean;
  turnState: TurnState | null;
  turnId: string | null;
  entries: readonly Entry[];
  calls: ReadonlyMap<string, CallView>;
  /** Open permission requests, by the key of the call they are about. */
  permissions: ReadonlyMap<string, PendingPermission>;
  /** True when an update could not be applied (a gap); the host answers with a reset. */
  needsSnapshot: boolean;
  /** Latest status change, for the screen reader's live region. */
  announcement: string;
  /** Counter for ids of entries and of keys of calls without an id. */
  seq: number;
  /** Model responses seen in the current turn: calls without an id are keyed by it. */
  response: number;
  /** Turn ids the server said can be undone (from the snapshot's `turns`). */
  undoable: ReadonlySet<string>;
  /** Usage that arrived before the turn's `ended` update. */
  pendingUsage?: Usage;
  /** The project rules files the model is given (`session/new`, the snapshot, `session_info`). */
  instructions: readonly InstructionsFile[];
  /** The session's MCP servers, in the order first told (`mcp_server` updates, the snapshot's `mcpServers`). */
  mcpServers: readonly McpServerView[];
  /** The workspace's saved conversations (`history` messages; kept across resets). */
  history: readonly SavedSessionWire[];
  /** The models to switch to (`models` messages; kept across resets), null before the first list. */
  models: { active: string; models: readonly ModelChoiceWire[] } | null;
  /** The `@` picker's latest choices (`mentions` messages). */
  mentions?: { query: string; items: readonly ContextChip[] };
  /** The last chip **Attach Selection** sent, numbered (the prompt box adds each new one once). */
  attached?: { seq: number; chip: ContextChip };
}

/** One MCP server of the session as the panel shows it: its state, and why it failed. */
export interface McpServerView {
  name: string;
  state: McpServerUpdate["state"];
  error?: string;
}

/** Token counts and duration of a turn. */
type Usage = UsageCounts;

/** The state before anything is known. */
export function initialState(): PanelState {
  return {
    sessionId: null,
    model: null,
    running: false,
    turnState: null,
    turnId: null,
    entries: [],
    calls: new Map(),
    permissions: new Map(),
    needsSnapshot: false,
    announcement: "",
    seq: 0,
    response: 0,
    undoable: new Set(),
    instructions: [],
    mcpServers: [],
    history: [],
    models: null,
  };
}

/** Length of `text` in Unicode code points (what Python's `len` counts). */
export function codePointLength(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // A high surrogate followed by a low one is one code point.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n--;
        i++;
      }
    }
  }
  return n;
}

/** `text` without its first `count` code points. */
export function dropCodePoints(text: string, count: number): string {
  let i = 0;
  for (let n = 0; n < count && i < text.length; n++) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
  }
  return text.slice(i);
}

/** What the screen reader hears when the rules files change. */
function rulesAnnouncement(files: readonly InstructionsFile[]): string {
  return files.length === 0 ? "No project rules files" : `Project rules: ${files.map((f) => f.path).join(", ")}`;
}

/** Adds the user's prompt to the transcript (the server does not echo it). */
export function addPrompt(state: PanelState, text: string, chips?: readonly ContextChip[]): PanelState {
  const seq = state.seq + 1;
  const entry: Entry = chips !== undefined && chips.length > 0 ? { kind: "user", id: `e${seq}`, text, chips } : { kind: "user", id: `e${seq}`, text };
  return { ...state, seq, running: true, entries: [...state.entries, entry] };
}

/** Adds a line of information (e.g. "the server restarted"). */
export function addNotice(state: PanelState, text: string, paths?: readonly string[]): PanelState {
  const seq = state.seq + 1;
  const notice: Entry = paths === undefined ? { kind: "notice", id: `e${seq}`, text } : { kind: "notice", id: `e${seq}`, text, paths };
  return { ...state, seq, announcement: text, entries: [...state.entries, notice] };
}

/**
 * Shows files changed outside Toolwire (a `workspace_change`). The server's watcher
 * may report one change in two batches: a file written by open-then-write is seen as
 * created, then, when the write comes after the batch's quiet time (a pause on a
 * loaded machine), as modified. So a report that comes while the last entry is a
 * workspace-change notice (nothing shown since; text streaming on goes into the
 * message before it) joins that notice: new names are added to it, and a report
 * naming no new file changes nothing.
 */
function addChangeNotice(state: PanelState, paths: readonly string[]): PanelState {
  const last = state.entries[state.entries.length - 1];
  if (last?.kind !== "notice" || last.paths === undefined) {
    return addNotice(state, changeText(paths), paths);
  }
  const known = new Set(last.paths);
  const fresh = paths.filter((p) => !known.has(p));
  if (fresh.length === 0) {
    return state;
  }
  const joined = [...last.paths, ...fresh];
  const text = changeText(joined);
  return { ...state, announcement: text, entries: [...state.entries.slice(0, -1), { ...last, text, paths: joined }] };
}

/**
 * Records a server's state (an `mcp_server` update): the server keeps its place in the list,
 * its error is the latest one (none once it is no longer failed).
 */
function applyMcpServer(state: PanelState, update: McpServerUpdate): PanelState {
  const view = serverView(update);
  const at = state.mcpServers.findIndex((server) => server.name === update.name);
  const mcpServers = at === -1 ? [...state.mcpServers, view] : state.mcpServers.map((server, i) => (i === at ? view : server));
  const why = view.error !== undefined ? `: ${view.error}` : "";
  return { ...state, mcpServers, announcement: `MCP server ${update.name} ${update.state}${why}` };
}

/** A server's name, state and error (`null` or absent: none) as the panel keeps them. */
function serverView(server: { name: string; state: McpServerView["state"]; error?: string | null }): McpServerView {
  return server.error != null ? { name: server.name, state: server.state, error: server.error } : { name: server.name, state: server.state };
}

/** The notice of a session's `warning` (e.g. `tools_left_out`), live and from a snapshot. */
function warningText(message: string): string {
  return `Warning: ${message}`;
}

function changeText(paths: readonly string[]): string {
  return `Changed outside Toolwire: ${paths.join(", ")}`;
}

/**
 * Whether **Continue** is offered under `entry`: a turn that stopped at the request cap
 * (`max_turn_requests`), the last turn shown, and nothing running (the server refuses a
 * Continue after any other turn).
 */
export function canContinue(state: PanelState, entry: Entry): boolean {
  if (entry.kind !== "turnEnd" || entry.stopReason !== "max_turn_requests" || state.running) {
    return false;
  }
  for (let i = state.entries.length - 1; i >= 0; i--) {
    if (state.entries[i].kind === "turnEnd") {
      return state.entries[i] === entry;
    }
  }
  return false;
}

/** Records the prompt's answer; the turn's `ended` update normally carried it already. */
export function endTurn(
  state: PanelState,
  result: { stopReason: StopReason; message?: string; usage?: Usage; errorCode?: string; notice?: string },
): PanelState {
  const last = state.entries[state.entries.length - 1];
  if (last?.kind === "turnEnd") {
    return { ...state, running: false };
  }
  return pushTurnEnd({ ...state, running: false }, state.turnId, result.stopReason, result.message, result.usage,
    { errorCode: result.errorCode, notice: result.notice });
}

/** Shows the outcome of `toolwire/session/undoTurn` under the turn it undid. */
export function setUndoOutcome(state: PanelState, outcome: UndoOutcome, request: UndoRequest = {}): PanelState {
  let index = -1;
  for (let i = state.entries.length - 1; i >= 0; i--) {
    const entry = state.entries[i];
    if (entry.kind === "turnEnd" && (entry.turnId === outcome.turnId || index === -1)) {
      index = i;
      if (entry.turnId === outcome.turnId) {
        break;
      }
    }
  }
  if (index === -1) {
    return addNotice(state, outcome.message);
  }
  const entries = state.entries.slice();
  entries[index] = { ...(entries[index] as Extract<Entry, { kind: "turnEnd" }>), undo: outcome, undoRequest: request };
  return { ...state, entries, calls: markUndone(state, index, outcome), announcement: outcome.message };
}

/** The tools that change files (an undone turn's cards of these say so). */
const FILE_TOOLS = new Set(["create_file", "edit_file", "multi_edit", "delete_file", "rename_file"]);

/**
 * The calls of the turn that ends at `entries[end]` (back to its user message), each marked
 * with what the undo did to its file; a redo takes the marks off. `whole`: every call with a
 * path is marked `undone` (a snapshot says only that the turn was undone).
 */
function markUndone(state: PanelState, end: number, outcome: UndoOutcome, whole?: "undone"): ReadonlyMap<string, CallView> {
  const byPath = new Map(outcome.paths.map((p) => [p.path, p]));
  let calls: Map<string, CallView> | undefined;
  for (let i = end - 1; i >= 0 && state.entries[i].kind !== "user"; i--) {
    const entry = state.entries[i];
    const call = entry.kind === "call" ? state.calls.get(entry.id) : undefined;
    if (call === undefined || (whole !== undefined ? !FILE_TOOLS.has(call.name) : call.path === null)) {
      continue;
    }
    const newPath = call.arguments?.new_path;
    const path = (call.path === null ? undefined : byPath.get(call.path)) ?? (typeof newPath === "string" ? byPath.get(newPath) : undefined);
    const undo = whole !== undefined ? { outcome: whole }
      : outcome.status === "redone" || path === undefined ? undefined : { outcome: path.outcome, ...(path.reason ? { reason: path.reason } : {}) };
    if (undo === undefined && call.undo === undefined) {
      continue;
    }
    calls ??= new Map(state.calls);
    calls.set(call.key, { ...call, undo });
  }
  return calls ?? state.calls;
}

/** Adds an open permission request; it is shown in its call's card. */
export function addPermission(state: PanelState, pending: PendingPermission): PanelState {
  let next = applyCall(state, pending.params.toolCall, true);
  const key = keyOf(next, pending.params.toolCall);
  const permissions = new Map(next.permissions);
  permissions.set(key, pending);
  next = { ...next, permissions, announcement: `${pending.params.toolCall.name} is waiting for your approval` };
  return next;
}

/** Removes a permission request (answered here, in a notification, or withdrawn by the server). */
export function removePermission(state: PanelState, requestId: string): PanelState {
  for (const [key, pending] of state.permissions) {
    if (pending.requestId === requestId) {
      const permissions = new Map(state.permissions);
      permissions.delete(key);
      return { ...state, permissions };
    }
  }
  return state;
}

/** Applies one `toolwire/session/update`. Unknown kinds leave the state as it is. */
export function applyUpdate(state: PanelState, update: SessionUpdate): PanelState {
  switch (update.sessionUpdate) {
    case "tool_call":
      return applyCall(state, update.toolCall, false);
    case "agent_message_chunk":
      return appendText(state, "assistant", update.content.text);
    case "agent_thought_chunk":
      return appendText(state, "thought", update.content.text);
    case "turn":
      return applyTurn(state, update);
    case "usage": {
      for (let i = state.entries.length - 1; i >= 0; i--) {
        const entry = state.entries[i];
        if (entry.kind === "turnEnd") {
          const entries = state.entries.slice();
          entries[i] = { ...entry, usage: update.usage };
          return { ...state, entries };
        }
        if (entry.kind === "user") {
          break;
        }
      }
      // Usage arrives before `ended`: keep it for the turn's end line.
      return { ...state, pendingUsage: update.usage };
    }
    case "workspace_change":
      return addChangeNotice(state, update.paths);
    case "warning":
      return addNotice(state, warningText(update.message));
    case "session_info":
      return { ...state, instructions: update.instructions, announcement: rulesAnnouncement(update.instructions) };
    case "mcp_server":
      return applyMcpServer(state, update);
    case "plan":
      return applyPlan(state, update.entries);
    default:
      return state;
  }
}

/**
 * Shows the turn's plan at the top of the turn: the plan entry right after the turn's user
 * message is replaced (the first plan of the turn is put there).
 */
function applyPlan(state: PanelState, steps: readonly PlanEntryWire[]): PanelState {
  let user = state.entries.length - 1;
  while (user >= 0 && state.entries[user].kind !== "user") {
    user--;
  }
  const done = steps.filter((step) => step.status === "completed").length;
  const announcement = `Plan: ${done} of ${steps.length} steps completed`;
  const entries = state.entries.slice();
  const at = user + 1;
  if (entries[at]?.kind === "plan") {
    entries[at] = { ...(entries[at] as Extract<Entry, { kind: "plan" }>), steps };
    return { ...state, entries, announcement };
  }
  const seq = state.seq + 1;
  entries.splice(at, 0, { kind: "plan", id: `e${seq}`, steps });
  return { ...state, seq, entries, announcement };
}

/** The plan an `update_plan` call of the history gave (its arguments), when the call succeeded. */
function historyPlan(argumentsText: string | undefined, result: string | undefined): PlanEntryWire[] | null {
  if (result === undefined || !result.startsWith(PLAN_UPDATED)) {
    return null;
  }
  try {
    const entries = (JSON.parse(argumentsText ?? "") as { entries?: unknown }).entries;
    return Array.isArray(entries) ? (entries as PlanEntryWire[]) : null;
  } catch {
    return null;
  }
}

/** How a done `update_plan` result begins (protocol.md, "update_plan"). */
const PLAN_UPDATED = "Plan updated: ";

/**
 * Replaces the whole state with a session snapshot (`toolwire/session/snapshot`)
 * and the host's open permission requests.
 */
export function applySnapshot(previous: PanelState, snapshot: HostSnapshot): PanelState {
  let state: PanelState = {
    ...initialState(),
    seq: previous.seq,
    sessionId: snapshot.sessionId,
    model: snapshot.model,
    running: snapshot.running,
    turnId: snapshot.turnId ?? null,
    instructions: snapshot.instructions ?? [],
    mcpServers: (snapshot.mcpServers ?? []).map(serverView),
  };
  const current = new Map<string, ToolCallWire>();
  for (const call of snapshot.toolCalls) {
    if (call.toolCallId) {
      current.set(call.toolCallId, call);
    }
  }
  // The turns in order, each with how it ended (stop reason, message, usage: its end line).
  const turns = snapshot.turns;
  state = { ...state, undoable: new Set(turns.filter((t) => t.undoable).map((t) => t.turnId)) };
  for (const warning of snapshot.warnings ?? []) {
    state = addNotice(state, warningText(warning.message)); // told once, live; shown again after a reload
  }
  const results = new Map<string, string>();
  for (const message of snapshot.messages as HistoryMessage[]) {
    if (message?.role === "tool" && typeof message.tool_call_id === "string") {
      results.set(message.tool_call_id, contentText(message.content));
    }
  }
  let userTurns = 0;
  const placed = new Set<string>();
  for (const message of snapshot.messages as HistoryMessage[]) {
    if (message?.role === "user" && message.toolImages === true) {
      continue; // the images of tool calls, shown to the model: the calls' cards show them
    }
    if (message?.role === "user") {
      if (userTurns > 0) {
        const turn = turns[userTurns - 1];
        if (turn !== undefined) {
          state = pushTurnEnd(state, turn.turnId, turn.stopReason ?? "end_turn", turn.message ?? undefined, turn.usage ?? undefined, endCodes(turn));
        }
      }
      userTurns++;
      // what the user typed (userText), not the overview and notes the session added for the model
      const typed = typeof message.userText === "string" ? message.userText : contentText(message.content);
      state = pushEntry(state, { kind: "user", text: typed });
    } else if (message?.role === "assistant") {
      if (typeof message.reasoning === "string" && message.reasoning !== "") {
        state = pushEntry(state, { kind: "thought", text: message.reasoning });
      }
      const text = contentText(message.content);
      if (text !== "") {
        state = pushEntry(state, { kind: "assistant", text });
      }
      for (const call of message.tool_calls ?? []) {
        const live = current.get(call.id);
        if (live !== undefined) {
          state = applyCall(state, live, true);
          placed.add(call.id);
        } else {
          state = addHistoryCall(state, call, results.get(call.id));
        }
        const plan = call.function?.name === "update_plan" ? historyPlan(call.function.arguments, results.get(call.id)) : null;
        if (plan !== null) {
          state = applyPlan(state, plan); // the turn's latest plan, at its top again after a reload
        }
      }
    }
  }
  const lastTurn = turns[userTurns - 1];
  if (!snapshot.running && lastTurn !== undefined && lastTurn.stopReason !== null) {
    // Calls of the last turn that never made it into the history (e.g. a broken stream).
    for (const call of snapshot.toolCalls) {
      if (!placed.has(call.toolCallId)) {
        state = applyCall(state, call, true);
      }
    }
    state = pushTurnEnd(state, lastTurn.turnId, lastTurn.stopReason, lastTurn.message ?? undefined, lastTurn.usage ?? undefined, endCodes(lastTurn));
  } else {
    if (snapshot.streaming?.reasoning) {
      state = appendText(state, "thought", snapshot.streaming.reasoning);
    }
    if (snapshot.streaming?.text) {
      state = appendText(state, "assistant", snapshot.streaming.text);
    }
    for (const call of snapshot.toolCalls) {
      if (!placed.has(call.toolCallId)) {
        state = applyCall(state, call, true);
      }
    }
  }
  for (const pending of snapshot.permissions) {
    state = addPermission(state, pending);
  }
  // The cards of an undone turn say so after a reload too (the per-path outcome was told once).
  const undone = new Set(turns.filter((t) => t.undone).map((t) => t.turnId));
  state.entries.forEach((entry, i) => {
    if (entry.kind === "turnEnd" && entry.turnId !== null && undone.has(entry.turnId)) {
      state = { ...state, calls: markUndone(state, i, { turnId: entry.turnId, status: "undone", message: "", git: [], paths: [] }, "undone") };
    }
  });
  return { ...state, needsSnapshot: false, announcement: "Conversation restored" };
}

interface HistoryMessage {
  role?: string;
  content?: unknown;
  /** A user message's own text, without what the session added for the model (protocol.md, snapshot). */
  userText?: unknown;
  /** The message that shows the model the images of tool calls: not a user's message (protocol.md, snapshot). */
  toolImages?: unknown;
  reasoning?: unknown;
  tool_call_id?: unknown;
  tool_calls?: { id: string; function?: { name?: string; arguments?: string } }[];
}

function contentText(content: unknown): string {
  if (typeof content === "string") {
    return content;
  }
  if (Array.isArray(content)) {
    return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
  }
  return "";
}

function pushEntry(state: PanelState, entry: DistributiveOmit<Entry, "id">): PanelState {
  const seq = state.seq + 1;
  return { ...state, seq, entries: [...state.entries, { ...entry, id: `e${seq}` } as Entry] };
}

/** A snapshot turn's `errorCode` and `notice`, as the live `ended` update gives them to `pushTurnEnd`. */
function endCodes(turn: { errorCode?: string | null; notice?: string | null }): { errorCode?: string; notice?: string } {
  return { errorCode: turn.errorCode ?? undefined, notice: turn.notice ?? undefined };
}

type DistributiveOmit<T, K extends keyof T> = T extends unknown ? Omit<T, K> : never;

function pushTurnEnd(
  state: PanelState,
  turnId: string | null,
  stopReason: StopReason,
  message?: string,
  usage?: Usage,
  extra: { errorCode?: string; notice?: string } = {},
): PanelState {
  const codes = {
    ...(extra.errorCode ? { errorCode: extra.errorCode } : {}),
    ...(extra.notice ? { notice: extra.notice } : {}),
  };
  const next = pushEntry(state, { kind: "turnEnd", turnId, stopReason, message, usage: usage ?? state.pendingUsage, ...codes });
  return { ...next, pendingUsage: undefined };
}

/**
 * Appends streamed text to the message it continues. Notices that arrived while the
 * message streamed (a `workspace_change`) stay after it and never cut it in two: the
 * text goes on in the same entry, so it is rendered as one Markdown block.
 */
function appendText(state: PanelState, kind: "assistant" | "thought", text: string): PanelState {
  if (text === "") {
    return state;
  }
  let at = state.entries.length - 1;
  while (at >= 0 && state.entries[at].kind === "notice") {
    at--;
  }
  const last = state.entries[at];
  if (last !== undefined && last.kind === kind) {
    const entries = state.entries.slice();
    entries[at] = { ...last, text: last.text + text };
    return { ...state, entries };
  }
  return pushEntry(state, { kind, text });
}

function applyTurn(state: PanelState, update: Extract<SessionUpdate, { sessionUpdate: "turn" }>): PanelState {
  const turnId = update.turnId ?? state.turnId;
  switch (update.state) {
    case "started":
      return { ...state, running: true, turnState: "started", turnId, response: 0, announcement: "Turn started" };
    case "model_request":
      return { ...state, running: true, turnState: "model_request", turnId, response: state.response + 1 };
    case "running_tools":
      return { ...state, turnState: "running_tools", turnId };
    case "ended": {
      const next = pushTurnEnd(
        { ...state, running: false, turnState: "ended", turnId },
        turnId,
        update.stopReason ?? "end_turn",
        update.message ?? undefined,
        undefined,
        { errorCode: update.errorCode ?? undefined, notice: update.notice ?? undefined },
      );
      const noKey = update.errorCode === "no_api_key";
      const why = noKey ? `. ${NO_KEY_ADVICE}` : update.message ? `: ${update.message}` : "";
      return { ...next, announcement: `Turn ended: ${endWords(update.stopReason ?? "end_turn", update.errorCode ?? undefined)}${why}` };
    }
    default:
      return state;
  }
}

/** The key of `call` in `state`, without changing anything. */
function keyOf(state: PanelState, call: { toolCallId: string; index: number }): string {
  return call.toolCallId || `#${state.response}:${call.index}`;
}

/**
 * Upserts one call: a `tool_call` update's form (absent argument fields are unchanged),
 * or, with `whole`, a full snapshot (a `ToolCallWire`: every field present, never a
 * delta); a rev not above the known one refreshes nothing.
 */
function applyCall(state: PanelState, wire: ToolCallUpdateWire, whole: boolean): PanelState {
  const byIndex = `#${state.response}:${wire.index}`;
  const key = wire.toolCallId || byIndex;
  let known = state.calls.get(key);
  let renamed = false;
  if (known === undefined && wire.toolCallId) {
    known = state.calls.get(byIndex);
    renamed = known !== undefined;
  }
  if (known !== undefined && wire.rev <= known.rev) {
    return state; // stale or repeated
  }
  let argumentsText = known?.argumentsText ?? "";
  let argumentsLength = known?.argumentsLength ?? 0;
  const delta = wire.argumentsDelta;
  if (typeof wire.argumentsText === "string") {
    argumentsText = wire.argumentsText;
    argumentsLength = codePointLength(argumentsText);
  } else if (delta != null && !whole) {
    if (delta.offset > argumentsLength) {
      return { ...state, needsSnapshot: true }; // a missed piece: drop this one, ask for the whole state
    }
    // An overlapping piece (offset below our length) adds only what lies past our text.
    const fresh = delta.offset === argumentsLength ? delta.text : dropCodePoints(delta.text, argumentsLength - delta.offset);
    argumentsText += fresh;
    argumentsLength += codePointLength(fresh);
  }
  // Identity and status are in every form of a call (protocol.md, "ToolCall updates").
  const status = wire.status;
  const call: CallView = {
    key,
    toolCallId: wire.toolCallId,
    index: wire.index,
    name: wire.name,
    kind: wire.kind,
    status,
    rev: wire.rev,
    path: wire.path,
    argumentsText,
    argumentsLength,
    partialArguments: "partialArguments" in wire ? (wire.partialArguments ?? null) : (known?.partialArguments ?? null),
    arguments: "arguments" in wire ? (wire.arguments ?? null) : (known?.arguments ?? null),
    error: wire.error ?? (status === "errored" ? known?.error : undefined),
    cancelReason: wire.cancelReason ?? (status === "canceled" ? known?.cancelReason : undefined),
    result: wire.result ?? known?.result,
  };
  const calls = new Map(state.calls);
  let entries = state.entries;
  let permissions: ReadonlyMap<string, PendingPermission> = state.permissions;
  let seq = state.seq;
  if (renamed) {
    calls.delete(byIndex);
    entries = entries.map((entry) => (entry.kind === "call" && entry.id === byIndex ? { kind: "call", id: key } : entry));
    const pending = permissions.get(byIndex);
    if (pending !== undefined) {
      const moved = new Map(permissions);
      moved.delete(byIndex);
      moved.set(key, pending);
      permissions = moved;
    }
  }
  if (known === undefined) {
    seq += 1;
    entries = [...entries, { kind: "call", id: key }];
  }
  calls.set(key, call);
  if (status !== "generated" && status !== "generating" && permissions.has(key)) {
    const left = new Map(permissions);
    left.delete(key); // the server moved on: nothing is waiting any more
    permissions = left;
  }
  const announcement =
    known?.status === status ? state.announcement : `${call.name || "tool call"}${call.path ? ` ${displayPath(call.path)}` : ""}: ${statusWords(status)}`;
  return { ...state, calls, entries, permissions, seq, announcement };
}

function addHistoryCall(
  state: PanelState,
  call: { id: string; function?: { name?: string; arguments?: string } },
  result: string | undefined,
): PanelState {
  if (state.calls.has(call.id)) {
    return state;
  }
  const argumentsText = call.function?.arguments ?? "";
  const view: CallView = {
    key: call.id,
    toolCallId: call.id,
    index: 0,
    name: call.function?.name ?? "",
    kind: "function",
    status: null,
    rev: 0,
    path: null,
    argumentsText,
    argumentsLength: codePointLength(argumentsText),
    partialArguments: null,
    arguments: null,
    historyResult: result,
  };
  const calls = new Map(state.calls);
  calls.set(call.id, view);
  const seq = state.seq + 1;
  return { ...state, seq, calls, entries: [...state.entries, { kind: "call", id: call.id }] };
}

/** Words for the "Allow always" button: exactly what the session rule will cover (protocol.md). */
export function allowAlwaysText(params: RequestPermissionParams): string {
  const subject = params.subject;
  switch (subject.kind) {
    case "edit": {
      const target = subject.new_path ? `${subject.path} → ${subject.new_path}` : subject.path;
      return `Allow always: ${subject.tool} on ${target}, with these arguments and at most this many changed lines, for this conversation`;
    }
    case "git":
      // The command as a person types it (the server's, never the hardened argv), else the argv.
      return `Allow always: ${subject.command ?? subject.argv.join(" ")} (same paths and flags) for this conversation`;
    case "tool":
      return `Allow always: ${subject.tool} with these arguments for this conversation`;
    case "mcp":
      return `Allow always: ${subject.tool} with any arguments for this conversation (not the other tools of ${subject.server})`;
  }
}

/** The offered option of a kind, if any. */
export function optionOf(options: readonly PermissionOption[], kind: PermissionOption["kind"]): PermissionOption | undefined {
  return options.find((option) => option.kind === kind);
}

/** Applies one host message (messages.ts) to the state; batches in order. */
export function reduceHostMessage(state: PanelState, message: HostMessage): PanelState {
  switch (message.type) {
    case "batch":
      return message.messages.reduce(reduceHostMessage, state);
    case "reset": {
      const next = message.snapshot === null ? { ...initialState(), seq: state.seq } : applySnapshot(state, message.snapshot);
      return { ...next, history: state.history, models: state.models, attached: state.attached };
    }
    case "history":
      return { ...state, history: message.sessions };
    case "mentions":
      return { ...state, mentions: { query: message.query, items: message.items } };
    case "attach":
      return { ...state, attached: { seq: (state.attached?.seq ?? 0) + 1, chip: message.chip } };
    case "models":
      return { ...state, models: { active: message.active, models: message.models.length > 0 ? message.models : state.models?.models ?? [] } };
    case "update":
      return applyUpdate(state, message.params.update);
    case "session":
      return {
        ...state,
        sessionId: message.sessionId,
        model: message.model,
        instructions: message.instructions,
        mcpServers: message.mcpServers.map(serverView),
      };
    case "sessionModel":
      return { ...state, model: message.model };
    case "prompt":
      return addPrompt(state, message.text, message.chips);
    case "turnResult":
      return endTurn(state, message);
    case "permission":
      return addPermission(state, message.pending);
    case "permissionGone":
      return removePermission(state, message.requestId);
    case "undo":
      return setUndoOutcome(state, message.outcome, message.request);
    case "turns":
      return { ...state, undoable: new Set(message.turns.filter((t) => t.undoable).map((t) => t.turnId)) };
    case "notice":
      return addNotice(state, message.text);
    default:
      return state;
  }
}
