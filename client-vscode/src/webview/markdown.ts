/**
 * Model text → safe HTML: Markdown by `marked`, then sanitized by `DOMPurify`.
 * Links may only be http(s) or mailto (never `command:`, `javascript:`, `file:`,
 * `vscode:`); images, forms, styles and every event-handler attribute are removed.
 * {@link showDisplayForm} then shows the rendered text in display form.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";
import { displayText } from "../display";

const marked = new Marked({ gfm: true, breaks: false, async: false });

/** URIs a link may have. */
const SAFE_URI = /^(?:https?:|mailto:)/i;

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    const href = node.getAttribute("href") ?? "";
    if (!SAFE_URI.test(href)) {
      node.removeAttribute("href");
    }
    node.removeAttribute("target");
    node.setAttribute("rel", "noreferrer noopener");
  }
});

/** Sanitized HTML for `text` (untrusted Markdown). */
export function renderMarkdown(text: string): string {
  const html = marked.parse(text) as string;
  return DOMPurify.sanitize(html, {
    ALLOWED_URI_REGEXP: SAFE_URI,
    FORBID_TAGS: ["img", "style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed", "svg", "math", "video", "audio", "source", "link", "meta", "base"],
    FORBID_ATTR: ["style", "srcset", "action", "formaction", "xlink:href"],
    ALLOW_DATA_ATTR: false,
  });
}

/**
 * Shows every text under `root` (prose, code, link texts, titles) in display form
 * (src/display.ts): control, bidirectional and invisible characters become escapes
 * (`\u202e`), line breaks and tabs stay. Hrefs are already percent-encoded by marked.
 */
export function showDisplayForm(root: Element): void {
  const walker = root.ownerDocument.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
    const text = node.nodeValue ?? "";
    const shown = displayText(text, "\n\t");
    if (shown !== text) {
      node.nodeValue = shown;
    }
  }
  for (const element of Array.from(root.querySelectorAll("[title]"))) {
    element.setAttribute("title", displayText(element.getAttribute("title") ?? ""));
  }
}

/** Completed blocks per group: a finished group keeps its identity, so a render skips it. */
export const GROUP_SIZE = 64;

/**
 * Splits streamed Markdown into blocks (marked's top-level tokens) as it grows, so a
 * renderer parses and renders each completed block once: an append re-lexes only from
 * the start of the last two blocks (the open one, and the one before it, which the next
 * piece may still join: a list going on, a paragraph becoming a table), not the message.
 * Completed blocks are kept in groups of {@link GROUP_SIZE}; a finished group (and every
 * block string) keeps its identity across updates.
 */
export class BlockSplitter {
  private groups: string[][] = [];
  private current: string[] = [];
  private done = 0; // length of text covered by completed blocks
  private source = "";

  /** The blocks of `text`: completed groups, then the open tail (re-lexed each time). */
  update(text: string): { groups: readonly (readonly string[])[]; open: string } {
    if (!this.continues(text)) {
      this.groups = [];
      this.current = [];
      this.done = 0;
    }
    this.source = text;
    const tail = text.slice(this.done);
    const raws = marked.lexer(tail).map((token) => token.raw);
    let advance = 0;
    const closed: string[] = [];
    for (let i = 0; i < raws.length - 2; i++) {
      const raw = raws[i] as string;
      // marked normalizes line ends; a block whose raw is not the text as written stays open.
      if (raw.length === 0 || !tail.startsWith(raw, advance)) {
        break;
      }
      closed.push(raw);
      advance += raw.length;
    }
    for (const raw of closed) {
      this.current.push(raw);
      if (this.current.length === GROUP_SIZE) {
        this.groups.push(this.current);
        this.current = [];
      }
    }
    this.done += advance;
    const groups: (readonly string[])[] = this.groups.slice();
    if (this.current.length > 0) {
      groups.push(this.current.slice());
    }
    return { groups, open: text.slice(this.done) };
  }

  /** Whether `text` extends the text last seen (checked near the completed blocks' end). */
  private continues(text: string): boolean {
    if (text.length < this.source.length) {
      return false;
    }
    const from = Math.max(0, this.done - 256);
    return text.slice(from, this.source.length) === this.source.slice(from);
  }
}
