/**
 * Issue 26 in the panel, end to end: the webview bundle in headless Chromium, the real PanelHost,
 * a real `toolwire serve` over stdio. Past conversations listed, reopened, exported as Markdown
 * and deleted; New Conversation keeps the old one; the header's model picker against a local
 * endpoint's `GET /models` (through the server's openai SDK); the first run (welcome, offline demo,
 * its end) and the no-key path with its Set API Key button, also in a reopened conversation.
 */
import assert from "node:assert/strict";
import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test, type TestContext } from "node:test";
import type { Browser } from "playwright-core";
import { launchChromium, openPanel, servePanel, type Panel, uiReaches } from "./panel/harness";
import { git, startServer } from "./panel/server";

const TIMEOUT_MS = 90_000;

let browser: Browser;
let site: { url: string; close(): Promise<void> };
let state: string;

before(async () => {
  state = await mkdtemp(path.join(os.tmpdir(), "toolwire-panel-state-"));
  process.env.TOOLWIRE_STATE_DIR = state; // saved sessions stay out of the user's
  browser = await launchChromium();
  site = await servePanel();
});

after(async () => {
  await browser?.close();
  await site?.close();
  await rm(state, { recursive: true, force: true });
});

async function setup(t: TestContext, options: Record<string, unknown>, lines?: unknown[]): Promise<{ panel: Panel; workspace: string }> {
  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), "toolwire-panel-ws-")));
  git(workspace, "init", "-q");
  await writeFile(path.join(workspace, "hello.txt"), "hello\n");
  git(workspace, "add", "hello.txt");
  git(workspace, "commit", "-q", "-m", "hello");
  let model = String(options.model ?? "replay");
  if (lines !== undefined) {
    const script = path.join(workspace, ".git", "script.jsonl");
    await writeFile(script, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
    model = `replay:${script}`;
  }
  const server = await startServer(workspace, { ...options, model });
  const panel = await openPanel(browser, site.url, server, { model, cwd: workspace });
  t.after(async () => {
    await panel.page.close();
    await server.stop();
    await rm(workspace, { recursive: true, force: true });
  });
  return { panel, workspace };
}

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}


test("past conversations: New Conversation keeps the old one; reopen, export as Markdown, delete", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, {}, [{ text: "The answer is **42**." }, { text: "Second answer." }]);
  const { page } = panel;
  await ask(panel, "What is the answer?");
  await page.locator(".turn-end").waitFor();
  await page.getByRole("button", { name: "New Conversation" }).click();

  const history = page.getByRole("region", { name: "Past conversations" });
  const open = history.getByRole("button", { name: "What is the answer?", exact: true });
  await open.waitFor();
  assert.match(await history.innerText(), /1 turn/);
  await open.click();
  await page.locator(".message.user", { hasText: "What is the answer?" }).waitFor();
  assert.equal(await page.locator(".markdown strong").innerText(), "42");

  await page.getByRole("button", { name: "Export as Markdown" }).click();
  await uiReaches(panel.ui, () => (panel.ui.exported ?? []).length === 1);
  const exported = panel.ui.exported![0];
  assert.match(exported, /^# What is the answer\?\n/, "the export is titled as the history lists it");
  assert.match(exported, /## You\n\nWhat is the answer\?\n\n## Toolwire\n\nThe answer is \*\*42\*\*\./);

  await ask(panel, "And again?"); // the reopened conversation goes on
  await page.locator(".message.user", { hasText: "And again?" }).waitFor();
  await page.locator(".transcript > .turn-end:last-child").waitFor(); // the reopened conversation's second turn ended
  await page.getByRole("button", { name: "New Conversation" }).click();
  await history.getByRole("button", { name: "What is the answer?", exact: true }).waitFor();
  assert.match(await history.innerText(), /2 turns/);
  await history.getByRole("button", { name: "Delete: What is the answer?" }).click();
  // asked first, in place: the focus on Keep, and Keep (or Escape) deletes nothing
  const keep = history.getByRole("button", { name: "Keep", exact: true });
  await page.waitForFunction(() => document.activeElement?.textContent?.trim() === "Keep");
  await keep.click();
  await history.getByRole("button", { name: "Delete: What is the answer?" }).click();
  await keep.waitFor();
  await page.keyboard.press("Escape");
  await history.getByRole("button", { name: "Delete: What is the answer?" }).click();
  await history.getByRole("button", { name: "Delete What is the answer? for good" }).click();
  await history.waitFor({ state: "detached" });
  const { rpc } = await (panel.host as unknown as { server: { connection(): Promise<{ rpc: { sendRequest<R>(m: string, p: unknown): Promise<R> } }> } }).server.connection();
  const listed = await rpc.sendRequest<{ sessions: unknown[] }>("toolwire/session/list", { cwd: workspace });
  assert.deepEqual(listed.sessions, [], "deleted on the server too");
  assert.deepEqual(panel.ui.errors, []);
});

