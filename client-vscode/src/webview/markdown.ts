/**
 * Model text → safe HTML: Markdown by `marked`, then sanitized by `DOMPurify`.
 * Links may only be http(s) or mailto (never `command:`, `javascript:`, `file:`,
 * `vscode:`); images, forms, styles and every event-handler attribute are removed.
 */
import DOMPurify from "dompurify";
import { Marked } from "marked";

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
