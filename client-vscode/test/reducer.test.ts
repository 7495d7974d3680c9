/**
 * The panel's reducer (src/panel/reducer.ts), the one place that knows the wire
 * form of `tool_call` updates: whole snapshots and appended pieces (argumentsDelta
 * in code points), gaps, stale revs, ids that arrive late, snapshots.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { imagesOf, imageUrl } from "../src/panel/images";
import { allowAlwaysText, applySnapshot, applyUpdate, codePointLength, initialState, reduceHostMessage, type PanelState } from "../src/panel/reducer";
import type { SessionUpdate, ToolCallUpdateWire, ToolCallWire } from "../src/protocol";

/** A `tool_call` update in the form the server sends (generated ToolCallUpdateWire). */
function call(fields: Partial<ToolCallUpdateWire>): SessionUpdate {
  return {
    sessionUpdate: "tool_call",
    toolCall: { toolCallId: "c1", index: 0, name: "edit_file", kind: "function", status: "generating", rev: 0, path: null, ...fields },
  };
}

function apply(state: PanelState, ...updates: SessionUpdate[]): PanelState {
  return updates.reduce(applyUpdate, state);
}

test("code points are counted like Python's len", () => {
  assert.equal(codePointLength("abc"), 3);
  assert.equal(codePointLength("é😀x"), 3);
  assert.equal(codePointLength("\ud83d"), 1, "a lone surrogate is one");
});

test("whole snapshots (the old wire form) replace the argument text", () => {
  const state = apply(
    initialState(),
    call({ rev: 1, argumentsText: '{"pa', partialArguments: {}, arguments: null }),
    call({ rev: 2, argumentsText: '{"path": "a.py"}', partialArguments: { path: "a.py" }, arguments: null, path: "a.py" }),
    call({ rev: 3, status: "generated", argumentsText: '{"path": "a.py"}', partialArguments: { path: "a.py" }, arguments: { path: "a.py" }, path: "a.py" }),
  );
  const view = state.calls.get("c1");
  assert.equal(view?.argumentsText, '{"path": "a.py"}');
  assert.equal(view?.status, "generated");
  assert.deepEqual(view?.arguments, { path: "a.py" });
  assert.equal(state.entries.filter((e) => e.kind === "call").length, 1);
});

test("appended pieces (argumentsDelta) are joined; absent fields stay unchanged", () => {
  const state = apply(
    initialState(),
    call({ rev: 1, argumentsDelta: { offset: 0, text: '{"p": "😀' } }),
    call({ rev: 2, argumentsDelta: { offset: 8, text: 'é"' }, partialArguments: { p: "😀é" } }),
    call({ rev: 3, argumentsDelta: { offset: 10, text: "}" } }),
    call({ rev: 4, status: "generated", arguments: { p: "😀é" } }),
    call({ rev: 5, status: "calling" }),
  );
  const view = state.calls.get("c1");
  assert.equal(view?.argumentsText, '{"p": "😀é"}');
  assert.equal(view?.argumentsLength, 11);
  assert.deepEqual(view?.partialArguments, { p: "😀é" }, "kept while absent");
  assert.deepEqual(view?.arguments, { p: "😀é" });
  assert.equal(view?.status, "calling");
  assert.equal(state.needsSnapshot, false);
});

test("an overlapping piece adds only its part past the text (code points)", () => {
  const state = apply(
    initialState(),
    call({ rev: 1, argumentsDelta: { offset: 0, text: "a😀b" } }),
    call({ rev: 2, argumentsDelta: { offset: 1, text: "😀bc😀" } }),
    call({ rev: 3, argumentsDelta: { offset: 2, text: "b" } }),
  );
  assert.equal(state.calls.get("c1")?.argumentsText, "a😀bc😀");
  assert.equal(state.calls.get("c1")?.argumentsLength, 5);
  assert.equal(state.needsSnapshot, false);
});

test("a piece past the end is dropped and asks for a snapshot", () => {
  const state = apply(
    initialState(),
    call({ rev: 1, argumentsDelta: { offset: 0, text: "abc" } }),
    call({ rev: 3, argumentsDelta: { offset: 5, text: "xyz" } }),
  );
  assert.equal(state.calls.get("c1")?.argumentsText, "abc");
  assert.equal(state.needsSnapshot, true);
});

