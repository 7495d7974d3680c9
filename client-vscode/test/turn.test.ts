/**
 * End-to-end: starts the real Python server (`<python> -m toolwire serve`) and
 * drives one whole replay turn through it over stdio with vscode-jsonrpc, the
 * same protocol layer the extension uses. No VS Code needed.
 *
 * The interpreter is $TOOLWIRE_PYTHON, else ../.venv/bin/python next to client-vscode.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { pathToFileURL } from "node:url";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import manifest from "../package.json";
import { permissionOutcome } from "../src/permission";
import {
  RequestPermission,
  SERVE_ARGS,
  SessionNew,
  SessionPrompt,
  SessionUpdateNotification,
  type RequestPermissionParams,
  type SessionUpdate,
  type ToolCallUpdateWire,
  type ToolCallStatus,
} from "../src/protocol";
import { initializationOptions, manifestDefaults, readSettings, sessionModel } from "../src/settings";

/** client-vscode/, whether this runs from test/ (tsc) or out/test/ (the esbuild bundle). */
const PACKAGE_ROOT = path.resolve(__dirname, path.basename(path.dirname(__dirname)) === "out" ? "../.." : "..");

/** Fails a test instead of hanging it when the server never answers. */
const TURN_TIMEOUT_MS = 60_000;

function pythonInterpreter(): string {
  const fromEnv = process.env.TOOLWIRE_PYTHON;
  if (fromEnv) {
    return fromEnv;
  }
  const venv = path.resolve(PACKAGE_ROOT, "../.venv/bin/python");
  assert.ok(existsSync(venv), `no interpreter: set TOOLWIRE_PYTHON or create ${venv}`);
  return venv;
}

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=Toolwire Test", "-c", "user.email=test@toolwire.invalid", ...args], {
    cwd,
    encoding: "utf8",
  });
}

/** The server process and a JSON-RPC connection over its stdio. */
interface Server {
  process: ChildProcessWithoutNullStreams;
  connection: MessageConnection;
  stderr: string[];
  exited: Promise<number | null>;
  /** `promise`, or a rejection with the server's stderr if the server exits first. */
  alive<T>(promise: Promise<T>): Promise<T>;
}

function startServer(python: string, cwd: string): Server {
  const child = spawn(python, [...SERVE_ARGS], { cwd, stdio: "pipe", env: { ...process.env, PYTHONUNBUFFERED: "1" } });
  const stderr: string[] = [];
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => stderr.push(chunk));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  connection.listen();
  const died = exited.then((code) => {
    throw new Error(`the server exited (code ${code}) before answering; stderr:\n${stderr.join("")}`);
  });
  died.catch(() => undefined); // only an error for callers that are waiting
  const alive = <T>(promise: Promise<T>): Promise<T> => Promise.race([promise, died]);
  return { process: child, connection, stderr, exited, alive };
}

async function stopServer(server: Server): Promise<void> {
  const timer = setTimeout(() => server.process.kill("SIGKILL"), 10_000);
  try {
    if (server.process.exitCode === null) {
      await server.connection.sendRequest("shutdown").catch(() => undefined);
      await server.connection.sendNotification("exit").catch(() => undefined);
    }
    await server.exited;
  } finally {
    clearTimeout(timer);
    server.connection.dispose();
  }
}

/** Collapses repeats: generating, generating, generated → generating, generated. */
function statusPath(updates: readonly ToolCallUpdateWire[]): ToolCallStatus[] {
  const statuses: ToolCallStatus[] = [];
  for (const { status } of updates) {
    if (statuses[statuses.length - 1] !== status) {
      statuses.push(status);
    }
  }
  return statuses;
}

/** Writes `text` to the test report, one diagnostic per line (TAP escapes newlines). */
function diagnose(t: TestContext, title: string, text: string): void {
  t.diagnostic(`${title}:`);
  for (const line of text.trimEnd().split("\n")) {
    t.diagnostic(`  ${line}`);
  }
}

let workspace: string;
let scriptDir: string;

before(async () => {
  workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), "toolwire-ws-")));
  scriptDir = await mkdtemp(path.join(os.tmpdir(), "toolwire-script-"));
  git(workspace, "init", "-q");
  await writeFile(path.join(workspace, "hello.txt"), "hello\n");
  git(workspace, "add", "hello.txt");
  git(workspace, "commit", "-q", "-m", "hello");
});

after(async () => {
  await rm(workspace, { recursive: true, force: true });
  await rm(scriptDir, { recursive: true, force: true });
});

