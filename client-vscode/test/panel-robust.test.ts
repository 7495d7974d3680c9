/**
 * One odd message never freezes the panel: an update the reducer cannot apply (here a `plan`
 * without entries, a `workspace_change` without paths: what a newer or broken server might
 * send) is dropped, the page asks the host for a fresh snapshot (`resync`, once), and the
 * messages after it are shown. The page is the real bundle, fed host messages (no server).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { HostMessage, WebviewMessage } from "../src/panel/messages";
import { usePanelSite } from "./panel/harness";

const site = usePanelSite();
const S = "s1";
const update = (u: unknown): HostMessage => ({ type: "update", params: { sessionId: S, update: u } } as HostMessage);

test("an update the reducer cannot apply is dropped with one resync; the panel goes on", async () => {
  const page = await site.browser.newPage();
  try {
    await page.addInitScript(() => {
      const sent: unknown[] = [];
      (window as unknown as Record<string, unknown>).sent = sent;
      (window as unknown as Record<string, unknown>).acquireVsCodeApi = () => ({ postMessage: (m: unknown) => sent.push(m), getState: () => undefined, setState: () => undefined });
    });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(String(error)));
    await page.goto(site.url);
    const messages: HostMessage[] = [
      { type: "session", sessionId: S, model: "openai:gpt-4o-mini", instructions: [], mcpServers: [] },
      { type: "prompt", text: "Plan it." },
      update({ sessionUpdate: "turn", state: "started", turnId: "t1" }),
      update({ sessionUpdate: "plan" }),
      update({ sessionUpdate: "workspace_change", paths: null }),
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Still here." } }),
    ];
    await page.evaluate((list) => {
      for (const data of list) {
        window.dispatchEvent(new MessageEvent("message", { data }));
      }
    }, messages);
    await page.locator(".message.assistant", { hasText: "Still here." }).waitFor();
    assert.equal(await page.locator(".message.user").innerText().then((t) => t.includes("Plan it.")), true);
    const sent = (await page.evaluate(() => (window as unknown as { sent: WebviewMessage[] }).sent)).map((m) => m.type);
    assert.deepEqual(sent.filter((t) => t === "resync"), ["resync"], `one resync asked: ${sent.join(", ")}`);
    assert.deepEqual(errors, [], "no uncaught error on the page");
  } finally {
    await page.close();
  }
});

test("the header's model picker stays on screen with a long model name while an approval waits", async () => {
  const page = await site.browser.newPage({ viewport: { width: 460, height: 600 } });
  try {
    await page.addInitScript(() => {
      (window as unknown as Record<string, unknown>).acquireVsCodeApi = () => ({ postMessage: () => undefined, getState: () => undefined, setState: () => undefined });
    });
    await page.goto(site.url);
    const call = { toolCallId: "c1", index: 0, name: "edit_file", kind: "function", status: "generated", rev: 1, argumentsText: "{}", partialArguments: {}, arguments: {} };
    const messages: HostMessage[] = [
      { type: "session", sessionId: S, model: "openai-responses:gpt-4.1-mini-2025-04-14-with-a-long-deployment-name", instructions: [], mcpServers: [] },
      { type: "prompt", text: "Edit it." },
      update({ sessionUpdate: "turn", state: "started", turnId: "t1" }),
      update({ sessionUpdate: "tool_call", toolCall: call }),
      { type: "permission", pending: { requestId: "r1", params: { sessionId: S, toolCall: call, subject: { kind: "tool", tool: "edit_file", arguments: {} }, options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }] } } } as HostMessage,
    ];
    await page.evaluate((list) => {
      for (const data of list) {
        window.dispatchEvent(new MessageEvent("message", { data }));
      }
    }, messages);
    await page.locator(".turn-state.waiting").waitFor();
    const box = await page.evaluate(() => {
      const picker = (document.querySelector("select.model-picker") as HTMLElement).getBoundingClientRect();
      const holder = (document.querySelector(".toolbar .model") as HTMLElement).getBoundingClientRect();
      return { left: picker.left, right: picker.right, width: picker.width, holderRight: holder.right };
    });
    assert.ok(box.width >= 80, `the picker is wide enough to read: ${JSON.stringify(box)}`);
    assert.ok(box.right <= box.holderRight + 0.5, `the picker fits its place (not hidden behind an ellipsis): ${JSON.stringify(box)}`);
  } finally {
    await page.close();
  }
});

test("the @ picker tells assistive technology which choice is active (aria-activedescendant), and forgets it when closed", async () => {
  const page = await site.browser.newPage({ viewport: { width: 460, height: 600 } });
  try {
    await page.addInitScript(() => {
      (window as unknown as Record<string, unknown>).acquireVsCodeApi = () => ({ postMessage: () => undefined, getState: () => undefined, setState: () => undefined });
    });
    await page.goto(site.url);
    await page.evaluate((data) => window.dispatchEvent(new MessageEvent("message", { data })), { type: "session", sessionId: S, model: "replay", instructions: [], mcpServers: [] } as HostMessage);
    const box = page.getByRole("textbox", { name: "Prompt" });
    await box.fill("@");
    await page.evaluate((data) => window.dispatchEvent(new MessageEvent("message", { data })), {
      type: "mentions", query: "", items: [
        { kind: "file", path: "a.py", label: "a.py", source: "open" },
        { kind: "file", path: "b.py", label: "b.py", source: "workspace" },
      ],
    } as HostMessage);
    await page.getByRole("listbox", { name: "Add context" }).waitFor();
    const active = async () => {
      const id = await box.getAttribute("aria-activedescendant");
      return id === null ? null : page.locator(`[id="${id}"]`).innerText();
    };
    assert.equal(await box.getAttribute("aria-controls"), await page.getByRole("listbox").getAttribute("id"));
    assert.match((await active()) ?? "", /a\.py/);
    await box.press("ArrowDown");
    await page.locator('[role="option"][aria-selected="true"]', { hasText: "b.py" }).waitFor();
    assert.match((await active()) ?? "", /b\.py/);
    await box.press("Escape");
    await page.getByRole("listbox").waitFor({ state: "detached" });
    assert.equal(await box.getAttribute("aria-activedescendant"), null);
    assert.equal(await box.getAttribute("aria-controls"), null);
  } finally {
    await page.close();
  }
});

test("a failed or rejected edit says its diff was not written; a done one does not", async () => {
  const page = await site.browser.newPage({ viewport: { width: 460, height: 900 } });
  try {
    await page.addInitScript(() => {
      (window as unknown as Record<string, unknown>).acquireVsCodeApi = () => ({ postMessage: () => undefined, getState: () => undefined, setState: () => undefined });
    });
    await page.goto(site.url);
    const args = { path: "a.py", old_string: "def greet(name):\n", new_string: "def greet(name: str) -> str:\n" };
    const call = (id: string, index: number, status: string, extra: Record<string, unknown> = {}) => ({
      toolCallId: id, index, name: "edit_file", kind: "function", status, rev: 3, argumentsText: JSON.stringify(args), partialArguments: args, arguments: args, path: "a.py", ...extra,
    });
    const messages = [
      { type: "session", sessionId: S, model: "replay", instructions: [], mcpServers: [] },
      { type: "prompt", text: "Type it." },
      update({ sessionUpdate: "turn", state: "started", turnId: "t1" }),
      update({ sessionUpdate: "tool_call", toolCall: call("c1", 0, "errored", { error: { code: "no_match", message: "old_string is not in a.py", retryable: true } }) }),
      update({ sessionUpdate: "tool_call", toolCall: call("c2", 1, "canceled", { cancelReason: "rejected" }) }),
      update({ sessionUpdate: "tool_call", toolCall: call("c3", 2, "done", { result: { ok: true, content: "edited", data: null, errorCode: null } }) }),
      update({ sessionUpdate: "turn", state: "ended", turnId: "t1", stopReason: "end_turn" }),
    ] as HostMessage[];
    await page.evaluate((list) => {
      for (const data of list) {
        window.dispatchEvent(new MessageEvent("message", { data }));
      }
    }, messages);
    await page.locator(".turn-end").waitFor();
    const said = (id: string) => page.locator(`article.card[data-call="${id}"] .not-written .caption`).count();
    assert.equal(await said("c1"), 1, "the failed edit");
    assert.equal(await said("c2"), 1, "the rejected edit");
    assert.equal(await said("c3"), 0, "the edit that was written");
    assert.match(await page.locator('article.card[data-call="c1"] .not-written').innerText(), /Not written[\s\S]*greet\(name: str\)/);
  } finally {
    await page.close();
  }
});
