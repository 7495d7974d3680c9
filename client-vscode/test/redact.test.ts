/**
 * The API key never reaches the log or the JSON-RPC trace: vscode-jsonrpc's real
 * verbose tracer (what `toolwire.trace.server: verbose` shows) wrapped by
 * src/redact.ts, over a real server, with the key sent as initializationOptions and
 * with workspace/didChangeConfiguration.
 */
import assert from "node:assert/strict";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { redact, redactingChannel, REDACTED } from "../src/redact";
import { startServer } from "./panel/server";

const KEY = "sk-test-0123456789abcdef\"quote";

test("redact replaces the secret and its JSON-escaped form", () => {
  assert.equal(redact(`a ${KEY} b ${JSON.stringify(KEY)}`, [KEY]), `a ${REDACTED} b "${REDACTED}"`);
  assert.equal(redact("short ab", ["ab"]), "short ab", "too short to be a key");
});

test("the verbose trace of a real session never contains the API key", { timeout: 60_000 }, async (t) => {
  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), "toolwire-redact-")));
  t.after(() => rm(workspace, { recursive: true, force: true }));
  const lines: string[] = [];
  const sink = { log: (message: string, data?: string) => lines.push(`${message}\n${data ?? ""}`) };
  const server = await startServer(workspace, { model: "replay", apiKey: KEY }, redactingChannel(sink, () => [KEY]));
  t.after(() => server.stop());
  await server.connection.sendNotification("workspace/didChangeConfiguration", { settings: { toolwire: { apiKey: KEY, maxModelRequests: 3 } } });
  const { sessionId } = await server.connection.sendRequest<{ sessionId: string }>("toolwire/session/new", { cwd: workspace });
  const snapshot = await server.connection.sendRequest<unknown>("toolwire/session/snapshot", { sessionId });
  const trace = lines.join("\n");
  assert.match(trace, /initialize/);
  assert.match(trace, /didChangeConfiguration/);
  assert.ok(trace.includes(REDACTED), "the key was there to redact");
  assert.ok(!trace.includes("0123456789abcdef"), "no part of the key in the trace");
  assert.ok(!JSON.stringify(snapshot).includes("0123456789abcdef"), "no key in the snapshot");
  assert.ok(!server.stderr.join("").includes("0123456789abcdef"), "no key in the server's log");
});
