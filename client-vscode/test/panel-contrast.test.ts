/**
 * Contrast (issue 25): every button, badge and status word of the panel is readable in VS
 * Code's default themes (Dark+, Light+, Dark and Light High Contrast, with their real
 * `--vscode-*` values: test/panel/themes.ts). WCAG 2 contrast ratios are computed in Chromium
 * from getComputedStyle: the text colour over the element's background composited down its
 * ancestors (theme colours with alpha included); at least 4.5:1 for text, 3:1 for an icon-only
 * button. The page is the real panel bundle; the transcript is built from host messages (no
 * server), so every kind of button is on screen at once: an approval (Allow once, Allow always,
 * Reject…, its Reject, Review in diff editor), each call status's badge, a failed turn with a
 * blocked undo (Overwrite, Undo the rest, kept/restored outcomes), a stopped turn (Continue,
 * Undo this turn, Undo and forget), a no-key turn (its advice, buttons and opened Details), a
 * notice, the empty Past conversations, a code block's Copy, the rules bar. Screenshots of each theme
 * go to test-artifacts/.
 */
import assert from "node:assert/strict";
import { mkdir } from "node:fs/promises";
import * as path from "node:path";
import { test } from "node:test";
import type { Page } from "playwright-core";
import type { ContextChip, HostMessage } from "../src/panel/messages";
import type { ToolCallWire } from "../src/protocol";
import { usePanelSite } from "./panel/harness";
import { PACKAGE_ROOT } from "./panel/server";
import { DEFAULT_THEMES, type PanelTheme } from "./panel/themes";

const ARTIFACTS = path.join(PACKAGE_ROOT, "test-artifacts");
const site = usePanelSite();

function call(id: string, index: number, name: string, status: ToolCallWire["status"], extra: Partial<ToolCallWire> = {}): ToolCallWire {
  const args = { path: "hello.txt" };
  return {
    toolCallId: id, index, name, kind: "function", status, rev: 3, argumentsText: JSON.stringify(args),
    partialArguments: args, arguments: args, path: "hello.txt", ...extra,
  };
}

const S = "s1";
const update = (u: unknown): HostMessage => ({ type: "update", params: { sessionId: S, update: u } } as HostMessage);

