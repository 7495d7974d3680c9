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
