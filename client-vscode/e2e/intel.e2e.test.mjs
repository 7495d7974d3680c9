// Issue 22 in a real VS Code (code-server) with the packaged .vsix and the replay model:
// VS Code's built-in TypeScript and JSON language features are real language servers. With a
// broken .ts and a broken .json file open, a turn's get_diagnostics names their problems at
// the right lines, search_symbols finds the TypeScript function, find_symbol gives its
// definition and its references (the declaration left out) with the right files and lines.
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { STEP_MS, makeWorkspace, withVsCode } from "./harness.mjs";

const data = path.join(path.dirname(fileURLToPath(import.meta.url)), "data");
const FILES = {
  "tsconfig.json": JSON.stringify({ compilerOptions: { strict: true, target: "es2020", module: "commonjs" }, include: ["src"] }, null, 2) + "\n",
  "src/utils.ts": 'export function greet(name: string): string {\n  return "Hello, " + name;\n}\n',
  "src/app.ts": 'import { greet } from "./utils";\n\nconst count: number = greet("world");\nconsole.log(count, greet("again"));\n',
  "data/config.json": '{\n  "name": "sample"\n  "version": 1\n}\n',
};

/** The whole result text of the `nth` card of `tool` (expanding it first). */
async function resultText(chat, tool, nth = 0) {
  const card = chat.getByRole("group", { name: new RegExp(`^Tool call ${tool}( on [^:]+)?: done`) }).nth(nth);
  const result = card.locator(".result");
  await result.locator("summary").click();
  return result.locator("pre").innerText();
}

test("editor intelligence: get_diagnostics, search_symbols and find_symbol answered by VS Code's TypeScript and JSON language features", async (t) => {
  const workspace = makeWorkspace(FILES);
  const settings = { "toolwire.model": `replay:${path.join(data, "editor-intel.jsonl")}`, "toolwire.approval": "auto", "toolwire.followAlong": false };
  await withVsCode(t, workspace, settings, async (vscode) => {
    await vscode.openFile("src/app.ts");
    await vscode.openFile("data/config.json");
    // Both language servers have checked their file: two errors in the status bar.
    await vscode.page.locator("#status\\.problems", { hasText: "2" }).waitFor({ timeout: 3 * STEP_MS });
    const chat = await vscode.chat();
    await vscode.ask(chat, "What is wrong, and where is greet used?");
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: 3 * STEP_MS });
    await vscode.screenshot("editor-intel-turn");

    const problems = await resultText(chat, "get_diagnostics");
    assert.match(problems, /^2 problems\b/, problems);
    assert.match(problems, /^src\/app\.ts:3:7: error \(ts 2322\): Type 'string' is not assignable to type 'number'\.$/m, problems);
    assert.match(problems, /^data\/config\.json:3:3: error \(json[^)]*\): Expected comma$/m, problems);

    const symbols = await resultText(chat, "search_symbols");
    assert.match(symbols, /^function greet\b.* src\/utils\.ts:1$/m, symbols);

    const definition = await resultText(chat, "find_symbol", 0);
    assert.equal(definition, "Definition of greet at src/app.ts:3:23:\nsrc/utils.ts:1: export function greet(name: string): string {");

    const references = await resultText(chat, "find_symbol", 1);
    // The declaration (src/utils.ts:1) is left out: includeDeclaration is false.
    assert.equal(
      references,
      '3 references of greet at src/app.ts:3:23:\nsrc/app.ts:1: import { greet } from "./utils";\n' +
        'src/app.ts:3: const count: number = greet("world");\nsrc/app.ts:4: console.log(count, greet("again"));',
    );
  });
});
