/**
 * How the server is launched: which Python interpreter, and where `toolwire` is
 * imported from.
 *
 * The interpreter, in a fixed order (the first that works wins):
 *
 * 1. the `toolwire.pythonPath` setting (when set, it is the only candidate: a bad value
 *    is reported, never silently replaced);
 * 2. the interpreter selected in the Python extension (`ms-python.python`), if it is
 *    installed and that interpreter is CPython 3.11 or newer;
 * 3. `python3` on `PATH`, if it is 3.11 or newer.
 *
 * Where `toolwire` comes from (`toolwire.importStrategy`, as in ruff-vscode):
 * `useBundled` puts the extension's `bundled/libs` (the server and its dependencies,
 * installed there by `make package`) first on `PYTHONPATH`; `fromEnvironment` uses the
 * interpreter's own installed `toolwire` and falls back to the bundled one (with a
 * warning) when that interpreter has none. An extension run from a source checkout has
 * no `bundled/libs` and always uses the environment.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { errorText } from "./log";
import { SERVE_ARGS } from "./protocol";

/** Where the interpreter came from. */
export type InterpreterSource = "setting" | "python-extension" | "path";

/** Values of `toolwire.importStrategy`. */
export type ImportStrategy = "useBundled" | "fromEnvironment";

/** The oldest Python the server runs on (pyproject.toml `requires-python`). */
export const MIN_PYTHON: readonly [number, number] = [3, 11];

/** An interpreter that passed the version check. */
export interface Interpreter {
  command: string;
  source: InterpreterSource;
  /** `major.minor.micro` as the interpreter reported it. */
  version: string;
}

/** Everything `ServerController` needs to spawn the server. */
export interface ServerLaunch {
  interpreter: Interpreter;
  command: string;
  args: string[];
  /** The environment for the server process (PYTHONPATH set for the bundled server). */
  env: NodeJS.ProcessEnv;
  /** Where `toolwire` is imported from. */
  toolwire: "bundled" | "environment";
  /** One line for the log and the status item. */
  description: string;
}

/**
 * No usable interpreter. The message names every candidate tried and why it was
 * refused; the caller shows it with "Select Interpreter" / "Open Settings".
 */
export class InterpreterError extends Error {
  override readonly name = "InterpreterError";
}

const PYTHON_EXTENSION_ID = "ms-python.python";
const PROBE_TIMEOUT_MS = 15_000;

/**
 * The parts of the Python extension's `environments` API used here
 * (see the `@vscode/python-extension` package for the full API).
 */
interface PythonEnvironmentsApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment(env: { path: string } | string): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
}

/**
 * Decides how to launch the server.
 *
 * @param pythonPath The `toolwire.pythonPath` setting (may be empty); `~` and
 *   `${workspaceFolder}` are expanded, a relative path with a separator is taken from the folder.
 * @param importStrategy The `toolwire.importStrategy` setting.
 * @param folder The workspace folder the server works for, if any.
 * @param bundledLibs The extension's `bundled/libs` folder (may not exist in a source checkout).
 * @param log Receives a line for every candidate skipped and why.
 * @throws InterpreterError when no candidate interpreter is usable, or when
 *   `fromEnvironment` finds no `toolwire` and there is no bundled copy.
 */
export async function serverLaunch(
  pythonPath: string,
  importStrategy: ImportStrategy,
  folder: vscode.WorkspaceFolder | undefined,
  bundledLibs: string,
  log: vscode.LogOutputChannel,
): Promise<ServerLaunch> {
  const interpreter = await findInterpreter(pythonPath, folder, log);
  const bundled = existsSync(path.join(bundledLibs, "toolwire", "__init__.py"));
  let toolwire: ServerLaunch["toolwire"] = "environment";
  if (bundled && importStrategy === "useBundled") {
    toolwire = "bundled";
  } else if (importStrategy === "fromEnvironment") {
    const problem = await importProblem(interpreter.command);
    if (problem !== undefined && bundled) {
      log.warn(`toolwire.importStrategy is fromEnvironment, but ${interpreter.command} cannot import toolwire (${problem}); using the bundled server.`);
      toolwire = "bundled";
    } else if (problem !== undefined) {
      throw new InterpreterError(
        `${interpreter.command} cannot import toolwire (${problem}). Install it there (pip install toolwire) or set toolwire.importStrategy to useBundled.`,
      );
    }
  } else {
    log.info(`No bundled server in ${bundledLibs} (a source checkout?); importing toolwire from ${interpreter.command}.`);
  }
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (toolwire === "bundled") {
    env.PYTHONPATH = [bundledLibs, process.env.PYTHONPATH].filter((p) => p !== undefined && p !== "").join(path.delimiter);
  }
  const args = [...SERVE_ARGS];
  return {
    interpreter,
    command: interpreter.command,
    args,
    env,
    toolwire,
    description: `${interpreter.command} ${args.join(" ")} (Python ${interpreter.version} from ${interpreter.source}, ${toolwire} toolwire)`,
  };
}

/**
 * Finds the interpreter for `folder` (order in the module comment).
 *
 * @throws InterpreterError naming every candidate and why it was refused.
 */
