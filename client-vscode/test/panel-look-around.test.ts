/**
 * Issue 21, "Done when", in the chat panel: the look-around turn (tests/data/look_around,
 * described in tests/look_around.py) in headless Chromium, the real PanelHost and a real
 * `toolwire serve` over stdio. An open document's unsaved text is what the search finds;
 * the ignored build/ appears only with `ignored: true`; `.env` is named as not searched and
 * its read is asked about naming it (rejected here); the edit is approved in its card and
 * lands on the disk; the rules bar names AGENTS.md and, once read, sub/AGENTS.md. File names
 * and matched lines are untrusted text: shown as text, never run as markup.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";
import { PACKAGE_ROOT } from "./panel/server";

const TIMEOUT_MS = 120_000;
const DATA = path.resolve(PACKAGE_ROOT, "../tests/data/look_around");
const SCRIPT = path.join(DATA, "script.jsonl");
const WORKSPACE = JSON.parse(readFileSync(path.join(DATA, "workspace.json"), "utf8")) as {
  committed: Record<string, string>;
  untracked: Record<string, string>;
  unsaved: Record<string, string>;
  edited: Record<string, string>;
  model_reads: Record<string, string>;
};
const READS = WORKSPACE.model_reads;
const SEARCH = "call_4XzlGBLtUe9dy3GVNV4jhq7h"; // the recorded stream's call id
const FINAL_TEXT = "Done: shout() now ends with an exclamation mark. The TODO in src/greet.py is still open.";

const site = usePanelSite();

function card(panel: Panel, name: string, nth: number) {
  return panel.page.locator("article.card", { has: panel.page.locator(".tool-name", { hasText: new RegExp(`^${name}$`) }) }).nth(nth);
}

/** The card's whole result as the page shows it (expanding it first). */
async function resultText(panel: Panel, name: string, nth: number): Promise<string> {
  const result = card(panel, name, nth).locator(".result");
  await result.locator("summary").click();
  return result.locator("pre").innerText();
}

test("the look-around turn: list, search (unsaved buffer, ignored folder, excluded .env), read, edit", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server, workspace, log } = await openWorkspacePanel(t, site, {
    name: "look", gitInit: ["-q", "-b", "main"], files: WORKSPACE.committed, untracked: WORKSPACE.untracked, script: SCRIPT,
  });
  const { page } = panel;
  page.setDefaultTimeout(60_000); // each wait is for the server's next step: generous on a loaded machine
  // The editor has src/greet.py open with text the disk does not have.
  await server.connection.sendNotification("textDocument/didOpen", {
    textDocument: { uri: pathToFileURL(path.join(workspace, "src", "greet.py")).href, languageId: "python", version: 3, text: WORKSPACE.unsaved["src/greet.py"] },
  });
  await page.evaluate(() => ((window as unknown as { __pwned?: number }).__pwned = undefined));

  const box = page.getByRole("textbox", { name: "Prompt" });
  await box.fill("Look around, then make shout() end with an exclamation mark.");
  await box.press("Enter");

  // read_file .env: asked about although read_file runs unasked, naming the file; rejected
  const secret = card(panel, "read_file", 0);
  const asked = secret.getByRole("region", { name: "Approval for read_file" });
  await asked.waitFor();
  assert.equal((await asked.innerText()).trim().split("\n")[0], "Kept from the model (modelExclude): .env (pattern '.env'). Allowing shows it to the model for this call only.");
  assert.equal(await asked.getByRole("button", { name: /Allow always/ }).count(), 0, "an excluded file is allowed per call only");
  await secret.getByRole("button", { name: "Reject…" }).click();
  await secret.getByRole("button", { name: "Reject", exact: true }).click();

  const edit = card(panel, "edit_file", 0);
  await edit.getByRole("region", { name: "Approval for edit_file" }).waitFor();
  assert.match(await edit.locator("pre.diff").innerText(), /\+    return text\.upper\(\) \+ "!"/);
  await edit.getByRole("button", { name: "Allow once" }).click();
  await page.locator(".turn-end").waitFor();

  assert.equal(await page.locator(".turn-end .stop-reason").innerText(), "Done");
  assert.deepEqual(await page.locator("article.card .badge").allTextContents(), ["Done", "Done", "Done", "Done", "Cancelled", "Done", "Done"]);
  assert.deepEqual(await page.locator("article.card .tool-name").allTextContents(), [
    "list_files", "list_files", "search_files", "search_files", "read_file", "read_file", "edit_file",
  ]);
  assert.match(await secret.locator(".reason").innerText(), /Rejected/);
  assert.equal(await resultText(panel, "list_files", 0), READS.list);
  assert.equal(await resultText(panel, "list_files", 1), READS.glob);
  assert.equal(await resultText(panel, "search_files", 0), READS[SEARCH]); // the unsaved line; no build/
  assert.equal(await resultText(panel, "search_files", 1), READS.ignored); // build/ with ignored: true
  assert.equal(await resultText(panel, "read_file", 1), READS.read);
  assert.equal(await readFile(path.join(workspace, "sub", "util.py"), "utf8"), WORKSPACE.edited["sub/util.py"]);
  assert.equal(await page.locator(".markdown").last().innerText(), FINAL_TEXT);
  assert.equal(server.permissions.length, 2);
  // the rules the model was given: the root AGENTS.md, and sub/AGENTS.md once the read in sub/ carried it
  const rules = await page.getByRole("group", { name: "Project rules given to the model" }).getByRole("button").allTextContents();
  const size = (rel: string) => `${Buffer.byteLength(WORKSPACE.committed[rel])} B`;
  assert.deepEqual(rules.map((text) => text.replace(/\s+/g, " ").trim()), [`AGENTS.md (${size("AGENTS.md")})`, `sub/AGENTS.md (${size("sub/AGENTS.md")})`]);

  // untrusted text: the file name and the matched lines are text, never markup
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  assert.equal(await page.locator("img, [onerror], .result b").count(), 0);
  assert.match(await card(panel, "list_files", 0).locator(".result pre").innerText(), /<img src=x onerror=window\.__pwned=2>\.md/);
  assert.deepEqual(panel.ui.errors, []);
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations), []);
  const requests = (await readFile(log, "utf8")).trim().split("\n");
  assert.equal(requests.length, 8);
  assert.ok(!requests.some((line) => line.includes("sk-look-around-0000")), "the secret never reached the model");
});
