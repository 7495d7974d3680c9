/**
 * The chat panel end to end: the webview bundle in headless Chromium, the extension's
 * real host-side panel logic (PanelHost), a real `toolwire serve` over stdio playing
 * replay scripts in a real git repository. Screenshots go to test-artifacts/ (gitignored).
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, open, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { pathToFileURL } from "node:url";
import type { Browser } from "playwright-core";
import { launchChromium, openPanel, servePanel, type Panel } from "./panel/harness";
import { git, PACKAGE_ROOT, startServer, type Server } from "./panel/server";

const TIMEOUT_MS = 90_000;
const ARTIFACTS = path.join(PACKAGE_ROOT, "test-artifacts");
/** A recorded Anthropic stream with a provider-executed call (copied corpus file, source in its SOURCES.md). */
const PROVIDER_STREAM = path.resolve(PACKAGE_ROOT, "../tests/data/corpus/anthropic__server-tool-then-client-tool-interleaved-text.sse");

let browser: Browser;
let site: { url: string; close(): Promise<void> };

before(async () => {
  browser = await launchChromium();
  site = await servePanel();
  await mkdir(ARTIFACTS, { recursive: true });
});

after(async () => {
  await browser?.close();
  await site?.close();
});

/** A git workspace with hello.txt committed, a server on it, and the panel. */
async function setup(
  t: TestContext,
  lines: unknown[],
  options: {
    theme?: "light" | "dark";
    visible?: boolean;
    initializationOptions?: Record<string, unknown>;
    model?: string;
    /** Files written beside the script (in .git/), e.g. recorded streams. */
    files?: Record<string, Buffer>;
    /** The `toolwire.approval` setting. */
    approval?: "ask" | "auto" | "deny";
  } = {},
): Promise<{ panel: Panel; server: Server; workspace: string }> {
  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), "toolwire-panel-ws-")));
  git(workspace, "init", "-q");
  await writeFile(path.join(workspace, "hello.txt"), "hello\n");
  git(workspace, "add", "hello.txt");
  git(workspace, "commit", "-q", "-m", "hello");
  const script = path.join(workspace, ".git", "script.jsonl");
  await writeFile(script, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
  for (const [name, content] of Object.entries(options.files ?? {})) {
    await writeFile(path.join(workspace, ".git", name), content);
  }
  const server = await startServer(workspace, options.initializationOptions ?? { model: `replay:${script}` });
  const panel = await openPanel(browser, site.url, server, {
    model: options.model ?? `replay:${script}`,
    cwd: workspace,
    theme: options.theme,
    visible: options.visible,
    approval: options.approval,
  });
  t.after(async () => {
    await panel.page.close();
    await server.stop();
    await rm(workspace, { recursive: true, force: true });
  });
  return { panel, server, workspace };
}

/** Types a prompt and presses Enter, as a user would. */
async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

/** Waits until the `n`-th (1-based) turn has ended in the panel. */
async function turnEnded(panel: Panel, n = 1): Promise<void> {
  await panel.page.locator(".turn-end").nth(n - 1).waitFor();
}

function card(panel: Panel, name: string, nth = 0) {
  return panel.page.locator("article.card", { has: panel.page.locator(".tool-name", { hasText: new RegExp(`^${name}$`) }) }).nth(nth);
}

async function statuses(panel: Panel): Promise<string[]> {
  return panel.page.locator("article.card .badge").allTextContents();
}

