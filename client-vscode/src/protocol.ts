/**
 * Toolwire's custom wire protocol (the `toolwire/` methods) as the client uses it.
 *
 * Every payload type comes from `generated/wire.ts`, which `make schema` generates from
 * the server's pydantic models (server/toolwire/lsp/protocol.py and messages.py →
 * protocol.schema.json → json-schema-to-typescript); tests/test_wire_schema.py fails
 * while it is out of date. This module only re-exports those types, names the parts
 * of them the client refers to on its own (a status, a subject…), and adds what a
 * schema cannot carry: the runtime method objects for vscode-jsonrpc, the command
 * that starts the server, and the known stop reasons. Do not declare a payload
 * shape here: change the models and run `make schema`.
 *
 * Standard LSP (initialize, shutdown, document sync, workspace/configuration) is left
 * to vscode-languageclient. This module must not import `vscode`: the Node tests use
 * it without VS Code.
 */
import { NotificationType, RequestType } from "vscode-jsonrpc";
import type * as W from "./generated/wire";

export type {
  ArgumentsDeltaWire,
  CallErrorWire,
  EditSubject,
  GitSubject,
  HunkAnswerModel as HunkAnswer,
  InstructionsFile,
  McpServerStatusWire,
  McpServerUpdate,
  McpSubject,
  ModelChoiceWire,
  ModelsListResult,
  ResourceBlock,
  PermissionOptionModel as PermissionOption,
  PermissionOutcome,
  PlanEntryWire,
  PromptParams,
  PromptResult,
  RejectionWire,
  RequestPermissionParams,
  RequestPermissionResult,
  RunActionArgs,
  RunActionResult,
  SavedSessionWire,
  SessionNewParams,
  SessionNewResult,
  SessionRef,
  SessionUpdateParams,
  Settings as InitializationOptions,
  SnapshotResult,
  StreamingResponse,
  SubjectHunk,
  TextBlock,
  TextContent,
  ToolCallBrief,
  ToolCallCancelParams,
  ToolCallPreviewParams,
  ToolCallPreviewResult,
  ToolCallRunResult,
  ToolCallsMergeParams,
  ToolCallsMergeResult,
  ToolCallsRunParams,
  ToolCallUpdateWire,
  ToolCallWire,
  ToolDefinition,
  ToolResultWire,
  ToolSubject,
  ToolwireProtocol,
  TurnSummary,
  UndoTurnParams,
  UndoTurnResult,
  Usage,
  UsageCounts,
} from "./generated/wire";

/** Arguments that start the server with a Python interpreter (JSON-RPC over stdio). */
export const SERVE_ARGS: readonly string[] = ["-m", "toolwire", "serve"];

/** Where a tool call is in its life (docs/architecture.md, "Tool-call statuses"). */
export type ToolCallStatus = W.ToolCallWire["status"];

/** Why a call ended `canceled`. */
export type CancelReason = NonNullable<W.ToolCallWire["cancelReason"]>;

/** A call's `result`: what the tool returned, or why the user rejected it. */
export type CallResult = NonNullable<W.ToolCallWire["result"]>;

/** One change inside a session, tagged by `sessionUpdate`. */
export type SessionUpdate = W.SessionUpdateParams["update"];

/** What the turn is doing (`sessionUpdate: "turn"`). */
export type TurnState = W.TurnUpdateKind["state"];

/** What a permission request is about, by `kind`: an edit's diff, a git argv, a tool's arguments. */
export type PermissionSubject = W.RequestPermissionParams["subject"];

/** The kinds of answer a permission request offers. */
export type PermissionOptionKind = W.PermissionOptionModel["kind"];

/** What an undo or redo did to one path or git action. */
export type UndoOutcome = W.UndoPathOutcome["outcome"];

/**
 * Why a turn ended. The wire says only `string` on purpose, and the generator cannot
 * express an open set with known members: the server may add reasons (shown as they
 * are); these are the ones it sends today (protocol.md, "toolwire/session/prompt").
 */
export type StopReason =
  | "end_turn"
  | "max_tokens"
  | "max_turn_requests"
  | "repeated_tool_failure"
  | "cancelled"
  | "error"
  | (string & {});

type Methods = W.ToolwireProtocol;

/** A `toolwire/` method name. */
export type Method = keyof Methods;

