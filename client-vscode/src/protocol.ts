/**
 * TypeScript types of Toolwire's custom wire protocol (the `toolwire/` methods).
 *
 * These mirror the server's pydantic wire models; the server's protocol.md is the
 * prose description. Standard LSP (initialize, shutdown, document sync,
 * workspace/configuration) is left to vscode-languageclient.
 *
 * This module must not import `vscode`: the Node test uses it without VS Code.
 */
import { NotificationType, RequestType } from "vscode-jsonrpc";

/** Arguments that start the server with a Python interpreter (JSON-RPC over stdio). */
export const SERVE_ARGS: readonly string[] = ["-m", "toolwire", "serve"];

/** A piece of prompt or message content. Only text for now. */
export interface TextContent {
  type: "text";
  text: string;
}

/** Where a tool call is in its life (DESIGN.md, "Tool-call statuses"). */
export type ToolCallStatus = "generating" | "generated" | "calling" | "done" | "errored" | "canceled";

/** Why a call ended `canceled`. */
export type CancelReason =
  | "rejected"
  | "turn_cancelled"
  | "call_cancelled"
  | "policy_denied"
  | "timeout"
  | "shutdown";

/** Why a call ended `errored`. */
export interface ToolCallError {
  /** Stable machine-readable code, e.g. `invalid_json`, `unknown_tool`, `tool_failed`. */
  code: string;
  /** A sentence for a person (and for the model). */
  message: string;
  /** True when the same request may succeed if tried again. */
  retryable: boolean;
}

/** What a tool returned, once the call ran. */
export interface ToolResult {
  ok: boolean;
  /** The text the model receives. */
  content: string;
  data: unknown;
  errorCode: string | null;
}

/** The `result` of a call the user rejected with a reason. */
export interface RejectionResult {
  reason: string;
}

/** One tool call of one model response, as the server reports it. */
export interface ToolCall {
  /** The model's call id (or a stable generated one); may be empty while `generating`. */
  toolCallId: string;
  /** 0-based position of the call in its model response. */
  index: number;
  /** Tool name; may be empty while `generating`. */
  name: string;
  /** `function` for calls Toolwire runs; provider-executed calls carry their block type. */
  kind: string;
  status: ToolCallStatus;
  /** Incremented on every change; drop updates whose rev is not greater than the last seen. */
  rev: number;
  /** The raw argument text exactly as the model sent it. */
  argumentsText: string;
  /** Best-effort parse of the arguments while streaming. */
  partialArguments: Record<string, unknown> | null;
  /** Final (validated) arguments. */
  arguments: Record<string, unknown> | null;
  /** The path-like argument once complete. */
  path: string | null;
  error?: ToolCallError;
  cancelReason?: CancelReason;
  result?: ToolResult | RejectionResult;
}

/** Why a turn ended. The server may add reasons; unknown ones are shown as they are. */
export type StopReason =
  | "end_turn"
  | "max_tokens"
  | "max_turn_requests"
  | "repeated_tool_failure"
  | "cancelled"
  | "error"
  | (string & {});

/** What the turn is doing. */
export type TurnState = "started" | "model_request" | "running_tools" | "ended";

/** Token counts; null when the model did not report them. */
export interface Usage {
  inputTokens: number | null;
  outputTokens: number | null;
}

/** One change inside a session, tagged by `sessionUpdate`. */
export type SessionUpdate =
  | { sessionUpdate: "tool_call"; toolCall: ToolCall }
  | { sessionUpdate: "agent_message_chunk"; content: TextContent }
  | { sessionUpdate: "agent_thought_chunk"; content: TextContent }
  | { sessionUpdate: "turn"; turnId?: string; state: TurnState; stopReason?: StopReason; message?: string }
  | { sessionUpdate: "usage"; usage: Usage & { durationMs?: number | null } }
  /** Files changed outside Toolwire (workspace-relative paths). */
  | { sessionUpdate: "workspace_change"; paths: string[] };

/** Params of `toolwire/session/new`. */
export interface SessionNewParams {
  /** Absolute path of the workspace folder the session works in. */
  cwd: string;
  /** e.g. `replay:/abs/script.jsonl` or `openai:gpt-4o-mini`; omitted: the server's default. */
  model?: string;
  /** Per-session overrides of the server settings (camelCase keys). */
  settings?: Record<string, unknown>;
}

/** Result of `toolwire/session/new`. */
export interface SessionNewResult {
  sessionId: string;
  /** The model the session uses, as the server names it. */
  model?: string;
  /** Names of the tools the session offers. */
  tools?: string[];
}

/** Params of `toolwire/session/prompt`. */
export interface SessionPromptParams {
  sessionId: string;
  prompt: TextContent[];
}

/** Result of `toolwire/session/prompt`, sent when the turn is over. */
export interface SessionPromptResult {
  stopReason: StopReason;
  usage: Usage;
  /** Why the turn stopped, when there is more to say (e.g. the error). */
  message?: string;
}

