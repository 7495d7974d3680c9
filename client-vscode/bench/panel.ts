/**
 * Panel benchmark (figures, not a timed test): the chat webview bundle in headless
 * Chromium, fed
 *   A. one call whose 100 KB of arguments arrive as 8-byte `argumentsDelta` pieces,
 *      one `toolwire/session/update` per piece (12,800 messages, none coalesced);
 *   B. a turn of 200 calls (generating → generated → calling → done each);
 * straight into the page as host messages, as fast as the page takes them; then
 *   C. and D. the same two shapes played by a real `toolwire serve` (replay model)
 *      through the real PanelHost, with the server's coalescing.
 * and E. and F. streaming through a real `toolwire serve`: a 1 MB Markdown answer (prose,
 * lists, code fences) and a 100 KB `edit_file` whose arguments stream, each printed as the
 * panel's finish time (the end of the message shown, the turn ended) against the server's
 * own (the prompt answered), their ratio (target within 1.5x), and whether the last frame
 * shows the end of the message. `--only=stream` runs E and F alone.
 * Prints update throughput and the longest main-thread task (PerformanceObserver
 * `longtask`, which reports tasks over 50 ms; "none" means every task was shorter).
 *
 * Run: make bench-panel (or node out/bench/panel.js after `node esbuild.mjs --test`).
 */
import { mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import type { CDPSession, Page } from "playwright-core";
import type { HostMessage } from "../src/panel/messages";
import { launchChromium, openPanel, servePanel } from "../test/panel/harness";
import { git, startServer } from "../test/panel/server";

const SESSION = "bench";
const ONLY_STREAM = process.argv.includes("--only=stream");

/** About `size` characters of Markdown a model might write: headings, prose, lists, fences. */
function longAnswer(size: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    const part =
      `## Section ${i}\n\nThis is paragraph ${i} of a long answer, with **bold**, \`code\` and a [link](https://example.com/${i}). ` +
      "It goes on for a while so that the paragraph wraps over a few lines in the panel.\n\n" +
      `- item one of list ${i}\n- item two with \`x = ${i}\`\n  - nested item\n\n` +
      "```python\n" +
      `def f${i}(x):\n    return x * ${i}  # a comment\n\nprint(f${i}(2))\n` +
      "```\n\n";
    parts.push(part);
    length += part.length;
  }
  return parts.join("") + "END-OF-ANSWER";
}

function toolCall(fields: Record<string, unknown>): HostMessage {
  return {
    type: "update",
    params: {
      sessionId: SESSION,
      update: { sessionUpdate: "tool_call", toolCall: { index: 0, kind: "function", name: "create_file", path: null, ...fields } as never },
    },
  };
}

/** A: one call, 100 KB of argument text in 8-byte pieces. */
function bigArguments(): HostMessage[] {
  const content = "0123456789abcdef\n".repeat(Math.ceil(100_000 / 17)).slice(0, 100_000 - 40);
  const text = JSON.stringify({ path: "big.txt", content });
  const messages: HostMessage[] = [{ type: "prompt", text: "big" }];
  let rev = 0;
  for (let offset = 0; offset < text.length; offset += 8) {
    messages.push(toolCall({ toolCallId: "big", status: "generating", rev: ++rev, argumentsDelta: { offset, text: text.slice(offset, offset + 8) } }));
  }
  messages.push(toolCall({ toolCallId: "big", status: "generated", rev: ++rev, path: "big.txt", arguments: { path: "big.txt" } }));
  messages.push(toolCall({ toolCallId: "big", status: "calling", rev: ++rev, path: "big.txt" }));
  messages.push(
    toolCall({ toolCallId: "big", status: "done", rev: ++rev, path: "big.txt", result: { ok: true, content: "Created big.txt", data: null, errorCode: null } }),
  );
  return messages;
}

