/**
 * The answers to the server's `toolwire/editor/*` requests, built from what VS Code's
 * language features returned (protocol.md, "The editor's intelligence"), and the batching
 * of `toolwire/editor/diagnosticsChanged`. VS Code's objects are turned into LSP JSON by
 * the language client's converter (`client.code2ProtocolConverter`), passed in: this
 * module must not import `vscode` (the Node tests use it with a stand-in converter).
 */
import { ResponseError } from "vscode-jsonrpc";

/** What the VS Code client declares in `initialize` (`capabilities.experimental.toolwireEditor`). */
export const EDITOR_CAPABILITY = { diagnostics: true, symbols: true, definition: true, references: true } as const;

/** LSP's `RequestFailed`: the editor could not answer (its provider threw). */
export const REQUEST_FAILED = -32803;
/** JSON-RPC's `InvalidParams`. */
export const INVALID_PARAMS = -32602;

/** How long changed URIs are collected before one `diagnosticsChanged` carries them. */
export const DIAGNOSTICS_BATCH_MS = 100;

/** LSP JSON (the fields the answers carry). */
export interface LspPosition {
  line: number;
  character: number;
}
export interface LspRange {
  start: LspPosition;
  end: LspPosition;
}
export interface LspLocation {
  uri: string;
  range: LspRange;
}

/** A VS Code `Location` or `LocationLink`, as far as the answers read them. */
export interface CodeLocation<U, R> {
  uri: U;
  range: R;
}
export interface CodeLocationLink<U, R> {
  targetUri: U;
  targetRange: R;
  targetSelectionRange?: R;
}

/** The parts of the language client's `code2ProtocolConverter` the answers use. */
export interface Converter<U, R, D, S> {
  asUri(uri: U): string;
  asRange(range: R): LspRange;
  asDiagnosticsSync(items: D[]): unknown[];
  asWorkspaceSymbol(item: S): unknown;
}

/**
 * `toolwire/editor/definition` / `references` result: each `Location` as it is, each
 * `LocationLink` as `{"uri": targetUri, "range": targetSelectionRange}` (its `targetRange`
 * when it has no selection range). Nothing (a language without a provider) is an empty list.
 */
export function locationsAnswer<U, R>(
  items: readonly (CodeLocation<U, R> | CodeLocationLink<U, R>)[] | null | undefined,
  convert: Pick<Converter<U, R, unknown, unknown>, "asUri" | "asRange">,
): { locations: LspLocation[] } {
  return { locations: (items ?? []).map((item) => asLocation(item, convert)) };
}

function asLocation<U, R>(item: CodeLocation<U, R> | CodeLocationLink<U, R>, convert: Pick<Converter<U, R, unknown, unknown>, "asUri" | "asRange">): LspLocation {
  if ("targetUri" in item) {
    return { uri: convert.asUri(item.targetUri), range: convert.asRange(item.targetSelectionRange ?? item.targetRange) };
  }
  return { uri: convert.asUri(item.uri), range: convert.asRange(item.range) };
}

/**
 * The references without the declarations (`includeDeclaration: false`): VS Code's
 * reference command always asks its providers with the declaration included, so a
 * reference lying within a definition's location is dropped.
 */
export function withoutDeclarations(references: LspLocation[], declarations: readonly LspLocation[]): LspLocation[] {
  return references.filter((ref) => !declarations.some((decl) => decl.uri === ref.uri && within(ref.range, decl.range)));
}

function within(inner: LspRange, outer: LspRange): boolean {
  return compare(outer.start, inner.start) <= 0 && compare(inner.end, outer.end) <= 0;
}

function compare(a: LspPosition, b: LspPosition): number {
  return a.line !== b.line ? a.line - b.line : a.character - b.character;
}

/**
 * `toolwire/editor/diagnostics` result. `requested` null: every document of `entries`
 * (VS Code's `languages.getDiagnostics()`) that has problems; else one item per requested
 * document, with its problems (none is an empty list). Only documents `keep` accepts
 * (the `file:` documents the server syncs) are answered.
 */
