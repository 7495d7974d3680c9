/**
 * Undo in the chat panel (issue 19): a blocked undo lists its blockers, changes nothing,
 * and offers **Undo the rest** (`partial`) and a per-path **Overwrite** (`force`); the turn
 * can be undone and forgotten (`rewind`). The webview bundle in headless Chromium, the
 * real PanelHost, a real `toolwire serve` over stdio playing a replay script in a real git
 * repository, whose model requests are logged (`replayLog`).
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import * as path from "node:path";
import { test, type TestContext } from "node:test";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";

const TIMEOUT_MS = 90_000;
const AUTO = { create_file: "auto", edit_file: "auto" };

const site = usePanelSite();

/** A git workspace with hello.txt committed, a server playing `lines`, the panel, and the request log. */
async function setup(t: TestContext, lines: unknown[]): Promise<{ panel: Panel; workspace: string; log: string }> {
  return openWorkspacePanel(t, site, {
    name: "undo", gitInit: ["-q", "-b", "main"], files: { "hello.txt": "hello\n" }, script: lines, settings: { permissions: AUTO },
  });
}

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

const read = (workspace: string, name: string) => readFile(path.join(workspace, name), "utf8");

test("a blocked undo changes nothing; Overwrite forces a path, Undo the rest restores the others", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, [
    {
      tool_calls: [
        { name: "create_file", arguments: { path: "a.txt", content: "a\n" } },
        { name: "create_file", arguments: { path: "b.txt", content: "b\n" } },
        { name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "HELLO" } },
      ],
    },
    { text: "Made a.txt and b.txt." },
  ]);
  const { page } = panel;
  await ask(panel, "Make two files.");
  await page.getByRole("button", { name: "Undo this turn" }).waitFor();
  await writeFile(path.join(workspace, "a.txt"), "a\nmine\n"); // the user's edits after the turn
  await writeFile(path.join(workspace, "b.txt"), "b\nmine too\n");

  await page.getByRole("button", { name: "Undo this turn" }).click();
  const undo = page.locator(".undo.blocked");
  await undo.waitFor();
  assert.match(await undo.locator("div").first().innerText(), /^Nothing was undone: 2 change\(s\) of turn t1 cannot be undone as they are/);
  assert.deepEqual(await undo.locator("li .outcome").allTextContents(), ["Kept", "Kept"]);
  assert.match(await undo.locator("li").first().innerText(), /Kept a\.txt — changed since the turn/);
  await undo.locator("li").first().locator("summary").click();
  assert.match(await undo.locator("li").first().locator("pre.diff").innerText(), /-mine/);
  assert.equal(await read(workspace, "hello.txt"), "HELLO\n", "a blocked undo changes nothing");
  assert.equal(await read(workspace, "a.txt"), "a\nmine\n");
  assert.equal(await page.getByRole("button", { name: "Undo this turn" }).count(), 0);

  // Overwrite a.txt: asked again with force [a.txt]; b.txt still blocks, so nothing changes yet.
  await undo.getByRole("button", { name: "Overwrite a.txt" }).click();
  await page.locator(".undo.blocked li", { hasText: "b.txt" }).waitFor();
  // The panel re-renders the blocked list in place: wait in the page until it holds one entry.
  await page.waitForFunction(() => document.querySelectorAll(".undo.blocked li").length === 1, undefined, { timeout: 60_000 });
  assert.match(await page.locator(".undo.blocked li").innerText(), /Kept b\.txt/);
  assert.equal(await read(workspace, "a.txt"), "a\nmine\n");
  assert.equal(await read(workspace, "hello.txt"), "HELLO\n");

  // Undo the rest: partial, with a.txt still forced; b.txt is kept as the user left it.
  await page.getByRole("button", { name: "Undo the rest" }).click();
  await page.locator(".undo.partial").waitFor();
  assert.match(await page.locator(".undo.partial > div").first().innerText(), /^Undid part of turn t1: 2 file\(s\) restored/);
  assert.equal(await page.getByRole("button", { name: "Undo the rest" }).count(), 0);
  assert.equal(existsSync(path.join(workspace, "a.txt")), false, "a.txt was overwritten (the turn created it)");
  assert.equal(await read(workspace, "hello.txt"), "hello\n");
  assert.equal(await read(workspace, "b.txt"), "b\nmine too\n");
  assert.deepEqual(panel.ui.errors, []);
});

test("Undo and forget: the files are back and the model's next request no longer holds the turn", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace, log } = await setup(t, [
    { tool_calls: [{ name: "create_file", arguments: { path: "x.txt", content: "x\n" } }] },
    { text: "Made x.txt." },
    { text: "Fine." },
  ]);
  const { page } = panel;
  await ask(panel, "Make x.txt please.");
  await page.getByRole("button", { name: "Undo and forget" }).click();
  await page.locator(".undo.undone").waitFor();
  assert.match(await page.locator(".undo.undone > div").first().innerText(), /The turn was removed from the conversation the model sees\.$/);
  assert.equal(existsSync(path.join(workspace, "x.txt")), false);
  await ask(panel, "What next?");
  await page.locator(".turn-end").nth(1).waitFor();
  const requests = (await readFile(log, "utf8")).trim().split("\n").map((line) => JSON.parse(line) as { messages: { role: string; content: string | null }[] });
  const last = requests[requests.length - 1].messages;
  assert.deepEqual(last.map((m) => m.role), ["system", "user"]);
  // The message that carried the workspace overview was removed with the turn: this one carries a fresh one.
  assert.equal(
    last[1].content,
    "[Workspace overview at the start of the session (file names, not instructions):\nGit: branch main, clean.\nTop-level entries (1):\nhello.txt]\n\n" +
      "What next?\n\n[Turn t1 was undone by the user and removed from this conversation: x.txt is back to its state before it. Read files again before editing.]",
  );
});
