/** Unit tests of the permission mapping: choices, automatic answers, prompts and notifications. */
import assert from "node:assert/strict";
import { test } from "node:test";
import manifest from "../package.json";
import { automaticAnswer, choicesFor, notificationText, permissionOutcome, permissionPrompt } from "../src/permission";
import type { PermissionOption, ToolCallUpdateWire, ToolCallWire } from "../src/protocol";
import { SERVER_SETTINGS, initializationOptions, manifestDefaults, readSettings } from "../src/settings";

/** A `tool_call` update's `toolCall` (absent argument fields: unchanged). */
function call(fields: Partial<ToolCallUpdateWire>): ToolCallUpdateWire {
  return { toolCallId: "call_1", index: 0, name: "edit_file", kind: "function", status: "generating", rev: 1, path: null, ...fields };
}

/** A full snapshot of a call, as a permission request carries it (every field whole). */
function whole(fields: Partial<ToolCallWire>): ToolCallWire {
  return { ...call({}), argumentsText: "", partialArguments: null, arguments: null, ...fields };
}

const OPTIONS: PermissionOption[] = [
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
  { optionId: "allow_always", name: "Allow always", kind: "allow_always" },
  { optionId: "reject", name: "Reject", kind: "reject_once" },
];

test("permission choices map onto the offered options; dismissing rejects", () => {
  assert.deepEqual(choicesFor(OPTIONS), ["Allow once", "Allow always", "Reject"]);
  assert.deepEqual(choicesFor(OPTIONS.filter((o) => o.kind !== "allow_always")), ["Allow once", "Reject"]);
  assert.deepEqual(permissionOutcome("Allow once", OPTIONS), { outcome: { outcome: "selected", optionId: "allow_once" } });
  assert.deepEqual(permissionOutcome("Allow always", OPTIONS), { outcome: { outcome: "selected", optionId: "allow_always" } });
  assert.deepEqual(permissionOutcome(undefined, OPTIONS), { outcome: { outcome: "selected", optionId: "reject" } });
  assert.deepEqual(permissionOutcome("Reject", []), { outcome: { outcome: "cancelled" } });
});

test("toolwire.approval answers without a dialog unless it is ask", () => {
  assert.equal(automaticAnswer("ask", OPTIONS), undefined);
  assert.deepEqual(automaticAnswer("auto", OPTIONS), { outcome: { outcome: "selected", optionId: "allow_once" } });
  const denied = automaticAnswer("deny", OPTIONS);
  assert.equal(denied?.outcome.outcome === "selected" && denied.outcome.optionId, "reject");
});

test("toolwire.approval auto rejects a subject marked irreversible; every prompt opens with why", () => {
  const subject = { kind: "edit" as const, tool: "delete_file", path: "big.bin", diff: "deleted big.bin\n", irreversible: { reason: "big.bin: 70 MiB is over the 64 MiB checkpoint limit" } };
  const answer = automaticAnswer("auto", OPTIONS, subject);
  assert.equal(answer?.outcome.outcome === "selected" && answer.outcome.optionId, "reject");
  assert.match(answer?.outcome.outcome === "selected" ? answer.outcome.reason ?? "" : "", /^This change cannot be undone: big\.bin: 70 MiB/);
  assert.deepEqual(automaticAnswer("auto", OPTIONS, { ...subject, irreversible: undefined }), { outcome: { outcome: "selected", optionId: "allow_once" } });
  assert.equal(automaticAnswer("ask", OPTIONS, subject), undefined);
  const prompt = permissionPrompt({ sessionId: "s", toolCall: whole({ name: "delete_file", status: "generated" }), subject, options: OPTIONS });
  assert.equal(prompt.message, "This change cannot be undone: big.bin: 70 MiB is over the 64 MiB checkpoint limit. Toolwire wants to delete_file: big.bin");
});

