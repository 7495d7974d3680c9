/**
 * Per-hunk review (issue 26): an edit's hunks accepted or rejected one by one in the card's
 * approval and in the diff editor's **Accept or Reject Hunks…** (PanelUi.pickHunks), the answer
 * reaching a real `toolwire serve` (replay model, request log): the file on disk holds the
 * accepted hunks only, and the model's tool result names the written and the rejected ones.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { test, type TestContext } from "node:test";
import type { PanelUi } from "../src/panel/host";
import { hunkChoices, hunkItem } from "../src/panel/hunks";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";

const TIMEOUT_MS = 90_000;
const site = usePanelSite();

const OLD = Array.from({ length: 30 }, (_, i) => `line ${i + 1}\n`).join("");
const OLD_STRING = Array.from({ length: 28 }, (_, i) => `line ${i + 2}\n`).join("");
// three hunks: line 2 changed, line 15 removed, a line added after line 29
const NEW_STRING = OLD_STRING.replace("line 2\n", "LINE 2\n").replace("line 15\n", "").replace("line 29\n", "line 29\nline 29b\n");

async function setup(t: TestContext, ui?: Partial<PanelUi>): Promise<{ panel: Panel; workspace: string; log: string }> {
  return openWorkspacePanel(t, site, {
    name: "hunks", gitInit: ["-q", "-b", "main"], files: { "big.txt": OLD }, ui,
    script: [{ tool_calls: [{ name: "edit_file", arguments: { path: "big.txt", old_string: OLD_STRING, new_string: NEW_STRING } }] }, { text: "Understood." }],
  });
}

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

async function toolResult(log: string): Promise<string> {
  const requests = (await readFile(log, "utf8")).trim().split("\n").map((line) => JSON.parse(line) as { messages: { role: string; content: string }[] });
  const tools = requests[requests.length - 1].messages.filter((m) => m.role === "tool");
  assert.equal(tools.length, 1);
  return tools[0].content;
}

test("the card accepts and rejects hunks one by one: only the accepted ones are written, the model is told", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace, log } = await setup(t);
  const { page } = panel;
  await ask(panel, "Edit big.txt.");
  const review = page.locator(".approval .hunk-review");
  await review.locator("summary").click();
  assert.deepEqual(await review.locator(".hunk .hunk-name").allTextContents(), ["Hunk 1", "Hunk 2", "Hunk 3"]);
  assert.match(await review.locator(".hunk").nth(1).locator("pre").innerText(), /line 15/);
  assert.equal(await review.locator(".apply-hunks").innerText(), "Apply all 3 hunks");
  await review.getByRole("button", { name: "Reject hunk 2 of 3" }).click();
  assert.equal(await review.getByRole("button", { name: "Reject hunk 2 of 3" }).getAttribute("aria-pressed"), "true");
  await review.getByRole("textbox", { name: /Reason for rejecting hunk 2 of 3/ }).fill("keep line 15");
  await review.getByRole("button", { name: "Apply 2 of 3 hunks" }).click();
  await page.getByText("Understood.").waitFor();
  assert.equal(await readFile(path.join(workspace, "big.txt"), "utf8"), OLD.replace("line 2\n", "LINE 2\n").replace("line 29\n", "line 29\nline 29b\n"));
  const text = await toolResult(log);
  assert.match(text, /accepted 2 of 3 hunks/);
  assert.match(text, /Rejected \(not written\): hunk 2 `@@ -12,7 \+12,6 @@` \(reason: keep line 15\)\./);
});

test("rejecting every hunk in the card is a rejection: nothing is written", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace, log } = await setup(t);
  const { page } = panel;
  await ask(panel, "Edit big.txt.");
  const review = page.locator(".approval .hunk-review");
  await review.locator("summary").click();
  for (const n of [1, 2, 3]) {
    await review.getByRole("button", { name: `Reject hunk ${n} of 3` }).click();
  }
  await review.getByRole("button", { name: "Reject all hunks" }).click();
  await page.getByText("Understood.").waitFor();
  assert.equal(await readFile(path.join(workspace, "big.txt"), "utf8"), OLD);
  assert.match(await toolResult(log), /rejected/);
});

test("the diff editor's Accept or Reject Hunks… answers with the hunks picked", { timeout: TIMEOUT_MS }, async (t) => {
  const shown: string[] = [];
  const { panel, workspace, log } = await setup(t, {
    pickHunks: async (hunks, file) => {
      shown.push(file, ...hunks.map((h) => hunkItem(h).label));
      return hunkChoices(hunks, new Set([1]), "only the removal");
    },
  });
  const { page } = panel;
  await ask(panel, "Edit big.txt.");
  const card = page.locator("article.card[data-call]", { has: page.locator(".approval") });
  await card.waitFor();
  const toolCallId = await card.getAttribute("data-call");
  assert.ok(toolCallId);
  assert.equal(await panel.host.reviewHunks(toolCallId), "answered");
  assert.deepEqual(shown, ["big.txt", "Hunk 1", "Hunk 2", "Hunk 3"]);
  await page.getByText("Understood.").waitFor();
  assert.equal(await readFile(path.join(workspace, "big.txt"), "utf8"), OLD.replace("line 15\n", ""));
  const text = await toolResult(log);
  assert.match(text, /accepted 1 of 3 hunks/);
  assert.match(text, /hunk 1 `@@ -1,5 \+1,5 @@` \(reason: only the removal\)/);
  assert.equal(await panel.host.reviewHunks(toolCallId), "none", "answered already");
});
