/**
 * Streamed Markdown (issue 25): a long answer that arrives in small pieces renders the same
 * DOM as the same text rendered in one go (the panel renders completed blocks once and
 * re-renders only the open one): code fences split across pieces, lists, a table, and a
 * fence still open at the end. Correctness only, no timing. The webview bundle in headless
 * Chromium, fed host messages straight into the page (one message event per piece).
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

const SECTION = (i: number) =>
  `## Part ${i}\n\nSome *prose* ${i} with \`code\` and a [link](https://example.com/${i}).\nA second line.\n\n` +
  `- one\n- two\n  - nested ${i}\n\n1. first\n2. second\n\n` +
  "```ts\nconst x = " + i + ";\n\nfunction f() {\n  return x;\n}\n```\n\n" +
  `| a | b |\n|---|---|\n| ${i} | y |\n\n> quoted ${i}\n\n`;

const TEXT = Array.from({ length: 30 }, (_, i) => SECTION(i)).join("") + "Last words\n\n```python\nprint('open fence')\n";

/** The `.markdown` of the last assistant message, with the block wrappers taken out. */
async function rendered(page: Page): Promise<string> {
  return page.evaluate(() => {
    const all = document.querySelectorAll(".message.assistant .markdown");
    const copy = all[all.length - 1]!.cloneNode(true) as Element;
    for (const block of Array.from(copy.querySelectorAll(".md-block"))) {
      block.replaceWith(...Array.from(block.childNodes));
    }
    copy.normalize();
    return copy.innerHTML;
  });
}

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
    await new Promise((resolve) => requestAnimationFrame(() => resolve(null)));
  }, messages);
}

test("a long answer streamed in pieces renders the same DOM as one rendered in one go", { timeout: TIMEOUT_MS }, async () => {
  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), "toolwire-stream-")));
  const server = await startServer(workspace, {});
  try {
    const pages: string[] = [];
    for (const size of [TEXT.length, 7, 1]) {
      const panel = await openPanel(site.browser, site.url, server, { model: "replay", cwd: workspace });
      await panel.page.locator(".empty").waitFor();
      const messages: HostMessage[] = [{ type: "prompt", text: "long" }];
      // Pieces of `size` characters, and a few odd cuts inside fences and list markers.
      for (let offset = 0; offset < TEXT.length; offset += size) {
        messages.push(chunk(TEXT.slice(offset, offset + size)));
      }
      await feed(panel.page, size === 1 ? messages.slice(0, 1200) : messages);
      if (size === 1) {
        // One character at a time for the first 1,199 characters, then the rest in one piece.
        await feed(panel.page, [chunk(TEXT.slice(1199))]);
      }
      const markdown = panel.page.locator(".message.assistant .markdown").last();
      assert.equal(await markdown.locator("h2").count(), 30);
      assert.equal(await markdown.locator("pre").count(), 31);
      assert.equal(await markdown.locator("table").count(), 30);
      assert.equal(await markdown.locator("ul ul li").count(), 30);
      assert.equal(await markdown.locator("ol li").count(), 60);
      assert.equal(await markdown.locator("pre code").last().textContent(), "print('open fence')\n"); // the open fence at the end
      assert.equal(await markdown.locator("pre button[aria-label='Copy code']").count(), 31);
      pages.push(await rendered(panel.page));
      await panel.page.close();
    }
    assert.equal(pages[1], pages[0]); // 7-character pieces: same DOM as the one-go render
    assert.equal(pages[2], pages[0]); // 1-character pieces
  } finally {
    await server.stop();
    await rm(workspace, { recursive: true, force: true });
  }
});