/** B: 200 calls, each through its four statuses. */
function manyCalls(): HostMessage[] {
  const messages: HostMessage[] = [{ type: "prompt", text: "many" }];
  for (let i = 0; i < 200; i++) {
    const id = `c${i}`;
    const text = JSON.stringify({ path: `src/file${i}.py` });
    messages.push(
      toolCall({ toolCallId: id, index: i, name: "read_file", status: "generating", rev: 1, argumentsDelta: { offset: 0, text: text.slice(0, 10) } }),
    );
    messages.push(
      toolCall({ toolCallId: id, index: i, name: "read_file", status: "generating", rev: 2, argumentsDelta: { offset: 10, text: text.slice(10) } }),
    );
    messages.push(
      toolCall({ toolCallId: id, index: i, name: "read_file", status: "generated", rev: 3, path: `src/file${i}.py`, arguments: { path: `src/file${i}.py` } }),
    );
  }
  for (let i = 0; i < 200; i++) {
    messages.push(toolCall({ toolCallId: `c${i}`, index: i, name: "read_file", status: "calling", rev: 4, path: `src/file${i}.py` }));
    messages.push(
      toolCall({
        toolCallId: `c${i}`,
        index: i,
        name: "read_file",
        status: "done",
        rev: 5,
        path: `src/file${i}.py`,
        result: { ok: true, content: `line ${i}\n`.repeat(20), data: null, errorCode: null },
      }),
    );
  }
  return messages;
}

/**
 * CPU slowdowns to run every scenario at (`--cpu-slowdown=1,4`; default both): Chromium's
 * own throttling (DevTools `Emulation.setCPUThrottlingRate`), so a 4x row shows how the
 * panel behaves on a machine four times slower, or as busy, as this one.
 */
const SLOWDOWNS = (process.argv.find((arg) => arg.startsWith("--cpu-slowdown="))?.split("=")[1] ?? "1,4").split(",").map((rate) => {
  const n = Number(rate);
  if (!Number.isFinite(n) || n < 1) {
    throw new Error(`--cpu-slowdown: ${rate} is not a number >= 1`);
  }
  return n;
});

/** Slows the page's main thread down `rate` times (1: no throttling). */
async function throttle(page: Page, rate: number): Promise<void> {
  if (rate > 1) {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("Emulation.setCPUThrottlingRate", { rate });
  }
}

/** One trace event of Chromium's trace format (only the fields read here). */
interface TraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  dur?: number;
  tdur?: number;
  args?: { name?: string };
}

/**
 * A DevTools trace of the page's renderer while a scenario runs, for the main thread's
 * CPU time per task (`tdur` of each top-level task). Unlike the longtask entries (wall
 * time), CPU time does not grow when other processes share the CPU, so it shows the
 * panel's own work on a busy machine.
 */
class MainThreadTrace {
  private readonly events: TraceEvent[] = [];

  private constructor(private readonly cdp: CDPSession) {
    cdp.on("Tracing.dataCollected", (event) => {
      this.events.push(...(event.value as unknown as TraceEvent[]));
    });
  }

  /** Starts tracing `page` (categories `toplevel`: one event per task, with its CPU time). */
  static async start(page: Page): Promise<MainThreadTrace> {
    const trace = new MainThreadTrace(await page.context().newCDPSession(page));
    await trace.cdp.send("Tracing.start", { traceConfig: { includedCategories: ["toplevel"] }, transferMode: "ReportEvents" });
    return trace;
  }

  /** Stops; the renderer main thread's longest task and total busy time, CPU milliseconds. */
  async stop(): Promise<{ longestCpuMs: number; busyCpuMs: number }> {
    const complete = new Promise((resolve) => this.cdp.once("Tracing.tracingComplete", resolve));
    await this.cdp.send("Tracing.end");
    await complete;
    await this.cdp.detach();
    const mainThreads = new Set(this.events.filter((e) => e.name === "thread_name" && e.args?.name === "CrRendererMain").map((e) => `${e.pid}:${e.tid}`));
    let longestCpuMs = 0;
    let busyCpuMs = 0;
    for (const e of this.events) {
      if (e.name === "ThreadControllerImpl::RunTask" && e.ph === "X" && e.tdur !== undefined && mainThreads.has(`${e.pid}:${e.tid}`)) {
        longestCpuMs = Math.max(longestCpuMs, e.tdur / 1000);
        busyCpuMs += e.tdur / 1000;
      }
    }
    return { longestCpuMs, busyCpuMs };
  }
}

/** Installs the longtask observer; returns nothing. */
async function observeLongTasks(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __longest: number; __longCount: number };
    w.__longest = 0;
    w.__longCount = 0;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        w.__longCount++;
        w.__longest = Math.max(w.__longest, entry.duration);
      }
    }).observe({ type: "longtask" });
  });
}

async function longest(page: Page): Promise<string> {
  const { longestMs, count } = await page.evaluate(() => {
    const w = window as unknown as { __longest: number; __longCount: number };
    return { longestMs: w.__longest, count: w.__longCount };
  });
  return count === 0 ? "none over 50 ms" : `${longestMs.toFixed(0)} ms (${count} tasks over 50 ms)`;
}

