/**
 * The "Toolwire: Ask" command and the permission dialog.
 *
 * Ask sends one prompt to the session of the first workspace folder (created on
 * first use, and again after the server restarts) and writes the turn's
 * transcript to the log: one line per tool-call status change, the assistant's
 * text, and the stop reason.
 */
import * as vscode from "vscode";
import { errorText } from "./log";
import { automaticAnswer, choicesFor, permissionLogText, permissionOutcome, permissionPrompt, type Choice } from "./permission";
import {
  SessionCancel,
  SessionNew,
  SessionPrompt,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type SessionUpdateParams,
  type TurnState,
} from "./protocol";
import type { Connection, ServerController } from "./server";
import { readSettings, sessionModel } from "./settings";
import { Transcript } from "./transcript";

interface Session {
  sessionId: string;
  generation: number;
  cwd: string;
}

interface ActiveTurn {
  sessionId: string;
  transcript: Transcript;
  progress: vscode.Progress<{ message?: string }>;
}

const TURN_MESSAGES: Record<TurnState, string | undefined> = {
  started: "Starting…",
  model_request: "Waiting for the model…",
  running_tools: "Running tools…",
  ended: undefined,
};

/** The Ask command; one instance per activation. */
export class AskCommand implements vscode.Disposable {
  private session: Session | undefined;
  private turn: ActiveTurn | undefined;
  /** True from the moment a prompt is accepted until its turn ends: one turn at a time. */
  private busy = false;
  private readonly subscription: vscode.Disposable;

  constructor(
    private readonly server: ServerController,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.subscription = server.onDidUpdate((params) => this.onUpdate(params));
  }

  /** Asks for a prompt and runs one turn with it. Errors are shown, never thrown. */
  async run(): Promise<void> {
    try {
      await this.ask();
    } catch (error) {
      this.log.error(`Ask failed: ${errorText(error)}`);
      void vscode.window.showErrorMessage(`Toolwire: ${errorText(error)}`);
    }
  }

  dispose(): void {
    this.subscription.dispose();
  }

  private async ask(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (folder === undefined || folder.uri.scheme !== "file") {
      void vscode.window.showWarningMessage("Toolwire: open a local folder first.");
      return;
    }
    const text = this.busy
      ? undefined
      : await vscode.window.showInputBox({ title: "Toolwire: Ask", prompt: "What should Toolwire do?", ignoreFocusOut: true });
    if (this.busy) {
      void vscode.window.showWarningMessage("Toolwire: a turn is already running.");
      return;
    }
    if (text === undefined || text.trim() === "") {
      return;
    }
    this.busy = true;
    try {
      await this.runTurn(text, folder.uri.fsPath);
    } finally {
      this.busy = false;
    }
  }

  private async runTurn(text: string, cwd: string): Promise<void> {
    const connection = await this.server.connection();
    const sessionId = await this.sessionFor(connection, cwd);
    this.log.show(true);
    this.log.info(`> ${text}`);
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Toolwire", cancellable: true },
      async (progress, token) => {
        const transcript = new Transcript();
        this.turn = { sessionId, transcript, progress };
        const onCancel = token.onCancellationRequested(() => {
          this.log.info("Cancelling the turn.");
          void connection.client.sendNotification(SessionCancel, { sessionId });
        });
        try {
          const result = await connection.client.sendRequest(SessionPrompt, { sessionId, prompt: [{ type: "text", text }] });
          this.write(transcript.end(result));
        } finally {
          onCancel.dispose();
          this.turn = undefined;
        }
      },
    );
  }

  private async sessionFor(connection: Connection, cwd: string): Promise<string> {
    const current = this.session;
    if (current !== undefined && current.generation === connection.generation && current.cwd === cwd) {
      return current.sessionId;
    }
    const settings = readSettings(vscode.workspace.getConfiguration("toolwire"), (message) => this.log.warn(message));
    const model = sessionModel(settings);
    const { sessionId } = await connection.client.sendRequest(SessionNew, model === undefined ? { cwd } : { cwd, model });
    this.log.info(`New session ${sessionId} in ${cwd}${model === undefined ? "" : ` with ${model}`}.`);
    this.session = { sessionId, generation: connection.generation, cwd };
    return sessionId;
  }

  private onUpdate({ sessionId, update }: SessionUpdateParams): void {
    const turn = this.turn;
    if (turn === undefined || turn.sessionId !== sessionId) {
      return;
    }
    if (update.sessionUpdate === "turn") {
      const message = TURN_MESSAGES[update.state];
      if (message !== undefined) {
        turn.progress.report({ message });
      }
    }
    this.write(turn.transcript.update(update));
  }

  private write(lines: readonly string[]): void {
    for (const line of lines) {
      this.log.info(line);
    }
  }
}

/**
 * Answers a permission request: by the `toolwire.approval` setting when it is
 * `auto` or `deny`, else with a modal dialog. Dismissing the dialog rejects; a
 * request the server withdraws answers `cancelled`.
 */
export async function askPermission(
  params: RequestPermissionParams,
  token: vscode.CancellationToken,
  log: vscode.LogOutputChannel,
): Promise<RequestPermissionResult> {
  const { message, detail } = permissionPrompt(params);
  log.info(`Permission asked: ${message}\n${permissionLogText(params)}`);
  const { approval } = readSettings(vscode.workspace.getConfiguration("toolwire"), (warning) => log.warn(warning));
  const automatic = automaticAnswer(approval, params.options);
  if (automatic !== undefined) {
    log.info(`Permission answered by toolwire.approval = ${approval}.`);
    return automatic;
  }
  let listener: vscode.Disposable | undefined;
  const withdrawn = new Promise<"withdrawn">((resolve) => {
    listener = token.onCancellationRequested(() => resolve("withdrawn"));
    if (token.isCancellationRequested) {
      resolve("withdrawn");
    }
  });
  const answer = await Promise.race([
    vscode.window.showInformationMessage<Choice>(message, { modal: true, detail }, ...choicesFor(params.options)),
    withdrawn,
  ]).finally(() => listener?.dispose());
  if (answer === "withdrawn") {
    log.info("Permission request withdrawn by the server.");
    return { outcome: { outcome: "cancelled" } };
  }
  const result = permissionOutcome(answer, params.options);
  log.info(`Permission answer: ${answer ?? "dismissed (reject)"}.`);
  return result;
}
