/**
 * Follow-along (issue 25): while an edit's approval waits, the editor shows that edit's file
 * (not the file of a call streamed after it), in a pinned tab; a done edit's changed lines are
 * highlighted (also for an edit allowed without asking: from its result's diff); after an undo
 * the call's card says what happened to its file, and the highlight is replaced by a note.
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { test, type TestContext } from "node:test";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";

const TIMEOUT_MS = 90_000;
const site = usePanelSite();

async function setup(t: TestContext, lines: unknown[], settings: Record<string, unknown> = {}): Promise<{ panel: Panel; workspace: string }> {
  return openWorkspacePanel(t, site, {
    name: "follow", gitInit: ["-q"], files: { "a.txt": "a\n", "b.txt": "b\n" }, script: lines, settings, log: false,
  });
}

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

const card = (panel: Panel, file: string) =>
  panel.page.locator("article.card", { has: panel.page.locator("button.path", { hasText: new RegExp(`^${file.replace(/\./g, "\\.")}$`) }) });

test("the file whose approval waits is in view, pinned, though a later call targets another file", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, [
    {
      tool_calls: [
        { name: "edit_file", arguments: { path: "a.txt", old_string: "a", new_string: "A" } },
        { name: "edit_file", arguments: { path: "b.txt", old_string: "b", new_string: "B" } },
      ],
    },
    { text: "Both edited." },
  ]);
  const { page, ui } = panel;
  await ask(panel, "Edit a and b.");
  await card(panel, "a.txt").getByRole("region", { name: "Approval for edit_file" }).waitFor();
  const last = () => ui.openings[ui.openings.length - 1];
  assert.deepEqual(last(), { path: "a.txt", highlight: [], pinned: true }, JSON.stringify(ui.openings));
  assert.ok(ui.openings.every((o) => o.pinned), "follow-along pins every tab it opens");
  await card(panel, "a.txt").getByRole("button", { name: "Allow once" }).click();
  await card(panel, "b.txt").getByRole("region", { name: "Approval for edit_file" }).waitFor();
  await card(panel, "a.txt").locator(".badge", { hasText: "Done" }).waitFor();
  assert.equal(last()?.path, "b.txt", `b.txt is shown for its approval: ${JSON.stringify(ui.openings)}`);
  await card(panel, "b.txt").getByRole("button", { name: "Allow once" }).click();
  await page.locator(".turn-end").waitFor();
  assert.ok(ui.openings.some((o) => o.path === "a.txt" && o.highlight.length > 0), "a.txt's edit was highlighted once nothing waited");
  assert.equal(await readFile(path.join(workspace, "b.txt"), "utf8"), "B\n");
  assert.deepEqual(ui.errors, []);
});

test("after an undo the card says the file is back and the highlight is replaced by a note", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, [
    { tool_calls: [{ name: "edit_file", arguments: { path: "a.txt", old_string: "a", new_string: "A" } }] },
    { text: "Edited." },
  ], { permissions: { edit_file: "auto" } });
  const { page, ui } = panel;
  await ask(panel, "Edit a.");
  await page.getByRole("button", { name: "Undo this turn" }).waitFor();
  // The done update came before the turn's end: its lines (from the result's diff: nothing was asked) are highlighted.
  assert.ok(ui.openings.some((o) => o.path === "a.txt" && o.highlight.length > 0 && o.pinned), JSON.stringify(ui.openings));
  await page.getByRole("button", { name: "Undo this turn" }).click();
  const undone = card(panel, "a.txt").locator(".undone");
  await undone.waitFor();
  assert.equal((await undone.innerText()).trim(), "Undone: the file is back to its state before the turn");
  assert.match((await card(panel, "a.txt").getAttribute("aria-label")) ?? "", /Undone: the file is back/);
  assert.deepEqual(ui.undone.map((u) => u.path), ["a.txt"]);
  assert.match(ui.undone[0].message, /^Undone by Toolwire \(turn t1\)/);
  assert.equal(await readFile(path.join(workspace, "a.txt"), "utf8"), "a\n");
  // After a reload (rebuilt from the snapshot, whose turns say only that the turn was undone).
  await panel.reload();
  await card(panel, "a.txt").locator(".undone").waitFor();
  assert.equal((await card(panel, "a.txt").locator(".undone").innerText()).trim(), "Undone with its turn");
  assert.deepEqual(ui.errors, []);
});