/** Params of `toolwire/session/cancel`. */
export interface SessionCancelParams {
  sessionId: string;
}

/** Params of `toolwire/session/update`. */
export interface SessionUpdateParams {
  sessionId: string;
  /** Set on updates caused by a client-fed stream (`toolwire/toolCalls/merge` and `/run`). */
  streamId?: string;
  update: SessionUpdate;
}

/**
 * What a permission request is about, exactly: the diff of a file tool's planned
 * change, the full argv of a git tool, or the arguments of any other tool.
 * `tool` is the tool's name.
 */
export type PermissionSubject =
  | { kind: "edit"; tool: string; path: string; diff: string; new_path?: string }
  | { kind: "git"; tool: string; argv: string[]; cwd: string }
  | { kind: "tool"; tool: string; arguments: Record<string, unknown> | null; note?: string };

/** The kinds of answer a permission request offers. */
export type PermissionOptionKind = "allow_once" | "allow_always" | "reject_once";

/** One answer a permission request offers. */
export interface PermissionOption {
  optionId: string;
  name: string;
  kind: PermissionOptionKind;
}

/** Params of `toolwire/session/requestPermission`. */
export interface RequestPermissionParams {
  sessionId: string;
  toolCall: ToolCall;
  subject: PermissionSubject;
  options: PermissionOption[];
}

/** The user's answer: one of the offered options, or no answer at all. */
export type PermissionOutcome =
  | { outcome: "selected"; optionId: string; reason?: string }
  | { outcome: "cancelled" };

/** Result of `toolwire/session/requestPermission`. */
export interface RequestPermissionResult {
  outcome: PermissionOutcome;
}

/**
 * `initializationOptions` sent with `initialize` (protocol.md, "Settings"); built from
 * the extension settings in settings.ts. The server defaults every field left out.
 */
export interface InitializationOptions {
  /** Model spec: `replay`, `replay:SCRIPT` or `openai:MODEL`. */
  model: string;
  /** OpenAI-compatible endpoint for `openai:` models. */
  baseUrl?: string;
  /** API key (from the editor's secret storage; never logged). */
  apiKey?: string;
  /** Per-tool `auto` / `ask` / `deny`. */
  permissions?: Record<string, "auto" | "ask" | "deny">;
  /** Model requests per turn. */
  maxModelRequests?: number;
}

/** client→server: open a conversation for a workspace folder. */
export const SessionNew = new RequestType<SessionNewParams, SessionNewResult, void>("toolwire/session/new");

/** client→server: run one turn; the request stays open until the turn ends. */
export const SessionPrompt = new RequestType<SessionPromptParams, SessionPromptResult, void>(
  "toolwire/session/prompt",
);

/** client→server: cancel the running turn. */
export const SessionCancel = new NotificationType<SessionCancelParams>("toolwire/session/cancel");

/** server→client: tool-call upserts, message text, turn state, usage. */
export const SessionUpdateNotification = new NotificationType<SessionUpdateParams>("toolwire/session/update");

/** server→client: ask the user before a tool changes the workspace. */
export const RequestPermission = new RequestType<RequestPermissionParams, RequestPermissionResult, void>(
  "toolwire/session/requestPermission",
);

/** Params naming only a session (`toolwire/session/snapshot`). */
export interface SessionRef {
  sessionId: string;
}

/** Result of `toolwire/session/snapshot`: the full state, for a reloaded panel. */
export interface SessionSnapshot {
  sessionId: string;
  model: string;
  running: boolean;
  /** The turn `toolCalls` belong to (the running one, else the last); null before the first turn. */
  turnId: string | null;
  /** Every call of the running turn, or of the last turn when none runs; whole, each once. */
  toolCalls: ToolCall[];
  /** The conversation in OpenAI Chat Completions shape. */
  messages: unknown[];
  /** The model response being streamed now (not in `messages` yet), or null. */
  streaming: { text: string; reasoning: string } | null;
  /** Params of the `toolwire/session/requestPermission` requests still waiting for an answer. */
  pendingPermissions: RequestPermissionParams[];
  /** Every turn of the session, oldest first, and whether it can be undone. */
  turns: TurnSummary[];
}

/**
 * One turn in the snapshot: how it ended (what its `ended` and `usage` updates said;
 * null while it runs), can `toolwire/session/undoTurn` act on it, was it undone.
 */
export interface TurnSummary {
  turnId: string;
  stopReason: StopReason | null;
  message: string | null;
  usage: (Usage & { durationMs?: number | null }) | null;
  undoable: boolean;
  undone: boolean;
}

/** Params of `toolwire/session/undoTurn` and `toolwire/session/redoTurn`. */
export interface UndoTurnParams {
  sessionId: string;
  /** Default: the last turn with something to undo (redo: the turn undone most recently). */
  turnId?: string;
  /** Workspace-relative paths to restore even though they changed since the turn. */
  force?: string[];
}

