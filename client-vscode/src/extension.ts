/** Entry point: wires the parts together. All state lives in objects owned by `context`. */
import * as vscode from "vscode";
import { AskCommand, askPermission } from "./ask";
import { createLog } from "./log";
import { ServerController } from "./server";
import { ServerStatus } from "./status";

/** Creates the log, status item, server controller and commands, then starts the server. */
export function activate(context: vscode.ExtensionContext): void {
  const log = createLog();
  const status = new ServerStatus();
  const server = new ServerController({
    log,
    status,
    bundledLibs: context.asAbsolutePath("bundled/libs"),
    askPermission: (params, token) => askPermission(params, token, log),
  });
  const ask = new AskCommand(server, log);
  // Disposed in this order: the server stops before the log and status go away.
  context.subscriptions.push(
    server,
    ask,
    status,
    log,
    server.onDidUpdate(({ update }) => {
      if (update.sessionUpdate === "turn") {
        status.setTurn(update.state);
      }
    }),
    vscode.commands.registerCommand("toolwire.ask", () => ask.run()),
    vscode.commands.registerCommand("toolwire.restart", () => server.restart("restart command")),
    vscode.commands.registerCommand("toolwire.showLog", () => log.show()),
  );
  void server.restart("activation");
}

/**
 * Nothing to do here: `server` is in `context.subscriptions`, and its dispose()
 * stops the client (LSP shutdown, exit). The server also exits when stdin closes.
 */
export function deactivate(): void {}
