/**
 * The chat view in VS Code: a `WebviewViewProvider` for `toolwire.chat` (in its
 * own activity-bar container) and the `PanelUi` the host logic talks to.
 */
import * as path from "node:path";
import * as vscode from "vscode";
import { displayText } from "../display";
import type { HunkAnswer, SubjectHunk } from "../protocol";
import { hunkChoices, hunkItem } from "./hunks";
import { readSettings } from "../settings";
import { excludedQuestion, PROBLEMS_MIME, type OpenOptions, type PanelHost, type PanelUi, type PreviewResult, type ResourceBlock } from "./host";
import { makeNonce, panelHtml } from "./html";
import { selectionLabel, type ContextChip, type WebviewMessage } from "./messages";

/** The view's id (package.json `contributes.views`). */
export const CHAT_VIEW = "toolwire.chat";

/** URI scheme of the read-only texts shown in the diff editor. */
const PREVIEW_SCHEME = "toolwire-preview";

/** Hosts the webview: HTML with CSP and nonce, messages both ways. */
export class ChatViewProvider implements vscode.WebviewViewProvider {
  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly host: PanelHost,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    const root = vscode.Uri.joinPath(this.extensionUri, "dist", "webview");
    view.webview.options = { enableScripts: true, enableCommandUris: false, localResourceRoots: [root] };
    const asset = (...parts: string[]) => view.webview.asWebviewUri(vscode.Uri.joinPath(root, ...parts)).toString();
    // Without retainContextWhenHidden the page is rebuilt each time it is shown; it
    // then asks the host for a reset, which comes from a fresh snapshot.
    const detach = this.host.attach({
      post: (message) => void view.webview.postMessage(message),
      get visible() {
        return view.visible;
      },
    });
    const subscription = view.webview.onDidReceiveMessage((message: WebviewMessage) => void this.host.receive(message));
    view.onDidDispose(() => {
      detach();
      subscription.dispose();
    });
    view.webview.html = panelHtml(
      { cspSource: view.webview.cspSource, script: asset("panel.js"), style: asset("panel-style.css"), codicons: asset("codicons", "codicon.css") },
      makeNonce(),
    );
  }
}

/** The diff editors of **Review in diff editor**, for their title bar's Accept / Reject. */
export interface ReviewEditors {
  /** The call whose change the diff editor of `uri` (either side) shows. */
  callOf(uri: vscode.Uri): string | undefined;
  /** Closes the diff editors of call `toolCallId`. */
  close(toolCallId: string): Promise<void>;
}

