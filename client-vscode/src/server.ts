/**
 * The one controller that owns the LanguageClient for `python -m toolwire serve`.
 * Starts and restarts are single-flight: concurrent calls share one run, and a
 * call that arrives during a run schedules exactly one more.
 */
import * as vscode from "vscode";
import {
  CancellationToken,
  CloseAction,
  ErrorAction,
  LanguageClient,
  State,
  type ErrorHandler,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import type { Socket } from "node:net";
import { canPersist, connectSocket, ensureStopped, socketPathFor, startServer } from "./daemon";
import { EditorIntelligence } from "./intel/feature";
import { askExcludedAction, askInstruction } from "./instruction";
import { errorText } from "./log";
import {
  RequestPermission,
  RUN_ACTION_COMMAND,
  SessionUpdateNotification,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type RunActionResult,
  type SessionUpdateParams,
} from "./protocol";
import { InterpreterError, onPythonEnvironmentChange, selectInterpreter, serverLaunch, type ServerLaunch } from "./python";
import { redactingChannel } from "./redact";
import { editorRipgrep } from "./ripgrep";
import { applyEditSavingCleanBuffers } from "./saving";
import { RESTART_SETTINGS, SERVER_SETTINGS, initializationOptions, readSettings } from "./settings";
import type { ServerStatus } from "./status";

/** What the controller needs from the rest of the extension. */
export interface ServerDeps {
  log: vscode.LogOutputChannel;
  status: ServerStatus;
  /** The extension's `bundled/libs` folder (the server and its Python packages; see python.ts). */
  bundledLibs: string;
  /** Answers `toolwire/session/requestPermission`. */
  askPermission(params: RequestPermissionParams, token: vscode.CancellationToken): Promise<RequestPermissionResult>;
  /** The API key from SecretStorage (undefined when none is set). */
  apiKey(): Promise<string | undefined>;
  /** Secrets to keep out of the log and the trace (read at every write). */
  secrets(): readonly string[];
  /** A code action started a turn (`toolwire.runAction` answered `{sessionId, turnId}`). */
  onRunAction(result: RunActionResult): void;
  /**
   * Before a code action on the file `uri`: undefined when it is not kept from the model, else whether
   * the user said Send to the panel's question (PanelHost.confirmAction).
   */
  confirmAction?(uri: string): Promise<boolean | undefined>;
  /**
   * Where the server outlives the extension host (daemon.ts): a key of this workspace
   * (its storage folder) and the server's log file. Without them the server runs over stdio.
   */
  persist?: { workspaceKey: string; logFile: string };
}

/** A running client plus a number that changes whenever the server process does. */
export interface Connection {
  client: LanguageClient;
  /** Sessions belong to one server process; compare generations before reusing one. */
  generation: number;
}

/** Owns the language client: start, restart (single-flight), stop. */
export class ServerController implements vscode.Disposable {
  private client: LanguageClient | undefined;
  /** The connection to a `--socket` server (closed, not stopped, when the window goes). */
  private socket: Socket | undefined;
  /** The socket of the `--socket` server the client talks to. */
  private socketPath: string | undefined;
  private generation = 0;
  private inflight: Promise<void> | undefined;
  private again = false;
  private disposed = false;
  private readonly updates = new vscode.EventEmitter<SessionUpdateParams>();
  private readonly disposables: vscode.Disposable[] = [this.updates];

  /** Fires for every `toolwire/session/update` notification. */
  readonly onDidUpdate = this.updates.event;

  private readonly started = new vscode.EventEmitter<number>();
  /** Fires with the new generation whenever a server process is running. */
  readonly onDidStart = this.started.event;

  constructor(private readonly deps: ServerDeps) {
    this.disposables.push(
      this.started,
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (RESTART_SETTINGS.some((key) => event.affectsConfiguration(key))) {
          void this.restart("settings changed");
        } else if (SERVER_SETTINGS.some((key) => event.affectsConfiguration(key))) {
          void this.pushSettings();
        }
      }),
      // Trust granted: the workspace's values of restricted settings (toolwire.mcpServers,
      // toolwire.mcpWorkspaceServers) apply now; VS Code fires no configuration change for it.
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.pushSettings()),
    );
    void onPythonEnvironmentChange(() => {
      if (readSettings(this.configuration()).pythonPath === "") {
        void this.restart("Python interpreter changed");
      }
    }).then((watch) => (this.disposed ? watch.dispose() : this.disposables.push(watch)));
  }

  /**
   * The running client, starting the server first if it is not running.
   *
   * @throws Error when the server cannot be started (details are in the log).
   */
  async connection(): Promise<Connection> {
    if (this.inflight !== undefined) {
      await this.inflight;
    }
    if (this.client === undefined || this.client.state === State.Stopped) {
      await this.restart("first use");
    }
    if (this.client === undefined || !this.client.isRunning()) {
      throw new Error("The Toolwire server is not running; see the Toolwire log.");
    }
    return { client: this.client, generation: this.generation };
  }

  /** Stops the server if it runs, then starts it with the current settings. */
  restart(reason: string): Promise<void> {
    this.deps.log.info(`(Re)starting the server: ${reason}.`);
    if (this.inflight !== undefined) {
      this.again = true;
      return this.inflight;
    }
    const run = async (): Promise<void> => {
      try {
        do {
          this.again = false;
          const stopping = this.client !== undefined ? this.socketPath : undefined;
          await this.stopClient();
          if (stopping !== undefined) {
            // Restart means a fresh process: one that did not exit when asked is killed.
            const outcome = await ensureStopped(stopping);
            if (outcome !== "gone") {
              this.deps.log.warn(`The server on ${stopping} did not exit when asked to stop: ${outcome}.`);
            }
          }
          if (!this.disposed) {
            await this.startClient();
          }
        } while (this.again && !this.disposed);
      } finally {
        this.inflight = undefined;
      }
    };
    this.inflight = run();
    return this.inflight;
  }

  /**
   * Sends the current settings (and the API key) with `workspace/didChangeConfiguration`:
   * the server applies them to the next turn of every session, without a restart,
   * and never to a running turn.
   */
  async pushSettings(): Promise<void> {
    const client = this.client;
    if (client === undefined || !client.isRunning()) {
      return; // the next start sends them as initializationOptions
    }
    const settings = readSettings(this.configuration(), (message) => this.deps.log.warn(message));
    const toolwire = initializationOptions(settings, await this.deps.apiKey(), editorRipgrep(vscode.env.appRoot), vscode.workspace.isTrusted);
    await client.sendNotification("workspace/didChangeConfiguration", { settings: { toolwire } });
    this.deps.log.info("Settings sent to the server; they apply to the next turn.");
  }

  /**
   * Releases everything. A stdio server is stopped (LSP shutdown and exit); a `--socket`
   * server is only disconnected: the window may be reloading, and VS Code cannot tell a
   * reload from a close, so the server keeps the sessions and exits by itself after
   * its grace period when no window comes back.
   */
  dispose(): void {
    this.disposed = true;
    this.socket?.destroy();
    this.socket = undefined;
    void this.stopClient();
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }

  private async startClient(): Promise<void> {
    const { log, status } = this.deps;
    const folder = vscode.workspace.workspaceFolders?.[0];
    const settings = readSettings(this.configuration(), (message) => log.warn(message));
    let launch: ServerLaunch;
    try {
      launch = await serverLaunch(settings.pythonPath, settings.importStrategy, folder, this.deps.bundledLibs, log);
    } catch (error) {
      if (!(error instanceof InterpreterError)) {
        throw error;
      }
      this.reportNoInterpreter(error);
      return;
    }
    const commandLine = `${launch.command} ${launch.args.join(" ")}`;
    log.info(`Starting ${launch.description}.`);
    status.setServer("starting", commandLine);

    const persist = canPersist() ? this.deps.persist : undefined;
    const serverOptions: ServerOptions =
      persist === undefined
        ? { command: launch.command, args: launch.args, options: { cwd: folder?.uri.fsPath, env: launch.env } }
        : async () => {
            this.socketPath = socketPathFor(persist.workspaceKey, launch);
            const socket = await this.openSocket(launch, this.socketPath, persist.logFile, folder?.uri.fsPath);
            this.socket = socket;
            return { reader: socket, writer: socket };
          };
    // The log and the trace (toolwire.trace.server) never see the API key.
    const redacted = redactingChannel(log, () => this.deps.secrets());
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      outputChannel: redacted,
      traceOutputChannel: redacted,
      initializationOptions: initializationOptions(settings, await this.deps.apiKey(), editorRipgrep(vscode.env.appRoot), vscode.workspace.isTrusted),
      errorHandler: this.errorHandler(),
      middleware: {
        // Code actions run toolwire.runAction; the panel then shows that session's turn.
        executeCommand: async (command, args, next) => {
          if (command === RUN_ACTION_COMMAND) {
            // a file kept from the model: the panel's question first; Send passes allowExcluded
            const confirm = this.deps.confirmAction;
            const allowed = confirm === undefined ? args : await askExcludedAction(args, confirm);
            if (allowed === undefined) {
              void vscode.window.showInformationMessage("Toolwire: not sent; the file is kept from the model.");
              return undefined;
            }
            const asked = await askInstruction(allowed, (options) => vscode.window.showInputBox(options));
            if (asked === undefined) {
              return undefined; // Edit selection… dismissed: no turn
            }
            args = asked;
          }
          const result: unknown = await next(command, args);
          const sessionId = (result as { sessionId?: unknown } | null)?.sessionId;
          if (command === RUN_ACTION_COMMAND && typeof sessionId === "string") {
            this.deps.onRunAction(result as RunActionResult);
          }
          return result;
        },
        // An edit to a clean buffer is saved before the server hears back (saving.ts).
        workspace: { handleApplyEdit: (params, next) => applyEditSavingCleanBuffers(params, (p) => next(p, CancellationToken.None), log) },
      },
    };
    const client = new LanguageClient("toolwire", "Toolwire", serverOptions, clientOptions);
    client.onNotification(SessionUpdateNotification, (params) => this.updates.fire(params));
    client.onRequest(RequestPermission, (params, token) => this.deps.askPermission(params, token));
    // The editor's problems, symbols, definitions and references for the agent's tools.
    client.registerFeature(new EditorIntelligence(client, log));
    client.onDidChangeState(({ newState }) => {
      if (newState === State.Running) {
        this.generation += 1;
        status.setServer("running", commandLine);
        this.started.fire(this.generation);
      } else if (newState === State.Stopped && this.client === client) {
        status.setServer("stopped", commandLine);
      }
    });
    this.client = client;
    try {
      await client.start();
      if (this.disposed) {
        await this.stopClient();
      }
    } catch (error) {
      this.client = undefined;
      log.error(`Could not start ${commandLine}: ${errorText(error)}`);
      status.setServer("failed", `${commandLine}: ${errorText(error)}`);
      await client.dispose(2000).catch(() => undefined);
      void vscode.window
        .showErrorMessage(
          `Toolwire: could not start the server with ${launch.command} (${launch.toolwire} toolwire).`,
          "Show Log",
          "Open Settings",
        )
        .then((choice) => {
          if (choice === "Show Log") {
            log.show();
          } else if (choice === "Open Settings") {
            void vscode.commands.executeCommand("workbench.action.openSettings", "toolwire.pythonPath");
          }
        });
    }
  }

  /**
   * A server that exits on its own stays stopped (its sessions are gone, so a silent
   * restart would only hide that): the status item says so and one notification offers
   * Restart, which is also the `toolwire.restart` command.
   */
  private errorHandler(): ErrorHandler {
    return {
      error: () => ({ action: ErrorAction.Continue }),
      closed: () => {
        if (!this.disposed && this.inflight === undefined) {
          this.deps.log.error("The Toolwire server exited unexpectedly.");
          void vscode.window
            .showErrorMessage("Toolwire: the server stopped unexpectedly. Its sessions are gone.", "Restart", "Show Log")
            .then((choice) => {
              if (choice === "Restart") {
                void this.restart("restart after the server stopped");
              } else if (choice === "Show Log") {
                this.deps.log.show();
              }
            });
        }
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  /** The one message for "no usable Python": log, status item, and a notification with two ways out. */
  private reportNoInterpreter(error: InterpreterError): void {
    const { log, status } = this.deps;
    log.error(error.message);
    status.setServer("failed", error.message);
    void vscode.window.showErrorMessage(error.message, "Select Interpreter", "Open Settings").then(async (choice) => {
      if (choice === "Select Interpreter") {
        await selectInterpreter(log);
      } else if (choice === "Open Settings") {
        await vscode.commands.executeCommand("workbench.action.openSettings", "toolwire.pythonPath");
      }
    });
  }

  /** Connects to this workspace's running `--socket` server, or starts one and connects. */
  private async openSocket(launch: ServerLaunch, socketPath: string, logFile: string, cwd: string | undefined): Promise<Socket> {
    const { log } = this.deps;
    try {
      const socket = await connectSocket(socketPath);
      log.info(`Reconnected to the running server on ${socketPath}; its log is ${logFile}.`);
      return socket;
    } catch {
      // Nothing listens (first start, or a server that exited or was killed).
    }
    const pid = await startServer(launch, socketPath, logFile, cwd);
    log.info(`Started the server (pid ${pid}) on ${socketPath}; its log is ${logFile}.`);
    return connectSocket(socketPath);
  }

  private async stopClient(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.socket = undefined;
    if (client === undefined) {
      return;
    }
    try {
      await client.dispose(2000);
    } catch (error) {
      this.deps.log.warn(`Server did not stop cleanly: ${errorText(error)}`);
    }
    this.deps.status.setServer("stopped", "");
  }

  private configuration(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration("toolwire", vscode.workspace.workspaceFolders?.[0]);
  }
}
