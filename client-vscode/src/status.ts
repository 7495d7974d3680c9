/** The language status item that shows what the Toolwire server is doing. */
import * as vscode from "vscode";
import type { TurnState } from "./protocol";

/** Life of the server process as the status item shows it. */
export type ServerState = "starting" | "running" | "stopped" | "failed";

/** Owns the language status item; call the setters, it renders. */
export class ServerStatus implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  private server: ServerState = "stopped";
  private turn: TurnState | undefined;
  private detail = "";

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem("toolwire.server", [{ scheme: "file" }, { scheme: "untitled" }]);
    this.item.name = "Toolwire";
    this.item.command = { command: "toolwire.showLog", title: "Show Log" };
    this.render();
  }

  /** Records the server's state; `detail` (e.g. the interpreter) shows under the text. */
  setServer(state: ServerState, detail: string): void {
    this.server = state;
    this.detail = detail;
    if (state !== "running") {
      this.turn = undefined;
    }
    this.render();
  }

  /** Records the running turn's state (`ended` clears it). */
  setTurn(state: TurnState): void {
    this.turn = state === "ended" ? undefined : state;
    this.render();
  }

  dispose(): void {
    this.item.dispose();
  }

  private render(): void {
    const item = this.item;
    item.severity = this.server === "failed" ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
    item.busy = this.server === "starting" || this.turn !== undefined;
    item.detail = this.detail;
    item.text = `Toolwire: ${this.describe()}`;
  }

  private describe(): string {
    switch (this.server) {
      case "starting":
        return "starting";
      case "stopped":
        return "stopped";
      case "failed":
        return "not running";
      case "running":
        switch (this.turn) {
          case undefined:
            return "ready";
          case "started":
            return "starting turn";
          case "model_request":
            return "waiting for the model";
          case "running_tools":
            return "running tools";
          case "ended":
            return "ready";
        }
    }
  }
}