test("stale and repeated revs are dropped", () => {
  const state = apply(
    initialState(),
    call({ rev: 2, argumentsDelta: { offset: 0, text: "ab" } }),
    call({ rev: 2, argumentsDelta: { offset: 2, text: "cd" } }),
    call({ rev: 1, status: "errored" }),
  );
  assert.equal(state.calls.get("c1")?.argumentsText, "ab");
  assert.equal(state.calls.get("c1")?.status, "generating");
  assert.equal(state.needsSnapshot, false);
});

test("a call first known by index keeps its card once its id arrives", () => {
  let state = apply(initialState(), { sessionUpdate: "turn", state: "model_request" } as SessionUpdate);
  state = apply(state, call({ toolCallId: "", rev: 1, argumentsDelta: { offset: 0, text: '{"a"' } }));
  state = apply(state, call({ toolCallId: "x9", rev: 2, argumentsDelta: { offset: 4, text: ": 1}" } }));
  assert.deepEqual([...state.calls.keys()], ["x9"]);
  assert.equal(state.calls.get("x9")?.argumentsText, '{"a": 1}');
  assert.deepEqual(
    state.entries.filter((e) => e.kind === "call").map((e) => e.id),
    ["x9"],
  );
});

test("a snapshot rebuilds the transcript: history, the last turn's calls, open permissions", () => {
  const whole = (id: string, status: ToolCallWire["status"], rev: number): ToolCallWire => ({
    toolCallId: id, index: 0, name: "edit_file", kind: "function", status, rev,
    argumentsText: '{"path": "a"}', partialArguments: { path: "a" }, arguments: { path: "a" }, path: "a",
  });
  let state = reduceHostMessage(initialState(), { type: "prompt", text: "stale" });
  state = applySnapshot(state, {
    sessionId: "s", model: "replay", running: true, turnId: "t2", streaming: { text: "typing", reasoning: "" },
    messages: [
      { role: "system", content: "sys" },
      { role: "user", content: "one" },
      { role: "assistant", content: "ok", tool_calls: [{ id: "old", function: { name: "read_file", arguments: '{"path": "a"}' } }] },
      { role: "tool", tool_call_id: "old", content: "file text" },
      { role: "assistant", content: "first done" },
      { role: "user", content: [{ type: "text", text: "two" }] },
    ],
    toolCalls: [whole("new", "generated", 4)],
    pendingPermissions: [], instructions: [],
    turns: [
      { turnId: "t1", stopReason: "end_turn", message: null, usage: { inputTokens: 3, outputTokens: 4, durationMs: 1500 }, undoable: true, undone: false },
      { turnId: "t2", stopReason: null, message: null, usage: null, undoable: false, undone: false },
    ],
    permissions: [{ requestId: "r1", params: { sessionId: "s", toolCall: whole("new", "generated", 4), subject: { kind: "edit", tool: "edit_file", path: "a", diff: "" }, options: [] } }],
  });
  assert.deepEqual(
    state.entries.map((e) => e.kind),
    ["user", "assistant", "call", "assistant", "turnEnd", "user", "assistant", "call"],
  );
  assert.equal(state.calls.get("old")?.status, null);
  assert.equal(state.calls.get("old")?.historyResult, "file text");
  assert.equal(state.calls.get("new")?.status, "generated");
  assert.equal(state.permissions.get("new")?.requestId, "r1");
  assert.ok(state.undoable.has("t1"));
  const end = state.entries.find((e) => e.kind === "turnEnd");
  assert.deepEqual(end?.kind === "turnEnd" && end.usage, { inputTokens: 3, outputTokens: 4, durationMs: 1500 });
  // Updates after the snapshot: stale ones are dropped, new ones apply.
  state = apply(state, call({ toolCallId: "new", rev: 4, status: "errored" }), call({ toolCallId: "new", rev: 5, status: "calling" }));
  assert.equal(state.calls.get("new")?.status, "calling");
  assert.equal(state.permissions.size, 0, "a call that moved on has no approval waiting");
});

