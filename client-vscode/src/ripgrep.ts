/**
 * The `rg` binary VS Code ships (the `@vscode/ripgrep` package its own search uses), sent to
 * the server as the `ripgrepPath` setting: the server's list_files and search_files use it
 * when its Python environment and PATH have no `rg` (protocol.md, "Search engine"). The .vsix
 * carries none of its own (26 MB).
 */
import * as fs from "node:fs";
import * as path from "node:path";

/**
 * The path of VS Code's `rg`, or undefined when this VS Code has none there.
 *
 * @param appRoot `vscode.env.appRoot`.
 * @param exists Tells whether a file exists (the file system by default).
 * @param platform `process.platform`.
 */
export function editorRipgrep(
  appRoot: string,
  exists: (file: string) => boolean = fs.existsSync,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const binary = platform === "win32" ? "rg.exe" : "rg";
  // Packaged builds unpack native binaries beside the asar archive; a source build has them in node_modules.
  for (const modules of ["node_modules.asar.unpacked", "node_modules"]) {
    const candidate = path.join(appRoot, modules, "@vscode", "ripgrep", "bin", binary);
    if (exists(candidate)) {
      return candidate;
    }
  }
  return undefined;
}