export type UndoOutcome = "restored" | "kept" | "not_undoable";

/** Result of `toolwire/session/undoTurn` / `redoTurn`. */
export interface UndoTurnResult {
  /** null when there was no turn to act on. */
  turnId: string | null;
  status: "undone" | "redone" | "partial" | "nothing_to_do";
  message: string;
  /** `diff` (kept paths): what restoring the path would change. */
  paths: { path: string; outcome: UndoOutcome; reason?: string; diff?: string }[];
  git: { action: string; outcome: UndoOutcome; reason?: string }[];
}

/** Params of `toolwire/toolCall/preview`. */
export interface ToolCallPreviewParams {
  sessionId: string;
  toolCallId: string;
}

/** Result of `toolwire/toolCall/preview`: a pending edit's file text before and after. */
export interface ToolCallPreviewResult {
  path: string;
  before: string;
  after: string;
  /** The destination of a `rename_file`. */
  newPath?: string;
}

/** Params of `toolwire/toolCall/cancel`. */
export interface ToolCallCancelParams {
  sessionId: string;
  toolCallId: string;
}

/** An OpenAI-style tool definition, as `toolwire/tools/list` returns it. */
export interface ToolDefinition {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** Params of `toolwire/toolCalls/merge` (client-fed mode). */
export interface ToolCallsMergeParams {
  sessionId: string;
  streamId: string;
  format?: string;
  /** Parsed payloads, JSON text of one payload each, or `{event, data}` wrappers. */
  chunks: unknown[];
  end?: boolean;
}

/** Result of `toolwire/toolCalls/merge`: the calls that changed in this batch. */
export interface ToolCallsMergeResult {
  toolCalls: ToolCall[];
  format: string | null;
  ended: boolean;
}

/** Params of `toolwire/toolCalls/run` (client-fed mode). */
export interface ToolCallsRunParams {
  sessionId: string;
  streamId: string;
  toolCallIds?: string[];
}

/** One result of `toolwire/toolCalls/run`, shaped to be sent back to the model. */
export interface ToolCallRunResult {
  toolCallId: string;
  name: string;
  status: ToolCallStatus;
  content: string;
  isError: boolean;
}

/** client→server: the full state of a session. */
export const SessionSnapshotRequest = new RequestType<SessionRef, SessionSnapshot, void>("toolwire/session/snapshot");

/** client→server: undo a whole turn, keeping anything changed since (see protocol.md). */
export const SessionUndoTurn = new RequestType<UndoTurnParams, UndoTurnResult, void>("toolwire/session/undoTurn");

/** client→server: re-apply an undone turn under the same rule. */
export const SessionRedoTurn = new RequestType<UndoTurnParams, UndoTurnResult, void>("toolwire/session/redoTurn");

/** client→server: cancel one call; the turn goes on. */
export const ToolCallCancel = new RequestType<ToolCallCancelParams, { cancelled: boolean }, void>(
  "toolwire/toolCall/cancel",
);

/** The one argument of the `toolwire.runAction` command (code actions; `workspace/executeCommand`). */
export interface RunActionArgs {
  kind: "edit" | "explain" | "fix";
  uri: string;
  /** In the negotiated position encoding. */
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  text?: string;
  /** The LSP diagnostic a fix is about. */
  diagnostic?: Record<string, unknown>;
  /** What the user wants done (Edit selection…). */
  instruction?: string;
  /** Run in this session instead of a new one. */
  sessionId?: string;
}

/** Result of `toolwire.runAction`, sent as soon as the turn started. */
export interface RunActionResult {
  sessionId: string;
  turnId: string;
}

/** The command every Toolwire code action carries. */
export const RUN_ACTION_COMMAND = "toolwire.runAction";

/** client→server: the before/after text of a pending edit call, for a diff editor. */
export const ToolCallPreview = new RequestType<ToolCallPreviewParams, ToolCallPreviewResult, void>(
  "toolwire/toolCall/preview",
);

/** client→server: the tool definitions with their JSON Schemas. */
export const ToolsList = new RequestType<Record<string, never>, { tools: ToolDefinition[] }, void>(
  "toolwire/tools/list",
);

/** client→server: merge client-fed provider chunks. */
export const ToolCallsMerge = new RequestType<ToolCallsMergeParams, ToolCallsMergeResult, void>(
  "toolwire/toolCalls/merge",
);

/** client→server: run an ended client-fed stream's calls. */
export const ToolCallsRun = new RequestType<ToolCallsRunParams, { results: ToolCallRunResult[] }, void>(
  "toolwire/toolCalls/run",
);

/** client→server: cancel the session's turn, stop watching its folder, and forget it. */
export const SessionClose = new RequestType<SessionRef, { closed: boolean }, void>("toolwire/session/close");