test("toolwire.approval auto rejects a subject naming a file kept from the model; every prompt opens with the file and pattern", () => {
  const subject = { kind: "tool" as const, tool: "read_file", arguments: { path: "config/.env" }, excluded: [{ path: "config/.env", pattern: ".env" }] };
  const kept = "Kept from the model (modelExclude): config/.env (pattern '.env'). Allowing shows it to the model for this call only.";
  const answer = automaticAnswer("auto", OPTIONS, subject);
  assert.equal(answer?.outcome.outcome === "selected" && answer.outcome.optionId, "reject");
  assert.equal(answer?.outcome.outcome === "selected" ? answer.outcome.reason : "", `${kept} toolwire.approval is auto, which never allows a file kept from the model: tell the user (they can allow it with toolwire.approval set to ask).`);
  assert.deepEqual(automaticAnswer("auto", OPTIONS, { ...subject, excluded: [] }), { outcome: { outcome: "selected", optionId: "allow_once" } });
  assert.equal(automaticAnswer("ask", OPTIONS, subject), undefined);
  const params = { sessionId: "s", toolCall: whole({ name: "read_file", status: "generated" }), subject, options: OPTIONS };
  assert.equal(permissionPrompt(params).message, `${kept} Toolwire wants to read_file`);
  assert.equal(notificationText(params), `${kept} Toolwire wants to run read_file.`);
});

test("toolwire.allowIrreversible (default false, from package.json) is sent to the server as allowIrreversible", () => {
  const defaults = readSettings(manifestDefaults(manifest), (message) => assert.fail(message));
  assert.equal(defaults.allowIrreversible, false);
  assert.equal(initializationOptions(defaults).allowIrreversible, false);
  const on = readSettings(manifestDefaults(manifest, { allowIrreversible: true }), (message) => assert.fail(message));
  assert.equal(initializationOptions(on).allowIrreversible, true);
  const warned: string[] = [];
  assert.equal(readSettings(manifestDefaults(manifest, { allowIrreversible: "yes" }), (m) => warned.push(m)).allowIrreversible, false);
  assert.equal(warned.length, 1);
});

test("toolwire.modelExclude (default from package.json) is sent to the server as modelExclude; a bad value falls back", () => {
  const defaults = readSettings(manifestDefaults(manifest), (message) => assert.fail(message));
  assert.deepEqual(defaults.modelExclude, [".env", ".env.*", "*.pem", "*.key", "id_rsa*", ".npmrc", ".netrc"]);
  assert.deepEqual(initializationOptions(defaults).modelExclude, defaults.modelExclude);
  const none = readSettings(manifestDefaults(manifest, { modelExclude: [] }), (message) => assert.fail(message));
  assert.deepEqual(initializationOptions(none).modelExclude, []);
  const warned: string[] = [];
  assert.deepEqual(readSettings(manifestDefaults(manifest, { modelExclude: ".env" }), (m) => warned.push(m)).modelExclude, defaults.modelExclude);
  assert.deepEqual(readSettings(manifestDefaults(manifest, { modelExclude: [".env", ""] }), (m) => warned.push(m)).modelExclude, defaults.modelExclude);
  assert.equal(warned.length, 2);
});

test("toolwire.projectInstructions (default true, from package.json) is sent to the server as projectInstructions", () => {
  const defaults = readSettings(manifestDefaults(manifest), (message) => assert.fail(message));
  assert.equal(defaults.projectInstructions, true);
  assert.equal(initializationOptions(defaults).projectInstructions, true);
  const off = readSettings(manifestDefaults(manifest, { projectInstructions: false }), (message) => assert.fail(message));
  assert.equal(initializationOptions(off).projectInstructions, false);
  const warned: string[] = [];
  assert.equal(readSettings(manifestDefaults(manifest, { projectInstructions: "no" }), (m) => warned.push(m)).projectInstructions, true);
  assert.equal(warned.length, 1);
  assert.ok(SERVER_SETTINGS.includes("toolwire.projectInstructions"));  // a change goes to the next turn, no restart
});