/**
 * Feeds `messages` as separate message events, `perTask` per task (tasks scheduled
 * through a MessageChannel, as the webview's own message events are, never clamped
 * like nested timers); resolves after the last frame. The messages are copied into
 * the page first, and the longtask counters reset, so the copy is not measured.
 */
async function feed(page: Page, messages: HostMessage[], perTask: number): Promise<{ ms: number; trace: MainThreadTrace }> {
  await page.evaluate((list) => {
    (window as unknown as { __feed: unknown[] }).__feed = list;
  }, messages);
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 100))));
  await page.evaluate(() => {
    const w = window as unknown as { __longest: number; __longCount: number };
    w.__longest = 0;
    w.__longCount = 0;
  });
  const trace = await MainThreadTrace.start(page);
  const ms = await page.evaluate(async (n) => {
    const list = (window as unknown as { __feed: unknown[] }).__feed;
    const channel = new MessageChannel();
    const nextTask = () =>
      new Promise<void>((resolve) => {
        channel.port2.onmessage = () => resolve();
        channel.port1.postMessage(null);
      });
    const start = performance.now();
    for (let i = 0; i < list.length; i += n) {
      for (const data of list.slice(i, i + n)) {
        window.dispatchEvent(new MessageEvent("message", { data }));
      }
      await nextTask();
    }
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    return performance.now() - start;
  }, perTask);
  return { ms, trace };
}

/** "longest task: …" for a row: the longtask entries (wall time) and the trace (CPU time). */
async function tasks(page: Page, trace: MainThreadTrace): Promise<string> {
  const wall = await longest(page);
  const { longestCpuMs, busyCpuMs } = await trace.stop();
  return `longest task: ${wall}; main thread CPU: longest task ${longestCpuMs.toFixed(0)} ms, busy ${busyCpuMs.toFixed(0)} ms`;
}

type Browser = Awaited<ReturnType<typeof launchChromium>>;
type Server = Awaited<ReturnType<typeof startServer>>;

/** E and F: a 1 MB answer and a 100 KB streamed edit through a real server; one row each. */
async function streaming(browser: Browser, url: string, server: Server, workspace: string, slowdown: number, at: string): Promise<string[]> {
  const rows: string[] = [];
  const newText = "    value = compute(item)  # streamed edit line\n".repeat(Math.ceil(100_000 / 46)).slice(0, 100_000) + "END-OF-EDIT\n";
  const cases: [string, unknown[], string, () => Promise<void>][] = [
    ["E. 1 MB streamed answer, chunk_size 16, real server", [{ text: longAnswer(1_000_000), chunk_size: 16 }], "END-OF-ANSWER", async () => {}],
    [
      "F. 100 KB streamed edit (edit_file arguments), chunk_size 16, real server",
      [{ tool_calls: [{ name: "edit_file", arguments: { path: "edit.py", old_string: "OLD\n", new_string: newText } }], chunk_size: 16 }, { text: "edited" }],
      "END-OF-EDIT",
      async () => writeFile(path.join(workspace, "edit.py"), "start\nOLD\nend\n"),
    ],
  ];
  for (const [name, lines, end, prepare] of cases) {
    await prepare();
    const script = path.join(workspace, ".git", `${name[0]}.jsonl`);
    await writeFile(script, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
    const panel = await openPanel(browser, url, server, { model: `replay:${script}`, cwd: workspace });
    await panel.page.locator(".empty").waitFor();
    await throttle(panel.page, slowdown);
    await observeLongTasks(panel.page);
    const trace = await MainThreadTrace.start(panel.page);
    const start = performance.now();
    await panel.host.prompt(name);
    const serverMs = performance.now() - start;
    await panel.page.locator(".turn-end").waitFor({ timeout: 600_000 });
    await panel.page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0))));
    const panelMs = performance.now() - start;
    // The end is shown when the marker's text is inside the transcript's visible box (not only in the page).
    const shown = await panel.page.evaluate((marker) => {
      const view = document.querySelector("main.transcript")?.getBoundingClientRect();
      const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node !== null; node = walker.nextNode()) {
        const at = node.textContent?.indexOf(marker) ?? -1;
        if (at >= 0 && view !== undefined) {
          const range = document.createRange();
          range.setStart(node, at);
          range.setEnd(node, at + marker.length);
          const box = range.getBoundingClientRect();
          if (box.height > 0 && box.top >= view.top && box.bottom <= view.bottom) {
            return true;
          }
        }
      }
      return false;
    }, end);
    rows.push(
      `${name}${at}: server ${serverMs.toFixed(0)} ms, panel ${panelMs.toFixed(0)} ms = ${(panelMs / serverMs).toFixed(2)}x (target <= 1.5x); last frame shows the end: ${shown ? "yes" : "NO"}; ${await tasks(panel.page, trace)}`,
    );
    await panel.page.close();
    await rm(path.join(workspace, "edit.py"), { force: true });
  }
  return rows;
}

