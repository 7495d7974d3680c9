// End-to-end through the chat panel in a real VS Code (code-server) with the packaged
// .vsix and the replay model: approvals in the cards, reject/cancel/allow always/Stop,
// a window reload mid-turn (the server outlives the extension host), Set API Key. Selectors are the panel's ARIA roles and labels.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { STEP_MS, gitSubjects, makeWorkspace, readWorkspaceFile, withVsCode } from "./harness.mjs";

const data = path.join(path.dirname(fileURLToPath(import.meta.url)), "data");
const GREET = '"""A tiny greeting module."""\n\n\ndef greet(name):\n    return "Hello " + name\n\n\nif __name__ == "__main__":\n    print(greet("world"))\n';
// followAlong (on by default) opens each edited file; the scenarios about cards keep the
// editor area still so that nothing moves under the clicks. The first scenario runs with it.
const QUIET = { "toolwire.followAlong": false };
const TERMINAL = /: (Done|Failed|Cancelled)(,|$)/;

/** `git show <what>` in the workspace. */
function gitShow(workspace, what) {
  return execFileSync("git", ["show", what], { cwd: workspace, encoding: "utf8" });
}

/** Every tool-call card's accessible label. */
async function cardLabels(chat) {
  const cards = chat.getByRole("group", { name: /^Tool call / });
  return cards.evaluateAll((nodes) => nodes.map((node) => node.getAttribute("aria-label") ?? ""));
}

/** Waits for the card of `tool` (on `file`, if given) whose label matches `status`. */
function card(chat, tool, status, file) {
  const name = new RegExp(`^Tool call ${tool}${file ? ` on ${file.replace(/\./g, "\\.")}` : ""}: ${status}`);
  return chat.getByRole("group", { name }).last();
}

test("panel: ask; read, edit approved in its card, diff and commit run; followAlong opens the file, its edit is saved and committed", async (t) => {
  const workspace = makeWorkspace({ "greet.py": GREET, "README.md": "# greet\n" });
  const settings = { "toolwire.model": `replay:${path.join(data, "fix-greeting.jsonl")}` };
  await withVsCode(t, workspace, settings, async (vscode) => {
    const chat = await vscode.chat();
    await vscode.ask(chat, "Fix the greeting and commit it");
    const editApproval = chat.getByRole("region", { name: "Approval for edit_file" });
    await editApproval.waitFor({ timeout: STEP_MS });
    // followAlong (default on) opened the file the edit targets, in a clean buffer.
    const tab = vscode.page.locator('.tab[aria-label^="greet.py"]').first();
    await tab.waitFor({ timeout: STEP_MS });
    await vscode.screenshot("panel-edit-approval");
    await editApproval.getByRole("button", { name: /Allow once/ }).click();
    const commitApproval = chat.getByRole("region", { name: "Approval for git_commit" });
    await commitApproval.waitFor({ timeout: STEP_MS });
    await commitApproval.getByRole("button", { name: /Allow once/ }).click();
    await card(chat, "git_commit", "Done").waitFor({ timeout: STEP_MS });
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: STEP_MS });
    const labels = await cardLabels(chat);
    assert.deepEqual(
      labels.map((label) => /^Tool call (\w+)/.exec(label)?.[1]),
      ["read_file", "edit_file", "git_diff", "git_commit"],
    );
    assert.ok(labels.every((label) => /: Done(,|$)/.test(label)), labels.join("\n"));
    assert.equal(gitSubjects(workspace)[0], "Fix the greeting's punctuation and add type hints");
    assert.match(readWorkspaceFile(workspace, "greet.py"), /def greet\(name: str\) -> str:/);
    // The edit went into the open buffer, which was clean, so it was saved before the commit ran.
    assert.match(gitShow(workspace, "HEAD:greet.py"), /def greet\(name: str\) -> str:/, "the commit holds the edited text");
    assert.equal(await tab.evaluate((node) => node.classList.contains("dirty")), false, "the buffer is saved");
    await vscode.openFile("greet.py");
    await vscode.waitForEditorText(/def greet\(name: str\) -> str:/, "the edited file in the editor");
    await vscode.screenshot("panel-turn-done");
  });
});