/** A transcript with every kind of button and badge. */
const MESSAGES: HostMessage[] = [
  { type: "session", sessionId: S, model: "openai:gpt-4o-mini", instructions: [{ path: "AGENTS.md", bytes: 1200, truncated: true }], mcpServers: [] },
  { type: "prompt", text: "Hello." },
  update({ sessionUpdate: "turn", state: "started", turnId: "t0" }),
  update({ sessionUpdate: "turn", state: "ended", turnId: "t0", stopReason: "error", errorCode: "no_api_key", message: "no API key is set for the model endpoint https://api.openai.com/v1" }),
  { type: "notice", text: "The Toolwire server restarted; the next prompt starts a new conversation." },
  { type: "prompt", text: "Edit hello.txt." },
  update({ sessionUpdate: "turn", state: "started", turnId: "t1" }),
  update({ sessionUpdate: "tool_call", toolCall: call("c1", 0, "read_file", "done", { result: { ok: true, content: "hello", data: null, errorCode: null } }) }),
  update({ sessionUpdate: "tool_call", toolCall: call("c2", 1, "edit_file", "errored", { error: { code: "no_match", message: "old_string is not in hello.txt", retryable: false } }) }),
  update({ sessionUpdate: "tool_call", toolCall: call("c3", 2, "create_file", "canceled", { cancelReason: "rejected" }) }),
  update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Here:\n\n```sh\ngit status\n```\n" } }),
  update({ sessionUpdate: "turn", state: "ended", turnId: "t1", stopReason: "error", message: "HTTP 500 from the endpoint" }),
  { type: "prompt", text: "Again.", chips: [
    { kind: "file", path: "src/app.py", label: "src/app.py" },
    { kind: "selection", path: "src/app.py", label: "src/app.py:3-7", range: { start: { line: 2, character: 0 }, end: { line: 7, character: 0 } } },
    { kind: "problems", path: "src/app.py", label: "Problems in src/app.py" },
  ] },
  update({ sessionUpdate: "turn", state: "started", turnId: "t2" }),
  update({ sessionUpdate: "tool_call", toolCall: call("c5", 0, "git_status", "calling") }),
  update({ sessionUpdate: "tool_call", toolCall: call("c6", 1, "create_file", "generating") }),
  update({ sessionUpdate: "turn", state: "ended", turnId: "t2", stopReason: "max_turn_requests" }),
  { type: "turns", turns: [
    { turnId: "t1", stopReason: "error", message: null, usage: null, undoable: true, undone: false },
    { turnId: "t2", stopReason: "max_turn_requests", message: null, usage: null, undoable: true, undone: false },
  ] },
  {
    type: "undo",
    request: {},
    outcome: {
      turnId: "t1", status: "blocked", message: "Nothing was undone: 1 change(s) of turn t1 cannot be undone as they are.",
      paths: [
        { path: "a.txt", outcome: "kept", reason: "changed since the turn", diff: "-mine\n" },
        { path: "b.txt", outcome: "restored" },
        { path: "c.bin", outcome: "not_undoable", reason: "over the checkpoint limit" },
      ],
      git: [],
    },
  },
  {
    type: "permission",
    pending: {
      requestId: "r1",
      params: {
        sessionId: S,
        toolCall: call("c4", 2, "edit_file", "generated"),
        subject: { kind: "edit", tool: "edit_file", path: "hello.txt", diff: "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hello\n+hello world\n" },
        options: [
          { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
          { optionId: "allow_always", name: "Allow always", kind: "allow_always" },
          { optionId: "reject_once", name: "Reject", kind: "reject_once" },
        ],
      },
    },
  },
];

async function openBare(theme: PanelTheme): Promise<Page> {
  const page = await newPage(theme);
  await dispatch(page, MESSAGES);
  await page.getByRole("region", { name: "Approval for edit_file" }).waitFor();
  await page.getByRole("button", { name: "Reject…" }).click();
  await page.locator("form.reject button.danger").waitFor();
  await page.locator(".turn-detail summary").click(); // the no-key turn's server message
  await page.locator(".turn-detail .detail-text").waitFor();
  await page.locator(".history-menu summary").click(); // its "No other conversation…"
  await page.locator(".history-menu .empty").waitFor();
  return page;
}

function dispatch(page: Page, messages: HostMessage[]): Promise<void> {
  return page.evaluate((messages) => {
    for (const data of messages) {
      window.dispatchEvent(new MessageEvent("message", { data }));
    }
  }, messages);
}

async function newPage(theme: PanelTheme): Promise<Page> {
  const page = await site.browser.newPage({ viewport: { width: 460, height: 1600 } });
  await page.addInitScript((arg: PanelTheme) => {
    (window as unknown as Record<string, unknown>).acquireVsCodeApi = () => ({ postMessage: () => undefined, getState: () => undefined, setState: () => undefined });
    document.addEventListener("DOMContentLoaded", () => {
      document.body.className = arg.bodyClass;
      for (const [name, value] of Object.entries(arg.vars)) {
        document.documentElement.style.setProperty(name, value);
      }
    });
  }, theme);
  await page.goto(site.url);
  return page;
}

const MENTIONS = [
  { kind: "selection", path: "src/app.py", label: "src/app.py:3-7", source: "selection", range: { start: { line: 2, character: 0 }, end: { line: 6, character: 9 } } },
  { kind: "problems", path: "src/app.py", label: "Problems in src/app.py", source: "problems" },
  { kind: "file", path: "README.md", label: "README.md", source: "open" },
  { kind: "file", path: "docs/guide.md", label: "docs/guide.md", source: "workspace" },
] as const;

/**
 * The empty panel: the welcome's buttons, the model picker, the past conversations (the
 * current one bold), a chip from Attach Selection, and the `@` picker open on its choices.
 */
async function openWelcome(theme: PanelTheme): Promise<Page> {
  const page = await newPage(theme);
  await dispatch(page, [
    { type: "session", sessionId: S, model: "openai:gpt-4o-mini", instructions: [], mcpServers: [] },
    { type: "models", active: "openai:gpt-4o-mini", models: [{ spec: "openai:gpt-4o-mini", name: "gpt-4o-mini", source: "endpoint" }, { spec: "replay", name: "Offline demo", source: "builtin" }] },
    { type: "history", sessions: [
      { sessionId: S, title: "Fix the failing test in src/app.py", updatedAt: 1764680000, updated: 1764680000, turns: 3 },
      { sessionId: "s0", title: "Explain this code", updatedAt: 1764600000, updated: 1764600000, turns: 1 },
    ] } as unknown as HostMessage,
    { type: "attach", chip: { kind: "file", path: "src/app.py", label: "src/app.py" } },
  ]);
  await page.getByRole("region", { name: "Welcome" }).waitFor();
  await page.locator(".composer .chip").waitFor();
  await page.getByRole("button", { name: "Delete: Explain this code" }).click(); // its Delete / Keep question
  await page.getByRole("button", { name: "Keep", exact: true }).waitFor();
  await page.getByRole("textbox", { name: "Prompt" }).fill("@");
  await dispatch(page, [{ type: "mentions", query: "", items: MENTIONS as unknown as ContextChip[] }]);
  await page.getByRole("listbox", { name: "Add context" }).waitFor();
  return page;
}

interface Measured {
  what: string;
  ratio: number;
  needed: number;
  fg: string;
  bg: string;
}

/** The contrast of every button, badge and status word on the page (computed in the page). */
const MEASURED = "button, select, .badge, .outcome, .stop-reason, .turn-state, .provider, .chip-label, .mention-group, .history .meta, .welcome p, .turn-advice span, .turn-detail summary, .turn-detail .detail-text, .notice, .empty";

function measure(page: Page): Promise<Measured[]> {
  return page.evaluate((selector) => {
    type Rgba = [number, number, number, number];
    const probe = document.createElement("canvas").getContext("2d") as CanvasRenderingContext2D;
    const parse = (css: string): Rgba => {
      const m = /rgba?\(([^)]+)\)/.exec(css);
      if (m === null) {
        // Anything else (a color() form): let the canvas turn it into rgb.
        probe.fillStyle = "#000";
        probe.fillStyle = css;
        const v = probe.fillStyle;
        return v.startsWith("#") ? [parseInt(v.slice(1, 3), 16), parseInt(v.slice(3, 5), 16), parseInt(v.slice(5, 7), 16), 1] : parse(v);
      }
      const parts = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
      return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
    };
    const over = (top: Rgba, bottom: Rgba): Rgba => {
      const a = top[3] + bottom[3] * (1 - top[3]);
      if (a === 0) return [0, 0, 0, 0];
      const mix = (i: number) => (top[i] * top[3] + bottom[i] * bottom[3] * (1 - top[3])) / a;
      return [mix(0), mix(1), mix(2), a];
    };
    const background = (element: Element): Rgba => {
      const layers: Rgba[] = [];
      for (let node: Element | null = element; node !== null; node = node.parentElement) {
        layers.push(parse(getComputedStyle(node).backgroundColor));
      }
      let color: Rgba = [255, 255, 255, 1]; // under the page: VS Code's webview is opaque
      for (const layer of layers.reverse()) {
        color = over(layer, color);
      }
      return color;
    };
    const luminance = ([r, g, b]: Rgba) => {
      const c = (v: number) => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * c(r) + 0.7152 * c(g) + 0.0722 * c(b);
    };
    const hex = (c: Rgba) => `#${c.slice(0, 3).map((v) => Math.round(v).toString(16).padStart(2, "0")).join("")}`;
    const out: { what: string; ratio: number; needed: number; fg: string; bg: string }[] = [];
    /** What `opacity` down the ancestors leaves of the text's alpha (conservative: the background is taken as opaque). */
    const opacity = (element: Element): number => {
      let o = 1;
      for (let node: Element | null = element; node !== null; node = node.parentElement) {
        o *= Number(getComputedStyle(node).opacity);
      }
      return o;
    };
    for (const element of document.querySelectorAll(selector)) {
      const box = element.getBoundingClientRect();
      if (box.width === 0 || box.height === 0) continue;
      const bg = background(element);
      const color = parse(getComputedStyle(element).color);
      const fg = over([color[0], color[1], color[2], color[3] * opacity(element)], bg);
      const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
      const text = (element.textContent ?? "").trim();
      const label = element.getAttribute("aria-label") ?? "";
      out.push({
        what: `${element.tagName.toLowerCase()}.${[...element.classList].join(".")} "${text || label}"`,
        ratio: Math.round(((hi + 0.05) / (lo + 0.05)) * 100) / 100,
        needed: text === "" ? 3 : 4.5,
        fg: hex(fg),
        bg: hex(bg),
      });
    }
    return out;
  }, MEASURED);
}

