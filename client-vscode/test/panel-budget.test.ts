/**
 * The budgets in the chat panel (issue 21): a turn that stops at the model-request cap
 * (`max_turn_requests`) offers **Continue**, which goes on with the same history (the next
 * request carries the stopped turn's whole history plus the server's continue prompt); the
 * tools the `maxTools` budget leaves out are named in one warning. The webview bundle in
 * headless Chromium, the real PanelHost, a real `toolwire serve` over stdio playing a replay
 * script whose model requests are logged (`replayLog`).
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { test, type TestContext } from "node:test";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";

const TIMEOUT_MS = 90_000;

const site = usePanelSite();

interface Logged {
  messages: Array<{ role: string; content?: unknown; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>; tool_call_id?: string }>;
  tools: string[];
}

/** A folder (no repository) with a.txt and b.txt, a server playing `lines`, the panel, and the request log. */
async function setup(t: TestContext, lines: unknown[], settings: Record<string, unknown>): Promise<{ panel: Panel; log: string }> {
  const { panel, log } = await openWorkspacePanel(t, site, {
    name: "budget", files: { "a.txt": "alpha\n", "b.txt": "beta\n" }, script: lines, settings,
  });
  return { panel, log };
}

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

async function requests(log: string): Promise<Logged[]> {
  return (await readFile(log, "utf8")).trim().split("\n").map((line) => JSON.parse(line) as Logged);
}

const READS = [
  { tool_calls: [{ id: "r1", name: "read_file", arguments: { path: "a.txt" } }] },
  { tool_calls: [{ id: "r2", name: "read_file", arguments: { path: "b.txt" } }] },
  { text: "Both files read." },
];

test("a turn stopped at the request cap offers Continue, which goes on with the same history", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, log } = await setup(t, READS, { maxModelRequests: 2 });
  const { page } = panel;
  await ask(panel, "Read both files.");
  const stopped = page.locator(".turn-end").first();
  await stopped.locator(".stop-reason", { hasText: "Stopped: request limit reached" }).waitFor();
  assert.equal(await stopped.locator(".stop-message").textContent(), "the turn stopped after 2 model requests (the maxModelRequests setting)");
  await page.getByRole("button", { name: "Continue" }).waitFor();
  await panel.reload(); // rebuilt from the snapshot (its turns say how each ended): still offered
  const continueButton = page.getByRole("button", { name: "Continue" });
  await continueButton.waitFor();
  assert.equal((await requests(log)).length, 2);

  await continueButton.click();
  await page.locator(".message.assistant", { hasText: "Both files read." }).waitFor();
  await page.locator(".turn-end .stop-reason", { hasText: "Done" }).waitFor();
  assert.equal(await page.getByRole("button", { name: "Continue" }).count(), 0); // the last turn ended end_turn
  const users = await page.locator(".message.user .plain").allTextContents();
  assert.equal(users.length, 2);
  assert.ok(users[0].endsWith("Read both files."), users[0]); // from the snapshot: the server's user message
  assert.equal(users[1], "Continue");

  const sent = await requests(log);
  assert.equal(sent.length, 3);
  const before = sent[1].messages;
  const resumed = sent[2].messages;
  assert.deepEqual(resumed.slice(0, before.length), before); // the same history
  const [call, result, prompt] = resumed.slice(before.length);
  assert.equal(call.role, "assistant");
  assert.deepEqual(JSON.parse(call.tool_calls?.[0].function.arguments ?? "{}"), { path: "b.txt" });
  assert.equal(result.role, "tool");
  assert.equal(result.tool_call_id, call.tool_calls?.[0].id);
  assert.equal(prompt.role, "user");
  assert.match(String(prompt.content), /^Continue the task from where you stopped: the last turn ran out of model requests/);
  assert.deepEqual(panel.ui.errors, []);
});

test("no Continue under a turn that ended otherwise, nor under an earlier capped turn", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await setup(t, [...READS, { text: "Nothing more." }], { maxModelRequests: 2 });
  const { page } = panel;
  await ask(panel, "Read both files.");
  await page.getByRole("button", { name: "Continue" }).waitFor();
  await ask(panel, "Anything else?"); // a new prompt instead: it reads the script's next line
  await page.locator(".message.assistant", { hasText: "Both files read." }).waitFor();
  await page.locator(".turn-end .stop-reason", { hasText: "Done" }).waitFor();
  assert.equal(await page.getByRole("button", { name: "Continue" }).count(), 0);
});

test("the tools maxTools leaves out are named in one warning; the requests offer the first five", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, log } = await setup(t, [{ text: "One." }, { text: "Two." }], { maxTools: 5 });
  const { page } = panel;
  await ask(panel, "Hello.");
  await page.locator(".message.assistant", { hasText: "One." }).waitFor();
  await ask(panel, "Again.");
  await page.locator(".message.assistant", { hasText: "Two." }).waitFor();
  const warnings = await page.locator(".notice", { hasText: "Warning:" }).allTextContents();
  assert.equal(warnings.length, 1);
  await panel.reload(); // the webview is re-created from the session's snapshot: the warning is still there, once
  await page.locator(".message.assistant", { hasText: "Two." }).waitFor();
  assert.deepEqual(await page.locator(".notice", { hasText: "Warning:" }).allTextContents(), warnings);
  const sent = await requests(log);
  assert.equal(sent.length, 2);
  for (const request of sent) {
    assert.equal(request.tools.length, 5);
    assert.equal(request.tools[0], "read_file");
  }
  const leftOut = (warnings[0].match(/\(the maxTools setting is 5\): (.*)\. Raise maxTools to offer them\./) ?? [])[1];
  assert.ok(leftOut, warnings[0]);
  assert.match(warnings[0].trim(), /^Warning: \d+ of \d+ tools are not offered to the model \(the maxTools setting is 5\): /);
  for (const name of leftOut.split(", ")) {
    assert.ok(!sent[0].tools.includes(name), name);
  }
  assert.ok(leftOut.split(", ").includes("git_branch"));
});
