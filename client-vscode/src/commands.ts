/**
 * The command-palette commands (category "Toolwire"). Prompts go to the chat
 * panel's conversation; the API key lives in SecretStorage only.
 */
import * as vscode from "vscode";
import { displayText } from "./display";
import { errorText } from "./log";
import type { PanelHost } from "./panel/host";
import type { ContextChip } from "./panel/messages";
import { CHAT_VIEW, selectionChip, workspaceRelative, type ReviewEditors } from "./panel/view";
import type { ServerController } from "./server";

/** SecretStorage key of the API key. */
export const API_KEY_SECRET = "toolwire.apiKey";

/** Models offered by Select Model besides what the user types. */
const SUGGESTED_MODELS = ["replay", "openai:gpt-4o-mini", "openai:gpt-4.1", "openai:o4-mini"];

/** Registers every command; returns their disposables. */
export function registerCommands(
  context: vscode.ExtensionContext,
  host: PanelHost,
  server: ServerController,
  log: vscode.LogOutputChannel,
  reviews: ReviewEditors,
): vscode.Disposable[] {
  const openChat = () => vscode.commands.executeCommand(`${CHAT_VIEW}.focus`);
  const send = async (text: string) => {
    await openChat();
    try {
      await host.prompt(text);
    } catch (error) {
      log.error(`The prompt failed: ${errorText(error)}`);
    }
  };
  const answer = (kind: "allow_once" | "reject_once") => {
    if (!host.answerWaiting(kind)) {
      void vscode.window.showInformationMessage("Toolwire: no approval is waiting.");
    }
  };
  const answerReview = (kind: "allow_once" | "reject_once", uri: vscode.Uri | undefined) => {
    const shown = uri ?? vscode.window.activeTextEditor?.document.uri;
    const toolCallId = shown === undefined ? undefined : reviews.callOf(shown);
    if (toolCallId === undefined || !host.answerWaiting(kind, toolCallId)) {
      void vscode.window.showInformationMessage("Toolwire: this change is no longer waiting for your approval.");
    }
    // Answered: the host closes the call's diff views (PanelUi.closeReview).
  };
  const run = (id: string, body: () => unknown) =>
    vscode.commands.registerCommand(id, async () => {
      try {
        await body();
      } catch (error) {
        log.error(`${id}: ${errorText(error)}`);
        void vscode.window.showErrorMessage(`Toolwire: ${errorText(error)}`);
      }
    });
  return [
    run("toolwire.openChat", openChat),
    run("toolwire.newConversation", async () => {
      await openChat();
      await host.newConversation();
    }),
    run("toolwire.ask", async () => {
      const text = await vscode.window.showInputBox({ title: "Toolwire: Ask", prompt: "What should Toolwire do?", ignoreFocusOut: true });
      if (text?.trim()) {
        void send(text);
      }
    }),
    run("toolwire.askAboutSelection", async () => {
      const editor = vscode.window.activeTextEditor;
      if (editor === undefined || editor.selection.isEmpty) {
        void vscode.window.showWarningMessage("Toolwire: select some code first.");
        return;
      }
      const chip = selectionOf(editor);
      if (chip === undefined) {
        void vscode.window.showWarningMessage("Toolwire: select code of a file in the workspace first.");
        return;
      }
      const question = await vscode.window.showInputBox({ title: "Toolwire: Ask About Selection", prompt: `Your question about ${chip.label}`, ignoreFocusOut: true });
      if (!question?.trim()) {
        return;
      }
      // the selection goes as a chip (an embedded resource with its range), never pasted into the text
      await openChat();
      const chips = await host.confirmChips([chip]);
      if (chips === undefined) {
        void vscode.window.showInformationMessage("Toolwire: not sent; the file is kept from the model.");
        return;
      }
      host.prompt(question, chips).catch((error: unknown) => log.error(`The prompt failed: ${errorText(error)}`));
    }),
    run("toolwire.attachSelection", async () => {
      const editor = vscode.window.activeTextEditor;
      const chip = editor === undefined || editor.selection.isEmpty ? undefined : selectionOf(editor);
      if (chip === undefined) {
        void vscode.window.showWarningMessage("Toolwire: select code of a file in the workspace first.");
        return;
      }
      await openChat();
      if (!(await host.attachChip(chip))) {
        void vscode.window.showInformationMessage("Toolwire: not attached; the file is kept from the model.");
      }
    }),
    run("toolwire.fixDiagnostics", async () => {
      const editor = vscode.window.activeTextEditor;
      if (editor === undefined) {
        void vscode.window.showWarningMessage("Toolwire: open a file first.");
        return;
      }
      const diagnostics = vscode.languages.getDiagnostics(editor.document.uri);
      if (diagnostics.length === 0) {
        void vscode.window.showInformationMessage("Toolwire: this file has no problems to fix.");
        return;
      }
      const relative = workspaceRelative(editor.document.uri);
      if (relative === undefined) {
        void vscode.window.showWarningMessage("Toolwire: open a file of the workspace first.");
        return;
      }
      // the problems go as a chip (an embedded resource), as the @ picker's problems do
      await openChat();
      const chip: ContextChip = { kind: "problems", path: relative, label: `Problems in ${relative} (${diagnostics.length})`, source: "problems" };
      const chips = await host.confirmChips([chip]);
      if (chips === undefined) {
        void vscode.window.showInformationMessage("Toolwire: not sent; the file is kept from the model.");
        return;
      }
      host.prompt(`Fix the problems in ${relative}.`, chips).catch((error: unknown) => log.error(`The prompt failed: ${errorText(error)}`));
    }),
    run("toolwire.cancelTurn", () => host.stop()),
    // Allow once / reject the approval waiting longest (keybindings while one waits: package.json).
    run("toolwire.allowOnce", () => answer("allow_once")),
    run("toolwire.reject", () => answer("reject_once")),
    // The diff editor's title bar (Review in diff editor): the approval of the change it shows.
    vscode.commands.registerCommand("toolwire.acceptChange", (uri?: vscode.Uri) => answerReview("allow_once", uri)),
    vscode.commands.registerCommand("toolwire.rejectChange", (uri?: vscode.Uri) => answerReview("reject_once", uri)),
    vscode.commands.registerCommand("toolwire.reviewHunks", async (uri?: vscode.Uri) => {
      const shown = uri ?? vscode.window.activeTextEditor?.document.uri;
      const toolCallId = shown === undefined ? undefined : reviews.callOf(shown);
      const outcome = toolCallId === undefined ? "none" : await host.reviewHunks(toolCallId);
      if (outcome === "none") {
        void vscode.window.showInformationMessage("Toolwire: this change is no longer waiting for your approval.");
      }
    }),
    run("toolwire.undoLastTurn", async () => {
      const outcome = await host.undoTurn(null);
      const kept = outcome.paths.filter((p) => p.outcome !== "restored");
      const detail = kept.length > 0 ? ` Not restored: ${kept.map((p) => `${p.path} (${p.reason ?? p.outcome})`).join(", ")}.` : "";
      if (outcome.status !== "blocked") {
        void vscode.window.showInformationMessage(displayText(`Toolwire: ${outcome.message}${detail}`));
        return;
      }
      // Nothing was changed: offer the rest (the panel also offers Overwrite per path).
      const choice = await vscode.window.showWarningMessage(displayText(`Toolwire: ${outcome.message}`), "Undo the rest");
      if (choice === "Undo the rest") {
        const rest = await host.undoTurn(outcome.turnId, { partial: true });
        void vscode.window.showInformationMessage(displayText(`Toolwire: ${rest.message}`));
      }
    }),
    run("toolwire.setApiKey", async () => {
      const key = await vscode.window.showInputBox({
        title: "Toolwire: Set API Key",
        prompt: "Kept in VS Code's secret storage; sent only to the Toolwire server, never logged.",
        password: true,
        ignoreFocusOut: true,
      });
      if (key === undefined || key.trim() === "") {
        return;
      }
      await context.secrets.store(API_KEY_SECRET, key.trim());
      await server.pushSettings();
      void vscode.window.showInformationMessage("Toolwire: API key saved; it applies to the next turn.");
    }),
    run("toolwire.clearApiKey", async () => {
      await context.secrets.delete(API_KEY_SECRET);
      await server.pushSettings();
      void vscode.window.showInformationMessage("Toolwire: API key removed.");
    }),
    run("toolwire.selectModel", async () => {
      // the server's list (the endpoint's GET /models, else the configured ones, and the offline demo) first;
      // current: the open conversation's model, else the model setting
      const models = await host.models().catch(() => undefined);
      const current = models?.active ?? vscode.workspace.getConfiguration("toolwire").get<string>("model") ?? "replay";
      const listed = models?.models ?? [];
      const names = new Map(listed.map((m) => [m.spec, m.spec === "replay" ? m.name : m.source]));
      const specs = [...new Set([current, ...listed.map((m) => m.spec), ...(listed.length > 0 ? [] : SUGGESTED_MODELS)])];
      const picks = specs.map((label) => ({
        label,
        description: [label === current ? "current" : undefined, names.get(label)].filter(Boolean).map((d) => displayText(String(d))).join(" · ") || undefined,
      }));
      const quick = vscode.window.createQuickPick();
      quick.title = "Toolwire: Select Model (or type provider:model)";
      quick.items = picks;
      quick.onDidChangeValue((value) => {
        quick.items = value && !picks.some((p) => p.label === value) ? [{ label: value, description: "typed" }, ...picks] : picks;
      });
      const chosen = await new Promise<string | undefined>((resolve) => {
        quick.onDidAccept(() => resolve(quick.selectedItems[0]?.label));
        quick.onDidHide(() => resolve(undefined));
        quick.show();
      });
      quick.dispose();
      if (chosen !== undefined && chosen !== current) {
        await host.selectModel(chosen); // as the panel's picker: the open conversation and new ones
      }
    }),
    run("toolwire.restart", () => server.restart("restart command")),
    run("toolwire.showLog", () => log.show()),
  ];
}

/** The editor's selection as a chip, when it is in a workspace file. */
function selectionOf(editor: vscode.TextEditor): ContextChip | undefined {
  const relative = workspaceRelative(editor.document.uri);
  return relative === undefined ? undefined : selectionChip(relative, editor.selection);
}
