/**
 * Keyboard and words around approvals (issue 25): a new approval takes the focus (its Allow
 * once), Alt+A / Alt+R answer it in the panel, the Allow Once / Reject commands (the host's
 * answerWaiting) answer the one waiting longest, the header says "waiting for your approval",
 * the end line says "Done" / "Stopped", and there is one New Conversation button. The
 * contributed keybindings and menus are checked in package.json.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { test, type TestContext } from "node:test";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";
import { PACKAGE_ROOT } from "./panel/server";

const TIMEOUT_MS = 90_000;
const site = usePanelSite();

async function setup(t: TestContext, lines: unknown[]): Promise<{ panel: Panel; workspace: string }> {
  return openWorkspacePanel(t, site, { name: "keys", gitInit: ["-q"], files: { "hello.txt": "hello\n", "b.txt": "b\n" }, script: lines, log: false });
}

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

const focusedText = (panel: Panel) => panel.page.evaluate(() => (document.activeElement as HTMLElement | null)?.innerText.trim() ?? "");

test("a new approval takes the focus; Alt+R rejects it, Alt+A allows the next; the header says so", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, [
    { tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "bye" } }] },
    { tool_calls: [{ name: "edit_file", arguments: { path: "b.txt", old_string: "b", new_string: "B" } }] },
    { text: "Edited." },
  ]);
  const { page } = panel;
  assert.equal(await page.getByRole("button", { name: /New Conversation/i }).count(), 1, "one New Conversation button");
  await ask(panel, "Edit both.");
  const first = page.getByRole("region", { name: "Approval for edit_file" });
  await first.waitFor();
  await page.waitForFunction(() => document.activeElement?.closest(".approval") !== null);
  assert.equal(await focusedText(panel), "Allow once", "the focus is on the approval's first button");
  assert.equal(await page.locator(".toolbar .turn-state").innerText(), "waiting for your approval");
  await page.keyboard.press("Alt+KeyR");
  // The second edit's approval: the focus moves to it too.
  await page.locator("article.card", { hasText: "b.txt" }).getByRole("region", { name: "Approval for edit_file" }).waitFor();
  await page.waitForFunction(() => document.activeElement?.closest("article.card")?.textContent?.includes("b.txt") === true);
  await page.keyboard.press("Alt+KeyA");
  await page.locator(".turn-end").waitFor();
  assert.equal(await page.locator(".turn-end .stop-reason").innerText(), "Done");
  assert.deepEqual(await page.locator("article.card .badge").allTextContents(), ["Cancelled", "Done"]);
  assert.notEqual(await page.locator(".toolbar .turn-state").innerText(), "waiting for your approval");
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hello\n", "the rejected edit wrote nothing");
  assert.equal(await readFile(path.join(workspace, "b.txt"), "utf8"), "B\n");
  assert.deepEqual(panel.ui.errors, []);
});

test("text being typed keeps the focus when an approval comes; the Allow Once command answers it", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, [
    { tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "hi" } }] },
    { text: "Edited." },
  ]);
  const { page } = panel;
  await ask(panel, "Edit it.");
  const box = page.getByRole("textbox", { name: "Prompt" });
  await box.fill("next question");
  await page.getByRole("region", { name: "Approval for edit_file" }).waitFor();
  // Rendered and past the frame the focus would move in: the prompt box keeps it.
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-label")), "Prompt");
  assert.equal(panel.host.answerWaiting("allow_once", "no-such-call"), false);
  assert.equal(panel.host.answerWaiting("allow_once"), true); // toolwire.allowOnce
  await page.locator(".turn-end").waitFor();
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hi\n");
  assert.equal(panel.host.answerWaiting("reject_once"), false, "nothing waits any more");
  assert.equal(await box.inputValue(), "next question");
});

test("package.json: allow once / reject keybindings while an approval waits, the diff editor's Accept / Reject, Cancel Turn only while a turn runs", () => {
  const manifest = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")) as {
    contributes: { commands: { command: string }[]; keybindings: { command: string; key: string; when?: string }[]; menus: Record<string, { command: string; when?: string }[]> };
  };
  const { commands, keybindings, menus } = manifest.contributes;
  for (const id of ["toolwire.allowOnce", "toolwire.reject", "toolwire.acceptChange", "toolwire.rejectChange"]) {
    assert.ok(commands.some((c) => c.command === id), id);
  }
  const binding = (id: string) => keybindings.find((k) => k.command === id);
  assert.equal(binding("toolwire.allowOnce")?.when, "toolwire.approvalWaiting");
  assert.equal(binding("toolwire.reject")?.when, "toolwire.approvalWaiting");
  const title = menus["editor/title"];
  assert.deepEqual(title.map((m) => m.command), ["toolwire.acceptChange", "toolwire.rejectChange", "toolwire.reviewHunks"]);
  for (const item of title) {
    assert.match(item.when ?? "", /resourceScheme == toolwire-preview/);
  }
  const view = menus["view/title"];
  assert.deepEqual(view.filter((m) => m.command === "toolwire.newConversation"), [], "the panel has the one New Conversation button");
  assert.match(view.find((m) => m.command === "toolwire.cancelTurn")?.when ?? "", /toolwire\.turnRunning/);
  // The README documents the shortcuts.
  const readme = readFileSync(path.join(PACKAGE_ROOT, "..", "README.md"), "utf8");
  for (const words of ["Ctrl+Alt+Y", "Ctrl+Alt+N", "Alt+A", "Alt+R"]) {
    assert.ok(readme.includes(words), `README names ${words}`);
  }
});