test("toolwire.diagnosticsWait (default 1.5, from package.json) is sent to the server as diagnosticsWait", () => {
  const defaults = readSettings(manifestDefaults(manifest), (message) => assert.fail(message));
  assert.equal(defaults.diagnosticsWait, 1.5);
  assert.equal(initializationOptions(defaults).diagnosticsWait, 1.5);
  const off = readSettings(manifestDefaults(manifest, { diagnosticsWait: 0 }), (message) => assert.fail(message));
  assert.equal(initializationOptions(off).diagnosticsWait, 0);
  const warned: string[] = [];
  assert.equal(readSettings(manifestDefaults(manifest, { diagnosticsWait: -1 }), (m) => warned.push(m)).diagnosticsWait, 1.5);
  assert.equal(readSettings(manifestDefaults(manifest, { diagnosticsWait: "2" }), (m) => warned.push(m)).diagnosticsWait, 1.5);
  assert.equal(warned.length, 2);
  assert.ok(SERVER_SETTINGS.includes("toolwire.diagnosticsWait"));  // a change goes to the next turn, no restart
});

test("the hidden-panel notification of a change that cannot be undone opens with why", () => {
  const subject = { kind: "edit" as const, tool: "delete_file", path: "big.bin", diff: "deleted big.bin\n", irreversible: { reason: "the checkpoint store cannot be written (Not a directory)" } };
  const text = notificationText({ sessionId: "s", toolCall: whole({ name: "delete_file", status: "generated" }), subject, options: OPTIONS });
  assert.equal(text, "This change cannot be undone: the checkpoint store cannot be written (Not a directory). Toolwire wants to run delete_file big.bin.");
});

test("the permission dialog shows the diff or the git command line", () => {
  const edit = permissionPrompt({
    sessionId: "s",
    toolCall: whole({ status: "generated" }),
    subject: { kind: "edit", tool: "edit_file", path: "a.txt", diff: "-hello\n+hello world" },
    options: OPTIONS,
  });
  assert.deepEqual(edit, { message: "Toolwire wants to edit_file: a.txt", detail: "-hello\n+hello world" });
  const commit = permissionPrompt({
    sessionId: "s",
    toolCall: whole({ name: "git_commit", status: "generated" }),
    subject: { kind: "git", tool: "git_commit", argv: ["git", "-c", "core.pager=cat", "commit", "-m", "it's done"], cwd: "/repo" },
    options: OPTIONS,
  });
  assert.deepEqual(commit, {
    message: "Toolwire wants to git_commit",
    detail: "git -c core.pager=cat commit -m 'it'\\''s done'\nin /repo",
  });
});

test("the dialog and the notification show names in display form, model text with escapes", () => {
  const params = {
    sessionId: "s",
    toolCall: whole({ status: "generated" }),
    subject: { kind: "tool" as const, tool: "run\u202etool", arguments: { note: "rm -rf ~ \u202e#\u2066 ok" } },
    options: OPTIONS,
  };
  assert.deepEqual(permissionPrompt(params), {
    message: "Toolwire wants to run\\u202etool",
    detail: '{\n  "note": "rm -rf ~ \\u202e#\\u2066 ok"\n}',
  });
  assert.equal(notificationText(params), "Toolwire wants to run run\\u202etool.");
  const edit = { ...params, subject: { kind: "edit" as const, tool: "edit_file", path: '"invoice\\342\\200\\256fdp.exe"', diff: "+x\u200by\r\n" } };
  assert.equal(notificationText(edit), 'Toolwire wants to run edit_file "invoice\\342\\200\\256fdp.exe".');
  assert.equal(permissionPrompt(edit).detail, "+x\\u200by\\r\n");
});

test("toolwire.maxModelRequests (default 25) and toolwire.maxTools (default 20, 1 to 128) are sent as the server's settings", () => {
  const defaults = readSettings(manifestDefaults(manifest), (message) => assert.fail(message));
  assert.equal(initializationOptions(defaults).maxModelRequests, 25);
  assert.equal(initializationOptions(defaults).maxTools, 20);
  assert.equal(initializationOptions(readSettings(manifestDefaults(manifest, { maxTools: 5 }))).maxTools, 5);
  const warned: string[] = [];
  assert.equal(readSettings(manifestDefaults(manifest, { maxTools: 129 }), (m) => warned.push(m)).maxTools, 20);
  assert.deepEqual(warned, ["Invalid value 129 for toolwire.maxTools; using 20."]);
});

