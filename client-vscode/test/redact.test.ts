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
import { mcpSecrets, redact, redactingChannel, REDACTED, urlSecrets } from "../src/redact";
import { startServer } from "./panel/server";

const KEY = "sk-test-0123456789abcdef\"quote";
const PASSWORD = "s3cretpassword";
const QUERY_KEY = "qkey-0123456789abcdef";
const BASE_URL = `http://user:${PASSWORD}@127.0.0.1:9/v1?api-key=${QUERY_KEY}&token=Hb4nP&api-version=2024-06-01`;

test("redact replaces the secret and its JSON-escaped form", () => {
  assert.equal(redact(`a ${KEY} b ${JSON.stringify(KEY)}`, [KEY]), `a ${REDACTED} b "${REDACTED}"`);
  assert.equal(redact("short ab", ["ab"]), "short ab", "too short to be a key");
  assert.equal(redact("short sk-1234 here", ["sk-1234"]), "short sk-1234 here", "under 8 characters: only in its place");
  assert.equal(redact('{"apiKey":"sk-1234"} Bearer sk-1234', ["sk-1234"]), `{"apiKey":"${REDACTED}"} Bearer ${REDACTED}`);
});

test("a URL's user info and key-like query values are masked in place, long ones everywhere", () => {
  const secrets = urlSecrets(BASE_URL);
  assert.deepEqual(secrets.filter((s) => s.length >= 8).sort(), [PASSWORD, QUERY_KEY, `user:${PASSWORD}`].sort());
  assert.equal(
    redact(`cannot reach ${BASE_URL}: refused; echo ${PASSWORD} ${QUERY_KEY}`, secrets),
    `cannot reach http://${REDACTED}@127.0.0.1:9/v1?api-key=${REDACTED}&token=${REDACTED}&api-version=2024-06-01: refused; echo ${REDACTED} ${REDACTED}`,
  );
  assert.equal(redact("https://u:p@h/x?sig=ab&q=1", []), `https://${REDACTED}@h/x?sig=${REDACTED}&q=1`, "any URL, nothing registered");
  assert.equal(redact("postgres://admin:p@ss@db:5432/app", []), `postgres://${REDACTED}@db:5432/app`, "a raw @ in a password");
  assert.equal(redact("https://a/cb#access_token=ab.cd&state=1", []), `https://a/cb#access_token=${REDACTED}&state=1`);
  assert.deepEqual(urlSecrets("https://a/cb#access_token=abcdefgh12"), ["abcdefgh12"]);
});

test("the verbose trace never contains baseUrl's user info or query key", { timeout: 60_000 }, async (t) => {
  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), "toolwire-redact-")));
  t.after(() => rm(workspace, { recursive: true, force: true }));
  const lines: string[] = [];
  const sink = { log: (message: string, data?: string) => lines.push(`${message}\n${data ?? ""}`) };
  const server = await startServer(workspace, { model: "replay", baseUrl: BASE_URL }, redactingChannel(sink, () => urlSecrets(BASE_URL)));
  t.after(() => server.stop());
  await server.connection.sendNotification("workspace/didChangeConfiguration", { settings: { toolwire: { baseUrl: BASE_URL } } });
  await server.connection.sendRequest<{ sessionId: string }>("toolwire/session/new", { cwd: workspace });
  const trace = lines.join("\n");
  assert.match(trace, /didChangeConfiguration/);
  assert.ok(trace.includes(`http://${REDACTED}@127.0.0.1:9/v1?api-key=${REDACTED}&token=${REDACTED}`), trace.slice(0, 2000));
  for (const secret of [PASSWORD, QUERY_KEY, "Hb4nP"]) {
    assert.ok(!trace.includes(secret), `${secret} in the trace`);
    assert.ok(!server.stderr.join("").includes(secret), `${secret} in the server's log`);
  }
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

test("the verbose trace never contains the MCP servers' env values, header credentials or URL secrets, whatever their names", { timeout: 60_000 }, async (t) => {
  const workspace = await realpath(await mkdtemp(path.join(os.tmpdir(), "toolwire-redact-")));
  t.after(() => rm(workspace, { recursive: true, force: true }));
  const servers = {
    git: { command: "uvx", args: ["mcp-server-git"], env: { SERVICE_CONFIG: "ghp-env-secret-0123" } },
    tracker: { type: "http", url: "http://127.0.0.1:9/mcp?token=url-token-0123", headers: { "X-Tenant": "Bearer header-secret-0123" } },
  };
  assert.deepEqual(mcpSecrets(servers).filter((s) => s.length >= 8).sort(),
    ["ghp-env-secret-0123", "header-secret-0123", "url-token-0123"]);
  const lines: string[] = [];
  const sink = { log: (message: string, data?: string) => lines.push(`${message}\n${data ?? ""}`) };
  const server = await startServer(workspace, { model: "replay", mcpServers: servers }, redactingChannel(sink, () => mcpSecrets(servers)));
  t.after(() => server.stop());
  await server.connection.sendNotification("workspace/didChangeConfiguration", { settings: { toolwire: { mcpServers: servers } } });
  const trace = lines.join("\n");
  assert.match(trace, /didChangeConfiguration/);
  assert.ok(trace.includes("mcp-server-git") && trace.includes(`"SERVICE_CONFIG":"${REDACTED}"`) && trace.includes(`"X-Tenant":"Bearer ${REDACTED}"`), trace.slice(0, 2000));
  for (const secret of ["ghp-env-secret-0123", "header-secret-0123", "url-token-0123"]) {
    assert.ok(!trace.includes(secret), `${secret} in the trace`);
    assert.ok(!server.stderr.join("").includes(secret), `${secret} in the server's log`);
  }
});