test("the model picker lists the endpoint's GET /models and switches like Select Model", { timeout: TIMEOUT_MS }, async (t) => {
  const gets: string[] = [];
  const endpoint: HttpServer = createServer((request, response) => {
    gets.push(`${request.method} ${request.url}`);
    response.setHeader("Content-Type", "application/json");
    response.end(JSON.stringify({ object: "list", data: [{ id: "model-two", object: "model" }, { id: "model-one", object: "model" }] }));
  });
  await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => endpoint.close(() => resolve())));
  const baseUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/v1`;
  const { panel } = await setup(t, { model: "openai:model-one", baseUrl });
  const { page } = panel;
  const picker = page.getByRole("combobox", { name: "Model" });
  assert.equal(await picker.inputValue(), "openai:model-one", "the model setting, before the endpoint is asked");
  assert.equal(gets.length, 0, "nothing asked of the endpoint before the picker is opened");
  await picker.focus();
  await page.locator("select.model-picker option", { hasText: "model-two" }).waitFor({ state: "attached" });
  assert.deepEqual(await page.locator("select.model-picker option").allInnerTexts(), ["model-one", "model-two", "Offline demo"]);
  assert.equal(await picker.inputValue(), "openai:model-one");
  assert.ok(gets.includes("GET /v1/models"), gets.join(", "));
  await picker.selectOption("openai:model-two");
  await uiReaches(panel.ui, () => (panel.ui.modelsSet ?? []).length === 1);
  assert.deepEqual(panel.ui.modelsSet, ["openai:model-two"]);
  await page.waitForFunction(() => (document.querySelector("select.model-picker") as HTMLSelectElement).value === "openai:model-two");
});

test("the model picker switches the open conversation (its next turn at the endpoint) and the model of new ones", { timeout: TIMEOUT_MS }, async (t) => {
  const posted: string[] = []; // the model of each chat request
  let thirdPosted!: () => void;
  const third = new Promise<void>((resolve) => (thirdPosted = resolve));
  let hold: (() => void) | undefined; // set: the next chat answer waits for it to be called
  const answer = (response: import("node:http").ServerResponse) => {
    const chunk = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 0, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    response.setHeader("Content-Type", "text/event-stream");
    response.end(chunk({ role: "assistant", content: "ok" }, null) + chunk({}, "stop") + "data: [DONE]\n\n");
  };
  const endpoint: HttpServer = createServer((request, response) => {
    if (request.method === "GET") {
      response.setHeader("Content-Type", "application/json");
      response.end(JSON.stringify({ object: "list", data: [{ id: "model-two", object: "model" }, { id: "model-one", object: "model" }] }));
      return;
    }
    let body = "";
    request.on("data", (piece: Buffer) => (body += piece.toString()));
    request.on("end", () => {
      posted.push(String(JSON.parse(body).model));
      if (posted.length === 3) thirdPosted();
      const wait = held;
      held = undefined;
      if (wait === undefined) {
        answer(response);
      } else {
        hold = () => {
          hold = undefined;
          answer(response);
        };
      }
    });
  });
  let held: true | undefined;
  await new Promise<void>((resolve) => endpoint.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    hold?.();
    return new Promise<void>((resolve) => endpoint.close(() => resolve()));
  });
  const baseUrl = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/v1`;
  const { panel } = await setup(t, { model: "openai:model-one", baseUrl });
  const { page } = panel;
  const picker = page.getByRole("combobox", { name: "Model" });
  const ends = page.locator(".transcript .turn-end");
  await ask(panel, "First on model one");
  await ends.first().waitFor();
  const sessionId = panel.host.sessionId;
  assert.deepEqual(posted, ["model-one"]);

  await picker.focus();
  await page.locator("select.model-picker option", { hasText: "model-two" }).waitFor({ state: "attached" });
  await picker.selectOption("openai:model-two");
  await uiReaches(panel.ui, () => (panel.ui.modelsSet ?? []).length === 1);
  assert.deepEqual(panel.ui.modelsSet, ["openai:model-two"]);
  await page.waitForFunction(() => (document.querySelector("select.model-picker") as HTMLSelectElement).value === "openai:model-two");
  assert.equal(await page.locator(".notice").count(), 0, "no 'keeps its model' notice");
  const { rpc } = await (panel.host as unknown as { server: { connection(): Promise<{ rpc: { sendRequest<R>(m: string, p: unknown): Promise<R> } }> } }).server.connection();
  const listed = await rpc.sendRequest<{ active: string }>("toolwire/models/list", { sessionId });
  assert.equal(listed.active, "openai:model-two", "the open conversation's model on the server");

  await ask(panel, "Second on model two");
  await ends.nth(1).waitFor();
  assert.deepEqual(posted, ["model-one", "model-two"], "the same conversation's next turn goes to model two");
  assert.equal(panel.host.sessionId, sessionId, "the same conversation");
  assert.equal(await page.locator(".message.user").count(), 2);

  // while a turn runs the model does not change: the picker says so and shows the model in use
  held = true;
  await ask(panel, "Third, held");
  await third;
  await picker.selectOption("openai:model-one");
  await uiReaches(panel.ui, () => panel.ui.errors.length === 1);
  assert.match(panel.ui.errors[0], /turn is running/);
  await page.waitForFunction(() => (document.querySelector("select.model-picker") as HTMLSelectElement).value === "openai:model-two");
  assert.deepEqual(panel.ui.modelsSet, ["openai:model-two"], "the setting unchanged too");
  hold!();
  await ends.nth(2).waitFor();
  assert.deepEqual(posted, ["model-one", "model-two", "model-two"]);

  // reopened from the saved session after New Conversation: still model two
  await page.getByRole("button", { name: "New Conversation" }).click();
  await page.getByRole("region", { name: "Past conversations" }).getByRole("button", { name: "First on model one", exact: true }).click();
  await page.locator(".message.user", { hasText: "Third, held" }).waitFor();
  assert.equal(await picker.inputValue(), "openai:model-two");
  assert.equal(panel.ui.errors.length, 1, panel.ui.errors.join("; "));
});

