/** Entry point: wires the parts together. All state lives in objects owned by `context`. */
import * as vscode from "vscode";
import { API_KEY_SECRET, registerCommands } from "./commands";
import { createLog } from "./log";
import { mcpSecrets, redactingChannel, urlSecrets } from "./redact";
import { PanelHost } from "./panel/host";
import { CHAT_VIEW, ChatViewProvider, VsCodePanelUi, workspaceRelative } from "./panel/view";
import { ServerController } from "./server";
import { ServerStatus } from "./status";

/** Context key: a turn of the panel's conversation runs. */
const TURN_RUNNING_KEY = "toolwire.turnRunning";
/** Context key: a permission request waits for the user. */
const APPROVAL_WAITING_KEY = "toolwire.approvalWaiting";

/** workspaceState key of the panel's session id (taken up again after a window reload). */
const SESSION_KEY = "toolwire.sessionId";

/** Creates the log, status item, server controller, chat panel and commands, then starts the server. */
export function activate(context: vscode.ExtensionContext): void {
  // The key is read from SecretStorage when needed and kept here only to redact it.
  let apiKey: string | undefined;
  const readKey = async () => (apiKey = await context.secrets.get(API_KEY_SECRET));
  // Every line of the log (traces, settings warnings, errors) without the key, baseUrl's or the MCP servers' secrets.
  const secrets = () => {
    const config = vscode.workspace.getConfiguration("toolwire");
    return [...(apiKey ? [apiKey] : []), ...urlSecrets(config.get<string>("baseUrl")), ...mcpSecrets(config.get("mcpServers"))];
  };
  const log = redactingChannel(createLog(), secrets);
  const status = new ServerStatus();
  let host: PanelHost | undefined;
  const server = new ServerController({
    log,
    status,
    bundledLibs: context.asAbsolutePath("bundled/libs"),
    askPermission: (params, token) => (host as PanelHost).requestPermission(params, token),
    apiKey: readKey,
    secrets,
    // The server outlives a window reload (daemon.ts); its log goes to the extension's log folder.
    persist: {
      workspaceKey: context.storageUri?.fsPath ?? vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? "no-folder",
      logFile: vscode.Uri.joinPath(context.logUri, "server.log").fsPath,
    },
    // a code action on a file kept from the model is asked about as the panel asks (a file outside the workspace is not)
    confirmAction: async (uri) => {
      const relative = workspaceRelative(vscode.Uri.parse(uri));
      return relative === undefined || host === undefined ? undefined : host.confirmAction(relative);
    },
    onRunAction: ({ sessionId }) => void host?.adopt(sessionId).catch((error: unknown) => log.error(`Could not show the code action's turn: ${String(error)}`)),
  });
  // Context keys for `when` clauses (package.json): Cancel Turn only while a turn runs, the
  // allow-once / reject keybindings only while an approval waits.
  const context_: Record<string, boolean> = {};
  const setContext = (key: string, value: boolean): void => {
    if (context_[key] !== value) {
      context_[key] = value;
      void vscode.commands.executeCommand("setContext", key, value);
    }
  };
  const ui = new VsCodePanelUi((state) => {
    status.setTurn(state);
    setContext(TURN_RUNNING_KEY, state.running);
    setContext(APPROVAL_WAITING_KEY, state.waiting > 0);
  }, log);
  host = new PanelHost(
    {
      connection: async () => {
        const { client, generation } = await server.connection();
        return { rpc: client, generation };
      },
    },
    ui,
    {
      get: () => context.workspaceState.get<string>(SESSION_KEY),
      set: (sessionId) => void context.workspaceState.update(SESSION_KEY, sessionId),
    },
  );
  const panel = host;
  // Disposed in this order: the server stops before the log and status go away.
  context.subscriptions.push(
    server,
    ui,
    status,
    log,
    server.onDidUpdate((params) => panel.onUpdate(params)),
    server.onDidStart(() => void panel.serverRestarted()),
    context.secrets.onDidChange((event) => {
      if (event.key === API_KEY_SECRET) {
        void readKey();
      }
    }),
    vscode.window.registerWebviewViewProvider(CHAT_VIEW, new ChatViewProvider(context.extensionUri, panel)),
    ...registerCommands(context, panel, server, log, ui),
  );
  void readKey().then(() => server.restart("activation"));
}

/**
 * Nothing to do here: `server` is in `context.subscriptions`. Its dispose() stops a
 * stdio server, and only disconnects from a `--socket` server, which keeps the
 * sessions for a reloaded window and exits by itself after its grace period.
 */
export function deactivate(): void {}