test("a full turn: read, edit approved in the card after reviewing the diff, git diff, commit", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server, workspace } = await setup(t, [
    { text: "Reading the file.", tool_calls: [{ name: "read_file", arguments: { path: "hello.txt" } }], chunk_size: 8 },
    { tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "hello world" } }], chunk_size: 8 },
    { tool_calls: [{ name: "git_diff", arguments: {} }] },
    { tool_calls: [{ name: "git_commit", arguments: { message: "Greet the world", paths: ["hello.txt"] } }] },
    { text: "Done: the greeting now says **hello world**.\n\n```sh\ngit log -1\n```" },
  ]);
  const { page } = panel;
  await ask(panel, 'Change "hello" to "hello world" in hello.txt and commit it.');

  const edit = card(panel, "edit_file");
  await edit.getByRole("region", { name: "Approval for edit_file" }).waitFor();
  assert.match(await edit.locator("pre.diff").innerText(), /\+hello world/);
  await edit.getByRole("button", { name: "Review in diff editor" }).click();
  await waitFor(() => panel.ui.diffs.length === 1, "the diff editor to open");
  assert.deepEqual(panel.ui.diffs[0].preview.before, "hello\n");
  assert.deepEqual(panel.ui.diffs[0].preview.after, "hello world\n");
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hello\n", "nothing is written before approval");
  await edit.getByRole("button", { name: "Allow once" }).click();

  const commit = card(panel, "git_commit");
  await commit.getByRole("region", { name: "Approval for git_commit" }).waitFor();
  assert.match(await commit.locator("pre.argv").innerText(), /git .*commit/);
  await commit.getByRole("button", { name: "Allow once" }).click();
  await turnEnded(panel);

  assert.deepEqual(await statuses(panel), ["Done", "Done", "Done", "Done"]);
  assert.match(await page.locator(".toolbar .model").innerText(), /replay/, "the header names the session's model");
  assert.equal(await page.locator(".turn-end .stop-reason").innerText(), "Done");
  assert.equal(await page.locator(".markdown strong").innerText(), "hello world");
  assert.equal(await page.locator(".markdown pre button[aria-label='Copy code']").count(), 1);
  await page.locator(".markdown pre button[aria-label='Copy code']").click();
  await waitFor(() => panel.ui.copied.includes("git log -1\n"), "the code block to be copied");
  // A result is put in the page only when its card's result is expanded (keyboard: Enter on the summary).
  const read = card(panel, "read_file");
  assert.equal(await read.locator(".result pre").count(), 0);
  await read.locator(".result summary").focus();
  await page.keyboard.press("Enter");
  assert.match(await read.locator(".result pre").innerText(), /hello/);
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hello world\n");
  assert.match(git(workspace, "log", "-1", "--format=%s"), /Greet the world/);
  assert.equal(server.permissions.length, 2);
  assert.ok(panel.ui.opened.includes("hello.txt"), "follow-along opened the edited file");
  assert.equal(await page.locator(".approval").count(), 0);
  assert.deepEqual(panel.ui.errors, []);
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations), []);

  await page.screenshot({ path: path.join(ARTIFACTS, "panel-dark.png") });
});

/** hello.txt (6 bytes) is over this checkpoint limit: deleting it cannot be undone. */
const TINY_CHECKPOINTS = { permissions: { edits: "auto" }, checkpointMaxBytes: 4 };
const CANNOT_UNDO = "This change cannot be undone: hello.txt: 6 bytes is over the 4 bytes checkpoint limit (the checkpointMaxBytes setting)";

test("a change that cannot be undone is asked about even under auto, the card opening with why", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, [{ tool_calls: [{ name: "delete_file", arguments: { path: "hello.txt" } }] }, { text: "Deleted." }], {
    initializationOptions: TINY_CHECKPOINTS,
  });
  await ask(panel, "Delete hello.txt.");
  const approval = card(panel, "delete_file").getByRole("region", { name: "Approval for delete_file" });
  await approval.waitFor();
  const text = await approval.innerText();
  assert.ok(text.trimStart().startsWith(CANNOT_UNDO), text);
  assert.equal((await approval.getByRole("alert").innerText()).trim(), CANNOT_UNDO);
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hello\n", "nothing is deleted before the answer");
  await approval.getByRole("button", { name: "Allow once" }).click();
  await turnEnded(panel);
  assert.deepEqual(await statuses(panel), ["Done"]);
});

test("toolwire.approval auto never allows a change that cannot be undone: it rejects it", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server, workspace } = await setup(t, [{ tool_calls: [{ name: "delete_file", arguments: { path: "hello.txt" } }] }, { text: "Not deleted." }], {
    initializationOptions: TINY_CHECKPOINTS,
    approval: "auto",
  });
  await ask(panel, "Delete hello.txt.");
  await turnEnded(panel);
  assert.deepEqual(await statuses(panel), ["Cancelled"]);
  assert.equal(server.permissions.length, 1, "the server asked; the client answered by itself");
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hello\n");
});