test("first run: the welcome, the offline demo and its end; no API key shows Set API Key", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await setup(t, { model: "openai:gpt-4o-mini" });
  const { page } = panel;
  const welcome = page.getByRole("region", { name: "Welcome" });
  await welcome.waitFor();
  assert.match(await welcome.innerText(), /Toolwire is a coding assistant/);
  for (const name of ["Select model", "Set API Key", "Try the offline demo"]) {
    await welcome.getByRole("button", { name }).waitFor();
  }

  await ask(panel, "hello"); // openai: with no key for OpenAI's endpoint
  const advice = page.locator(".turn-advice.no_api_key");
  await advice.waitFor();
  // said once, in the panel's words, not as a failure; the server's message (the endpoint) under Details
  const end = page.locator(".turn-end");
  assert.equal(await end.locator(".stop-reason").innerText(), "Needs an API key");
  assert.equal(await page.locator(".turn-end.failed").count(), 0, "not a red failure");
  assert.equal(await end.locator(".stop-message").count(), 0, "the server's message is not on the end line");
  assert.equal((await end.innerText()).match(/needs an API key/gi)?.length, 1, await end.innerText());
  await end.locator(".turn-detail summary").click();
  assert.match(await end.locator(".turn-detail .detail-text").innerText(), /no API key is set for the model endpoint https:\/\/api\.openai\.com/);
  await advice.getByRole("button", { name: "Set API Key" }).click();
  await uiReaches(panel.ui, () => panel.ui.apiKeyAsked === 1);

  await page.getByRole("button", { name: "New Conversation" }).click();
  await welcome.getByRole("button", { name: "Try the offline demo" }).click();
  await page.locator(".message.assistant", { hasText: "offline demo" }).waitFor();
  assert.match(await page.locator(".toolbar .model").innerText(), /Offline demo|replay/);
  await ask(panel, "and now?");
  const done = page.locator(".turn-advice.demo_finished");
  await done.waitFor();
  assert.doesNotMatch(await page.locator(".transcript").innerText(), /no more responses/);
  await done.getByRole("button", { name: "Set API Key" }).waitFor();
  await done.getByRole("button", { name: "Select model" }).waitFor();
  // the demo's answer says it is over; the advice adds only its buttons, and the turn is Done
  assert.equal(await done.innerText().then((text) => /offline demo/i.test(text)), false, await done.innerText());
  assert.equal((await page.locator(".transcript").innerText()).match(/That is all of Toolwire's offline demo/g)?.length, 1);
  assert.equal(await page.locator(".turn-end").last().locator(".stop-reason").innerText(), "Done");
  assert.deepEqual(panel.ui.errors, []);
});

test("a reopened no-key conversation still says Needs an API key, with Set API Key and Select model", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await setup(t, { model: "openai:gpt-4o-mini" });
  const { page } = panel;
  await ask(panel, "hello without a key");
  await page.locator(".turn-advice.no_api_key").waitFor();
  await page.getByRole("button", { name: "New Conversation" }).click();
  await page.getByRole("region", { name: "Past conversations" })
    .getByRole("button", { name: "hello without a key", exact: true }).click();
  await page.locator(".message.user", { hasText: "hello without a key" }).waitFor();
  // from the snapshot's turns (their errorCode), as live: not "Failed" with the server's message
  const advice = page.locator(".turn-advice.no_api_key");
  await advice.waitFor();
  const end = page.locator(".turn-end");
  assert.equal(await end.locator(".stop-reason").innerText(), "Needs an API key");
  assert.equal(await page.locator(".turn-end.failed").count(), 0, "not a red failure");
  await advice.getByRole("button", { name: "Select model" }).waitFor();
  await advice.getByRole("button", { name: "Set API Key" }).click();
  await uiReaches(panel.ui, () => panel.ui.apiKeyAsked === 1);
  assert.deepEqual(panel.ui.errors, []);
});

test("while a conversation is open, Past conversations under the header reopens another", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await setup(t, {}, [{ text: "First answer." }]);
  const { page } = panel;
  await ask(panel, "The first conversation");
  await page.locator(".turn-end").waitFor();
  await page.getByRole("button", { name: "New Conversation" }).click();
  await page.getByRole("button", { name: "The first conversation", exact: true }).waitFor();
  await ask(panel, "The second conversation");
  await page.locator(".turn-end").waitFor();
  await page.locator(".history-menu summary").click();
  const menu = page.locator(".history-menu");
  await menu.getByRole("button", { name: "The first conversation", exact: true }).click();
  await page.locator(".message.user", { hasText: "The first conversation" }).waitFor();
  assert.equal(await page.locator(".message.user", { hasText: "The second conversation" }).count(), 0);
  if (!(await menu.evaluate((details) => (details as HTMLDetailsElement).open))) {
    await page.locator(".history-menu summary").click();
  }
  await menu.getByRole("button", { name: "The second conversation", exact: true }).waitFor(); // kept, not lost
  assert.deepEqual(panel.ui.errors, []);
});
