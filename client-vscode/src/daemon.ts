/**
 * The server as a process that outlives the extension host (`toolwire serve --socket`).
 *
 * "Developer: Reload Window" restarts the extension host, which would take a stdio
 * server and its sessions with it. Instead the extension starts the server detached,
 * listening on a Unix socket of its own for this workspace and this launch command,
 * and on activation first connects to one that is already running. The server keeps
 * its sessions, running turns and open approvals while no client is connected, and
 * exits by itself once no client has been connected for a grace period (protocol.md,
 * "Transports"); Restart Server stops it explicitly (LSP shutdown and exit).
 *
 * The socket lives in `$XDG_RUNTIME_DIR/toolwire-<uid>` (else the temporary folder),
 * a folder only the user can enter; Unix socket paths are limited to about 100 bytes,
 * which the extension's storage folder can exceed.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import type { ServerLaunch } from "./python";

/** How long a started server may take to say it listens. */
const START_TIMEOUT_MS = 60_000;

/** How long a server that was asked to stop may take before it is killed. */
const STOP_TIMEOUT_MS = 5_000;

/** The file holding the pid of the server started on `socketPath`. */
export function pidFileFor(socketPath: string): string {
  return `${socketPath}.pid`;
}

/** True where the server can run detached on a Unix socket (not on Windows: stdio there). */
export function canPersist(): boolean {
  return process.platform !== "win32";
}

/**
 * The socket for `workspaceKey` (e.g. the extension's storage folder for this
 * workspace) and this launch: another interpreter, another bundled server or another
 * environment gets another server.
 */
export function socketPathFor(workspaceKey: string, launch: ServerLaunch): string {
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  const base = process.env.XDG_RUNTIME_DIR || os.tmpdir();
  const hash = createHash("sha256")
    .update([workspaceKey, launch.command, ...launch.args, launch.env.PYTHONPATH ?? ""].join("\0"))
    .digest("hex")
    .slice(0, 20);
  return path.join(base, `toolwire-${uid}`, `${hash}.sock`);
}

/** Connects to `socketPath`; rejects when nothing listens there. */
export function connectSocket(socketPath: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(socketPath);
    socket.once("connect", () => {
      socket.removeListener("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

/**
 * Starts `toolwire serve --socket` detached (its own session, no pipe kept open)
 * and resolves once it listens.
 *
 * @throws Error with the server's own words when it exits or stays silent.
 */
export function startServer(launch: ServerLaunch, socketPath: string, logFile: string, cwd: string | undefined): Promise<number | undefined> {
  mkdirSync(path.dirname(socketPath), { recursive: true, mode: 0o700 });
  mkdirSync(path.dirname(logFile), { recursive: true });
  const child = spawn(launch.command, [...launch.args, "--socket", socketPath, "--log-file", logFile], {
    cwd,
    env: launch.env,
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
    windowsHide: true,
  });
  return new Promise((resolve, reject) => {
    let said = "";
    const timer = setTimeout(() => fail(new Error(`the server did not start listening within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    const done = (): void => {
      clearTimeout(timer);
      child.stderr?.destroy(); // the server points its stderr at /dev/null once it listens
      child.removeAllListeners();
      child.unref();
    };
    const fail = (error: Error): void => {
      done();
      reject(error);
    };
    child.once("error", fail);
    child.once("exit", (code) => fail(new Error(`the server exited (code ${code}): ${said.trim() || "no message"}`)));
    child.stderr?.on("data", (chunk: Buffer) => {
      said += chunk.toString();
      if (/listening on [^\n]*\n/.test(said)) {
        done();
        if (child.pid !== undefined) {
          writeFileSync(pidFileFor(socketPath), String(child.pid), { mode: 0o600 });
        }
        resolve(child.pid);
      }
    });
  });
}

/**
 * Makes sure the server started on `socketPath` is gone after it was asked to stop
 * (LSP shutdown and exit): waits up to {@link STOP_TIMEOUT_MS} for its process to end,
 * then kills its process group (a server that hangs must not survive Restart Server).
 * Only a process whose command line names `socketPath` is killed (Linux's /proc; a pid
 * that was reused, or a system without /proc, is left alone).
 *
 * @returns "gone" when it ended by itself (or none is known), "killed", or "kept" when
 *   it still runs but could not be identified.
 */
export async function ensureStopped(socketPath: string): Promise<"gone" | "killed" | "kept"> {
  let pid: number;
  try {
    pid = Number(readFileSync(pidFileFor(socketPath), "utf8"));
  } catch {
    return "gone";
  }
  const alive = (): boolean => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(socketPath);
    } catch {
      return false; // ended (or no /proc: nothing can be checked)
    }
  };
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (alive() && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  let outcome: "gone" | "killed" | "kept" = "gone";
  if (alive()) {
    try {
      process.kill(-pid, "SIGKILL"); // started detached: its own process group
      outcome = "killed";
    } catch {
      outcome = "kept";
    }
  }
  rmSync(pidFileFor(socketPath), { force: true });
  return outcome;
}