function poorOnes(measured: Measured[]): string[] {
  return measured.filter((m) => m.ratio < m.needed).map((m) => `${m.what}: ${m.ratio} (${m.fg} on ${m.bg})`);
}

for (const [name, theme] of Object.entries(DEFAULT_THEMES)) {
  test(`contrast in ${name}: every button, badge and status word at least 4.5:1 (icons 3:1)`, async () => {
    const page = await openBare(theme);
    try {
      const measured = await measure(page);
      const kinds = measured.map((m) => m.what).join("\n");
      for (const expected of ["Allow once", "Allow always", "Reject…", "Review in diff editor", '"Reject"', "Overwrite", "Undo the rest", "Continue", "Undo this turn", "Undo and forget", "Copy", "AGENTS.md", "set-api-key", "Problems in src/app.py", "Set one for the model endpoint", "Needs an API key", "summary", "api.openai.com/v1", "notice \"The Toolwire server restarted", "empty \"No other conversation"]) {
        assert.ok(kinds.includes(expected), `${expected} is measured:\n${kinds}`);
      }
      for (const badge of ["Done", "Failed", "Cancelled", "Running", "Writing", "Waiting"]) {
        assert.ok(kinds.includes(`badge`) && kinds.includes(`"${badge}"`), `badge ${badge} is measured:\n${kinds}`);
      }
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(ARTIFACTS, `panel-contrast-${name}.png`), fullPage: true });
      assert.deepEqual(poorOnes(measured), [], `too little contrast in ${name}`);
    } finally {
      await page.close();
    }
  });
}

for (const [name, theme] of Object.entries(DEFAULT_THEMES)) {
  test(`contrast in ${name}: the welcome, model picker, past conversations, chips and @ picker at least 4.5:1`, async () => {
    const page = await openWelcome(theme);
    try {
      const measured = await measure(page);
      const kinds = measured.map((m) => m.what).join("\n");
      for (const expected of ["Select model", "Set API Key", "Try the offline demo", "select.model-picker", "Fix the failing test", "Delete: Fix the failing test", "button.danger \"Delete\"", "\"Keep\"",
        "turns", "chip-label \"src/app.py\"", "Remove src/app.py", "src/app.py:3-7", "Problems in src/app.py", "mention-group \"Selection\"", "mention-group \"File\""]) {
        assert.ok(kinds.includes(expected), `${expected} is measured:\n${kinds}`);
      }
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(ARTIFACTS, `panel-contrast-welcome-${name}.png`), fullPage: true });
      assert.deepEqual(poorOnes(measured), [], `too little contrast in ${name}`);
    } finally {
      await page.close();
    }
  });
}
