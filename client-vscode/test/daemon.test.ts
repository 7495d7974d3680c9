// src/daemon.ts against the real server: `toolwire serve --socket` started detached,
// a client that leaves and connects again finds its session, the explicit stop ends the
// process, a server that hangs is killed by ensureStopped (what Restart Server runs).
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import type { Socket } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import { connectSocket, ensureStopped, pidFileFor, socketPathFor, startServer } from "../src/daemon";
import type { ServerLaunch } from "../src/python";

const PACKAGE_ROOT = path.resolve(__dirname, path.basename(path.dirname(__dirname)) === "out" ? "../.." : "..");

function launch(): ServerLaunch {
  const command = process.env.TOOLWIRE_PYTHON ?? path.resolve(PACKAGE_ROOT, "../.venv/bin/python");
  assert.ok(existsSync(command), `no interpreter: set TOOLWIRE_PYTHON or create ${command}`);
  return {
    interpreter: { command, source: "setting", version: "3" },
    command,
    args: ["-m", "toolwire", "serve", "--log-level", "INFO"],
    env: { ...process.env },
    toolwire: "environment",
    description: "test",
  };
}

/** Whether a process with this pid runs (a zombie left by the test runner counts as gone). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\S+ \(.*\) Z/.test(require("node:fs").readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

async function connected(socketPath: string): Promise<{ socket: Socket; rpc: MessageConnection }> {
  const socket = await connectSocket(socketPath);
  const rpc = createMessageConnection(new StreamMessageReader(socket), new StreamMessageWriter(socket));
  rpc.listen();
  await rpc.sendRequest("initialize", { processId: null, rootUri: null, capabilities: {} });
  await rpc.sendNotification("initialized", {});
  return { socket, rpc };
}

async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!check()) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

test("socket paths are per workspace and launch, and short enough for a Unix socket", () => {
  const a = socketPathFor("/home/u/.config/Code/User/workspaceStorage/0123456789abcdef0123456789abcdef/toolwire.toolwire", launch());
  const b = socketPathFor("/another/workspace/storage", launch());
  const c = socketPathFor("/another/workspace/storage", { ...launch(), command: "/usr/bin/python3.12" });
  assert.notEqual(a, b);
  assert.notEqual(b, c);
  assert.ok(path.basename(path.dirname(a)).startsWith("toolwire-"));
  assert.ok(path.basename(a).length < 30);
});

test("a started server keeps the session for a client that connects again; shutdown and exit end it", { timeout: 90_000 }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tw-daemon-"));
  const socketPath = path.join(dir, "run", "s.sock");
  const pid = await startServer(launch(), socketPath, path.join(dir, "log", "server.log"), dir);
  try {
    assert.ok(pid !== undefined && running(pid));
    const first = await connected(socketPath);
    const { sessionId } = await first.rpc.sendRequest<{ sessionId: string }>("toolwire/session/new", { cwd: dir, model: "replay" });
    first.rpc.dispose();
    first.socket.destroy(); // a window that reloads: no shutdown

    const second = await connected(socketPath);
    const snapshot = await second.rpc.sendRequest<{ sessionId: string; running: boolean }>("toolwire/session/snapshot", { sessionId });
    assert.equal(snapshot.sessionId, sessionId);
    assert.equal(running(pid), true, "the same process");
    await second.rpc.sendRequest("shutdown");
    await second.rpc.sendNotification("exit");
    assert.equal(await ensureStopped(socketPath), "gone");
    await until(() => !running(pid), "the server to exit");
    assert.ok(!existsSync(socketPath), "the socket is removed");
    assert.ok(!existsSync(pidFileFor(socketPath)));
    assert.ok(existsSync(path.join(dir, "log", "server.log")), "the server logs to its file");
  } finally {
    if (pid !== undefined && running(pid)) {
      process.kill(-pid, "SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a server that hangs when asked to stop is killed (Restart Server)", { timeout: 90_000 }, async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tw-daemon-"));
  const socketPath = path.join(dir, "s.sock");
  const pid = await startServer(launch(), socketPath, path.join(dir, "server.log"), dir);
  try {
    assert.ok(pid !== undefined);
    process.kill(pid, "SIGSTOP"); // it can no longer answer anything
    assert.equal(await ensureStopped(socketPath), "killed");
    await until(() => !running(pid), "the killed server to be gone");
  } finally {
    if (pid !== undefined && running(pid)) {
      process.kill(-pid, "SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  }
});
