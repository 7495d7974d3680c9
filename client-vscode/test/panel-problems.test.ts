/**
 * Issue 22, "The panel shows the new problems under an edit's card, clickable": an edit's
 * result carries `data.diagnostics` (protocol.md, "Problems after an edit"); the card lists
 * the new problems, each place a link that opens the file at its line and column (the
 * panel's openFile message), the count fixed, "not checked" for a file not open in the
 * editor, "may not be final". Problem messages and paths come from language servers and
 * the workspace: shown as text, never run as markup, the panel's CSP unchanged. The webview
 * bundle in headless Chromium, the real PanelHost on a real `toolwire serve`; the updates
 * are the server's wire form.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ToolCallWire } from "../src/protocol";
import { openedAtReaches, openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";

const TIMEOUT_MS = 90_000;

const site = usePanelSite();

/** A finished edit call whose result carries `diagnostics` (the wire's `tool_call` snapshot). */
function editCall(id: string, index: number, name: string, file: string, diagnostics: unknown): ToolCallWire {
  const args = { path: file };
  return {
    toolCallId: id, index, name, kind: "function", status: "done", rev: 5, argumentsText: JSON.stringify(args),
    partialArguments: args, arguments: args, path: file,
    result: { ok: true, content: `Edited ${file}.`, data: { path: file, diagnostics }, errorCode: null },
  };
}

function card(panel: Panel, id: string) {
  return panel.page.locator(`article.card[data-call="${id}"]`);
}

test("new problems under an edit's card: listed, clickable to their place, untrusted text as text", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await openWorkspacePanel(t, site, {
    name: "problems", gitInit: ["-q"], script: [{ text: "Hello." }], log: false,
  });
  const { page, host } = panel;
  // A turn makes the panel's session; the edits' updates below are that session's.
  const box = page.getByRole("textbox", { name: "Prompt" });
  await box.fill("Hi");
  await box.press("Enter");
  await page.locator(".turn-end").waitFor();
  const sessionId = host.sessionId as string;
  assert.ok(sessionId);

  const hostile = "Type '<img src=x onerror=window.__pwned=1>' is not assignable\u202e to type 'number'.";
  const updates: ToolCallWire[] = [
    editCall("e1", 0, "edit_file", "src/app.ts", {
      checked: true,
      new: [
        { path: "src/app.ts", line: 4, column: 7, severity: "error", source: "ts", code: 2322, message: hostile },
        { path: "src/app.ts", line: 9, column: 1, severity: "warning", source: null, code: null, message: "Unreachable code detected." },
        { path: "src/app.ts", line: 0, column: 1, severity: "error", source: null, code: null, message: "not a place: dropped" },
      ],
      resolved: 1,
      final: true,
    }),
    editCall("e2", 1, "create_file", "notes/new.json", { checked: false }),
    editCall("e3", 2, "multi_edit", "conf.json", { checked: true, new: [], resolved: 2, final: false }),
    editCall("e4", 3, "edit_file", "plain.txt", { checked: true, new: [], resolved: 0, final: true }),
  ];
  for (const toolCall of updates) {
    host.onUpdate({ sessionId, update: { sessionUpdate: "tool_call", toolCall } });
  }
  await card(panel, "e4").locator(".problems").waitFor();

  const first = card(panel, "e1").locator(".problems");
  assert.equal((await first.locator(".problems-head").innerText()).trim(), "2 new problems, 1 fixed");
  const rows = await first.locator(".problem").allInnerTexts();
  assert.deepEqual(rows.map((row) => row.trim()), [
    "src/app.ts:4:7 error (ts 2322): Type '<img src=x onerror=window.__pwned=1>' is not assignable\\u202e to type 'number'.",
    "src/app.ts:9:1 warning: Unreachable code detected.",
  ]);
  assert.equal((await card(panel, "e2").locator(".problems-head").innerText()).trim(), "Problems not checked: the file is not open in the editor");
  assert.equal(await card(panel, "e2").locator(".problem").count(), 0);
  assert.equal((await card(panel, "e3").locator(".problems-head").innerText()).trim(), "No new problems, 2 fixed (may not be final)");
  assert.equal((await card(panel, "e4").locator(".problems-head").innerText()).trim(), "No new problems");

  // A problem's place opens the file there (the panel's openFile message, with line and column).
  await first.getByRole("button", { name: "src/app.ts:9:1" }).click();
  await first.getByRole("button", { name: "src/app.ts:4:7" }).click();
  await openedAtReaches(panel.ui, 2);
  assert.deepEqual(panel.ui.openedAt, [
    { path: "src/app.ts", line: 9, column: 1 },
    { path: "src/app.ts", line: 4, column: 7 },
  ]);
  assert.deepEqual(
    panel.ui.fromPage.filter((m) => m.type === "openFile"),
    [
      { type: "openFile", path: "src/app.ts", line: 9, column: 1 },
      { type: "openFile", path: "src/app.ts", line: 4, column: 7 },
    ],
  );

  // Untrusted text stayed text.
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  assert.equal(await page.locator("article.card img, article.card [onerror]").count(), 0);
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations), []);
  assert.deepEqual(panel.ui.errors, []);
});