test("panel: reject with a reason, cancel one call, allow always, Stop mid-turn; every card ends terminal, nothing half-written", async (t) => {
  const files = { "a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n" };
  const workspace = makeWorkspace(files);
  const settings = { ...QUIET, "toolwire.model": `replay:${path.join(data, "three-edits-and-stop.jsonl")}` };
  await withVsCode(t, workspace, settings, async (vscode) => {
    const chat = await vscode.chat();
    await vscode.ask(chat, "Edit the four files");

    const first = chat.getByRole("region", { name: "Approval for edit_file" }).last();
    await first.waitFor({ timeout: STEP_MS });
    await first.getByRole("button", { name: /Reject/ }).first().click();
    await first.getByRole("textbox", { name: /Reason for rejecting/ }).fill("not a.txt, please");
    await first.getByRole("button", { name: "Reject", exact: true }).click();
    await card(chat, "edit_file", "Cancelled", "a.txt").waitFor({ timeout: STEP_MS });

    await card(chat, "edit_file", "Waiting", "b.txt").waitFor({ timeout: STEP_MS });
    await chat.getByRole("button", { name: "Cancel edit_file" }).last().click();
    await card(chat, "edit_file", "Cancelled", "b.txt").waitFor({ timeout: STEP_MS });

    const third = chat.getByRole("region", { name: "Approval for edit_file" }).last();
    await third.waitFor({ timeout: STEP_MS });
    await third.getByRole("button", { name: /always/i }).click();
    await card(chat, "edit_file", "Done", "c.txt").waitFor({ timeout: STEP_MS });

    await card(chat, "edit_file", "Writing", "d.txt").waitFor({ timeout: STEP_MS });
    await chat.getByRole("button", { name: /Stop/ }).click();
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: STEP_MS });
    const labels = await cardLabels(chat);
    assert.equal(labels.length, 4, labels.join("\n"));
    for (const label of labels) {
      assert.match(label, TERMINAL, `not terminal: ${label}`);
    }
    assert.deepEqual(
      Object.keys(files).map((name) => readWorkspaceFile(workspace, name)),
      ["a\n", "b\n", "C\n", "d\n"],
      "only the allowed edit was made; the stopped one wrote nothing",
    );
    await vscode.screenshot("panel-reject-cancel-stop");
  });
});

// "Developer: Reload Window" restarts the extension host. The extension's server runs
// detached on a socket (toolwire serve --socket) and keeps the session; the reloaded
// window reconnects to the same process, the panel takes the remembered session up
// again from toolwire/session/snapshot, and the open approval is sent to it again.
test("panel: reloading the window mid-turn (an edit awaiting approval) brings back the same calls and statuses; approving then finishes the turn", async (t) => {
  const workspace = makeWorkspace({ "greet.py": GREET });
  const settings = { ...QUIET, "toolwire.model": `replay:${path.join(data, "edit-greeting.jsonl")}` };
  await withVsCode(t, workspace, settings, async (vscode) => {
    let chat = await vscode.chat();
    await vscode.ask(chat, "Fix the greeting");
    await chat.getByRole("region", { name: "Approval for edit_file" }).waitFor({ timeout: STEP_MS });
    await card(chat, "edit_file", "Waiting", "greet.py").waitFor({ timeout: STEP_MS });
    const before = await cardLabels(chat);
    const servers = vscode.serverPids();
    assert.equal(servers.length, 1, "one Toolwire server");

    const reloaded = vscode.page.waitForEvent("load", { timeout: STEP_MS });
    await vscode.command("Developer: Reload Window").catch(() => undefined);
    await reloaded;
    await vscode.page.locator(".monaco-workbench").waitFor({ timeout: STEP_MS });
    chat = vscode.chatFrame(); // the view comes back with the window and activates the extension
    const approval = chat.getByRole("region", { name: "Approval for edit_file" });
    await approval.waitFor({ timeout: 2 * STEP_MS });
    await card(chat, "edit_file", "Waiting", "greet.py").waitFor({ timeout: STEP_MS });
    assert.deepEqual(await cardLabels(chat), before, "the same calls with the same statuses");
    assert.deepEqual(vscode.serverPids(), servers, "the same server process, reconnected");
    assert.equal(readWorkspaceFile(workspace, "greet.py"), GREET, "nothing written while waiting");
    await vscode.screenshot("panel-after-window-reload");

    await approval.getByRole("button", { name: /Allow once/ }).click();
    await card(chat, "edit_file", "Done", "greet.py").waitFor({ timeout: STEP_MS });
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: STEP_MS });
    assert.match(readWorkspaceFile(workspace, "greet.py"), /def greet\(name: str\) -> str:/);

    // Reloaded again after the turn ended: its end line (stop reason, tokens, duration)
    // comes back from the snapshot's turns[], not from the old extension host's memory.
    await chat.getByRole("region", { name: "End of turn" }).getByRole("button", { name: /Undo this turn/ }).waitFor({ timeout: STEP_MS });
    const ended = await chat.getByRole("region", { name: "End of turn" }).allInnerTexts();
    assert.match(ended.at(-1) ?? "", /\bin \/ \d+ out tokens · \d+\.\d s/);
    const again = vscode.page.waitForEvent("load", { timeout: STEP_MS });
    await vscode.command("Developer: Reload Window").catch(() => undefined);
    await again;
    await vscode.page.locator(".monaco-workbench").waitFor({ timeout: STEP_MS });
    chat = vscode.chatFrame();
    await card(chat, "edit_file", "Done", "greet.py").waitFor({ timeout: 2 * STEP_MS });
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: STEP_MS });
    assert.deepEqual(await chat.getByRole("region", { name: "End of turn" }).allInnerTexts(), ended, "the same end lines, usage included");
  });
});

