/**
 * The status bar item and the language status item: the server's state (starting, ready, stopped or crashed,
 * with Restart) and the turn's (generating, running tools, N approvals waiting).
 * Clicking it opens the chat panel, or restarts a server that is not running.
 */
import * as vscode from "vscode";
import { displayText } from "./display";
import type { TurnState } from "./protocol";

/** Life of the server process as the status item shows it. */
export type ServerState = "starting" | "running" | "stopped" | "failed";

/** Owns the status bar item; call the setters, it renders. */
export class ServerStatus implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  /** The same words in the language status area (`{}` in the status bar). */
  private readonly language: vscode.LanguageStatusItem;
  private server: ServerState = "stopped";
  private turn: TurnState | string | null = null;
  private waiting = 0;
  private detail = "";

  constructor() {
    this.item = vscode.window.createStatusBarItem("toolwire.status", vscode.StatusBarAlignment.Left, 10);
    this.item.name = "Toolwire";
    this.language = vscode.languages.createLanguageStatusItem("toolwire.server", [{ scheme: "file" }, { scheme: "untitled" }]);
    this.language.name = "Toolwire";
    this.language.command = { command: "toolwire.showLog", title: "Show Log" };
    this.render();
    this.item.show();
  }

  /** Records the server's state; `detail` (e.g. the interpreter, an error) shows in the tooltip, in display form. */
  setServer(state: ServerState, detail: string): void {
    this.server = state;
    this.detail = displayText(detail, "\n");
    if (state !== "running") {
      this.turn = null;
      this.waiting = 0;
    }
    this.render();
  }

  /** Records the turn's state (`null` or `ended`: no turn) and the approvals waiting. */
  setTurn(state: { turnState: TurnState | string | null; waiting: number; running: boolean }): void {
    this.turn = state.turnState === "ended" ? null : state.running ? (state.turnState ?? "started") : null;
    this.waiting = state.waiting;
    this.render();
  }

  dispose(): void {
    this.item.dispose();
    this.language.dispose();
  }

  private render(): void {
    const item = this.item;
    const down = this.server === "failed" || this.server === "stopped";
    item.command = down
      ? { command: "toolwire.restart", title: "Restart Server" }
      : { command: "toolwire.openChat", title: "Open Chat" };
    item.backgroundColor =
      this.server === "failed"
        ? new vscode.ThemeColor("statusBarItem.errorBackground")
        : this.waiting > 0
          ? new vscode.ThemeColor("statusBarItem.warningBackground")
          : undefined;
    item.text = this.describe();
    item.tooltip = `${this.describe().replace(/\$\([^)]*\)\s*/g, "")}${this.detail ? `\n${this.detail}` : ""}\n${down ? "Click to restart the server." : "Click to open the chat."}`;
    const words = item.text.replace(/\$\([^)]*\)\s*/g, "");
    item.accessibilityInformation = { label: words, role: "button" };
    this.language.text = words;
    this.language.detail = this.detail;
    this.language.busy = this.server === "starting" || this.turn !== null;
    this.language.severity = this.server === "failed" ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
  }

  private describe(): string {
    switch (this.server) {
      case "starting":
        return "$(loading~spin) Toolwire: starting";
      case "stopped":
        return "$(debug-disconnect) Toolwire: stopped — restart";
      case "failed":
        return "$(error) Toolwire: crashed — restart";
      case "running":
        if (this.waiting > 0) {
          return `$(bell-dot) Toolwire: ${this.waiting} approval${this.waiting === 1 ? "" : "s"} waiting`;
        }
        switch (this.turn) {
          case null:
            return "$(hubot) Toolwire: ready";
          case "running_tools":
            return "$(sync~spin) Toolwire: running tools";
          default:
            return "$(loading~spin) Toolwire: generating";
        }
    }
  }
}
