/**
 * The turn's plan in the chat panel (protocol.md, "update_plan"): each `plan` update shows the
 * whole list as a checklist at the top of its turn (right after the user's message), replaced
 * as the model updates it; a new turn gets its own; after a reload the snapshot's history puts
 * each turn's latest plan back. The webview bundle in headless Chromium, the real PanelHost, a
 * real `toolwire serve` over stdio playing a replay script.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";

const TIMEOUT_MS = 90_000;

const site = usePanelSite();

const FIRST = [
  { content: "Read hello.txt", status: "in_progress", priority: "high" },
  { content: "Say hi\u202e", status: "pending", priority: "low" },
];
const SECOND = [
  { content: "Read hello.txt", status: "completed", priority: "high" },
  { content: "Say hi\u202e", status: "in_progress", priority: "low" },
];

function plan(id: string, entries: unknown) {
  return { tool_calls: [{ id, name: "update_plan", arguments: { entries } }] };
}

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

/** Each plan's steps as a screen reader hears them, in transcript order. */
async function plans(panel: Panel): Promise<string[][]> {
  const out: string[][] = [];
  for (const region of await panel.page.getByRole("region", { name: "Plan" }).all()) {
    out.push(await region.getByRole("listitem").evaluateAll((items) => items.map((item) => item.getAttribute("aria-label") ?? "")));
  }
  return out;
}

/** The transcript's entries by kind, in order (`user`, `plan`, `call`, …). */
async function order(panel: Panel): Promise<string[]> {
  return panel.page.locator("main.transcript > *").evaluateAll((nodes) =>
    nodes.map((node) => (node.matches("section.plan") ? "plan" : node.matches("section.message.user") ? "user" : node.matches("article.card") ? "call" : node.className.split(" ")[0])),
  );
}

test("the plan is a checklist at the top of its turn, replaced as it changes, back after a reload", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await openWorkspacePanel(t, site, {
    name: "plan",
    gitInit: ["-q"],
    files: { "hello.txt": "hello\n" },
    script: [plan("p1", FIRST), plan("p2", SECOND), { text: "Said hi." }, plan("p3", [{ ...SECOND[1], status: "completed" }]), { text: "Done." }],
  });
  const { page } = panel;
  await ask(panel, "Plan it.");
  await page.locator(".turn-end").waitFor();
  const first = ["Read hello.txt: completed, high priority", "Say hi\\u202e: in progress, low priority"];
  assert.deepEqual(await plans(panel), [first], "one plan for the turn: the latest");
  const kinds = await order(panel);
  assert.deepEqual(kinds.slice(0, 2), ["user", "plan"], "at the top of the turn");
  assert.equal(await page.getByRole("region", { name: "Plan" }).locator(".plan-count").textContent(), "1/2");
  assert.equal(await page.locator(".plan-step.completed .codicon-pass-filled").count(), 1);

  await ask(panel, "Finish.");
  await page.locator(".turn-end").nth(1).waitFor();
  const second = ["Say hi\\u202e: completed, low priority"];
  assert.deepEqual(await plans(panel), [first, second], "the next turn has its own");

  await panel.reload();
  await page.locator(".turn-end").nth(1).waitFor();
  assert.deepEqual(await plans(panel), [first, second], "from the snapshot's history");
  assert.deepEqual((await order(panel)).slice(0, 2), ["user", "plan"]);
});
