/**
 * The panel test harness: the webview bundle in headless Chromium (playwright-core
 * with Debian's chromium), a stand-in for `acquireVsCodeApi`, and the extension's
 * real host-side panel logic (PanelHost) connected to a real `toolwire serve`.
 */
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, type TestContext } from "node:test";
import { chromium, type Browser, type Page } from "playwright-core";
import { PanelHost, type PanelUi, type PreviewResult, type SessionMemory } from "../../src/panel/host";
import { makeNonce, panelHtml } from "../../src/panel/html";
import type { HostMessage, WebviewMessage } from "../../src/panel/messages";
import { RequestPermission, SessionUpdateNotification, type RequestPermissionParams } from "../../src/protocol";
import { git, PACKAGE_ROOT, startServer, type Server } from "./server";

/** Where Debian installs Chromium. */
export const CHROMIUM = process.env.TOOLWIRE_CHROMIUM ?? "/usr/bin/chromium";

/** Flags that work in this container (no sandbox, no GPU, no network chatter). */
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Launches Chromium. Playwright gives it a fresh temporary profile
 * (`--user-data-dir`) of its own and removes it on close.
 *
 * @throws Error saying how to install Chromium when it is missing (never a skip).
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}. Install it with: sudo apt-get install -y chromium (or set TOOLWIRE_CHROMIUM).`);
  }
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_FLAGS, headless: true });
}

/** VS Code theme variables (a subset of Dark Modern / Light Modern) for the page. */
export const THEMES = {
  dark: {
    bodyClass: "vscode-dark",
    vars: {
      "--vscode-foreground": "#cccccc", "--vscode-sideBar-background": "#181818", "--vscode-editor-background": "#1f1f1f",
      "--vscode-descriptionForeground": "#9d9d9d", "--vscode-panel-border": "#2b2b2b", "--vscode-input-background": "#313131",
      "--vscode-input-foreground": "#cccccc", "--vscode-input-border": "#3c3c3c", "--vscode-button-background": "#0078d4",
      "--vscode-button-foreground": "#ffffff", "--vscode-button-secondaryBackground": "#313131", "--vscode-button-secondaryForeground": "#cccccc",
      "--vscode-badge-background": "#616161", "--vscode-badge-foreground": "#f8f8f8", "--vscode-errorForeground": "#f85149",
      "--vscode-textCodeBlock-background": "#2b2b2b", "--vscode-textLink-foreground": "#4daafc", "--vscode-focusBorder": "#0078d4",
      "--vscode-diffEditor-insertedLineBackground": "#9bb95533", "--vscode-diffEditor-removedLineBackground": "#ff000033",
      "--vscode-testing-iconPassed": "#73c991", "--vscode-editorWarning-foreground": "#cca700", "--vscode-font-family": "sans-serif",
      "--vscode-editor-font-family": "monospace", "--vscode-font-size": "13px",
    },
  },
  light: {
    bodyClass: "vscode-light",
    vars: {
      "--vscode-foreground": "#3b3b3b", "--vscode-sideBar-background": "#f8f8f8", "--vscode-editor-background": "#ffffff",
      "--vscode-descriptionForeground": "#717171", "--vscode-panel-border": "#e5e5e5", "--vscode-input-background": "#ffffff",
      "--vscode-input-foreground": "#3b3b3b", "--vscode-input-border": "#cecece", "--vscode-button-background": "#005fb8",
      "--vscode-button-foreground": "#ffffff", "--vscode-button-secondaryBackground": "#e5e5e5", "--vscode-button-secondaryForeground": "#3b3b3b",
      "--vscode-badge-background": "#cccccc", "--vscode-badge-foreground": "#3b3b3b", "--vscode-errorForeground": "#f85149",
      "--vscode-textCodeBlock-background": "#f3f3f3", "--vscode-textLink-foreground": "#005fb8", "--vscode-focusBorder": "#005fb8",
      "--vscode-diffEditor-insertedLineBackground": "#9bb95533", "--vscode-diffEditor-removedLineBackground": "#ff000033",
      "--vscode-testing-iconPassed": "#388a34", "--vscode-editorWarning-foreground": "#bf8803", "--vscode-font-family": "sans-serif",
      "--vscode-editor-font-family": "monospace", "--vscode-font-size": "13px",
    },
  },
} as const;

/** Serves the panel page (the real panelHtml with its CSP) and dist/webview on 127.0.0.1. */
export async function servePanel(): Promise<{ url: string; close(): Promise<void> }> {
  const dist = path.join(PACKAGE_ROOT, "dist", "webview");
  let origin = "";
  const http: HttpServer = createServer((request, response) => {
    const url = new URL(request.url ?? "/", origin);
    if (url.pathname === "/") {
      const nonce = makeNonce();
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end(
        panelHtml(
          { cspSource: origin, script: `${origin}/dist/panel.js`, style: `${origin}/dist/panel-style.css`, codicons: `${origin}/dist/codicons/codicon.css` },
          nonce,
        ),
      );
      return;
    }
    const file = path.join(dist, path.normalize(url.pathname.replace(/^\/dist\//, "")));
    if (!file.startsWith(dist)) {
      response.writeHead(403).end();
      return;
    }
    readFile(file).then(
      (body) => {
        const type = file.endsWith(".js") ? "text/javascript" : file.endsWith(".css") ? "text/css" : file.endsWith(".ttf") ? "font/ttf" : "application/octet-stream";
        response.writeHead(200, { "content-type": type }).end(body);
      },
      () => response.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  return { url: `${origin}/`, close: () => new Promise((resolve) => http.close(() => resolve())) };
}

/** What the stand-in editor recorded. */
export interface UiLog {
  diffs: { preview: PreviewResult; title: string }[];
  opened: string[];
  /** Each file opened: with the lines highlighted, and whether in a pinned tab (follow-along). */
  openings: { path: string; highlight: readonly [number, number][]; pinned: boolean }[];
  /** Each follow-along highlight an undo replaced, with its message. */
  undone: { path: string; message: string }[];
  /** Each file opened at a place (a problem's link): path, 1-based line and column. */
  openedAt: { path: string; line: number; column: number }[];
  /** Told after each record the stand-in editor makes (see `uiReaches`). */
  listeners: Set<() => void>;
  links: string[];
  copied: string[];
  errors: string[];
  notifications: RequestPermissionParams[];
  /** The line each notification showed. */
  notificationTexts: string[];
  statuses: { running: boolean; waiting: number; turnState: string | null }[];
  /** Every message the page sent to the host. */
  fromPage: WebviewMessage[];
  /** `toolwire/session/update` notifications received from the server. */
  updates: number;
  /** The `paths` of each `workspace_change` update received, in order. */
  workspaceChanges: string[][];
  /** Each model the panel set (`setModel`), each Set API Key asked, each Markdown export shown. */
  modelsSet?: string[];
  apiKeyAsked?: number;
  exported?: string[];
}

/** A page wired to a PanelHost wired to a server. */
export interface Panel {
  page: Page;
  host: PanelHost;
  ui: UiLog;
  /** Reloads the page (the webview is re-created, as when VS Code hides and shows it). */
  reload(): Promise<void>;
}

/**
 * Opens the panel page in `browser`, with a PanelHost on `server`.
 *
 * @param options.model The `model` of new sessions (e.g. `replay:/abs/script.jsonl`).
 * @param options.theme Which theme's variables the page gets.
 * @param options.visible Whether the host sees the panel as visible (hidden: notifications).
 * @param options.approval The `toolwire.approval` setting (default `ask`).
 * @param options.memory The host's session memory (VS Code's workspaceState), e.g. the
 *   session id an earlier window remembered before a window reload.
 */
/** Resolves once `ready()` holds of the stand-in editor's records, checked after each record (an event, not a poll). */
export function uiReaches(ui: UiLog, ready: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = (): void => {
      if (ready()) {
        ui.listeners.delete(check);
        resolve();
      }
    };
    ui.listeners.add(check);
    check();
  });
}

/** Resolves once the stand-in editor has opened `count` files at a place. */
export function openedAtReaches(ui: UiLog, count: number): Promise<void> {
  return uiReaches(ui, () => ui.openedAt.length >= count);
}

export async function openPanel(
  browser: Browser,
  url: string,
  server: Server,
  options: {
    model: string; cwd: string; theme?: keyof typeof THEMES; visible?: boolean; memory?: SessionMemory; approval?: "ask" | "auto" | "deny";
    /** Editor parts a test gives the host (e.g. the `@` picker's `editorContext` and `resource`). */
    ui?: Partial<PanelUi>;
  },
): Promise<Panel> {
  const page = await browser.newPage({ viewport: { width: 460, height: 900 } });
  const ui: UiLog = { diffs: [], opened: [], openings: [], undone: [], openedAt: [], listeners: new Set(), links: [], copied: [], errors: [], notifications: [], notificationTexts: [], statuses: [], fromPage: [], updates: 0, workspaceChanges: [] };
  const told = (): void => {
    for (const listener of [...ui.listeners]) listener();
  };
  const panelUi: PanelUi = {
    settings: () => ({ model: ui.modelsSet?.at(-1) ?? options.model, approval: options.approval ?? "ask", followAlong: true, cwd: options.cwd }),
    setModel: async (spec) => {
      (ui.modelsSet ??= []).push(spec);
      told();
    },
    setApiKey: async () => {
      ui.apiKeyAsked = (ui.apiKeyAsked ?? 0) + 1;
      told();
    },
    showMarkdown: async (text) => {
      (ui.exported ??= []).push(text);
      told();
    },
    notifyPermission: async (message, params) => {
      ui.notifications.push(params);
      ui.notificationTexts.push(message);
      return undefined;
    },
    showDiff: async (preview, title) => {
      ui.diffs.push({ preview, title });
    },
    openFile: (file, highlight, at, open) => {
      ui.opened.push(file);
      ui.openings.push({ path: file, highlight: highlight ?? [], pinned: open?.pinned === true });
      if (at !== undefined) {
        ui.openedAt.push({ path: file, ...at });
        told();
      }
    },
    undone: (file, message) => ui.undone.push({ path: file, message }),
    openLink: (href) => ui.links.push(href),
    copy: (text) => ui.copied.push(text),
    error: (message) => {
      ui.errors.push(message);
      told();
    },
    status: (state) => ui.statuses.push(state),
    reveal: () => undefined,
    ...options.ui,
  };
  const host = new PanelHost(
    { connection: async () => ({ rpc: server.connection, generation: 1 }) },
    panelUi,
    options.memory,
  );
  // One handler per method: the newest panel on a server gets its updates.
  server.connection.onNotification(SessionUpdateNotification, (params) => {
    ui.updates++;
    if (params.update.sessionUpdate === "workspace_change") {
      ui.workspaceChanges.push([...params.update.paths]);
    }
    host.onUpdate(params);
  });
  server.connection.onRequest(RequestPermission, (params, token) => {
    server.permissions.push(params);
    return host.requestPermission(params, token);
  });
  const theme = THEMES[options.theme ?? "dark"];
  await page.addInitScript((themeArg: { bodyClass: string; vars: Record<string, string> }) => {
    // The acquireVsCodeApi stand-in: messages to the host go through a Playwright binding.
    const w = window as unknown as Record<string, unknown>;
    let state: unknown;
    w.acquireVsCodeApi = () => ({
      postMessage: (message: unknown) => (w.__toHost as (m: unknown) => void)(message),
      getState: () => state,
      setState: (value: unknown) => (state = value),
    });
    document.addEventListener("DOMContentLoaded", () => {
      document.body.classList.add(themeArg.bodyClass);
      for (const [name, value] of Object.entries(themeArg.vars)) {
        document.documentElement.style.setProperty(name, value);
      }
    });
    w.__cspViolations = [];
    document.addEventListener("securitypolicyviolation", (event) => (w.__cspViolations as string[]).push(`${event.violatedDirective} ${event.blockedURI}`));
  }, theme);
  await page.exposeBinding("__toHost", (_source, message: WebviewMessage) => {
    ui.fromPage.push(message);
    void host.receive(message);
  });
  let detach = (): void => undefined;
  const attach = (): void => {
    detach();
    detach = host.attach({
      visible: options.visible ?? true,
      post: (message: HostMessage) => {
        void page
          .evaluate((m) => window.dispatchEvent(new MessageEvent("message", { data: m })), message)
          .catch(() => undefined); // the page is reloading; it asks for a reset when it is back
      },
    });
  };
  attach();
  await page.goto(url);
  return {
    page,
    host,
    ui,
    async reload() {
      attach();
      await page.reload();
    },
  };
}

/** The browser and the panel's page site that a test file's panels open in. */
export interface PanelSite {
  browser: Browser;
  url: string;
}

/**
 * Launches Chromium and serves the panel page once for the calling test file (node:test
 * `before`), closing both after its last test (`after`). The fields are set once `before` ran.
 */
export function usePanelSite(): PanelSite {
  const site = {} as PanelSite;
  let served: { url: string; close(): Promise<void> } | undefined;
  before(async () => {
    site.browser = await launchChromium();
    served = await servePanel();
    site.url = served.url;
  });
  after(async () => {
    await site.browser?.close();
    await served?.close();
  });
  return site;
}

/** What {@link openWorkspacePanel} makes. */
export interface WorkspaceSpec {
  /** The temporary workspace folder's name starts with `toolwire-panel-<name>-`. */
  name: string;
  /** The arguments of `git init` (e.g. `["-q", "-b", "main"]`); left out: the folder is no repository. */
  gitInit?: string[];
  /** Files written first (workspace-relative path: text); in a repository they are committed. */
  files?: Record<string, string>;
  /** Files written after that commit (untracked). */
  untracked?: Record<string, string>;
  /** The replay script: its lines (written beside the workspace), or the path of one. */
  script: unknown[] | string;
  /** Settings of the server (initializationOptions) besides `replayLog`. */
  settings?: Record<string, unknown>;
  /** Whether the model requests are logged (`replayLog`, beside the workspace); default true. */
  log?: boolean;
  /** The page's theme (default dark). */
  theme?: keyof typeof THEMES;
  /** PanelUi members to replace (e.g. `pickHunks`). */
  ui?: Partial<PanelUi>;
}

async function writeFiles(root: string, files: Record<string, string>): Promise<void> {
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, rel)), { recursive: true });
    await writeFile(path.join(root, rel), text);
  }
}

/**
 * A temporary workspace as `spec` says, a real `toolwire serve` in it playing the replay
 * script, and the panel open on it; all of it stopped and removed after the test `t`.
 *
 * @returns the panel, its server, the workspace's real path, and the request log's path (`replayLog`).
 */
export async function openWorkspacePanel(
  t: TestContext,
  site: PanelSite,
  spec: WorkspaceSpec,
): Promise<{ panel: Panel; server: Server; workspace: string; log: string }> {
  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), `toolwire-panel-${spec.name}-`)));
  const made: string[] = [workspace];
  if (spec.gitInit) {
    git(workspace, "init", ...spec.gitInit);
  }
  await writeFiles(workspace, spec.files ?? {});
  if (spec.gitInit && spec.files) {
    git(workspace, "add", "-A");
    git(workspace, "commit", "-q", "-m", "files");
  }
  await writeFiles(workspace, spec.untracked ?? {});
  let script = spec.script;
  if (typeof script !== "string") {
    const lines = script;
    script = `${workspace}-script.jsonl`;
    made.push(script);
    await writeFile(script, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
  }
  const log = `${workspace}-requests.jsonl`;
  const settings = spec.log === false ? { ...spec.settings } : { replayLog: log, ...spec.settings };
  made.push(log);
  const server = await startServer(workspace, settings);
  const panel = await openPanel(site.browser, site.url, server, { model: `replay:${script}`, cwd: workspace, theme: spec.theme, ui: spec.ui });
  t.after(async () => {
    await panel.page.close();
    await server.stop();
    for (const file of made) {
      await rm(file, { recursive: true, force: true });
    }
  });
  return { panel, server, workspace, log };
}