export function diagnosticsAnswer<U, D>(
  entries: readonly (readonly [U, readonly D[]])[],
  requested: boolean,
  convert: Pick<Converter<U, unknown, D, unknown>, "asUri" | "asDiagnosticsSync">,
  keep: (uri: U) => boolean,
): { items: { uri: string; diagnostics: unknown[] }[] } {
  const items = entries
    .filter(([uri, diagnostics]) => keep(uri) && (requested || diagnostics.length > 0))
    .map(([uri, diagnostics]) => ({ uri: convert.asUri(uri), diagnostics: convert.asDiagnosticsSync([...diagnostics]) }));
  return { items };
}

/**
 * `toolwire/editor/symbols` result: each symbol as LSP's `WorkspaceSymbol` (name, kind,
 * containerName, location with its range). A symbol without a range (a provider that fills
 * it in lazily) has been resolved by the caller, or is dropped here.
 */
export function symbolsAnswer<S>(
  items: readonly S[] | null | undefined,
  hasRange: (item: S) => boolean,
  convert: Pick<Converter<unknown, unknown, unknown, S>, "asWorkspaceSymbol">,
): { symbols: unknown[] } {
  return { symbols: (items ?? []).filter(hasRange).map((item) => convert.asWorkspaceSymbol(item)) };
}

/** The JSON-RPC error an editor request answers with when VS Code's command failed. */
export function requestFailed(method: string, error: unknown): ResponseError<void> {
  const message = error instanceof Error ? error.message : String(error);
  return new ResponseError(REQUEST_FAILED, `${method}: the editor could not answer: ${message}`);
}

/** The params of a request, checked: a wrong shape is an `InvalidParams` error, never a throw inside VS Code. */
export function documentPosition(params: unknown): { uri: string; position: LspPosition } {
  const p = params as { textDocument?: { uri?: unknown }; position?: { line?: unknown; character?: unknown } } | null;
  const uri = p?.textDocument?.uri;
  const line = p?.position?.line;
  const character = p?.position?.character;
  if (typeof uri !== "string" || uri === "" || !isIndex(line) || !isIndex(character)) {
    throw new ResponseError(INVALID_PARAMS, "expected {textDocument: {uri}, position: {line, character}}");
  }
  return { uri, position: { line, character } };
}

/** `toolwire/editor/diagnostics` params: the URIs, or null for every document with problems. */
export function diagnosticsUris(params: unknown): string[] | null {
  const uris = (params as { uris?: unknown } | null)?.uris;
  if (uris === null || uris === undefined) {
    return null;
  }
  if (!Array.isArray(uris) || !uris.every((uri) => typeof uri === "string" && uri !== "")) {
    throw new ResponseError(INVALID_PARAMS, "expected {uris: [DocumentUri] | null}");
  }
  return uris as string[];
}

/** `toolwire/editor/symbols` params: the query. */
export function symbolsQuery(params: unknown): string {
  const query = (params as { query?: unknown } | null)?.query;
  if (typeof query !== "string") {
    throw new ResponseError(INVALID_PARAMS, "expected {query: string}");
  }
  return query;
}

function isIndex(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/** The timer functions a batch uses (the global ones by default). */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const GLOBAL_TIMERS: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * Collects the URIs whose problems changed: the first change opens a window of `delayMs`,
 * every URI changed in it is sent once, in the order first seen, in one `send` at its end.
 * A steady stream of changes (typing elsewhere) never holds a file's news back longer than
 * one window.
 */
export class UriBatch {
  private readonly pending = new Set<string>();
  private timer: unknown;
  private disposed = false;

  constructor(
    private readonly send: (uris: string[]) => void,
    private readonly delayMs: number = DIAGNOSTICS_BATCH_MS,
    private readonly timers: Timers = GLOBAL_TIMERS,
  ) {}

  add(uris: readonly string[]): void {
    if (this.disposed || uris.length === 0) {
      return;
    }
    for (const uri of uris) {
      this.pending.add(uri);
    }
    if (this.timer === undefined) {
      this.timer = this.timers.setTimeout(() => this.flush(), this.delayMs);
    }
  }

  /** Sends what is pending now (nothing when nothing is). */
  flush(): void {
    if (this.timer !== undefined) {
      this.timers.clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.pending.size === 0) {
      return;
    }
    const uris = [...this.pending];
    this.pending.clear();
    this.send(uris);
  }

  /** Drops what is pending; later adds are ignored. */
  dispose(): void {
    this.disposed = true;
    if (this.timer !== undefined) {
      this.timers.clearTimeout(this.timer);
      this.timer = undefined;
    }
    this.pending.clear();
  }
}