const ENV_SECRET = "API_KEY=sk-panel-secret-123";
const KEPT = "Kept from the model (modelExclude): .env (pattern '.env'). Allowing shows it to the model for this call only.";
const READ_ENV = [{ tool_calls: [{ name: "read_file", arguments: { path: ".env" } }] }, { text: "Read." }];

test("a read of a file kept from the model is asked about, the card naming the file and pattern, without Allow always", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server, workspace } = await setup(t, READ_ENV);
  await writeFile(path.join(workspace, ".env"), ENV_SECRET + "\n");
  await ask(panel, "Read .env.");
  const approval = card(panel, "read_file").getByRole("region", { name: "Approval for read_file" });
  await approval.waitFor();
  assert.equal((await approval.getByRole("alert").innerText()).trim(), KEPT);
  assert.equal(await approval.getByRole("button", { name: /^Allow always/ }).count(), 0, "allowed per call only");
  assert.equal(server.permissions.length, 1);
  await approval.getByRole("button", { name: "Allow once" }).click();
  await turnEnded(panel);
  assert.deepEqual(await statuses(panel), ["Done"]);
});

test("toolwire.approval auto never allows a file kept from the model: it rejects the read", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server, workspace } = await setup(t, READ_ENV, { approval: "auto" });
  await writeFile(path.join(workspace, ".env"), ENV_SECRET + "\n");
  await ask(panel, "Read .env.");
  await turnEnded(panel);
  assert.deepEqual(await statuses(panel), ["Cancelled"]);
  assert.equal(server.permissions.length, 1, "the server asked; the client answered by itself");
  assert.ok(!(await panel.page.content()).includes("sk-panel-secret"), "the secret is nowhere in the panel");
});

test("light theme screenshot while an approval waits", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await setup(
    t,
    [
      { text: "Let me look first.", tool_calls: [{ name: "read_file", arguments: { path: "hello.txt" } }] },
      { tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "hello, panel" } }] },
    ],
    { theme: "light" },
  );
  await ask(panel, "Greet the panel in hello.txt.");
  await card(panel, "edit_file").getByRole("region", { name: "Approval for edit_file" }).waitFor();
  await panel.page.screenshot({ path: path.join(ARTIFACTS, "panel-light.png") });
  await card(panel, "edit_file").getByRole("button", { name: "Allow once" }).click();
  await turnEnded(panel);
});

test("reject with a reason: the call ends canceled (rejected) and the reason is shown", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, [
    { tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "bye" } }] },
    { text: "Understood." },
  ]);
  await ask(panel, "Say bye.");
  const edit = card(panel, "edit_file");
  await edit.getByRole("button", { name: "Reject…" }).click();
  await edit.getByRole("textbox", { name: /Reason for rejecting/ }).fill("keep the greeting");
  await edit.getByRole("textbox", { name: /Reason for rejecting/ }).press("Enter");
  await turnEnded(panel);
  assert.deepEqual(await statuses(panel), ["Cancelled"]);
  assert.match(await edit.locator(".reason").innerText(), /Rejected — “keep the greeting”/);
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hello\n");
});

test("allow always: the button says what the rule covers, and the same action is not asked again", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server, workspace } = await setup(t, [
    { tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "hi" } }] },
    { tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hi", new_string: "hey" } }] },
    { text: "Both done." },
  ]);
  await ask(panel, "Edit twice.");
  const always = card(panel, "edit_file").getByRole("button", { name: /^Allow always: edit_file on hello\.txt/ });
  await always.waitFor();
  assert.match((await always.getAttribute("aria-label")) ?? "", /at most this many changed lines, for this conversation/);
  await always.click();
  await turnEnded(panel);
  assert.equal(server.permissions.length, 1, "the second edit ran under the rule");
  assert.deepEqual(await statuses(panel), ["Done", "Done"]);
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hey\n");

  // Undo this turn: the per-path outcome is shown under the turn, the file is back.
  await panel.page.getByRole("button", { name: "Undo this turn" }).click();
  await panel.page.locator(".undo li").first().waitFor();
  assert.match(await panel.page.locator(".undo li").first().innerText(), /Restored hello\.txt/);
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hello\n");
  assert.equal(await panel.page.getByRole("button", { name: "Undo this turn" }).count(), 0, "an undone turn offers no undo");
});

