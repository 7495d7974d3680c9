/**
 * Follow-the-end (issue 25): while a message streams and the transcript is at its bottom, the
 * view stays at the bottom (the end of the message in view); once the person scrolls up it is
 * not pulled down; scrolling back to the bottom follows again. Event-driven: each check waits
 * on a DOM state (a paint, a scroll event), never on time. The webview bundle in headless
 * Chromium, host messages fed straight into the page.
 */
import assert from "node:assert/strict";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import type { Page } from "playwright-core";
import type { HostMessage } from "../src/panel/messages";
import { openPanel, usePanelSite } from "./panel/harness";
import { startServer } from "./panel/server";

const TIMEOUT_MS = 90_000;
const site = usePanelSite();

function chunk(text: string): HostMessage {
  return { type: "update", params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } as never } };
}

const para = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `Paragraph ${tag}-${i}: some prose to take up room in the panel.\n\n`).join("");

/** Feeds pieces one per task, then waits for the paint after the last (rAF callbacks run in order). */
async function feed(page: Page, messages: HostMessage[]): Promise<void> {
  await page.evaluate(async (list) => {
    for (const data of list) {
      window.dispatchEvent(new MessageEvent("message", { data }));
      // the next task (a message-channel round trip: the page handles the piece, no timer)
      await new Promise((resolve) => {
        const channel = new MessageChannel();
        channel.port1.onmessage = () => resolve(null);
        channel.port2.postMessage(null);
      });
    }
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(null))));
  }, messages);
}

/** Pieces of `text`, 40 characters each. */
const pieces = (text: string): HostMessage[] => Array.from({ length: Math.ceil(text.length / 40) }, (_, i) => chunk(text.slice(i * 40, i * 40 + 40)));

/** Sets the transcript's scrollTop and waits for its scroll event. */
async function scrollTo(page: Page, where: "top" | "bottom"): Promise<void> {
  await page.evaluate(
    (to) =>
      new Promise<void>((resolve) => {
        const el = document.querySelector("main.transcript") as HTMLElement;
        el.addEventListener("scroll", () => resolve(), { once: true });
        el.scrollTop = to === "top" ? 0 : el.scrollHeight;
      }),
    where,
  );
}

/** Whether `marker`'s text lies inside the transcript's visible box. */
async function inView(page: Page, marker: string): Promise<boolean> {
  return page.evaluate((m) => {
    const view = (document.querySelector("main.transcript") as HTMLElement).getBoundingClientRect();
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
      const at = node.textContent?.indexOf(m) ?? -1;
      if (at >= 0) {
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + m.length);
        const box = range.getBoundingClientRect();
        return box.height > 0 && box.top >= view.top && box.bottom <= view.bottom;
      }
    }
    return false;
  }, marker);
}

test("a streamed message: the view follows its end at the bottom, not after the person scrolls up, again once back at the bottom", { timeout: TIMEOUT_MS }, async () => {
  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), "toolwire-follow-")));
  const server = await startServer(workspace, {});
  try {
    const panel = await openPanel(site.browser, site.url, server, { model: "replay", cwd: workspace });
    const { page } = panel;
    await page.locator(".empty").waitFor();
    const transcript = page.locator("main.transcript");

    await feed(page, [{ type: "prompt", text: "long" }, ...pieces(para("a", 60) + "END-A\n\n")]);
    await page.getByText("END-A").waitFor();
    assert.ok(await transcript.evaluate((el) => el.scrollHeight > el.clientHeight * 2), "the message overflows the view");
    assert.ok(await inView(page, "END-A"), "followed the end");
    assert.ok(await transcript.evaluate((el) => el.scrollHeight - el.scrollTop - el.clientHeight <= 1), "at the bottom");

    await scrollTo(page, "top");
    await feed(page, pieces(para("b", 40) + "END-B\n\n"));
    await page.getByText("END-B").waitFor();
    assert.equal(await transcript.evaluate((el) => el.scrollTop), 0, "not pulled down after scrolling up");
    assert.equal(await inView(page, "END-B"), false);

    await scrollTo(page, "bottom");
    await feed(page, pieces(para("c", 40) + "END-C\n\n"));
    await page.getByText("END-C").waitFor();
    assert.ok(await inView(page, "END-C"), "follows again once back at the bottom");
    await page.close();
  } finally {
    await server.stop();
    await rm(workspace, { recursive: true, force: true });
  }
});
