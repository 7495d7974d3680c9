/**
 * Saving what the server edits in a clean buffer (protocol.md, "Which document an edit
 * goes to" → "Saving after an editor edit").
 *
 * The server edits a file that is open in the editor through `workspace/applyEdit`, so
 * the edit lands in the editor's buffer. VS Code leaves such a buffer unsaved, and git
 * (which reads the disk) would then miss the edit: a `git_commit` later in the same turn
 * recorded the older text. So, for each document of the edit:
 * - open and NOT dirty before the edit (the buffer equals the file on disk): the edit is
 *   applied, then the document is saved, before the answer goes back to the server;
 * - dirty before the edit (the user has unsaved text): the edit stays in the buffer with
 *   the user's text and nothing is saved behind the user's back (the server's git tools
 *   then name the file as having unsaved editor changes);
 * - not open: VS Code's own `applyEdit` behaviour (the server sends editor edits only
 *   for documents the editor opened).
 */
import * as vscode from "vscode";
import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, ResponseError } from "vscode-languageclient/node";

/** The language client's own handling of the request (`next` of its middleware). */
type Next = (params: ApplyWorkspaceEditParams) => PromiseLike<ApplyWorkspaceEditResult | ResponseError<void>> | ApplyWorkspaceEditResult | ResponseError<void>;

/** URIs (as strings) of the documents a workspace edit changes. */
export function editedUris(params: ApplyWorkspaceEditParams): string[] {
  const uris = new Set<string>();
  for (const change of params.edit.documentChanges ?? []) {
    if ("textDocument" in change) {
      uris.add(change.textDocument.uri);
    }
  }
  for (const uri of Object.keys(params.edit.changes ?? {})) {
    uris.add(uri);
  }
  return [...uris];
}

/**
 * The `workspace.handleApplyEdit` middleware: applies the edit (`next`), then saves the
 * documents that were open and clean before it. The server gets the answer only after
 * the saves, so a git tool it runs next reads the edited file from disk.
 *
 * A save that fails (read-only file, disk full) is logged and leaves the edit applied in
 * the buffer; the answer stays `applied: true` (the edit is in the editor, as asked).
 */
export async function applyEditSavingCleanBuffers(
  params: ApplyWorkspaceEditParams,
  next: Next,
  log: { warn(message: string): void },
): Promise<ApplyWorkspaceEditResult | ResponseError<void>> {
  const open = new Map(vscode.workspace.textDocuments.map((doc) => [doc.uri.toString(), doc]));
  const clean = editedUris(params)
    .map((uri) => open.get(vscode.Uri.parse(uri).toString()))
    .filter((doc): doc is vscode.TextDocument => doc !== undefined && !doc.isDirty && !doc.isUntitled);
  const result = await next(params);
  if (!("applied" in result) || !result.applied) {
    return result;
  }
  for (const doc of clean) {
    if (!doc.isDirty) {
      continue; // the edit changed nothing in it
    }
    try {
      if (!(await doc.save())) {
        log.warn(`Toolwire edited ${doc.uri.fsPath} in its editor, which could not save it; it stays unsaved.`);
      }
    } catch (error) {
      log.warn(`Toolwire edited ${doc.uri.fsPath} in its editor, which could not save it (${String(error)}); it stays unsaved.`);
    }
  }
  return result;
}