/** The editor side of the panel, with `vscode`. */
export class VsCodePanelUi implements PanelUi, ReviewEditors, vscode.Disposable {
  private readonly previews = new Map<string, string>();
  /** The call of each preview text (its URI), for the diff editor's Accept / Reject. */
  private readonly reviewed = new Map<string, string>();
  private readonly highlight = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
    isWholeLine: true,
  });
  /** After an undo: a note at the top of the file instead of the highlight. */
  private readonly undoneMark = vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    after: { color: new vscode.ThemeColor("editorCodeLens.foreground"), fontStyle: "italic" },
  });
  private readonly disposables: vscode.Disposable[] = [this.highlight, this.undoneMark];
  private nextPreview = 0;

  constructor(
    private readonly onStatus: (state: { running: boolean; waiting: number; turnState: string | null }) => void,
    private readonly log: vscode.LogOutputChannel,
  ) {
    const previews = this.previews;
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, {
        provideTextDocumentContent: (uri) => previews.get(uri.toString()) ?? "",
      }),
    );
  }

  settings(): ReturnType<PanelUi["settings"]> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    const settings = readSettings(vscode.workspace.getConfiguration("toolwire", folder), (m) => this.log.warn(m));
    return {
      model: settings.model === "replay" ? undefined : settings.model,
      approval: settings.approval,
      followAlong: settings.followAlong,
      cwd: folder?.uri.scheme === "file" ? folder.uri.fsPath : undefined,
    };
  }

  async notifyPermission(message: string): Promise<"open" | "allow_once" | "reject" | undefined> {
    const choice = await vscode.window.showInformationMessage(
      message,
      "Open Panel",
      "Allow Once",
      "Reject",
    );
    return choice === "Open Panel" ? "open" : choice === "Allow Once" ? "allow_once" : choice === "Reject" ? "reject" : undefined;
  }

  callOf(uri: vscode.Uri): string | undefined {
    return uri.scheme === PREVIEW_SCHEME ? this.reviewed.get(uri.toString()) : undefined;
  }

  closeReview(toolCallId: string): void {
    void this.close(toolCallId).catch(() => undefined);
  }

  async close(toolCallId: string): Promise<void> {
    const tabs = vscode.window.tabGroups.all.flatMap((group) => group.tabs).filter((tab) =>
      tab.input instanceof vscode.TabInputTextDiff && this.reviewed.get(tab.input.modified.toString()) === toolCallId);
    await vscode.window.tabGroups.close(tabs);
  }

  async pickHunks(hunks: readonly SubjectHunk[], path: string): Promise<HunkAnswer[] | undefined> {
    const items = hunks.map((hunk) => ({ ...hunkItem(hunk), picked: true, index: hunk.index }));
    const chosen = await vscode.window.showQuickPick(items, {
      canPickMany: true,
      title: `Toolwire: the hunks of ${path} to apply`,
      placeHolder: "Checked hunks are applied; unchecked ones are rejected (the model is told which)",
      ignoreFocusOut: true,
    });
    if (chosen === undefined) {
      return undefined;
    }
    const accepted = new Set(chosen.map((item) => item.index));
    let reason: string | undefined;
    if (accepted.size < hunks.length) {
      const names = hunks.filter((h) => !accepted.has(h.index)).map((h) => h.index + 1).join(", ");
      reason = await vscode.window.showInputBox({
        title: `Toolwire: why reject hunk${hunks.length - accepted.size === 1 ? "" : "s"} ${names}?`,
        prompt: "Optional; sent to the model with each rejected hunk",
        ignoreFocusOut: true,
      });
      if (reason === undefined) {
        return undefined; // dismissed: nothing answered
      }
    }
    return hunkChoices(hunks, accepted, reason);
  }

  async showDiff(preview: PreviewResult, title: string, toolCallId: string): Promise<void> {
    const id = ++this.nextPreview;
    const name = path.posix.basename(preview.path);
    const left = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${id}/before/${name}` });
    const right = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${id}/after/${path.posix.basename(preview.newPath ?? preview.path)}` });
    this.previews.set(left.toString(), preview.before);
    this.previews.set(right.toString(), preview.after);
    this.reviewed.set(left.toString(), toolCallId);
    this.reviewed.set(right.toString(), toolCallId);
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }

  undone(relative: string, message: string): void {
    const uri = this.workspaceUri(relative);
    if (uri === undefined) {
      return;
    }
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.toString() === uri.toString()) {
        editor.setDecorations(this.highlight, []);
        editor.setDecorations(this.undoneMark, [{ range: new vscode.Range(0, 0, 0, 0), renderOptions: { after: { contentText: `  ${displayText(message)}` } } }]);
      }
    }
  }

  editorContext(): ReturnType<NonNullable<PanelUi["editorContext"]>> {
    const open: ContextChip[] = [];
    const seen = new Set<string>();
    for (const tab of vscode.window.tabGroups.all.flatMap((group) => group.tabs)) {
      const relative = tab.input instanceof vscode.TabInputText ? workspaceRelative(tab.input.uri) : undefined;
      if (relative !== undefined && !seen.has(relative)) {
        seen.add(relative);
        open.push({ kind: "file", path: relative, label: relative, source: "open" });
      }
    }
    const editor = vscode.window.activeTextEditor;
    const relative = editor === undefined ? undefined : workspaceRelative(editor.document.uri);
    if (editor === undefined || relative === undefined) {
      return { open };
    }
    const problems = vscode.languages.getDiagnostics(editor.document.uri).length;
    return {
      selection: editor.selection.isEmpty ? undefined : selectionChip(relative, editor.selection),
      problems: problems === 0 ? undefined : { kind: "problems", path: relative, label: `Problems in ${relative} (${problems})`, source: "problems" },
      open,
    };
  }

  async confirmExcluded(path: string, pattern: string): Promise<boolean> {
    const choice = await vscode.window.showWarningMessage(excludedQuestion(path, pattern), { modal: true }, "Send");
    return choice === "Send"; // Cancel (the modal's own button) or Escape: not attached
  }

  async resource(chip: ContextChip): Promise<ResourceBlock | undefined> {
    const uri = this.workspaceUri(chip.path);
    if (uri === undefined) {
      return undefined;
    }
    if (chip.kind === "problems") {
      const text = problemLines(vscode.languages.getDiagnostics(uri)).join("\n");
      return { type: "resource", resource: { uri: uri.toString(), text, mimeType: PROBLEMS_MIME } };
    }
    // the editor's buffer, saved or not; the file when it is not open
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString()) ??
      (await Promise.resolve(vscode.workspace.openTextDocument(uri)).catch(() => undefined));
    if (document === undefined) {
      return undefined;
    }
    if (chip.kind === "selection" && chip.range !== undefined) {
      const { start, end } = chip.range;
      const text = document.getText(new vscode.Range(start.line, start.character, end.line, end.character));
      return { type: "resource", resource: { uri: uri.toString(), text }, range: chip.range };
    }
    return { type: "resource", resource: { uri: uri.toString(), text: document.getText() } };
  }

  /** The URI of a workspace-relative path, never outside the workspace. */
  private workspaceUri(relative: string): vscode.Uri | undefined {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (folder === undefined) {
      return undefined;
    }
    const uri = vscode.Uri.joinPath(folder.uri, relative);
    return uri.path.startsWith(folder.uri.path) ? uri : undefined;
  }

  openFile(relative: string, lines?: readonly [number, number][], at?: { line: number; column: number }, options?: OpenOptions): void {
    const uri = this.workspaceUri(relative);
    if (uri === undefined) {
      return;
    }
    // Follow-along pins its tab: the preview tab would be replaced by the next file opened.
    void vscode.window.showTextDocument(uri, { preview: options?.pinned !== true, preserveFocus: true }).then(
      (editor) => {
        if (at !== undefined) {
          // A problem's place: the cursor there (the column counts characters; VS Code's, UTF-16 units).
          const line = editor.document.validatePosition(new vscode.Position(at.line - 1, 0)).line;
          const position = editor.document.validatePosition(new vscode.Position(line, utf16Column(editor.document.lineAt(line).text, at.column)));
          editor.selection = new vscode.Selection(position, position);
          editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
        }
        if (lines === undefined || lines.length === 0) {
          return;
        }
        const ranges = lines.map(([first, last]) => new vscode.Range(first - 1, 0, last - 1, 0));
        editor.setDecorations(this.undoneMark, []);
        editor.setDecorations(this.highlight, ranges);
        editor.revealRange(ranges[0], vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      },
      () => undefined, // e.g. a file that does not exist yet
    );
  }

  openLink(href: string): void {
    void vscode.env.openExternal(vscode.Uri.parse(href, true));
  }

  copy(text: string): void {
    void vscode.env.clipboard.writeText(text);
  }

  error(message: string): void {
    this.log.error(message);
    void vscode.window.showErrorMessage(displayText(`Toolwire: ${message}`));
  }

  status(state: { running: boolean; waiting: number; turnState: string | null }): void {
    this.onStatus(state);
  }

  reveal(): void {
    void vscode.commands.executeCommand(`${CHAT_VIEW}.focus`);
  }

  async setModel(spec: string): Promise<void> {
    await vscode.workspace.getConfiguration("toolwire").update("model", spec, vscode.ConfigurationTarget.Global);
  }

  async setApiKey(): Promise<void> {
    await vscode.commands.executeCommand("toolwire.setApiKey");
  }

  async showMarkdown(text: string): Promise<void> {
    const document = await vscode.workspace.openTextDocument({ language: "markdown", content: text });
    await vscode.window.showTextDocument(document, { preview: false });
  }

  dispose(): void {
    for (const disposable of this.disposables) {
      disposable.dispose();
    }
  }
}

