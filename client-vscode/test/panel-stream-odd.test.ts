/**
 * Streaming Markdown renders block by block (markdown.ts, BlockSplitter): a long message
 * streamed in odd pieces — fences split across pieces, lists, a fence still open at the
 * end, HTML in the text — ends with the same DOM as the same text rendered at once, and
 * is the same at every step as the text so far rendered at once. Correctness only, no
 * timing. The webview bundle in headless Chromium, fed host messages directly.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Page } from "playwright-core";
import type { HostMessage } from "../src/panel/messages";
import { openWorkspacePanel, usePanelSite } from "./panel/harness";

const TIMEOUT_MS = 90_000;

const site = usePanelSite();

const SECTION = [
  "## Heading one\n\nA paragraph with `code`, *emphasis*, **strong**, a [link](https://example.com/a) and <b>bold html</b> <script>alert(1)</script>.\n",
  "It goes on\nover lines.\n\n",
  "- first item\n- second item with `code`\n  - nested item\n\n- loose item after a blank line\n\n",
  "1. one\n2. two\n\n",
  "```python\ndef f(x):\n    return x  # <i>not html</i>\n\n    indented after a blank\n```\n\n",
  "> a quote\n> over two lines\n\n",
  "| a | b |\n|---|---|\n| 1 | 2 |\n\n",
  "Setext heading\n===\n\n",
  '<div class="note">an html block <img src=x onerror=alert(1)></div>\n\n',
  "    indented code\n\n    more indented code\n\nafter\n\n",
  "---\n\n",
  "Text right before a fence\n```\nfence without a blank line before\n```\n",
].join("");
const TEXT = `${SECTION.repeat(6)}Last paragraph, then a fence left open:\n\n\`\`\`ts\nconst open = true;\n// still writing`;

/** Pieces of 1, 2, 3, 5, 7, 11, 13 and 17 characters, in turn. */
function pieces(text: string): string[] {
  const sizes = [1, 2, 3, 5, 7, 11, 13, 17];
  const out: string[] = [];
  for (let at = 0, i = 0; at < text.length; i++) {
    const size = sizes[i % sizes.length];
    out.push(text.slice(at, at + size));
    at += size;
  }
  return out;
}

function chunk(text: string): HostMessage {
  return { type: "update", params: { sessionId: "s", update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } } as never } };
}

/** Dispatches `messages` into the page, then waits for the panel's next paint. */
async function feed(page: Page, messages: HostMessage[]): Promise<void> {
  await page.evaluate(async (list) => {
    for (const data of list) {
      window.dispatchEvent(new MessageEvent("message", { data }));
    }
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  }, messages);
}

/** The HTML of the `index`th assistant message, the block wrappers taken out (they are `display: contents`). */
async function messageHtml(page: Page, index: number): Promise<string> {
  return page.evaluate((i) => {
    const markdown = document.querySelectorAll(".message.assistant .markdown")[i];
    const copy = markdown.cloneNode(true) as Element;
    for (const block of Array.from(copy.querySelectorAll(".md-block"))) {
      block.replaceWith(...Array.from(block.childNodes));
    }
    return copy.innerHTML;
  }, index);
}

test("a message streamed in odd pieces renders the same DOM as the same text at once", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await openWorkspacePanel(t, site, { name: "stream-odd", script: [{ text: "unused" }] });
  const page = panel.page;
  await page.locator(".empty").waitFor();
  const all = pieces(TEXT);
  assert.ok(all.some((piece) => piece.includes("`") && !piece.includes("```")), "some piece splits a fence");
  await feed(page, [{ type: "prompt", text: "streamed" }]);
  // Step by step, in batches of a few pieces (several pieces between paints, as when streaming).
  const checkpoints: { length: number; html: string }[] = [];
  let sent = "";
  for (let at = 0; at < all.length; at += 9) {
    const batch = all.slice(at, at + 9);
    await feed(page, batch.map(chunk));
    sent += batch.join("");
    if (checkpoints.length < 12 && (at / 9) % 23 === 0) {
      checkpoints.push({ length: sent.length, html: await messageHtml(page, 0) });
    }
  }
  assert.equal(sent, TEXT);
  const streamed = await messageHtml(page, 0);
  assert.ok(!/<script|onerror|<img/i.test(streamed), "sanitized");
  assert.match(streamed, /<b>bold html<\/b>/);
  assert.match(streamed, /still writing/);
  const blocks = await page.locator(".message.assistant").first().locator(".md-block").count();
  assert.ok(blocks > 50, `rendered block by block (${blocks} blocks)`);

  // The same text at once, and each checkpoint's text at once, as later messages.
  await feed(page, [{ type: "prompt", text: "at once" }, chunk(TEXT)]);
  assert.equal(await messageHtml(page, 1), streamed);
  for (const [i, { length, html }] of checkpoints.entries()) {
    await feed(page, [{ type: "prompt", text: `checkpoint ${i}` }, chunk(TEXT.slice(0, length))]);
    assert.equal(await messageHtml(page, 2 + i), html, `the text's first ${length} characters`);
  }
});