test("per-call cancel of a call waiting for approval: the request is withdrawn and disappears", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, [
    { tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "x" } }] },
    { text: "Fine." },
  ]);
  await ask(panel, "Edit.");
  const edit = card(panel, "edit_file");
  await edit.getByRole("region", { name: "Approval for edit_file" }).waitFor();
  assert.ok(panel.ui.statuses.some((s) => s.waiting === 1), "the status item counted the waiting approval");
  await edit.getByRole("button", { name: "Cancel edit_file" }).click();
  await turnEnded(panel);
  assert.equal(await panel.page.locator(".approval").count(), 0, "the withdrawn request disappeared");
  assert.deepEqual(await statuses(panel), ["Cancelled"]);
  assert.match(await edit.locator(".reason").innerText(), /Cancelled/);
  assert.equal(panel.ui.statuses[panel.ui.statuses.length - 1].waiting, 0);
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hello\n");
});

test("hidden panel: a notification is shown, and a withdrawn request is gone from the panel when shown again", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await setup(
    t,
    [{ tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "x" } }] }],
    { visible: false },
  );
  const turn = panel.host.prompt("Edit while hidden.");
  await waitFor(() => panel.ui.notifications.length === 1, "the notification");
  assert.equal(panel.ui.notifications[0].toolCall.name, "edit_file");
  await card(panel, "edit_file").getByRole("region", { name: "Approval for edit_file" }).waitFor();
  await panel.host.stop(); // the server withdraws the request ($/cancelRequest)
  const result = await turn;
  assert.equal(result?.stopReason, "cancelled");
  await turnEnded(panel);
  assert.equal(await panel.page.locator(".approval").count(), 0, "the withdrawn request disappeared");
  assert.equal(panel.host.waiting, 0);
  await panel.reload();
  await panel.page.locator(".turn-end").waitFor();
  assert.equal(await panel.page.locator(".approval").count(), 0, "and stays gone after a reload");
});

test("stop: the turn ends cancelled while a call is still generating", { timeout: TIMEOUT_MS }, async (t) => {
  const long = "x".repeat(4000);
  const { panel } = await setup(t, [
    { tool_calls: [{ name: "create_file", arguments: { path: "big.txt", content: long } }], chunk_size: 16, delay: 0.05 },
  ]);
  await ask(panel, "Write a big file.");
  await card(panel, "create_file").locator("pre.live").waitFor();
  await panel.page.getByRole("button", { name: "Stop" }).click();
  await turnEnded(panel);
  assert.equal(await panel.page.locator(".turn-end .stop-reason").innerText(), "Stopped");
  assert.deepEqual(await statuses(panel), ["Cancelled"]);
  assert.match(await card(panel, "create_file").locator(".reason").innerText(), /Stopped with the turn/);
  assert.ok(await panel.page.getByRole("button", { name: "Send" }).isVisible());
});

