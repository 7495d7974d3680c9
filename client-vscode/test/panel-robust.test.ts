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
