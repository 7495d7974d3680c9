/**
 * The project rules files in the chat panel (issue 21, "Project rules"): the panel lists the
 * files the model is given, from `toolwire/session/new`'s `instructions`, then every
 * `session_info` update (a nested AGENTS.md read by a call, the root file changed between
 * turns), and again from the snapshot after a reload. The webview bundle in headless
 * Chromium, the real PanelHost, a real `toolwire serve` over stdio playing a replay script
 * in a real git repository, with its real watcher; the replay model logs its requests.
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { test, type TestContext } from "node:test";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";

const TIMEOUT_MS = 90_000;

const site = usePanelSite();

/** A git workspace holding `files`, a server playing `lines`, the panel, and the request log. */
async function setup(t: TestContext, files: Record<string, string>, lines: unknown[], settings: Record<string, unknown> = {}) {
  return openWorkspacePanel(t, site, { name: "rules", gitInit: ["-q"], files, script: lines, settings });
}

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

function rulesBar(panel: Panel) {
  return panel.page.getByRole("group", { name: "Project rules given to the model" });
}

async function shownFiles(panel: Panel): Promise<string[]> {
  return (await rulesBar(panel).getByRole("button").allTextContents()).map((text) => text.replace(/\s+/g, " ").trim());
}

test("the panel lists the rules files: the root one, a nested one once read, the sizes as the wire says", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace, log } = await setup(t, {
    "AGENTS.md": "r".repeat(1228) + "\n", // 1229 bytes
    "sub/AGENTS.md": "sub rules\n",
    "sub/a.txt": "a\n",
  }, [
    { tool_calls: [{ name: "read_file", arguments: { path: "sub/a.txt" } }] },
    { text: "Read it." },
    { text: "Second turn." },
  ]);
  const { page } = panel;
  assert.equal(await rulesBar(panel).count(), 0, "nothing before a session");
  await ask(panel, "Read sub/a.txt.");
  await page.locator(".turn-end").waitFor();
  assert.deepEqual(await shownFiles(panel), ["AGENTS.md (1.2 KB)", "sub/AGENTS.md (10 B)"]);

  await rulesBar(panel).getByRole("button", { name: /^AGENTS\.md/ }).click();
  assert.deepEqual(panel.ui.opened, ["AGENTS.md"], "a file's button opens it");

  // A change between turns: the watcher's report updates the list before the next turn.
  await writeFile(path.join(workspace, "AGENTS.md"), "r".repeat(3000) + "\n");
  await rulesBar(panel).getByRole("button", { name: "AGENTS.md (2.9 KB)" }).waitFor({ timeout: 30_000 });
  await ask(panel, "Again.");
  await page.locator(".turn-end").nth(1).waitFor();
  const requests = (await readFile(log, "utf8")).trim().split("\n").map((line) => JSON.parse(line));
  assert.equal(requests.length, 3);
  assert.ok(requests[2].messages[0].content.endsWith("\n" + "r".repeat(3000)), "the next turn's prompt has the new text");

  // A reloaded panel shows the same list, from the snapshot.
  await panel.reload();
  await page.locator(".turn-end").nth(1).waitFor();
  assert.deepEqual(await shownFiles(panel), ["AGENTS.md (2.9 KB)", "sub/AGENTS.md (10 B)"]);
});

test("a file cut to fit says so; with projectInstructions false the panel lists nothing", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await setup(t, { "CLAUDE.md": "c".repeat(40_000) }, [{ text: "ok" }]);
  await ask(panel, "Hi.");
  await panel.page.locator(".turn-end").waitFor();
  assert.deepEqual(await shownFiles(panel), ["CLAUDE.md (39.1 KB, cut to fit 32 KB)"]);

  const off = await setup(t, { "AGENTS.md": "rules\n" }, [{ text: "ok" }], { projectInstructions: false });
  await ask(off.panel, "Hi.");
  await off.panel.page.locator(".turn-end").waitFor();
  assert.equal(await rulesBar(off.panel).count(), 0);
});