test("command palette: Ask About Selection runs a turn in the panel; Set API Key keeps the key out of every file under the user-data folder, the browser profile and every log", async (t) => {
  const workspace = makeWorkspace({ "greet.py": GREET });
  const key = `sk-toolwire-e2e-${Date.now().toString(36)}-SECRET`;
  await withVsCode(t, workspace, {}, async (vscode) => {
    await vscode.openFile("greet.py");
    await vscode.page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await vscode.page.keyboard.press("Control+A");
    await vscode.command("Toolwire: Ask About Selection");
    await vscode.answerInput("What does this function return?");
    const chat = vscode.chatFrame();
    const question = chat.getByRole("region", { name: "You" }).last();
    await question.waitFor({ timeout: STEP_MS });
    assert.match(await question.innerText(), /What does this function return\?/);
    await chat.getByRole("region", { name: "End of turn" }).last().waitFor({ timeout: STEP_MS });
    await vscode.screenshot("panel-ask-about-selection");

    await vscode.command("Toolwire: Set API Key");
    await vscode.answerInput(key);
    // The key reaches the server (settings for the next turn); then everything is flushed.
    await vscode.command("Toolwire: Show Log");
    await vscode.page.waitForTimeout(2_000);
    await vscode.command("Developer: Reload Window").catch(() => undefined);
    await vscode.page.locator(".monaco-workbench").waitFor({ timeout: STEP_MS });
    // Every file of this run: code-server's user-data and extensions folders, the server's
    // logs, and the browser profile (Local Storage, IndexedDB, Session Storage, caches),
    // searched for the key as UTF-8 and as UTF-16 (how Chromium stores some strings).
    const leaks = [];
    const forms = [Buffer.from(key, "utf8"), Buffer.from(key, "utf16le")];
    let profileFiles = 0;
    for (const file of vscode.userDataFiles()) {
      let content;
      try {
        content = readFileSync(file);
      } catch (error) {
        if (error.code === "ENOENT") {
          continue; // removed by code-server or the browser since it was listed (a lock file, a temporary file)
        }
        throw error;
      }
      profileFiles += file.includes(`${path.sep}chromium-profile${path.sep}`) ? 1 : 0;
      if (forms.some((form) => content.includes(form))) {
        leaks.push(file);
      }
    }
    assert.ok(profileFiles > 0, "the browser profile was searched");
    // The profile's LevelDB tables may be compressed on disk: read the storage through the
    // browser too, every localStorage item and every IndexedDB record of the workbench's origin.
    const stored = await vscode.browserStorage();
    // It holds the workbench's state for this extension (and VS Code for the Web's secret
    // store, `secrets.provider` in localStorage, encrypted), so this is where a key would be.
    assert.ok(stored.some((entry) => entry.includes("toolwire")), "the browser's storage was read");
    leaks.push(...stored.filter((entry) => entry.includes(key)).map((entry) => `browser storage: ${entry.slice(0, 120)}`));
    assert.deepEqual(leaks, [], "files holding the key");
    assert.ok(!vscode.logs.join("").includes(key), "code-server's own output holds the key");
  });
});
