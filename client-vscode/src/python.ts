/**
 * Finds the Python interpreter that runs the server, in a fixed order:
 *
 * 1. the `toolwire.pythonPath` setting;
 * 2. the interpreter selected in the Python extension (`ms-python.python`), if installed;
 * 3. `python3` on `PATH`.
 */
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { errorText } from "./log";

/** Where the interpreter came from. */
export type InterpreterSource = "setting" | "python-extension" | "default";

/** The interpreter and where it came from. */
export interface Interpreter {
  command: string;
  source: InterpreterSource;
}

const PYTHON_EXTENSION_ID = "ms-python.python";

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
 * Finds the interpreter for `folder`.
 *
 * @param pythonPath The `toolwire.pythonPath` setting (may be empty); `~` and
 *   `${workspaceFolder}` are expanded, a relative path is taken from the folder.
 * @param folder The workspace folder the server works for, if any.
 * @param log Receives a line saying why a source was skipped.
 */
export async function findInterpreter(
  pythonPath: string,
  folder: vscode.WorkspaceFolder | undefined,
  log: vscode.LogOutputChannel,
): Promise<Interpreter> {
  if (pythonPath !== "") {
    return { command: expand(pythonPath, folder), source: "setting" };
  }
  const fromExtension = await fromPythonExtension(folder, log);
  if (fromExtension !== undefined) {
    return { command: fromExtension, source: "python-extension" };
  }
  return { command: "python3", source: "default" };
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
