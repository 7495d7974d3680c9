/**
 * The extension's settings. package.json (`contributes.configuration`) is the
 * single source of their defaults: VS Code serves them through
 * `WorkspaceConfiguration`, and code that runs without VS Code (the Node test)
 * reads them from the manifest with {@link manifestDefaults}.
 *
 * Only `import type` from `vscode` here, so the test can use this module.
 */
import type { InitializationOptions } from "./protocol";
import type { ImportStrategy } from "./python";

/** The subset of `vscode.WorkspaceConfiguration` this module needs (section `toolwire`). */
export interface ConfigurationReader {
  get<T>(key: string): T | undefined;
  inspect<T>(key: string): { defaultValue?: T } | undefined;
}

/** The `mcpServers` setting: entries by name (their shape is the server's to check). */
export type McpServers = NonNullable<InitializationOptions["mcpServers"]>;

/** Permission policy for tools that change the workspace. */
export type Approval = "ask" | "auto" | "deny";

/** Settings under `toolwire.*`. */
export interface Settings {
  /** Interpreter that runs `-m toolwire serve`; empty: discover one (python.ts). */
  pythonPath: string;
  /** Where `toolwire` is imported from: the extension's bundle or the interpreter's environment. */
  importStrategy: ImportStrategy;
  /** Model spec for new sessions; `replay` means the server's embedded default. */
  model: string;
  /**
   * How the client answers the server's permission requests (sent for tools that
   * change the workspace): `ask` shows a dialog, `auto` allows, `deny` rejects.
   * Read when a request arrives, so a change applies at once.
   */
  approval: Approval;
  /** OpenAI-compatible endpoint for `openai:` models; empty: the SDK's default. */
  baseUrl: string;
  /** Per-tool permission policy sent to the server (`auto` / `ask` / `deny`). */
  permissions: Record<string, Approval>;
  /** Model requests per turn. */
  maxModelRequests: number;
  /** Tools offered to the model in one request (built-in tools first). */
  maxTools: number;
  /** Reveal the file an edit call targets as soon as its path is known; highlight the change when done. */
  followAlong: boolean;
  /** Let the permission policy run changes that cannot be undone without asking (server setting `allowIrreversible`). */
  allowIrreversible: boolean;
  /** Globs of files kept from the model unless allowed per call (server setting `modelExclude`). */
  modelExclude: string[];
  /** Give the model the project's AGENTS.md and its cousins (server setting `projectInstructions`). */
  projectInstructions: boolean;
  /** Seconds an edit's result waits for the editor's problems to settle (server setting `diagnosticsWait`). */
  diagnosticsWait: number;
  /**
   * MCP servers by name (server setting `mcpServers`). Only each entry's being an object is
   * checked here: the server validates them, and nothing here may quote one (env and header
   * values are secrets).
   */
  mcpServers: McpServers;
  /** Also start the servers of the workspace's `.vscode/mcp.json` (sent only in a trusted workspace). */
  mcpWorkspaceServers: boolean;
}

/** Settings that take effect only when the server starts; changing one restarts it. */
export const RESTART_SETTINGS = ["toolwire.pythonPath", "toolwire.importStrategy"] as const;

/**
 * Settings the server applies to the next turn of every session, sent with
 * `workspace/didChangeConfiguration` when they change (never a restart).
 */
export const SERVER_SETTINGS = [
  "toolwire.model",
  "toolwire.baseUrl",
  "toolwire.permissions",
  "toolwire.maxModelRequests",
  "toolwire.maxTools",
  "toolwire.allowIrreversible",
  "toolwire.modelExclude",
  "toolwire.projectInstructions",
  "toolwire.diagnosticsWait",
  "toolwire.mcpServers",
  "toolwire.mcpWorkspaceServers",
] as const;

/** The `toolwire.model` value that means "the server's embedded default". */
const EMBEDDED_MODEL = "replay";

const APPROVALS: readonly string[] = ["ask", "auto", "deny"] satisfies Approval[];
const IMPORT_STRATEGIES: readonly string[] = ["useBundled", "fromEnvironment"] satisfies ImportStrategy[];

/** Shape of the parts of package.json read here. */
export interface Manifest {
  contributes: { configuration: { properties: Record<string, { default?: unknown }> } };
}

/**
 * Reads and validates the settings.
 *
 * An invalid value is replaced by its default and reported through `warn`; it never
 * stops the extension.
 */
