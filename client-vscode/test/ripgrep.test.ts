/** VS Code's own rg, found under vscode.env.appRoot and sent to the server as ripgrepPath. */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import manifest from "../package.json";
import { editorRipgrep } from "../src/ripgrep";
import { initializationOptions, manifestDefaults, readSettings } from "../src/settings";

function appRoot(...folders: string[]): string {
  const root = mkdtempSync(path.join(tmpdir(), "toolwire-approot-"));
  for (const folder of folders) {
    const bin = path.join(root, folder, "@vscode", "ripgrep", "bin");
    mkdirSync(bin, { recursive: true });
    writeFileSync(path.join(bin, "rg"), "");
    writeFileSync(path.join(bin, "rg.exe"), "");
  }
  return root;
}

test("a packaged VS Code's rg is under node_modules.asar.unpacked, a source build's under node_modules", () => {
  const packaged = appRoot("node_modules.asar.unpacked", "node_modules");
  assert.equal(editorRipgrep(packaged), path.join(packaged, "node_modules.asar.unpacked", "@vscode", "ripgrep", "bin", "rg"));
  const source = appRoot("node_modules");
  assert.equal(editorRipgrep(source), path.join(source, "node_modules", "@vscode", "ripgrep", "bin", "rg"));
  assert.equal(editorRipgrep(source, undefined, "win32"), path.join(source, "node_modules", "@vscode", "ripgrep", "bin", "rg.exe"));
  assert.equal(editorRipgrep(appRoot()), undefined);
});

test("ripgrepPath is sent with the settings only when VS Code has an rg", () => {
  const settings = readSettings(manifestDefaults(manifest), (message) => assert.fail(message));
  assert.equal(initializationOptions(settings, undefined, "/vscode/rg").ripgrepPath, "/vscode/rg");
  assert.equal("ripgrepPath" in initializationOptions(settings), false);
});
