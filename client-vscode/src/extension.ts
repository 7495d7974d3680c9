/** Entry point: wires the parts together. All state lives in objects owned by `context`. */
import * as vscode from "vscode";
import { API_KEY_SECRET, registerCommands } from "./commands";
import { createLog } from "./log";
import { PanelHost } from "./panel/host";
import { CHAT_VIEW, ChatViewProvider, VsCodePanelUi } from "./panel/view";
import { ServerController } from "./server";
import { ServerStatus } from "./status";

/** Creates the log, status item, server controller, chat panel and commands, then starts the server. */
export function activate(context: vscode.ExtensionContext): void {
  const log = createLog();
  const status = new ServerStatus();
  // The key is read from SecretStorage when needed and kept here only to redact it.
  let apiKey: string | undefined;
  const readKey = async () => (apiKey = await context.secrets.get(API_KEY_SECRET));
  let host: PanelHost | undefined;
  const server = new ServerController({
    log,
    status,
    bundledLibs: context.asAbsolutePath("bundled/libs"),
    askPermission: (params, token) => (host as PanelHost).requestPermission(params, token),
    apiKey: readKey,
    secrets: () => (apiKey ? [apiKey] : []),
    onRunAction: ({ sessionId }) => void host?.adopt(sessionId).catch((error: unknown) => log.error(`Could not show the code action's turn: ${String(error)}`)),
  });
  const ui = new VsCodePanelUi((state) => status.setTurn(state), log);
  host = new PanelHost(
    {
      connection: async () => {
        const { client, generation } = await server.connection();
        return { rpc: client, generation };
      },
    },
    ui,
  );
  const panel = host;
  // Disposed in this order: the server stops before the log and status go away.
  context.subscriptions.push(
    server,
    ui,
    status,
    log,
    server.onDidUpdate((params) => panel.onUpdate(params)),
    server.onDidStart(() => panel.serverRestarted()),
    context.secrets.onDidChange((event) => {
      if (event.key === API_KEY_SECRET) {
        void readKey();
      }
    }),
    vscode.window.registerWebviewViewProvider(CHAT_VIEW, new ChatViewProvider(context.extensionUri, panel)),
    ...registerCommands(context, panel, server, log),
  );
  void readKey().then(() => server.restart("activation"));
}

/**
 * Nothing to do here: `server` is in `context.subscriptions`, and its dispose()
 * stops the client (LSP shutdown, exit). The server also exits when stdin closes.
 */
export function deactivate(): void {}