export async function findInterpreter(
  pythonPath: string,
  folder: vscode.WorkspaceFolder | undefined,
  log: vscode.LogOutputChannel,
): Promise<Interpreter> {
  if (pythonPath !== "") {
    const command = expand(pythonPath, folder);
    const checked = await checkVersion(command);
    if (typeof checked !== "string") {
      return { command, source: "setting", version: checked.version };
    }
    throw new InterpreterError(`Toolwire cannot use toolwire.pythonPath (${command}): ${checked}.`);
  }
  const refused: string[] = [];
  const fromExtension = await fromPythonExtension(folder, log);
  if (fromExtension !== undefined) {
    const checked = await checkVersion(fromExtension);
    if (typeof checked !== "string") {
      return { command: fromExtension, source: "python-extension", version: checked.version };
    }
    refused.push(`the Python extension's interpreter ${fromExtension}: ${checked}`);
    log.info(`Skipping the Python extension's interpreter ${fromExtension}: ${checked}.`);
  }
  const checked = await checkVersion("python3");
  if (typeof checked !== "string") {
    return { command: "python3", source: "path", version: checked.version };
  }
  refused.push(`python3 on PATH: ${checked}`);
  throw new InterpreterError(`Toolwire needs Python ${MIN_PYTHON.join(".")} or newer and found none (${refused.join("; ")}).`);
}

/**
 * Runs `command` to read its version.
 *
 * @returns `{version}` for a usable interpreter, else the reason it is not usable.
 */
export async function checkVersion(command: string): Promise<{ version: string } | string> {
  const result = await run(command, ["-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"]);
  if (result.error !== undefined) {
    return result.error;
  }
  const version = result.stdout.trim();
  const [major, minor] = version.split(".").map(Number);
  if (!(major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]))) {
    return `it is Python ${version}, older than ${MIN_PYTHON.join(".")}`;
  }
  return { version };
}

/** Why `command` cannot import toolwire, or `undefined` when it can. */
async function importProblem(command: string): Promise<string | undefined> {
  const result = await run(command, ["-c", "import toolwire"]);
  return result.error;
}

/** Runs a short probe; `error` is a one-line reason when it could not run or failed. */
function run(command: string, args: string[]): Promise<{ stdout: string; error?: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (error, stdout, stderr) => {
      if (error === null) {
        resolve({ stdout });
        return;
      }
      const code = (error as NodeJS.ErrnoException).code;
      const lastLine = stderr.trim().split("\n").pop();
      const reason = code === "ENOENT" ? "not found" : lastLine !== undefined && lastLine !== "" ? lastLine : errorText(error);
      resolve({ stdout, error: reason });
    });
  });
}

/**
 * Calls `onChange` when the Python extension's selected interpreter changes.
 * Returns a no-op disposable when the extension is absent or has no such event.
 */
export async function onPythonEnvironmentChange(onChange: () => void): Promise<vscode.Disposable> {
  try {
    const api = await pythonApi();
    const event = api?.environments?.onDidChangeActiveEnvironmentPath;
    if (event !== undefined) {
      return event(() => onChange());
    }
  } catch {
    // Absent or broken Python extension: nothing to watch.
  }
  return new vscode.Disposable(() => {});
}

/**
 * Lets the user pick an interpreter: the Python extension's picker when it is
 * installed, else a file dialog whose choice is checked and saved as `toolwire.pythonPath`.
 *
 * @returns true when a setting or selection changed (the controller restarts on that).
 */
export async function selectInterpreter(log: vscode.LogOutputChannel): Promise<boolean> {
  if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined) {
    await vscode.commands.executeCommand("python.setInterpreter");
    return true;
  }
  const picked = await vscode.window.showOpenDialog({
    canSelectMany: false,
    openLabel: "Use this Python",
    title: `Toolwire: a Python ${MIN_PYTHON.join(".")}+ interpreter`,
  });
  const command = picked?.[0]?.fsPath;
  if (command === undefined) {
    return false;
  }
  const checked = await checkVersion(command);
  if (typeof checked === "string") {
    void vscode.window.showErrorMessage(`Toolwire cannot use ${command}: ${checked}.`);
    return false;
  }
  log.info(`Using ${command} (Python ${checked.version}) as toolwire.pythonPath.`);
  await vscode.workspace.getConfiguration("toolwire").update("pythonPath", command, vscode.ConfigurationTarget.Global);
  return true;
}

async function fromPythonExtension(
  folder: vscode.WorkspaceFolder | undefined,
  log: vscode.LogOutputChannel,
): Promise<string | undefined> {
  try {
    const environments = (await pythonApi())?.environments;
    if (environments === undefined) {
      return undefined;
    }
    const active = environments.getActiveEnvironmentPath(folder?.uri);
    if (active === undefined) {
      return undefined;
    }
    const resolved = await environments.resolveEnvironment(active);
    return resolved?.executable?.uri?.fsPath;
  } catch (error) {
    log.warn(`Python extension did not give an interpreter: ${errorText(error)}`);
    return undefined;
  }
}

async function pythonApi(): Promise<PythonEnvironmentsApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonEnvironmentsApi | undefined>(PYTHON_EXTENSION_ID);
  if (extension === undefined) {
    return undefined;
  }
  return extension.isActive ? extension.exports : await extension.activate();
}

function expand(value: string, folder: vscode.WorkspaceFolder | undefined): string {
  let result = value;
  if (result === "~" || result.startsWith("~/")) {
    result = path.join(os.homedir(), result.slice(1));
  }
  if (folder !== undefined) {
    result = result.replace(/\$\{workspaceFolder\}/g, folder.uri.fsPath);
    if (!path.isAbsolute(result) && result.includes(path.sep)) {
      result = path.resolve(folder.uri.fsPath, result);
    }
  }
  return result;
}