/** The params of `M`, from the generated method table. */
export type Params<M extends Method> = Methods[M]["params"];

/** The result of request `M` (`never` for a notification), from the generated method table. */
export type Result<M extends Method> = Methods[M] extends { result: infer R } ? R : never;

/** The vscode-jsonrpc request object of `method`, typed from the generated method table. */
function request<M extends Method>(method: M): RequestType<Params<M>, Result<M>, void> {
  return new RequestType<Params<M>, Result<M>, void>(method);
}

/** The vscode-jsonrpc notification object of `method`, typed from the generated method table. */
function notification<M extends Method>(method: M): NotificationType<Params<M>> {
  return new NotificationType<Params<M>>(method);
}

/** client→server: open a conversation for a workspace folder. */
export const SessionNew = request("toolwire/session/new");

/** client→server: run one turn; the request stays open until the turn ends. */
export const SessionPrompt = request("toolwire/session/prompt");

/** client→server: continue a turn that stopped at the request cap (`max_turn_requests`); open until that turn ends. */
export const SessionContinue = request("toolwire/session/continue");

/** client→server: cancel the running turn. */
export const SessionCancel = notification("toolwire/session/cancel");

/** client→server: cancel the session's turn, stop watching its folder, and forget it. */
export const SessionClose = request("toolwire/session/close");

/** client→server: replace the tool results older than the last turn by the context-fitting note (not a turn). */
export const SessionCompact = request("toolwire/session/compact");

/** client→server: the full state of a session. */
export const SessionSnapshotRequest = request("toolwire/session/snapshot");

/** client→server: the saved sessions of a folder (of every folder without `cwd`). */
export const SessionList = request("toolwire/session/list");

/** client→server: a saved (or open) session opened again; answers as `toolwire/session/new`. */
export const SessionLoad = request("toolwire/session/load");
/** Close a session if open and remove its saved file → `{deleted}`. */
export const SessionDelete = request("toolwire/session/delete");
/** An open session's model for its next turns → `{model}` (-31001 while a turn runs). */
export const SessionSetModel = request("toolwire/session/setModel");
/** The models to switch to → `{active, models: [{spec, name, source}]}`. */
export const ModelsList = request("toolwire/models/list");
/** The workspace's files matching a fuzzy query (the `@` picker) → `{files: [{path, open}]}`. */
export const WorkspaceFindFiles = request("toolwire/workspace/findFiles");

/** client→server: undo a whole turn, keeping anything changed since (see protocol.md). */
export const SessionUndoTurn = request("toolwire/session/undoTurn");

/** client→server: re-apply an undone turn under the same rule. */
export const SessionRedoTurn = request("toolwire/session/redoTurn");

/** client→server: cancel one call; the turn goes on. */
export const ToolCallCancel = request("toolwire/toolCall/cancel");

/** client→server: the before/after text of a pending edit call, for a diff editor. */
export const ToolCallPreview = request("toolwire/toolCall/preview");

/** client→server: the tool definitions with their JSON Schemas. */
export const ToolsList = request("toolwire/tools/list");

/** client→server: merge client-fed provider chunks. */
export const ToolCallsMerge = request("toolwire/toolCalls/merge");

/** client→server: run an ended client-fed stream's calls. */
export const ToolCallsRun = request("toolwire/toolCalls/run");

/** server→client: tool-call upserts, message text, turn state, usage. */
export const SessionUpdateNotification = notification("toolwire/session/update");

/** server→client: ask the user before a tool changes the workspace. */
export const RequestPermission = request("toolwire/session/requestPermission");

/** server→client: the editor's problems of some documents (`uris` null: of every document with problems). */
export const EditorDiagnostics = request("toolwire/editor/diagnostics");

/** server→client: workspace symbols matching a query. */
export const EditorSymbols = request("toolwire/editor/symbols");

/** server→client: the definition locations of the symbol at a position. */
export const EditorDefinition = request("toolwire/editor/definition");

/** server→client: the reference locations of the symbol at a position. */
export const EditorReferences = request("toolwire/editor/references");

/** client→server: the documents whose problems changed (debounced, about 100 ms). */
export const EditorDiagnosticsChanged = notification("toolwire/editor/diagnosticsChanged");

/** The command every Toolwire code action carries. */
export const RUN_ACTION_COMMAND = "toolwire.runAction";
