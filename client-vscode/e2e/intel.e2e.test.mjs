// Issue 22 in a real VS Code (code-server) with the packaged .vsix and the replay model:
// VS Code's built-in TypeScript and JSON language features are real language servers. With a
// broken .ts and a broken .json file open, a turn's get_diagnostics names their problems at
// the right lines, search_symbols finds the TypeScript function, find_symbol gives its
// definition and its references (the declaration left out) with the right files and lines.
// An edit's result names the problems it introduced in a file that is open (the chat panel lists
// them under the card, each a link to its place) and says "not checked" for one that is not.
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
  "src/closed.ts": "export const closed = 1;\n",
};

/** The whole result text of the `nth` card of `tool` (expanding it first). */
async function resultText(chat, tool, nth = 0) {
  const card = chat.getByRole("group", { name: new RegExp(`^Tool call ${tool}( on [^:]+)?: Done`) }).nth(nth);
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

    // followAlong is off and src/closed.ts was never opened: its problems are not checked.
    const closed = await resultText(chat, "edit_file");
    assert.match(closed, /^problems not checked: src\/closed\.ts is not open in the editor$/m, closed);
    const card = chat.getByRole("group", { name: /^Tool call edit_file on src\/closed\.ts: Done/ });
    assert.equal((await card.locator(".problems-head").innerText()).trim(), "Problems not checked: the file is not open in the editor");
  });
});

test("problems after an edit: each edit of an open file (followAlong on) names the problem it introduced, not the ones already there; the card's link opens its place", async (t) => {
  const workspace = makeWorkspace({
    "tsconfig.json": FILES["tsconfig.json"],
    // One problem each already: the editor has checked them, and they are not repeated.
    "src/a.ts": 'export const unused: number = "x";\n\nexport function twice(n: number): number {\n  return n * 2;\n}\n',
    "data/a.json": '{\n  "name": "a",\n  "name": "again",\n  "version": 1\n}\n',
  });
  const settings = { "toolwire.model": `replay:${path.join(data, "problems-open.jsonl")}`, "toolwire.approval": "auto" };
  await withVsCode(t, workspace, settings, async (vscode) => {
    await vscode.openFile("src/a.ts");
    await vscode.openFile("data/a.json");
    await vscode.page.locator("#status\\.problems", { hasText: /[1-9]\D+[1-9]/ }).waitFor({ timeout: 3 * STEP_MS });
    const chat = await vscode.chat();
    await vscode.ask(chat, "Break both files");
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: 3 * STEP_MS });
    await vscode.screenshot("problems-after-edit");

    const json = await resultText(chat, "edit_file", 0);
    assert.match(json, /^1 new problem:\ndata\/a\.json:4:15: error \(json[^)]*\): Trailing comma$/m, json);
    const ts = await resultText(chat, "edit_file", 1);
    // A syntax error: TypeScript reports syntax before types, and a type error can come later
    // than the server's 250 ms of quiet on a loaded machine (then "no new problems").
    assert.match(ts, /^1 new problem:\nsrc\/a\.ts:4:14: error \(ts 1109\): Expression expected\.$/m, ts);
    assert.doesNotMatch(ts, /a\.ts:1:/, "the problem that was already there is not repeated");

    const card = chat.getByRole("group", { name: /^Tool call edit_file on data\/a\.json: Done/ });
    assert.equal((await card.locator(".problems-head").innerText()).trim(), "1 new problem");
    await card.getByRole("button", { name: "data/a.json:4:15" }).click();
    await vscode.page.locator(".statusbar-item", { hasText: "Ln 4, Col 15" }).first().waitFor({ timeout: STEP_MS });
  });
});