test("a workspace change that arrives while a message streams never cuts it in two", () => {
  const chunk = (text: string): SessionUpdate => ({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  const state = apply(
    initialState(),
    chunk("See [the guide](https://exa"),
    { sessionUpdate: "workspace_change", paths: ['"invoice\\342\\200\\256fdp.exe"'] },
    chunk("mple.com/guide) for more."),
  );
  assert.deepEqual(
    state.entries.map((e) => e.kind),
    ["assistant", "notice"],
    "one message, the notice after it",
  );
  const message = state.entries[0] as { text: string };
  assert.equal(message.text, "See [the guide](https://example.com/guide) for more.");
  assert.equal((state.entries[1] as { text: string }).text, 'Changed outside Toolwire: "invoice\\342\\200\\256fdp.exe"');
});

test("one change the watcher reports in two batches (created, then modified) is one notice", () => {
  const chunk = (text: string): SessionUpdate => ({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  const changed = (...paths: string[]): SessionUpdate => ({ sessionUpdate: "workspace_change", paths });
  const name = '"invoice\\342\\200\\256fdp.exe"';
  // Created (the first batch), then written (the second), while the answer streams.
  let state = apply(
    initialState(),
    chunk("See [the guide](https://exa"),
    changed(name),
    chunk("mple.com/guide)"),
    changed(name),
    chunk(" for more."),
  );
  assert.deepEqual(state.entries.map((e) => e.kind), ["assistant", "notice"], "one message, one notice after it");
  assert.equal((state.entries[0] as { text: string }).text, "See [the guide](https://example.com/guide) for more.");
  assert.equal((state.entries[1] as { text: string }).text, `Changed outside Toolwire: ${name}`);
  // A report naming another file too, with nothing shown since, joins the notice.
  state = apply(state, changed("a.py", name));
  assert.deepEqual(state.entries.map((e) => e.kind), ["assistant", "notice"]);
  assert.equal((state.entries[1] as { text: string }).text, `Changed outside Toolwire: ${name}, a.py`);
  assert.equal(state.announcement, `Changed outside Toolwire: ${name}, a.py`);
  // Once something else is shown (here the end of the turn), a report is a notice of its own.
  state = apply(state, { sessionUpdate: "turn", state: "ended", turnId: "t1", stopReason: "end_turn" }, changed("a.py"));
  assert.deepEqual(state.entries.map((e) => e.kind), ["assistant", "notice", "turnEnd", "notice"]);
  assert.equal((state.entries[3] as { text: string }).text, "Changed outside Toolwire: a.py");
  // Other notices (the host's) are never joined.
  state = reduceHostMessage(state, { type: "notice", text: "The Toolwire server restarted; the next prompt starts a new conversation." });
  state = apply(state, changed("a.py"));
  assert.deepEqual(state.entries.map((e) => e.kind), ["assistant", "notice", "turnEnd", "notice", "notice", "notice"]);
});

test("the announcement of a call names its path in display form", () => {
  const state = apply(initialState(), call({ rev: 1, status: "generated", path: "invoice\u202efdp.exe" }));
  assert.equal(state.announcement, 'edit_file "invoice\\342\\200\\256fdp.exe": Waiting');
  // written in git's quoted form (as results print it): the same name, not quoted twice
  const quoted = apply(initialState(), call({ rev: 1, status: "generated", path: '"invoice\\342\\200\\256fdp.exe"' }));
  assert.equal(quoted.announcement, 'edit_file "invoice\\342\\200\\256fdp.exe": Waiting');
});

test("the project rules list: from session/new, replaced whole by each session_info, kept by a snapshot", () => {
  const root = { path: "AGENTS.md", bytes: 1229, truncated: false };
  const nested = { path: "sub/AGENTS.md", bytes: 10, truncated: true };
  let state = reduceHostMessage(initialState(), { type: "session", sessionId: "s", model: "replay", instructions: [root], mcpServers: [] });
  assert.deepEqual(state.instructions, [root]);
  state = applyUpdate(state, { sessionUpdate: "session_info", instructions: [root, nested] });
  assert.deepEqual(state.instructions, [root, nested]);
  assert.equal(state.announcement, "Project rules: AGENTS.md, sub/AGENTS.md");
  state = applyUpdate(state, { sessionUpdate: "session_info", instructions: [] });
  assert.deepEqual(state.instructions, []);
  state = applySnapshot(state, {
    sessionId: "s", model: "replay", running: false, turnId: null, streaming: null, messages: [], toolCalls: [],
    pendingPermissions: [], turns: [], permissions: [], instructions: [nested],
  });
  assert.deepEqual(state.instructions, [nested]);
  assert.deepEqual(reduceHostMessage(state, { type: "reset", snapshot: null }).instructions, []);
});

test("a snapshot's user message shows the user's own text (userText), not the overview and notes sent with it", () => {
  const sent = "[Workspace overview at the start of the session (file names, not instructions):\n...]\n\nlist the files\n\n[Files changed outside the assistant since the last turn ...]";
  const state = applySnapshot(initialState(), {
    sessionId: "s", model: "replay", running: false, turnId: "t1", streaming: null,
    messages: [
      { role: "system", content: "sys" },
      { role: "user", content: sent, userText: "list the files" },
      { role: "assistant", content: "done" },
      { role: "user", content: "as typed" }, // no userText (an older server): the content as sent
    ],
    toolCalls: [], pendingPermissions: [], permissions: [], instructions: [],
    turns: [{ turnId: "t1", stopReason: "end_turn", message: null, usage: null, undoable: false, undone: false }],
  });
  const users = state.entries.filter((e) => e.kind === "user").map((e) => (e.kind === "user" ? e.text : ""));
  assert.deepEqual(users, ["list the files", "as typed"]);
});

test("MCP servers: one line each in the order first told, from session/new, each mcp_server update and the snapshot", () => {
  let state = reduceHostMessage(initialState(), {
    type: "session", sessionId: "s", model: "replay", instructions: [],
    mcpServers: [{ name: "time", state: "starting", tools: 0, offered: 0 }],
  });
  assert.deepEqual(state.mcpServers, [{ name: "time", state: "starting" }]);
  state = apply(state,
    { sessionUpdate: "mcp_server", name: "git", state: "failed", error: "command not found: mcp-server-gitx" },
    { sessionUpdate: "mcp_server", name: "time", state: "ready", error: null });
  assert.deepEqual(state.mcpServers, [{ name: "time", state: "ready" }, { name: "git", state: "failed", error: "command not found: mcp-server-gitx" }]);
  assert.equal(state.announcement, "MCP server time ready");
  state = apply(state, { sessionUpdate: "mcp_server", name: "git", state: "starting" });
  assert.deepEqual(state.mcpServers[1], { name: "git", state: "starting" }, "a restart clears the error");
  state = applySnapshot(state, {
    sessionId: "s", model: "replay", running: false, turnId: null, streaming: null, messages: [], toolCalls: [],
    pendingPermissions: [], turns: [], permissions: [], instructions: [],
    mcpServers: [{ name: "time", state: "failed", tools: 0, offered: 0, error: "exited (code 1)" }],
  });
  assert.deepEqual(state.mcpServers, [{ name: "time", state: "failed", error: "exited (code 1)" }]);
  assert.deepEqual(reduceHostMessage(state, { type: "reset", snapshot: null }).mcpServers, []);
});

test("an MCP approval's Allow always covers the tool with any arguments, never its server", () => {
  const text = allowAlwaysText({
    sessionId: "s", options: [],
    toolCall: { toolCallId: "c1", index: 0, name: "mcp__time__get_current_time", kind: "function", status: "generated", rev: 1,
                path: null, argumentsText: "{}", partialArguments: null, arguments: {} },
    subject: { kind: "mcp", tool: "mcp__time__get_current_time", server: "time", serverTool: "get_current_time",
               arguments: {}, hints: { readOnlyHint: true } },
  });
  assert.equal(text, "Allow always: mcp__time__get_current_time with any arguments for this conversation (not the other tools of time)");
});

test("a result's image is shown only as a data: URL of PNG, JPEG, GIF or WebP built from base64", () => {
  assert.equal(imageUrl("image/png", "iVBORw0KGgo="), "data:image/png;base64,iVBORw0KGgo=");
  assert.equal(imageUrl("IMAGE/JPEG", "AAAA"), "data:image/jpeg;base64,AAAA");
  assert.equal(imageUrl("image/svg+xml", "PHN2Zz4="), undefined, "no SVG");
  assert.equal(imageUrl("text/html", "AAAA"), undefined);
  assert.equal(imageUrl("image/png;x=1", "AAAA"), undefined);
  assert.equal(imageUrl("image/png", "AAAA\"><script>"), undefined, "only base64 text");
  assert.equal(imageUrl("image/png", "AAA"), undefined);
  const result = { ok: true, content: "[image image/png, 8 bytes: …]", errorCode: null, data: { isError: false, content: [
    { type: "text", text: "a picture" },
    { type: "image", mimeType: "image/png", size: 8, data: "iVBORw0KGgo=" },
    { type: "image", mimeType: "image/svg+xml", size: 5, data: "PHN2Zz4=" },
    { type: "image", mimeType: "image/png", size: 9000000, note: "not shown: larger than 4.0 MB" },
    { type: "image", mimeType: 3 },
    "nonsense",
  ] } };
  assert.deepEqual(imagesOf(result), [
    { mimeType: "image/png", size: 8, url: "data:image/png;base64,iVBORw0KGgo=" },
    { mimeType: "image/svg+xml", size: 5, note: "not shown: the panel shows only PNG, JPEG, GIF and WebP images" },
    { mimeType: "image/png", size: 9000000, note: "not shown: larger than 4.0 MB" },
  ]);
  assert.deepEqual(imagesOf({ ok: true, content: "x", errorCode: null, data: { diff: "" } }), []);
  assert.deepEqual(imagesOf({ reason: "no" }), []);
});

test("a snapshot's toolImages message (tool images shown to the model) is neither a user entry nor a turn", () => {
  const state = applySnapshot(initialState(), {
    sessionId: "s", model: "replay", running: false, turnId: "t1", streaming: null,
    messages: [
      { role: "user", content: "draw", userText: "draw" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", function: { name: "mcp__pics__chart", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: "[image image/png, 34 KB: shown to you in the message after the tool results]" },
      { role: "user", toolImages: true, content: [{ type: "text", text: "Image from mcp__pics__chart (c1):" },
        { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }] },
      { role: "assistant", content: "a chart" },
    ],
    toolCalls: [], pendingPermissions: [], permissions: [], instructions: [],
    turns: [{ turnId: "t1", stopReason: "end_turn", message: null, usage: null, undoable: false, undone: false }],
  });
  assert.deepEqual(state.entries.filter((e) => e.kind === "user").length, 1);
  assert.deepEqual(state.entries.filter((e) => e.kind === "turnEnd").length, 1);
});

test("a turn that only wants an API key is announced in the panel's words, not as a failure", () => {
  let state = apply(initialState(), { sessionUpdate: "turn", state: "started", turnId: "t1" });
  state = apply(state, { sessionUpdate: "turn", state: "ended", turnId: "t1", stopReason: "error", errorCode: "no_api_key",
    message: "no API key is set for the model endpoint https://api.openai.com/v1" });
  assert.equal(state.announcement, "Turn ended: Needs an API key. Set one for the model endpoint (kept in VS Code's secret storage), or choose another model.");
  const end = state.entries.at(-1) as { kind: string; errorCode?: string; message?: string };
  assert.equal(end.kind, "turnEnd");
  assert.equal(end.errorCode, "no_api_key");
  assert.match(end.message ?? "", /api\.openai\.com/, "the server's message kept for Details");
  state = apply(state, { sessionUpdate: "turn", state: "ended", turnId: "t2", stopReason: "error", message: "HTTP 500" });
  assert.equal(state.announcement, "Turn ended: Failed: HTTP 500");
});

test("a snapshot's turns give their errorCode and notice to the end lines, as the live ended update does", () => {
  const state = applySnapshot(initialState(), {
    sessionId: "s", model: "openai:gpt-4o-mini", running: false, turnId: "t2", streaming: null,
    messages: [
      { role: "user", content: "hello", userText: "hello" },
      { role: "user", content: "and now?", userText: "and now?" },
      { role: "assistant", content: "That is all." },
    ],
    toolCalls: [], pendingPermissions: [], permissions: [], instructions: [],
    turns: [
      { turnId: "t1", stopReason: "error", message: null, usage: null, undoable: false, undone: false, errorCode: "no_api_key" },
      { turnId: "t2", stopReason: "end_turn", message: null, usage: null, undoable: false, undone: false, notice: "demo_finished" },
    ],
  });
  const ends = state.entries.filter((e) => e.kind === "turnEnd") as { turnId: string; errorCode?: string; notice?: string }[];
  assert.deepEqual(ends.map((e) => [e.turnId, e.errorCode, e.notice]), [["t1", "no_api_key", undefined], ["t2", undefined, "demo_finished"]]);
});
