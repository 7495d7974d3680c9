/**
 * MCP servers in the chat panel (issue 23, "Front-ends"): one line per server of the conversation
 * (ready, failed with why), the approval of an MCP tool (its server, the server's hints, "Toolwire
 * cannot undo what this tool does" for a tool not marked read-only), and the image a tool
 * returned, shown as a data: URL the panel builds under the page's strict CSP. The webview
 * bundle in headless Chromium, the real PanelHost, a real `toolwire serve` over stdio playing a
 * replay script, and a real MCP server from the registries (`@modelcontextprotocol/server-everything`
 * over stdio, installed by `make mcp-servers`; see tests/mcp_servers.py).
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";

const TIMEOUT_MS = 120_000;
const CACHE = process.env.TOOLWIRE_MCP_CACHE ?? path.join(os.homedir(), ".cache", "toolwire-mcp");
const EVERYTHING = path.join(CACHE, "npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");

const site = usePanelSite();

/** server-everything over stdio offering `tools` (its allowlist: all of them pass maxTools); fails (never skips) when `make mcp-servers` has not installed it. */
function everything(tools: string[]): Record<string, unknown> {
  assert.ok(existsSync(EVERYTHING), `the test MCP server ${EVERYTHING} is not installed: run \`make mcp-servers\``);
  return { type: "stdio", command: process.execPath, args: [EVERYTHING, "stdio"], tools };
}

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

function card(panel: Panel, name: string) {
  return panel.page.locator("article.card", { has: panel.page.locator(".tool-name", { hasText: name }) });
}

async function serverLines(panel: Panel): Promise<string[]> {
  return (await panel.page.getByRole("list", { name: "MCP servers" }).getByRole("listitem").allInnerTexts()).map((line) =>
    line.replace(/\s+/g, " ").trim(),
  );
}

test("MCP servers: a line each, an approval with the server and its hints, the image a tool returned", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server } = await openWorkspacePanel(t, site, {
    name: "mcp",
    gitInit: ["-q"],
    files: { "hello.txt": "hello\n" },
    script: [
      { tool_calls: [{ id: "img", name: "mcp__everything__get-tiny-image", arguments: {} }] },
      { tool_calls: [{ id: "zip", name: "mcp__everything__gzip-file-as-resource", arguments: { name: "a.gz", data: "data:text/plain,hi" } }] },
      { text: "Here is the picture." },
    ],
    settings: { mcpStartTimeout: 60, mcpServers: { everything: everything(["get-tiny-image", "gzip-file-as-resource"]), broken: { command: "/nonexistent/mcp-server" } } },
  });
  const { page } = panel;
  await ask(panel, "Show me a tiny image.");

  const image = card(panel, "mcp__everything__get-tiny-image");
  const approval = image.getByRole("region", { name: "Approval for mcp__everything__get-tiny-image" });
  await approval.waitFor();
  assert.match(await approval.locator(".ask").innerText(), /get-tiny-image from the MCP server everything/);
  assert.match(await approval.locator(".hints").innerText(), /^Hints from the server, not checked: read-only, not destructive/);
  assert.equal(await approval.locator(".cannot-undo").count(), 0, "a read-only tool: no undo line");
  await approval.getByRole("button", { name: "Allow once" }).click();

  const zip = card(panel, "mcp__everything__gzip-file-as-resource");
  const asked = zip.getByRole("region", { name: "Approval for mcp__everything__gzip-file-as-resource" });
  await asked.waitFor();
  assert.equal((await asked.locator(".cannot-undo").innerText()).trim(), "Toolwire cannot undo what this tool does");
  assert.match(await asked.locator(".covers").innerText(), /with any arguments for this conversation \(not the other tools of everything\)/);
  await asked.getByRole("button", { name: "Reject…" }).click();
  await asked.getByRole("button", { name: "Reject", exact: true }).click();
  await page.locator(".turn-end").waitFor();

  const shown = image.locator(".images img");
  assert.equal(await shown.count(), 1);
  assert.match((await shown.getAttribute("src")) ?? "", /^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);
  assert.match((await shown.getAttribute("alt")) ?? "", /^Image 1 from mcp__everything__get-tiny-image \(image\/png, /);
  assert.ok(await shown.evaluate((img) => (img as HTMLImageElement).complete && (img as HTMLImageElement).naturalWidth > 0), "the image is decoded");
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations), []);

  const lines = await serverLines(panel);
  assert.equal(lines.length, 2, lines.join(" | "));
  assert.equal(lines.find((line) => line.startsWith("everything")), "everything ready");
  assert.match(lines.find((line) => line.startsWith("broken")) ?? "", /^broken failed \S/);
  assert.ok(server.permissions.every((p) => p.subject.kind === "mcp"));

  // A reloaded panel shows the same servers (the snapshot's mcpServers) and the image again.
  await panel.reload();
  await page.locator(".turn-end").waitFor();
  assert.deepEqual(await serverLines(panel), lines);
  assert.equal(await image.locator(".images img").count(), 1);
});
