/**
 * The chat webview's HTML: a strict Content-Security-Policy (scripts only with
 * this page's nonce, styles and fonts only from the extension's own files, no
 * remote anything, no inline handlers), the bundle and the codicon font.
 * No `vscode` import: the test harness serves the same page.
 */
import { randomBytes } from "node:crypto";

/** Where the page's assets are, as URIs the webview may load (`webview.asWebviewUri`). */
export interface PanelAssets {
  /** `webview.cspSource`: the origin the assets are served from. */
  cspSource: string;
  script: string;
  style: string;
  codicons: string;
}

/** A fresh nonce: 128 random bits, base64. */
export function makeNonce(): string {
  return randomBytes(16).toString("base64");
}

/** The Content-Security-Policy of the page. `img-src` allows the webview's own and `data:` images only. */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
    "connect-src 'none'",
    "frame-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join("; ");
}

/** The page. Only asset URIs and the nonce are interpolated, each HTML-escaped. */
export function panelHtml(assets: PanelAssets, nonce: string): string {
  const e = escapeAttribute;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${e(contentSecurityPolicy(assets.cspSource, nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${e(assets.codicons)}">
<link rel="stylesheet" href="${e(assets.style)}">
<title>Toolwire</title>
</head>
<body>
<div id="root"></div>
<script nonce="${e(nonce)}" src="${e(assets.script)}"></script>
</body>
</html>`;
}

function escapeAttribute(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