async function main(): Promise<void> {
  const browser = await launchChromium();
  const site = await servePanel();
  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), "toolwire-bench-")));
  try {
    git(workspace, "init", "-q");
    await writeFile(path.join(workspace, "hello.txt"), "hello\n");
    git(workspace, "add", ".");
    git(workspace, "commit", "-q", "-m", "init");
    const server = await startServer(workspace, { permissions: { create_file: "auto", edit_file: "auto" } });
    const rows: string[] = [];

    for (const slowdown of SLOWDOWNS) {
      const at = slowdown === 1 ? "" : ` [CPU ${slowdown}x slower]`;
      rows.push(...(await streaming(browser, site.url, server, workspace, slowdown, at)));
      if (ONLY_STREAM) {
        continue;
      }
      for (const [name, messages, check] of [
        ["A. 100 KB arguments, 8-byte deltas (page only)", bigArguments(), "big.txt"],
        ["B. 200-call turn (page only)", manyCalls(), "file199"],
      ] as const) {
        for (const perTask of [1, 64]) {
          const panel = await openPanel(browser, site.url, server, { model: "replay", cwd: workspace });
          await panel.page.locator(".empty").waitFor();
          await throttle(panel.page, slowdown);
          await observeLongTasks(panel.page);
          const { ms, trace } = await feed(panel.page, messages, perTask);
          const shown = (await panel.page.locator("article.card").last().textContent()) ?? "";
          if (!shown.includes(check) || !shown.includes("done")) {
            throw new Error(`${name}: the last card is not done: ${shown.slice(0, 200)}`);
          }
          rows.push(
            `${name}${at}, ${perTask} message${perTask === 1 ? "" : "s"}/task: ${messages.length} updates in ${ms.toFixed(0)} ms = ${Math.round((messages.length / ms) * 1000)} updates/s; ${await tasks(panel.page, trace)}`,
          );
          await panel.page.close();
        }
      }

      const content = "0123456789abcdef\n".repeat(Math.ceil(100_000 / 17)).slice(0, 100_000 - 40);
      const scripts: [string, unknown[]][] = [
        [
          "C. 100 KB arguments, chunk_size 8, real server",
          [{ tool_calls: [{ name: "create_file", arguments: { path: "big.txt", content } }], chunk_size: 8 }, { text: "ok" }],
        ],
        [
          "D. 200-call turn, real server",
          [{ tool_calls: Array.from({ length: 200 }, () => ({ name: "read_file", arguments: { path: "hello.txt" } })), chunk_size: 16 }, { text: "ok" }],
        ],
      ];
      for (const [name, lines] of scripts) {
        const script = path.join(workspace, ".git", `${name[0]}.jsonl`);
        await writeFile(script, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
        const panel = await openPanel(browser, site.url, server, { model: `replay:${script}`, cwd: workspace });
        await panel.page.locator(".empty").waitFor();
        await throttle(panel.page, slowdown);
        await observeLongTasks(panel.page);
        const trace = await MainThreadTrace.start(panel.page);
        const start = performance.now();
        await panel.host.prompt(name);
        await panel.page.locator(".turn-end").waitFor();
        const ms = performance.now() - start;
        const updates = panel.ui.updates;
        const cards = await panel.page.locator("article.card").count();
        const done = await panel.page.locator("article.card .badge", { hasText: "done" }).count();
        rows.push(
          `${name}${at}: ${updates} updates from the server in ${ms.toFixed(0)} ms (${Math.round((updates / ms) * 1000)} updates/s), ${done}/${cards} cards done when the turn ended; ${await tasks(panel.page, trace)}`,
        );
        await panel.page.close();
        await rm(path.join(workspace, "big.txt"), { force: true });
      }
    }
    await server.stop();
    console.log(
      `Panel benchmark (headless Chromium, Debian chromium; load average ${os
        .loadavg()
        .map((n) => n.toFixed(2))
        .join(" ")} on ${os.cpus().length} CPUs at the end)`,
    );
    for (const row of rows) {
      console.log(`  ${row}`);
    }
  } finally {
    await browser.close();
    await site.close();
    await rm(workspace, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