test("a turn that ends in error shows the stop reason and its message", { timeout: TIMEOUT_MS }, async (t) => {
  const http = createServer((_request, response) => {
    // a 404, not a 401: a 401 is a turn that wants an API key (panel-history.test.ts), not a failure
    response.writeHead(404, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: { message: "The model `gpt-4o-mini` does not exist or you do not have access to it.", type: "invalid_request_error", code: "model_not_found" } }));
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => http.close(() => resolve())));
  const baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`;
  const { panel } = await setup(t, [], {
    model: "openai:gpt-4o-mini",
    initializationOptions: { baseUrl, apiKey: "sk-wrong" },
  });
  await ask(panel, "Hello?");
  await turnEnded(panel);
  assert.equal(await panel.page.locator(".turn-end .stop-reason").innerText(), "Failed");
  const message = await panel.page.locator(".turn-end .stop-message").innerText();
  assert.match(message, /404/);
  assert.match(message, /does not exist/);
  assert.doesNotMatch(message, /sk-wrong/);
});

test("reload mid-turn: the panel is rebuilt from the snapshot, nothing lost, nothing twice", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, workspace } = await setup(t, [
    { text: "First I read it.", tool_calls: [{ name: "read_file", arguments: { path: "hello.txt" } }] },
    { tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "reloaded" } }] },
    { text: "All done." },
  ]);
  const { page } = panel;
  await ask(panel, "Edit after a reload.");
  await card(panel, "edit_file").getByRole("region", { name: "Approval for edit_file" }).waitFor();
  await panel.reload();
  const edit = card(panel, "edit_file");
  await edit.getByRole("region", { name: "Approval for edit_file" }).waitFor();
  assert.equal(await page.locator(".message.user").count(), 1);
  assert.deepEqual(await statuses(panel), ["Done", "Waiting"]);
  assert.match(await page.locator(".message.assistant").first().innerText(), /First I read it\./);
  assert.equal(await page.getByRole("button", { name: "Stop" }).count(), 1, "the turn is still shown as running");
  await edit.getByRole("button", { name: "Allow once" }).click();
  await turnEnded(panel);
  assert.deepEqual(await statuses(panel), ["Done", "Done"]);
  assert.equal(await page.locator("article.card").count(), 2);
  assert.equal(await page.locator(".message.user").count(), 1);
  assert.equal(await page.locator(".turn-end").count(), 1);
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "reloaded\n");

  // After the turn: a reload still shows the same transcript.
  await panel.reload();
  await page.locator(".turn-end").waitFor();
  assert.deepEqual(await statuses(panel), ["Done", "Done"]);
  assert.equal(await page.locator(".message.user").count(), 1);
});

test("window reload: a new host rebuilds from the snapshot with each ended turn's usage and message line", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server, workspace } = await setup(t, [
    { text: "Reading.", tool_calls: [{ name: "read_file", arguments: { path: "hello.txt" } }], usage: { prompt_tokens: 800, completion_tokens: 90 } },
    { text: "Read it.", usage: { prompt_tokens: 12, completion_tokens: 7 } },
    { text: "This stream breaks halfway through.", chunk_size: 8, cut_after: 3 },
  ]);
  await ask(panel, "First turn.");
  await turnEnded(panel, 1);
  await ask(panel, "Second turn.");
  await turnEnded(panel, 2);
  const ends = panel.page.locator(".turn-end");
  const before = await ends.allInnerTexts();
  assert.match(await ends.nth(0).locator(".usage").innerText(), /^812 in \/ 97 out tokens · \d+\.\d s$/);
  assert.match(await ends.nth(1).locator(".usage").innerText(), /^\d+\.\d s$/, "the broken stream reported no tokens, only its duration");
  assert.equal(await ends.nth(1).locator(".stop-reason").innerText(), "Failed");

  // "Developer: Reload Window": a new extension host (a new PanelHost, nothing kept but
  // the remembered session id) and a new page, on the same server process.
  const sessionId = panel.host.sessionId;
  assert.ok(sessionId);
  const reloaded = await openPanel(browser, site.url, server, {
    model: `replay:${path.join(workspace, ".git", "script.jsonl")}`,
    cwd: workspace,
    memory: { get: () => sessionId, set: () => undefined },
  });
  t.after(() => reloaded.page.close());
  await reloaded.host.serverRestarted();
  await reloaded.page.locator(".turn-end").nth(1).waitFor();
  assert.equal(reloaded.host.sessionId, sessionId);
  assert.deepEqual(await reloaded.page.locator(".turn-end").allInnerTexts(), before);
  assert.equal(await reloaded.page.locator(".message.user").count(), 2);
});

test("window reload mid-turn: the turn the new host took up offers Undo once it ends", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server, workspace } = await setup(t, [
    {
      text: "Thinking it over slowly.",
      tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "taken up" } }],
      chunk_size: 4,
      delay: 0.15,
    },
    { text: "Finished after the reload." },
  ], { initializationOptions: { permissions: { edit_file: "auto" } } });
  await ask(panel, "Think slowly, then edit.");
  await panel.page.locator(".message.assistant").waitFor(); // streaming: the edit has not run yet
  const sessionId = panel.host.sessionId;
  assert.ok(sessionId);
  // A new extension host (nothing kept but the session id) while the answer still streams.
  const reloaded = await openPanel(browser, site.url, server, {
    model: `replay:${path.join(workspace, ".git", "script.jsonl")}`,
    cwd: workspace,
    memory: { get: () => sessionId, set: () => undefined },
  });
  t.after(() => reloaded.page.close());
  await reloaded.host.serverRestarted();
  await reloaded.page.locator(".message.user").waitFor();
  assert.equal(await reloaded.page.locator(".turn-end").count(), 0, "taken up while the turn runs");
  await turnEnded(reloaded);
  await reloaded.page.getByRole("button", { name: "Undo this turn" }).waitFor({ timeout: 10_000 });
  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "taken up\n");
});

test("a code action's background turn (toolwire.runAction) is shown in the panel", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server, workspace } = await setup(t, [{ text: "It greets." }], {});
  const uri = pathToFileURL(path.join(workspace, "hello.txt")).href;
  const started = await server.connection.sendRequest<{ sessionId: string }>("workspace/executeCommand", {
    command: "toolwire.runAction",
    arguments: [{ kind: "explain", uri, range: { start: { line: 0, character: 0 }, end: { line: 0, character: 5 } } }],
  });
  await panel.host.adopt(started.sessionId);
  await turnEnded(panel);
  assert.equal(panel.host.sessionId, started.sessionId);
  // the user's intent and the selection, never the template the model reads (issue 26)
  assert.match(await panel.page.locator(".message.user").innerText(), /Explain this code\nAttached: hello\.txt \(line 1\)/);
  assert.doesNotMatch(await panel.page.locator(".message.user").innerText(), /Toolwire code action/);
  assert.match(await panel.page.locator(".message.assistant").innerText(), /It greets\./);
});

test("parallel calls: one card each, all done", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await setup(t, [
    {
      tool_calls: [
        { name: "read_file", arguments: { path: "hello.txt" } },
        { name: "git_log", arguments: {} },
        { name: "git_status", arguments: {} },
      ],
      chunk_size: 5,
    },
    { text: "Looked around." },
  ]);
  await ask(panel, "Look around.");
  await turnEnded(panel);
  const names = await panel.page.locator("article.card .tool-name").allTextContents();
  assert.deepEqual(names, ["read_file", "git_log", "git_status"]);
  assert.deepEqual(await statuses(panel), ["Done", "Done", "Done"]);
});

test("provider-executed calls are shown as such and never offered for approval", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await setup(t, [{ stream: "provider.sse" }], { files: { "provider.sse": await readFile(PROVIDER_STREAM) } });
  await ask(panel, "Exchange rate?");
  await turnEnded(panel);
  const provider = panel.page.locator("article.card", { has: panel.page.locator(".provider") });
  assert.equal(await provider.count(), 1);
  assert.match(await provider.innerText(), /tool_search_tool_bm25/);
  assert.match(await provider.locator(".provider").innerText(), /server_tool_use/);
  assert.equal(await provider.getByRole("button", { name: /Cancel|Allow/ }).count(), 0);
});

test("untrusted text: markup and command: links never execute", { timeout: TIMEOUT_MS }, async (t) => {
  const payload = '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> [run](command:workbench.action.quit) <a href="javascript:window.__pwned=3">js</a> <a href="command:toolwire.restart">cmd</a>';
  const { panel } = await setup(t, [
    { text: `Look: ${payload}`, tool_calls: [{ name: "read_file", arguments: { path: '<img src=x onerror="window.__pwned=4">.txt', note: payload } }] },
    { text: `Again ${payload}` },
  ]);
  const { page } = panel;
  await page.evaluate(() => {
    (window as unknown as { __pwned?: number }).__pwned = undefined;
  });
  await ask(panel, `<img src=x onerror="window.__pwned=5"> ${payload}`);
  await turnEnded(panel);
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  assert.equal(await page.locator("img").count(), 0);
  assert.equal(await page.locator("[onerror], [onclick], a[href^='command:'], a[href^='javascript:']").count(), 0);
  assert.equal(await page.locator("script:not([nonce])").count(), 0);
  const links = page.locator(".markdown a");
  for (let i = 0; i < (await links.count()); i++) {
    await links.nth(i).click();
  }
  assert.deepEqual(panel.ui.links, [], "no link was opened");
  assert.ok(!panel.ui.fromPage.some((m) => m.type === "openLink"), "no command: link reached the host");
  assert.match(await page.locator(".message.user .plain").innerText(), /<img src=x onerror/);
  assert.match(await card(panel, "read_file").locator(".tool-line").innerText(), /<img src=x/, "the target as text");
  await card(panel, "read_file").locator("details.raw-args summary").click();
  assert.match(await card(panel, "read_file").locator("details.raw-args pre").innerText(), /<img src=x/, "the raw arguments as text");
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
});

/** A name that reads as "invoiceexe.pdf" (U+202E reverses what follows), and its display form (git's quoting). */
const BIDI_NAME = "invoice\u202efdp.exe";
const BIDI_SHOWN = '"invoice\\342\\200\\256fdp.exe"';
/** Controls, bidirectional and invisible characters: none may reach the page raw. */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff]/u;

/** Every text of the page a person reads or hears: the rendered text, titles and accessible names. */
async function everythingShown(panel: Panel): Promise<string[]> {
  return panel.page.evaluate(() => {
    const texts = [document.body.innerText];
    for (const element of Array.from(document.querySelectorAll("[title], [aria-label]"))) {
      texts.push(element.getAttribute("title") ?? "", element.getAttribute("aria-label") ?? "");
    }
    return texts;
  });
}

test("a path with U+202E is shown in display form in the card, its title, the arguments, the approval and the notification", { timeout: TIMEOUT_MS }, async (t) => {
  // The model writes the bidi control raw into its argument text (not as a JSON \u escape).
  const rawArguments = `{"path": "${BIDI_NAME}", "old_string": "total", "new_string": "total\u200b due"}`;
  const { panel, workspace } = await setup(
    t,
    [
      { text: `Fixing [${BIDI_NAME}](https://example.com/${BIDI_NAME}) now.`, tool_calls: [{ name: "edit_file", arguments: rawArguments }] },
      { tool_calls: [{ name: "read\u202efile", arguments: { path: "hello.txt" } }] },
      // git's quoted form, as results print the name: the card names the same file the same way
      { tool_calls: [{ name: "read_file", arguments: { path: BIDI_SHOWN } }] },
      { text: "Done." },
    ],
    { visible: false },
  );
  await writeFile(path.join(workspace, BIDI_NAME), "total\n");
  git(workspace, "add", BIDI_NAME);
  git(workspace, "commit", "-q", "-m", "invoice");
  const { page } = panel;
  // The prompt may carry it too (a code action sends the selected code).
  await ask(panel, `Fix ${BIDI_NAME}.`);
  await page.locator(".message.user").waitFor();
  assert.equal(await page.locator(".message.user .plain").innerText(), "Fix invoice\\u202efdp.exe.");

  const edit = card(panel, "edit_file");
  const approval = edit.getByRole("region", { name: "Approval for edit_file" });
  await approval.waitFor();
  const button = edit.locator("button.path");
  assert.equal(await button.innerText(), BIDI_SHOWN);
  assert.equal(await button.getAttribute("title"), `Open ${BIDI_SHOWN}`);
  assert.equal(await edit.getAttribute("aria-label"), `Tool call edit_file on ${BIDI_SHOWN}: Waiting`);
  await edit.locator("details.raw-args summary").click();
  const args = await edit.locator("details.raw-args pre").innerText();
  assert.equal(args, `{"path": "invoice\\u202efdp.exe", "old_string": "total", "new_string": "total\\u200b due"}`);
  assert.match(await approval.locator(".ask").innerText(), new RegExp(`on ${BIDI_SHOWN.replace(/\\/g, "\\\\")}:`));
  const diff = await approval.locator("pre.diff").innerText();
  assert.ok(diff.includes(`+++ "b/${BIDI_SHOWN.slice(1)}`), diff); // git's header form
  assert.ok(diff.includes("+total\\u200b due"), diff);
  assert.match((await approval.getByRole("button", { name: /^Allow always/ }).getAttribute("title")) ?? "", new RegExp(BIDI_SHOWN.replace(/\\/g, "\\\\")));
  // The panel is hidden: the notification names the file the same way.
  await waitFor(() => panel.ui.notificationTexts.length === 1, "the notification");
  assert.equal(panel.ui.notificationTexts[0], `Toolwire wants to run edit_file ${BIDI_SHOWN}.`);
  assert.doesNotMatch(panel.ui.notificationTexts[0], RAW);
  // The follow-along editor gets the real name, not the display form.
  assert.ok(panel.ui.opened.includes(BIDI_NAME), "the file is opened by its real name");

  await approval.getByRole("button", { name: "Allow once" }).click();
  await turnEnded(panel);
  assert.equal(await readFile(path.join(workspace, BIDI_NAME), "utf8"), "total\u200b due\n");
  // A tool name the model wrote with U+202E, and a link whose text holds it.
  assert.equal(await page.locator("article.card .tool-name").nth(1).innerText(), "read\\u202efile");
  assert.equal(await card(panel, "read_file").locator("button.path").innerText(), BIDI_SHOWN);
  const link = page.locator(".markdown a").first();
  assert.equal(await link.innerText(), "invoice\\u202efdp.exe");
  assert.equal(await link.getAttribute("href"), "https://example.com/invoice%E2%80%AEfdp.exe");
  for (const text of await everythingShown(panel)) {
    assert.doesNotMatch(text, RAW, `raw control reached the page: ${JSON.stringify(text)}`);
  }
  // Rebuilt from the snapshot (the view shown again): the same forms.
  await panel.reload();
  await turnEnded(panel);
  assert.equal(await card(panel, "edit_file").locator("button.path").innerText(), BIDI_SHOWN);
  for (const text of await everythingShown(panel)) {
    assert.doesNotMatch(text, RAW, `raw control reached the page after a reload: ${JSON.stringify(text)}`);
  }
});