test("a replay turn: read, approved edit, text", { timeout: TURN_TIMEOUT_MS }, async (t) => {
  const script = path.join(scriptDir, "turn.jsonl");
  const lines = [
    { tool_calls: [{ name: "read_file", arguments: { path: "hello.txt" } }], chunk_size: 8 },
    {
      tool_calls: [{ name: "edit_file", arguments: { path: "hello.txt", old_string: "hello", new_string: "hello world" } }],
      chunk_size: 8,
    },
    { text: "done" },
  ];
  await writeFile(script, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");

  // Settings exactly as the extension reads them: package.json defaults, model overridden.
  const config = manifestDefaults(manifest, { model: `replay:${script}` });
  const settings = readSettings(config, (message) => assert.fail(message));

  const server = startServer(pythonInterpreter(), workspace);
  let finished = false;
  t.after(async () => {
    await stopServer(server);
    if (!finished || process.env.TOOLWIRE_TEST_VERBOSE) {
      diagnose(t, "server stderr", server.stderr.join(""));
    }
  });
  const { connection } = server;

  const updates: SessionUpdate[] = [];
  const permissions: RequestPermissionParams[] = [];
  const unexpected: string[] = [];
  connection.onNotification(SessionUpdateNotification, ({ update }) => {
    updates.push(update);
  });
  connection.onRequest(RequestPermission, (params) => {
    permissions.push(params);
    // Nothing runs before approval where policy says ask.
    const ran = updates.some(
      (u) => u.sessionUpdate === "tool_call" && u.toolCall.toolCallId === params.toolCall.toolCallId && u.toolCall.status === "calling",
    );
    if (ran) {
      unexpected.push(`${params.toolCall.name} was calling before it was approved`);
    }
    return permissionOutcome("Allow once", params.options);
  });
  // What vscode-languageclient answers on its own in the extension.
  connection.onRequest("client/registerCapability", () => null);
  connection.onRequest("window/workDoneProgress/create", () => null);
  connection.onRequest((method) => {
    unexpected.push(method);
    throw new Error(`the test client does not handle ${method}`);
  });
  connection.onNotification("window/showMessage", (params: { message: string }) => {
    unexpected.push(`showMessage: ${params.message}`);
  });

  const { alive } = server;
  await alive(connection.sendRequest("initialize", {
    processId: process.pid,
    clientInfo: { name: "toolwire-node-test" },
    rootUri: pathToFileURL(workspace).href,
    workspaceFolders: [{ uri: pathToFileURL(workspace).href, name: "ws" }],
    capabilities: { workspace: { applyEdit: true, workspaceFolders: true } },
    initializationOptions: initializationOptions(settings),
  }));
  await connection.sendNotification("initialized", {});

  const model = sessionModel(settings);
  assert.equal(model, `replay:${script}`);
  const { sessionId } = await alive(connection.sendRequest(SessionNew, { cwd: workspace, model }));
  assert.ok(sessionId, "session/new gave no sessionId");

  const result = await alive(
    connection.sendRequest(SessionPrompt, {
      sessionId,
      prompt: [{ type: "text", text: 'Change "hello" to "hello world" in hello.txt.' }],
    }),
  );

  assert.equal(result.stopReason, "end_turn");
  assert.deepEqual(unexpected, []);

  const calls = new Map<string, ToolCallUpdateWire[]>();
  for (const update of updates) {
    if (update.sessionUpdate === "tool_call") {
      const id = update.toolCall.toolCallId;
      assert.ok(id, `a tool_call update without toolCallId: ${JSON.stringify(update.toolCall)}`);
      calls.set(id, [...(calls.get(id) ?? []), update.toolCall]);
    }
  }
  assert.deepEqual(
    [...calls.values()].map((history) => history[history.length - 1].name),
    ["read_file", "edit_file"],
  );
  for (const [id, history] of calls) {
    assert.deepEqual(statusPath(history), ["generating", "generated", "calling", "done"], `statuses of ${id}`);
    const revs = history.map((call) => call.rev);
    for (let i = 1; i < revs.length; i++) {
      assert.ok(revs[i] > revs[i - 1], `rev of ${id} not strictly increasing: ${revs.join(", ")}`);
    }
    const last = history[history.length - 1];
    assert.ok(last.result && "ok" in last.result && last.result.ok, `${id} has no ok result: ${JSON.stringify(last.result)}`);
  }

  assert.equal(permissions.length, 1, "exactly one permission request (the edit)");
  const [asked] = permissions;
  assert.equal(asked.toolCall.name, "edit_file");
  assert.equal(asked.subject.kind, "edit");
  assert.equal(asked.subject.tool, "edit_file");
  assert.equal(asked.subject.kind === "edit" && asked.subject.path, "hello.txt");
  assert.match(asked.subject.kind === "edit" ? asked.subject.diff : "", /\+hello world/);

  const messages = updates.flatMap((u) => (u.sessionUpdate === "agent_message_chunk" ? [u.content.text] : []));
  assert.equal(messages.join(""), "done");
  const turnStates = updates.flatMap((u) => (u.sessionUpdate === "turn" ? [u.state] : []));
  assert.equal(turnStates[0], "started");
  assert.equal(turnStates[turnStates.length - 1], "ended");

  assert.equal(await readFile(path.join(workspace, "hello.txt"), "utf8"), "hello world\n");
  finished = true;
});
