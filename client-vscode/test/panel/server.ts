/**
 * A real `toolwire serve` over stdio for the panel tests and benchmark, driven by the
 * extension's real host-side panel logic (src/panel/host.ts) through vscode-jsonrpc.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import { SERVE_ARGS, type RequestPermissionParams } from "../../src/protocol";

/** client-vscode/, from test/panel (tsc) or out/test (the esbuild bundle). */
export const PACKAGE_ROOT = (() => {
  let dir = __dirname;
  while (!existsSync(path.join(dir, "package.json"))) {
    dir = path.dirname(dir);
  }
  return dir;
})();

/** The interpreter: $TOOLWIRE_PYTHON, else ../.venv/bin/python. */
export function pythonInterpreter(): string {
  const fromEnv = process.env.TOOLWIRE_PYTHON;
  if (fromEnv) {
    return fromEnv;
  }
  const venv = path.resolve(PACKAGE_ROOT, "../.venv/bin/python");
  assert.ok(existsSync(venv), `no interpreter: set TOOLWIRE_PYTHON or create ${venv}`);
  return venv;
}

/** Runs git in `cwd` with a fixed identity. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", ["-c", "user.name=Toolwire Test", "-c", "user.email=test@toolwire.invalid", ...args], {
    cwd,
    encoding: "utf8",
  });
}

/** A started, initialized server. */
export interface Server {
  process: ChildProcessWithoutNullStreams;
  connection: MessageConnection;
  stderr: string[];
  /** Every permission request the server sent, in order. */
  permissions: RequestPermissionParams[];
  stop(): Promise<void>;
}

/**
 * Starts `python -m toolwire serve` in `cwd` and initializes it.
 *
 * @param initializationOptions Server settings (protocol.md, "Settings").
 * @param trace Receives vscode-jsonrpc's verbose trace of the traffic, when given.
 */
export async function startServer(
  cwd: string,
  initializationOptions: Record<string, unknown>,
  trace?: { log(message: string, data?: string): void },
): Promise<Server> {
  const child = spawn(pythonInterpreter(), [...SERVE_ARGS], {
    cwd,
    stdio: "pipe",
    env: { ...process.env, PYTHONUNBUFFERED: "1", TOOLWIRE_API_KEY: "", OPENAI_API_KEY: "" },
  });
  const stderr: string[] = [];
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => stderr.push(chunk));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
  connection.onRequest("client/registerCapability", () => null);
  connection.onRequest("window/workDoneProgress/create", () => null);
  connection.onNotification("window/showMessage", () => undefined);
  connection.onNotification("window/logMessage", () => undefined);
  connection.onNotification("$/progress", () => undefined);
  if (trace !== undefined) {
    await connection.trace(2 /* Trace.Verbose */, trace);
  }
  connection.listen();
  const server: Server = {
    process: child,
    connection,
    stderr,
    permissions: [],
    async stop() {
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      try {
        if (child.exitCode === null) {
          await connection.sendRequest("shutdown").catch(() => undefined);
          await connection.sendNotification("exit").catch(() => undefined);
        }
        await exited;
      } finally {
        clearTimeout(timer);
        connection.dispose();
      }
    },
  };
  const uri = pathToFileURL(cwd).href;
  await Promise.race([
    connection.sendRequest("initialize", {
      processId: process.pid,
      clientInfo: { name: "toolwire-panel-test" },
      rootUri: uri,
      workspaceFolders: [{ uri, name: "ws" }],
      capabilities: { workspace: { applyEdit: true, workspaceFolders: true } },
      initializationOptions,
    }),
    exited.then(() => {
      throw new Error(`the server exited during initialize:\n${stderr.join("")}`);
    }),
  ]);
  await connection.sendNotification("initialized", {});
  return server;
}
