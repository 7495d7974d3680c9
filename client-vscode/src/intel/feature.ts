/**
 * The editor's intelligence for the server (protocol.md, "The editor's intelligence"): the
 * client declares `capabilities.experimental.toolwireEditor` in `initialize`, answers the
 * four `toolwire/editor/*` requests from VS Code's language features (every language server
 * and extension the user has: `languages.getDiagnostics`, `vscode.executeWorkspaceSymbolProvider`,
 * `vscode.executeDefinitionProvider`, `vscode.executeReferenceProvider`), and sends
 * `toolwire/editor/diagnosticsChanged` from `languages.onDidChangeDiagnostics`, batched.
 * The converting is answers.ts's; this file only calls VS Code.
 */
import * as vscode from "vscode";
import type { ClientCapabilities, FeatureState, LanguageClient, StaticFeature } from "vscode-languageclient/node";
import { ResponseError, State } from "vscode-languageclient/node";
import {
  EDITOR_CAPABILITY,
  UriBatch,
  diagnosticsAnswer,
  diagnosticsUris,
  documentPosition,
  locationsAnswer,
  requestFailed,
  symbolsAnswer,
  symbolsQuery,
  withoutDeclarations,
} from "./answers";
import { EditorDefinition, EditorDiagnostics, EditorDiagnosticsChanged, EditorReferences, EditorSymbols } from "../protocol";

/** Documents whose problems the server hears about: the ones it syncs (`documentSelector`: `file`). */
const isFile = (uri: vscode.Uri): boolean => uri.scheme === "file";

/** Symbols without a range resolved from their document's symbols, at most this many documents. */
const MAX_RESOLVED_DOCUMENTS = 20;

type Place = vscode.Location | vscode.LocationLink;

/** The client's side of the editor's intelligence; `client.registerFeature(new EditorIntelligence(client, log))`. */
export class EditorIntelligence implements StaticFeature {
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly client: LanguageClient,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = { ...(capabilities.experimental as object | undefined), toolwireEditor: { ...EDITOR_CAPABILITY } };
  }

  getState(): FeatureState {
    return { kind: "static" };
  }

  initialize(): void {
    const client = this.client;
    const c2p = client.code2ProtocolConverter;
    const answer = <P, R>(method: string, handler: (params: P) => Promise<R>) =>
      client.onRequest(method, async (params: P) => {
        try {
          return await handler(params);
        } catch (error) {
          if (error instanceof ResponseError) {
            throw error; // bad params
          }
          this.log.warn(`${method} failed in the editor: ${error instanceof Error ? error.message : String(error)}`);
          throw requestFailed(method, error);
        }
      });
    this.disposables.push(
      answer(EditorDiagnostics.method, async (params: unknown) => {
        const uris = diagnosticsUris(params);
        const entries: (readonly [vscode.Uri, readonly vscode.Diagnostic[]])[] =
          uris === null ? vscode.languages.getDiagnostics() : uris.map((uri) => {
            const parsed = vscode.Uri.parse(uri, true);
            return [parsed, vscode.languages.getDiagnostics(parsed)] as const;
          });
        return diagnosticsAnswer(entries, uris !== null, c2p, isFile);
      }),
      answer(EditorSymbols.method, async (params: unknown) => {
        const query = symbolsQuery(params);
        const found = await vscode.commands.executeCommand<vscode.SymbolInformation[] | undefined>("vscode.executeWorkspaceSymbolProvider", query);
        const symbols = await resolveRanges(found ?? []);
        return symbolsAnswer(symbols, (s) => s.location?.range !== undefined, c2p);
      }),
      answer(EditorDefinition.method, async (params: unknown) => {
        const { uri, position } = documentPosition(params);
        return locationsAnswer(await this.definitions(uri, position), c2p);
      }),
      answer(EditorReferences.method, async (params: unknown) => {
        const { uri, position } = documentPosition(params);
        const found = await vscode.commands.executeCommand<vscode.Location[] | undefined>(
          "vscode.executeReferenceProvider",
          vscode.Uri.parse(uri, true),
          new vscode.Position(position.line, position.character),
        );
        const references = locationsAnswer(found, c2p).locations;
        if ((params as { includeDeclaration?: unknown }).includeDeclaration === true) {
          return { locations: references };
        }
        // VS Code always asks its providers with the declaration included.
        const declarations = locationsAnswer(await this.definitions(uri, position), c2p).locations;
        return { locations: withoutDeclarations(references, declarations) };
      }),
    );

    const batch = new UriBatch((uris) => {
      if (client.state === State.Running) {
        void client.sendNotification(EditorDiagnosticsChanged.method, { uris }).catch((error: unknown) =>
          this.log.warn(`Could not send diagnosticsChanged: ${String(error)}`),
        );
      }
    });
    this.disposables.push(
      { dispose: () => batch.dispose() },
      vscode.languages.onDidChangeDiagnostics((event) => batch.add(event.uris.filter(isFile).map((uri) => c2p.asUri(uri)))),
    );
  }

  clear(): void {
    for (const disposable of this.disposables.splice(0)) {
      disposable.dispose();
    }
  }

  private async definitions(uri: string, position: { line: number; character: number }): Promise<Place[]> {
    const found = await vscode.commands.executeCommand<Place[] | undefined>(
      "vscode.executeDefinitionProvider",
      vscode.Uri.parse(uri, true),
      new vscode.Position(position.line, position.character),
    );
    return found ?? [];
  }
}

/**
 * Symbols whose provider left the range to be filled in later: VS Code's command API has no
 * way to ask that provider, so the range is looked up among the document's own symbols
 * (same name and kind); a symbol not found there keeps no range and is dropped.
 */
async function resolveRanges(symbols: vscode.SymbolInformation[]): Promise<vscode.SymbolInformation[]> {
  const missing = symbols.filter((s) => s.location?.range === undefined && s.location?.uri !== undefined);
  if (missing.length === 0) {
    return symbols;
  }
  const byDocument = new Map<string, vscode.DocumentSymbol[] | vscode.SymbolInformation[]>();
  for (const uri of [...new Set(missing.map((s) => s.location.uri.toString()))].slice(0, MAX_RESOLVED_DOCUMENTS)) {
    const own = await vscode.commands
      .executeCommand<vscode.DocumentSymbol[] | vscode.SymbolInformation[] | undefined>("vscode.executeDocumentSymbolProvider", vscode.Uri.parse(uri, true))
      .then((found) => found ?? [], () => []);
    byDocument.set(uri, own);
  }
  return symbols.map((symbol) => {
    if (symbol.location?.range !== undefined) {
      return symbol;
    }
    const range = findRange(byDocument.get(symbol.location?.uri?.toString() ?? "") ?? [], symbol.name, symbol.kind);
    return range === undefined ? symbol : new vscode.SymbolInformation(symbol.name, symbol.kind, symbol.containerName, new vscode.Location(symbol.location.uri, range));
  });
}

function findRange(own: readonly (vscode.DocumentSymbol | vscode.SymbolInformation)[], name: string, kind: vscode.SymbolKind): vscode.Range | undefined {
  for (const item of own) {
    if ("selectionRange" in item) {
      if (item.name === name && item.kind === kind) {
        return item.selectionRange;
      }
      const inner = findRange(item.children, name, kind);
      if (inner !== undefined) {
        return inner;
      }
    } else if (item.name === name && item.kind === kind && item.location.range !== undefined) {
      return item.location.range;
    }
  }
  return undefined;
}
