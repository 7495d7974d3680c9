// The panel host after a window reload (src/panel/host.ts, serverRestarted): it takes the
// session remembered in the workspace state up again when the server still has it, and
// forgets it when the server is another process. The server here is a scripted
// connection; the real chain (code-server, Developer: Reload Window, toolwire serve
// --socket) is e2e/panel.e2e.test.mjs.
import assert from "node:assert/strict";
import { test } from "node:test";
import { PanelHost, type PanelUi, type RpcConnection } from "../src/panel/host";
import type { HostMessage } from "../src/panel/messages";
import type { SnapshotResult } from "../src/protocol";

const SNAPSHOT: SnapshotResult = {
  sessionId: "s1",
  model: "replay",
  running: true,
  turnId: "t1",
  toolCalls: [{
    toolCallId: "c1", index: 0, name: "edit_file", kind: "function", status: "generated", rev: 3, path: "greet.py",
    argumentsText: '{"path": "greet.py"}', partialArguments: { path: "greet.py" }, arguments: { path: "greet.py" },
  }],
  messages: [],
  streaming: null,
  pendingPermissions: [],
  turns: [{ turnId: "t1", stopReason: null, message: null, usage: null, undoable: false, undone: false }],
  instructions: [],
};

function setup(known: Set<string>, remembered: string | undefined) {
  const asked: [string, unknown][] = [];
  const rpc: RpcConnection = {
    async sendRequest<R>(method: string, params: unknown): Promise<R> {
      asked.push([method, params]);
      const sessionId = (params as { sessionId: string }).sessionId;
      if (method === "toolwire/session/snapshot" && known.has(sessionId)) {
        return { ...SNAPSHOT, sessionId } as R;
      }
      throw new Error(`unknown session '${sessionId}'`);
    },
    sendNotification: () => undefined,
  };
  const statuses: { running: boolean; turnState: string | null }[] = [];
  const ui: PanelUi = {
    settings: () => ({ model: undefined, approval: "ask", followAlong: false, cwd: "/tmp" }),
    notifyPermission: async () => undefined,
    showDiff: async () => undefined,
    openFile: () => undefined,
    undone: () => undefined,
    openLink: () => undefined,
    copy: () => undefined,
    error: (message) => assert.fail(message),
    status: (state) => statuses.push(state),
    reveal: () => undefined,
  };
  let memory = remembered;
  const sets: (string | undefined)[] = [];
  const host = new PanelHost({ connection: async () => ({ rpc, generation: 2 }) }, ui, {
    get: () => memory,
    set: (id) => {
      sets.push(id);
      memory = id;
    },
  });
  const posted: HostMessage[] = [];
  host.attach({ visible: true, post: (message) => posted.push(message) });
  return { host, asked, statuses, sets, posted, memory: () => memory };
}

/** Messages the host posted (it batches them on the next turn of the event loop). */
async function flushed(posted: HostMessage[]): Promise<HostMessage[]> {
  await new Promise((resolve) => setImmediate(resolve));
  return posted.flatMap((m) => (m.type === "batch" ? m.messages : [m]));
}

test("after a window reload the remembered session is taken up again from its snapshot", async () => {
  const { host, asked, statuses, sets, posted } = setup(new Set(["s1"]), "s1");
  await host.serverRestarted();
  assert.equal(host.sessionId, "s1");
  assert.deepEqual(asked.map(([method]) => method), ["toolwire/session/snapshot", "toolwire/session/snapshot"]);
  assert.deepEqual(sets, [], "the remembered id is kept");
  assert.deepEqual(statuses.at(-1), { running: true, waiting: 0, turnState: "running_tools" });
  const resets = (await flushed(posted)).filter((m) => m.type === "reset");
  assert.equal(resets.length, 1);
  const reset = resets[0] as Extract<HostMessage, { type: "reset" }>;
  assert.deepEqual(reset.snapshot?.toolCalls, SNAPSHOT.toolCalls);
  assert.equal(reset.snapshot?.sessionId, "s1");
});

test("a server that does not know the remembered session (another process): it is forgotten, the panel stays empty", async () => {
  const { host, sets, posted, memory } = setup(new Set(), "s-old");
  await host.serverRestarted();
  assert.equal(host.sessionId, undefined);
  assert.deepEqual(sets, [undefined]);
  assert.equal(memory(), undefined);
  assert.deepEqual((await flushed(posted)).filter((m) => m.type === "notice"), [], "no session was shown: nothing to say");
});

test("nothing remembered: nothing is asked", async () => {
  const { host, asked } = setup(new Set(["s1"]), undefined);
  await host.serverRestarted();
  assert.equal(host.sessionId, undefined);
  assert.deepEqual(asked, []);
});

test("an update whose streamId is null is the session's own (the schema allows null for absent)", async () => {
  const { host, posted } = setup(new Set(["s1"]), "s1");
  await host.serverRestarted();
  await flushed(posted);
  posted.length = 0;
  const update = { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "hi" } } as const;
  host.onUpdate({ sessionId: "s1", streamId: null, update });
  host.onUpdate({ sessionId: "s1", streamId: "fed-1", update }); // a client-fed stream's: not the panel's turn
  host.onUpdate({ sessionId: "s1", update });
  const updates = (await flushed(posted)).filter((m) => m.type === "update");
  assert.equal(updates.length, 2);
});