test("toolwire.mcpServers is sent as mcpServers; a bad value falls back to {} without being shown", () => {
  const defaults = readSettings(manifestDefaults(manifest), (message) => assert.fail(message));
  assert.deepEqual(initializationOptions(defaults).mcpServers, {});
  const servers = { git: { command: "uvx", args: ["mcp-server-git"], env: { TOKEN: "env-secret-1234" } } };
  assert.deepEqual(initializationOptions(readSettings(manifestDefaults(manifest, { mcpServers: servers }))).mcpServers, servers);
  const warned: string[] = [];
  for (const bad of ["env-secret-1234", ["env-secret-1234"], { git: "env-secret-1234" }]) {
    assert.deepEqual(readSettings(manifestDefaults(manifest, { mcpServers: bad }), (m) => warned.push(m)).mcpServers, {});
  }
  assert.deepEqual(warned, [
    "Invalid toolwire.mcpServers (a string; not shown: it may hold secrets); using {}.",
    "Invalid toolwire.mcpServers (an array; not shown: it may hold secrets); using {}.",
    "Invalid toolwire.mcpServers (an entry is not an object; not shown: it may hold secrets); using {}.",
  ]);
  assert.ok(SERVER_SETTINGS.includes("toolwire.mcpServers")); // a change goes to the next turn, no restart
});

test("toolwire.mcpWorkspaceServers is sent true only in a trusted workspace; both MCP settings are restricted", () => {
  const on = readSettings(manifestDefaults(manifest, { mcpWorkspaceServers: true }), (message) => assert.fail(message));
  assert.equal(initializationOptions(on, undefined, undefined, true).mcpWorkspaceServers, true);
  assert.equal(initializationOptions(on, undefined, undefined, false).mcpWorkspaceServers, false);
  assert.equal(initializationOptions(on).mcpWorkspaceServers, false);
  const defaults = readSettings(manifestDefaults(manifest), (message) => assert.fail(message));
  assert.equal(initializationOptions(defaults, undefined, undefined, true).mcpWorkspaceServers, false);
  const restricted = manifest.capabilities.untrustedWorkspaces.restrictedConfigurations;
  assert.ok(restricted.includes("toolwire.mcpServers") && restricted.includes("toolwire.mcpWorkspaceServers"));
  assert.ok(SERVER_SETTINGS.includes("toolwire.mcpWorkspaceServers"));
});

test("an MCP tool's question names its server, its hints and that Toolwire cannot undo it", () => {
  const params = {
    sessionId: "s", options: OPTIONS,
    toolCall: whole({ name: "mcp__git__git_commit", status: "generated" }),
    subject: { kind: "mcp" as const, tool: "mcp__git__git_commit", server: "git", serverTool: "git_commit",
               arguments: { message: "m" }, hints: { readOnlyHint: false, destructiveHint: true, openWorldHint: false },
               undo: "Toolwire cannot undo what this tool does" },
  };
  assert.equal(notificationText(params),
    "Toolwire cannot undo what this tool does. Toolwire wants to run mcp__git__git_commit (git_commit from the MCP server git).");
  const prompt = permissionPrompt(params);
  assert.equal(prompt.message,
    "Toolwire cannot undo what this tool does. Toolwire wants to run mcp__git__git_commit (git_commit from the MCP server git)");
  assert.equal(prompt.detail, 'Hints from the server, not checked: not read-only, destructive, closed world.\n\n{\n  "message": "m"\n}');
  // auto may allow an MCP call: it is outside the checkpoints by nature, nothing to keep undoable
  assert.deepEqual(automaticAnswer("auto", OPTIONS, params.subject), { outcome: { outcome: "selected", optionId: "allow_once" } });
  const readOnly = { ...params, subject: { ...params.subject, hints: { readOnlyHint: true }, undo: null } };
  assert.equal(notificationText(readOnly), "Toolwire wants to run mcp__git__git_commit (git_commit from the MCP server git).");
  assert.equal(permissionPrompt(readOnly).detail.split("\n")[0], "Hints from the server, not checked: read-only.");
});