/** The UTF-16 offset of the 1-based `column` (in code points) of `text`. */
function utf16Column(text: string, column: number): number {
  let units = 0;
  let points = 1;
  for (const char of text) {
    if (points >= column) {
      break;
    }
    units += char.length;
    points++;
  }
  return units;
}

/** A file of the workspace's first folder, workspace-relative (undefined for anything else). */
export function workspaceRelative(uri: vscode.Uri): string | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (folder === undefined || uri.scheme !== folder.uri.scheme || !uri.path.startsWith(folder.uri.path.replace(/\/?$/, "/"))) {
    return undefined;
  }
  return vscode.workspace.asRelativePath(uri, false);
}

/** A selection of a workspace file as a chip (`src/a.py:3-7`). */
export function selectionChip(relative: string, selection: vscode.Range): ContextChip {
  const range = { start: { line: selection.start.line, character: selection.start.character }, end: { line: selection.end.line, character: selection.end.character } };
  return { kind: "selection", path: relative, range, label: selectionLabel(relative, range), source: "selection" };
}

/** The editor's problems of a file, one a line: `line 3: error: message (source code)`. */
export function problemLines(diagnostics: readonly vscode.Diagnostic[]): string[] {
  const severity = ["error", "warning", "information", "hint"];
  return diagnostics.map((d) => {
    const code = d.code === undefined ? "" : ` ${typeof d.code === "object" ? d.code.value : d.code}`;
    const source = d.source ? ` (${d.source}${code})` : "";
    return `line ${d.range.start.line + 1}: ${severity[d.severity] ?? "problem"}: ${d.message}${source}`;
  });
}