export function readSettings(config: ConfigurationReader, warn: (message: string) => void = () => {}): Settings {
  const pick = <T>(key: string, valid: (v: unknown) => v is T, quote = true): T => {
    const value = config.get<unknown>(key);
    if (valid(value)) {
      return value;
    }
    const fallback = config.inspect<unknown>(key)?.defaultValue;
    if (!valid(fallback)) {
      throw new Error(`package.json declares no valid default for toolwire.${key}`);
    }
    const what = quote ? `value ${JSON.stringify(value)} for toolwire.${key}` : `toolwire.${key} (${typeOf(value)}; not shown: it may hold secrets)`;
    warn(`Invalid ${what}; using ${JSON.stringify(fallback)}.`);
    return fallback;
  };
  return {
    pythonPath: pick("pythonPath", isString).trim(),
    importStrategy: pick("importStrategy", (v): v is ImportStrategy => typeof v === "string" && IMPORT_STRATEGIES.includes(v)),
    model: pick("model", isNonEmptyString).trim(),
    approval: pick("approval", (v): v is Approval => typeof v === "string" && APPROVALS.includes(v)),
    baseUrl: pick("baseUrl", isString).trim(),
    permissions: pick("permissions", isPermissions),
    maxModelRequests: pick("maxModelRequests", (v): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 200),
    maxTools: pick("maxTools", (v): v is number => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 128),
    followAlong: pick("followAlong", (v): v is boolean => typeof v === "boolean"),
    allowIrreversible: pick("allowIrreversible", (v): v is boolean => typeof v === "boolean"),
    modelExclude: pick("modelExclude", isPatternList),
    projectInstructions: pick("projectInstructions", (v): v is boolean => typeof v === "boolean"),
    diagnosticsWait: pick("diagnosticsWait", (v): v is number => typeof v === "number" && Number.isFinite(v) && v >= 0 && v <= 60),
    mcpServers: pick("mcpServers", isServers, false),
    mcpWorkspaceServers: pick("mcpWorkspaceServers", (v): v is boolean => typeof v === "boolean"),
  };
}

/**
 * The server's settings (protocol.md, "Settings") as the client sets them: sent as
 * `initializationOptions` and, on a change, as `workspace/didChangeConfiguration`
 * `{settings: {toolwire: …}}`. `approval` and `followAlong` stay in the client.
 *
 * @param apiKey From SecretStorage; never from settings.json.
 * @param ripgrepPath The `rg` VS Code ships (ripgrep.ts), sent as `ripgrepPath`.
 * @param trusted `vscode.workspace.isTrusted`: `mcpWorkspaceServers` is sent true only then
 *   (a workspace file must not start a process in a workspace the user has not trusted).
 */
export function initializationOptions(settings: Settings, apiKey?: string, ripgrepPath?: string, trusted = false): InitializationOptions {
  const options: InitializationOptions = {
    model: settings.model,
    permissions: settings.permissions,
    maxModelRequests: settings.maxModelRequests,
    maxTools: settings.maxTools,
    allowIrreversible: settings.allowIrreversible,
    modelExclude: settings.modelExclude,
    projectInstructions: settings.projectInstructions,
    diagnosticsWait: settings.diagnosticsWait,
    mcpServers: settings.mcpServers,
    mcpWorkspaceServers: settings.mcpWorkspaceServers && trusted,
  };
  if (settings.baseUrl !== "") {
    options.baseUrl = settings.baseUrl;
  }
  if (apiKey !== undefined && apiKey !== "") {
    options.apiKey = apiKey;
  }
  if (ripgrepPath !== undefined) {
    options.ripgrepPath = ripgrepPath;
  }
  return options;
}

/** The `model` param of `toolwire/session/new`; `undefined` lets the server use its embedded default. */
export function sessionModel(settings: Settings): string | undefined {
  return settings.model === EMBEDDED_MODEL ? undefined : settings.model;
}

/**
 * A {@link ConfigurationReader} that knows only the defaults declared in package.json.
 *
 * @param manifest The parsed package.json.
 * @param overrides Values for keys under `toolwire.` (e.g. `{model: "replay:/x.jsonl"}`).
 */
export function manifestDefaults(manifest: Manifest, overrides: Record<string, unknown> = {}): ConfigurationReader {
  const declared = manifest.contributes.configuration.properties;
  const defaultOf = (key: string): unknown => declared[`toolwire.${key}`]?.default;
  return {
    get: <T>(key: string) => (key in overrides ? overrides[key] : defaultOf(key)) as T | undefined,
    inspect: <T>(key: string) => ({ defaultValue: defaultOf(key) as T | undefined }),
  };
}

/** An object of objects; the server checks each entry's shape and reports a bad one, never quoting it. */
function isServers(v: unknown): v is McpServers {
  return isObject(v) && Object.values(v).every(isObject);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** What an invalid object-of-objects value is, for a message that must not show it. */
function typeOf(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "an array" : isObject(v) ? "an entry is not an object" : `a ${typeof v}`;
}

function isPermissions(v: unknown): v is Record<string, Approval> {
  return (
    typeof v === "object" && v !== null && !Array.isArray(v) && Object.values(v).every((p) => typeof p === "string" && APPROVALS.includes(p))
  );
}

/** A list of non-empty strings; the server checks each glob and reports a bad one. */
function isPatternList(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((p) => typeof p === "string" && p.trim() !== "");
}

function isString(v: unknown): v is string {
  return typeof v === "string";
}

function isNonEmptyString(v: unknown): v is string {
  return typeof v === "string" && v.trim() !== "";
}
