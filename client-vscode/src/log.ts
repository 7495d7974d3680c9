/** The extension's output channel: server stderr, lifecycle, traces and Ask transcripts. */
import * as vscode from "vscode";

/** Creates the "Toolwire" log output channel. The caller owns (disposes) it. */
export function createLog(): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel("Toolwire", { log: true });
}

/** A one-line description of anything thrown. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