test("a workspace change while the answer streams never cuts the message in two", { timeout: 2 * TIMEOUT_MS }, async (t) => {
  // An OpenAI-compatible endpoint that sends the answer in two pieces, the link split
  // across them, and sends the second only once the panel showed the workspace change.
  let release: () => void = () => undefined;
  const second = new Promise<void>((resolve) => (release = resolve));
  const requests: string[] = [];
  const http = createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    request.resume();
    request.on("end", () => {
      const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
        `data: ${JSON.stringify({ id: "r1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.write(chunk({ role: "assistant", content: "See [the guide](https://exa" }));
      void second.then(() => {
        response.write(chunk({ content: "mple.com/guide) for more." }));
        response.write(chunk({}, "stop"));
        response.end("data: [DONE]\n\n");
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    release();
    return new Promise<void>((resolve) => http.close(() => resolve()));
  });
  const baseUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1`;
  const { panel, workspace } = await setup(t, [], { model: "openai:gpt-test", initializationOptions: { baseUrl, apiKey: "sk-test" } });
  const { page } = panel;
  const turn = panel.host.prompt("Where is the guide?");
  await page.locator(".message.assistant", { hasText: "See [the guide](https://exa" }).waitFor();
  // Written as most programs write, open then write, with the pause a loaded machine can
  // put between them: the watcher reports the file created, then modified (two batches,
  // each a single event: opening creates it, the write modifies it, closing reports nothing).
  const file = await open(path.join(workspace, BIDI_NAME), "w");
  const notices = page.locator(".notice", { hasText: "Changed outside Toolwire" });
  try {
    await notices.first().waitFor({ timeout: 60_000 }); // the watcher reports it (debounced): generous on a loaded machine
    await file.write("changed by someone else\n");
  } finally {
    await file.close();
  }
  await waitFor(() => panel.ui.workspaceChanges.length === 2, "the second report of the file", 60_000);
  release();
  await turn;
  await turnEnded(panel);

  assert.deepEqual(requests, ["POST /v1/chat/completions"]);
  const messages = page.locator(".message.assistant");
  assert.equal(await messages.count(), 1, "one message");
  assert.equal(await messages.locator(".markdown").count(), 1, "one Markdown block");
  assert.equal(await messages.locator(".markdown p").count(), 1, "one paragraph");
  assert.equal(await messages.innerText(), "See the guide for more.");
  const links = messages.locator("a");
  assert.equal(await links.count(), 1);
  assert.equal(await links.getAttribute("href"), "https://example.com/guide");
  assert.equal(await links.innerText(), "the guide");
  // The two reports of one write are one notice, after the message, with the name in display form.
  assert.deepEqual(panel.ui.workspaceChanges, [[BIDI_SHOWN], [BIDI_SHOWN]]);
  assert.equal(await notices.count(), 1, "one notice");
  assert.equal((await notices.innerText()).trim(), `Changed outside Toolwire: ${BIDI_SHOWN}`);
  const order = await page.evaluate(() =>
    Array.from(document.querySelectorAll(".transcript > *")).map((element) => element.className.split(" ")[0]),
  );
  assert.deepEqual(order, ["message", "message", "notice", "turn-end"], "prompt, answer, notice, end of turn");
});

async function waitFor(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
