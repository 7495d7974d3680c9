// Answering a waiting approval from outside the card (src/panel/host.ts, answerWaiting): the
// Allow Once / Reject commands and keybindings answer the approval waiting longest; the diff
// editor's Accept / Reject answer the one of the call it shows. Follow-along keeps the file of
// the edit in view whose approval waits, and shows the next one's when it is answered; an
// answered approval's diff views are closed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PanelHost, type OpenOptions, type PanelUi } from "../src/panel/host";
import type { RequestPermissionParams } from "../src/protocol";

function params(id: string, file: string): RequestPermissionParams {
  const args = { path: file };
  return {
    sessionId: "s1",
    toolCall: { toolCallId: id, index: 0, name: "edit_file", kind: "function", status: "generated", rev: 2, path: file, argumentsText: JSON.stringify(args), partialArguments: args, arguments: args },
    subject: { kind: "edit", tool: "edit_file", path: file, diff: `--- a/${file}\n+++ b/${file}\n@@ -1 +1 @@\n-a\n+b\n` },
    options: [
      { optionId: "yes", name: "Allow once", kind: "allow_once" },
      { optionId: "no", name: "Reject", kind: "reject_once" },
    ],
  };
}

function host() {
  const opened: { path: string; pinned: boolean }[] = [];
  const closed: string[] = [];
  const ui: PanelUi = {
    settings: () => ({ model: undefined, approval: "ask", followAlong: true, cwd: "/tmp" }),
    notifyPermission: async () => undefined,
    showDiff: async () => undefined,
    closeReview: (toolCallId) => closed.push(toolCallId),
    openFile: (path: string, _h?: unknown, _at?: unknown, options?: OpenOptions) => opened.push({ path, pinned: options?.pinned === true }),
    undone: () => undefined,
    openLink: () => undefined,
    copy: () => undefined,
    error: (message) => assert.fail(message),
    status: () => undefined,
    reveal: () => undefined,
  };
  const panel = new PanelHost({ connection: async () => assert.fail("no server here") }, ui);
  panel.attach({ post: () => undefined, visible: true });
  return { panel, opened, closed };
}

test("the diff editor's Accept answers its own call's approval; the commands answer the one waiting longest", async () => {
  const { panel, opened, closed } = host();
  const first = panel.requestPermission(params("c1", "a.txt"));
  const second = panel.requestPermission(params("c2", "b.txt"));
  const third = panel.requestPermission(params("c3", "c.txt"));
  assert.deepEqual(opened, [{ path: "a.txt", pinned: true }], "the first waiting edit's file is in view, pinned; the later ones do not replace it");
  assert.equal(panel.waiting, 3);
  assert.equal(panel.answerWaiting("allow_once", "c2"), true); // Accept Change in c2's diff editor
  assert.deepEqual(await second, { outcome: { outcome: "selected", optionId: "yes" } });
  assert.equal(panel.answerWaiting("allow_once", "c2"), false, "answered already");
  assert.equal(panel.answerWaiting("reject_once"), true); // toolwire.reject: the one waiting longest
  assert.deepEqual(await first, { outcome: { outcome: "selected", optionId: "no" } });
  assert.deepEqual(opened[opened.length - 1], { path: "c.txt", pinned: true }, "the next waiting edit's file is shown");
  assert.equal(panel.answerWaiting("allow_once"), true);
  assert.deepEqual(await third, { outcome: { outcome: "selected", optionId: "yes" } });
  assert.equal(panel.answerWaiting("allow_once"), false, "nothing waits");
  assert.deepEqual(closed, ["c2", "c1", "c3"], "each answered approval's diff views are closed");
});

test("a per-hunk answer is sent only when it names every hunk of the subject once", async () => {
  const { panel } = host();
  const p = params("h1", "h.txt");
  p.subject = { ...p.subject, kind: "edit", tool: "edit_file", path: "h.txt", diff: "",
    hunks: [{ index: 0, header: "@@ -1 +1 @@", diff: "-a\n+b\n" }, { index: 1, header: "@@ -9 +9 @@", diff: "-c\n+d\n" }] } as RequestPermissionParams["subject"];
  const answered = panel.requestPermission(p);
  assert.equal(panel.answerHunks("h1", [{ index: 0, accepted: true }]), false, "a hunk missing");
  assert.equal(panel.answerHunks("h1", [{ index: 0, accepted: true }, { index: 0, accepted: false }]), false, "a hunk twice");
  assert.equal(panel.answerHunks("h1", [{ index: 0, accepted: true }, { index: 5, accepted: false }]), false, "no such hunk");
  assert.equal(panel.answerHunks("other", [{ index: 0, accepted: true }, { index: 1, accepted: false }]), false, "no such call");
  assert.equal(panel.answerHunks("h1", [{ index: 1, accepted: false, reason: "  not this  " }, { index: 0, accepted: true }]), true);
  assert.deepEqual(await answered, { outcome: { outcome: "selected", optionId: "yes", hunks: [{ index: 0, accepted: true }, { index: 1, accepted: false, reason: "not this" }] } });
  assert.equal(await panel.reviewHunks("h1"), "none", "answered already");
});
