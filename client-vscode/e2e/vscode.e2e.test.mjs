// End-to-end in a real VS Code (code-server) with the packaged .vsix and the replay model.
// Scenarios of issue 9 that need no chat panel: a turn run from the command palette,
// a killed server brought back by Restart.
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { STEP_MS, gitSubjects, makeWorkspace, readWorkspaceFile, withVsCode } from "./harness.mjs";

const data = path.join(path.dirname(fileURLToPath(import.meta.url)), "data");
const GREET = '"""A tiny greeting module."""\n\n\ndef greet(name):\n    return "Hello " + name\n\n\nif __name__ == "__main__":\n    print(greet("world"))\n';
const FIXED = 'def greet(name: str) -> str:\n    return f"Hello, {name}!"\n';

/** Runs `step` up to 3 times, calling `undo` after a failed attempt; rethrows the last failure. */
async function retrying(what, step, undo) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (attempt === 3) {
        throw new Error(`${what}: ${error.message}`);
      }
      await undo();
    }
  }
}

/** Waits until `check()` is true, polling the file system (the editor writes asynchronously). */
async function eventually(check, what, timeout = STEP_MS) {
  const deadline = Date.now() + timeout;
  while (!check()) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

test("command palette: Toolwire: Ask runs a turn (read, edit, diff, commit) with the bundled server", async (t) => {
  const workspace = makeWorkspace({ "greet.py": GREET, "README.md": "# greet\n" });
  const settings = { "toolwire.model": `replay:${path.join(data, "fix-greeting.jsonl")}`, "toolwire.approval": "auto" };
  await withVsCode(t, workspace, settings, async (vscode) => {
    await vscode.command("Toolwire: Ask");
    await vscode.answerInput("Fix the greeting and commit it");
    await eventually(() => gitSubjects(workspace)[0] === "Fix the greeting's punctuation and add type hints", "the commit");
    assert.ok(readWorkspaceFile(workspace, "greet.py").includes(FIXED), "greet.py is edited on disk");
    await vscode.openFile("greet.py");
    await vscode.waitForEditorText(/def greet\(name: str\) -> str:/, "the edited greet.py in the editor");
    assert.match(await vscode.languageStatus(), /Toolwire: ready/);
    await vscode.screenshot("ask-from-command-palette");
  });
});

test("an open file with unsaved changes is edited in its buffer; a killed server is shown, Restart brings it back, a new turn works", async (t) => {
  const workspace = makeWorkspace({ "greet.py": GREET });
  const settings = { "toolwire.model": `replay:${path.join(data, "edit-greeting.jsonl")}`, "toolwire.approval": "auto" };
  await withVsCode(t, workspace, settings, async (vscode) => {
    await vscode.openFile("greet.py");
    // The user's unsaved text at the end of the buffer.
    await vscode.page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await vscode.page.keyboard.press("Control+End");
    await vscode.page.keyboard.type("# unsaved note\n");
    await vscode.waitForEditorText(/# unsaved note/, "the user's unsaved line");

    await vscode.command("Toolwire: Ask");
    await vscode.answerInput("Fix the greeting");
    const edited = await vscode.waitForEditorText(/def greet\(name: str\) -> str:/, "the edit in the open buffer");
    assert.match(edited, /# unsaved note/, "the user's unsaved text is kept");
    assert.equal(readWorkspaceFile(workspace, "greet.py"), GREET, "nothing was written to disk behind the editor");
    const tab = vscode.page.locator('.tab[aria-label^="greet.py"]').first();
    assert.equal(await tab.evaluate((node) => node.classList.contains("dirty")), true, "the buffer is still unsaved (not saved for the user)");
    await vscode.screenshot("edit-in-dirty-buffer");

    const [pid] = vscode.serverPids();
    assert.ok(pid, "the Toolwire server runs in code-server's process group");
    process.kill(pid, "SIGKILL");
    await vscode.notification("the server stopped unexpectedly").waitFor({ timeout: STEP_MS });
    assert.match(await vscode.languageStatus(), /Toolwire: stopped/);
    await vscode.screenshot("server-killed");

    // The user drops the buffer's changes and restarts; the new server plays the script again.
    await vscode.command("File: Revert File");
    await vscode.waitForEditorText((text) => !text.includes("unsaved note") && text.includes('"Hello " + name'), "the reverted buffer");
    await vscode.command("Toolwire: Restart Server");
    await eventually(() => vscode.serverPids().length === 1 && vscode.serverPids()[0] !== pid, "a new server process");
    await vscode.command("Toolwire: Ask");
    await vscode.answerInput("Fix the greeting again");
    await vscode.waitForEditorText(/def greet\(name: str\) -> str:/, "the second turn's edit");
    // The reverted buffer was clean, so this edit is saved (protocol.md, "Saving after an editor edit").
    await eventually(() => readWorkspaceFile(workspace, "greet.py").includes("def greet(name: str) -> str:"), "the edit saved to disk");
    // The text shows before the turn ends (the save, then the model's last answer).
    const deadline = Date.now() + STEP_MS;
    let status;
    while (!/Toolwire: ready/.test((status = await vscode.languageStatus())) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    assert.match(status, /Toolwire: ready/);
  });
});

test("a diagnostic from a problem matcher offers Toolwire: Fix as a quick fix; choosing it runs a turn that changes the file", async (t) => {
  const tasks = {
    version: "2.0.0",
    tasks: [
      {
        label: "check greeting",
        type: "shell",
        command: "echo 'greet.py:5:12: error: the greeting lacks a comma'",
        presentation: { reveal: "never" },
        problemMatcher: {
          owner: "greetcheck",
          fileLocation: ["relative", "${workspaceFolder}"],
          pattern: { regexp: "^(.*):(\\d+):(\\d+): (error): (.*)$", file: 1, line: 2, column: 3, severity: 4, message: 5 },
        },
      },
    ],
  };
  const workspace = makeWorkspace({ "greet.py": GREET, ".vscode/tasks.json": JSON.stringify(tasks, null, 2) });
  const settings = { "toolwire.model": `replay:${path.join(data, "edit-greeting.jsonl")}`, "toolwire.approval": "auto" };
  await withVsCode(t, workspace, settings, async (vscode) => {
    await vscode.command("Toolwire: Show Log"); // The user has used Toolwire: the extension is active.
    // The task list re-renders while tasks are detected (a click can miss): retry on a fresh list.
    await retrying("the task to run", async () => {
      await vscode.command("Tasks: Run Task");
      await vscode.page.locator(".quick-input-list .monaco-list-row", { hasText: "check greeting" }).first().click({ timeout: 15_000 });
    }, () => vscode.page.keyboard.press("Escape"));
    await vscode.page.locator("#status\\.problems", { hasText: "1" }).waitFor({ timeout: STEP_MS });
    await vscode.openFile("greet.py");
    await vscode.page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await vscode.page.keyboard.press("F8"); // Go to the problem.
    await vscode.page.keyboard.press("Escape");
    const fix = vscode.page.locator(".action-widget .monaco-list-row", { hasText: "Toolwire: Fix 'the greeting lacks a comma'" }).first();
    // The widget lists what the code-action providers answered when it opened: ask again if it came too early.
    await retrying("the quick fix", async () => {
      await vscode.page.keyboard.press("Control+.");
      await fix.waitFor({ timeout: 15_000 });
    }, () => vscode.page.keyboard.press("Escape"));
    await vscode.screenshot("quick-fix-offered");
    await fix.click();
    await vscode.waitForEditorText(/def greet\(name: str\) -> str:/, "the quick fix's edit in the editor");
  });
});

test("a code action (Toolwire: Explain) opens a new conversation showing the user's intent; the one the user was in stays in Past conversations and reopens", async (t) => {
  const workspace = makeWorkspace({ "greet.py": GREET });
  const settings = { "toolwire.model": `replay:${path.join(data, "explain.jsonl")}` };
  await withVsCode(t, workspace, settings, async (vscode) => {
    let chat = await vscode.chat();
    await vscode.ask(chat, "What is in this workspace?");
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: STEP_MS });

    await vscode.openFile("greet.py");
    await vscode.page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await vscode.page.keyboard.press("Control+A");
    const explain = vscode.page.locator(".action-widget .monaco-list-row", { hasText: "Toolwire: Explain" }).first();
    await retrying("the Explain code action", async () => {
      await vscode.page.keyboard.press("Control+.");
      await explain.waitFor({ timeout: 15_000 });
    }, () => vscode.page.keyboard.press("Escape"));
    await explain.click();

    chat = vscode.chatFrame();
    const question = chat.getByRole("region", { name: "You" });
    await question.filter({ hasText: "Explain this code" }).first().waitFor({ timeout: STEP_MS });
    await chat.getByText(/the one you were in is in Past conversations/).first().waitFor({ timeout: STEP_MS });
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: STEP_MS });
    const asked = await question.allInnerTexts();
    assert.equal(asked.length, 1, asked.join("\n"));
    assert.doesNotMatch(asked[0], /What is in this workspace|Explain what the selected text does/, "the new conversation shows the intent, not the template");
    await vscode.screenshot("code-action-new-conversation");

    await chat.locator("details.history-menu > summary").click();
    const earlier = chat.getByRole("button", { name: /What is in this workspace/ }).first();
    await earlier.waitFor({ timeout: STEP_MS });
    await earlier.click();
    await question.filter({ hasText: "What is in this workspace?" }).first().waitFor({ timeout: STEP_MS });
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: STEP_MS });
    assert.equal((await question.allInnerTexts()).length, 1, "the reopened conversation has its one turn");
  });
});
