// Issue 25 in a real VS Code (code-server, the packaged .vsix, the replay model): what only
// the workbench shows. The contributed keybindings Ctrl+Alt+Y / Ctrl+Alt+N answer a waiting
// approval (when toolwire.approvalWaiting), from the panel and from an editor; "Review in diff
// editor" has Accept Change / Reject Change in its title bar; Cancel Turn is in the view's
// title only while a turn runs; follow-along opens the waiting approval's file in a pinned tab
// (not the preview tab the next file would replace); after Undo this turn the cards and the
// editor say so. Screenshots of the cards in the dark and light themes go to e2e/artifacts/.
// Every wait is on a DOM state, never a fixed time.
import assert from "node:assert/strict";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { STEP_MS, makeWorkspace, readWorkspaceFile, withVsCode } from "./harness.mjs";

const data = path.join(path.dirname(fileURLToPath(import.meta.url)), "data");

/** The card of the edit of `file` whose label matches `status`. */
function card(chat, file, status) {
  return chat.getByRole("group", { name: new RegExp(`^Tool call edit_file on ${file.replace(/\./g, "\\.")}: ${status}`) }).last();
}

/** The editor tab of `file`. */
function tab(vscode, file) {
  return vscode.page.locator(`.tab[aria-label^="${file}"]`).first();
}

/** True when the tab is VS Code's preview tab (its label in italics), which the next opened file replaces. */
function isPreview(locator) {
  return locator.evaluate((node) => node.querySelector(".monaco-icon-label.italic") !== null);
}

/** Switches the color theme with "Preferences: Color Theme" and waits for the workbench and the panel to follow. */
async function setTheme(vscode, chat, theme, kind) {
  await vscode.command("Preferences: Color Theme");
  const input = vscode.page.locator(".quick-input-widget input");
  await input.fill(theme);
  await vscode.page.locator(".quick-input-list .monaco-list-row", { hasText: theme }).first().waitFor({ timeout: STEP_MS });
  await input.press("Enter");
  await vscode.page.locator(`.monaco-workbench.${kind === "light" ? "vs" : "vs-dark"}`).waitFor({ timeout: STEP_MS });
  await chat.locator(`body.vscode-${kind}`).waitFor({ state: "attached", timeout: STEP_MS });
  await vscode.page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: STEP_MS });
}

test("approvals: Ctrl+Alt+Y / Ctrl+Alt+N answer the waiting approval, the diff editor's title bar Accept / Reject Change, Cancel Turn only while a turn runs, follow-along's pinned tab, the undo note", async (t) => {
  const files = { "a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n", "d.txt": "d\n" };
  const workspace = makeWorkspace(files);
  const settings = { "toolwire.model": `replay:${path.join(data, "four-edits.jsonl")}`, "workbench.colorTheme": "Default Dark Modern" };
  await withVsCode(t, workspace, settings, async (vscode) => {
    const page = vscode.page;
    const cancelTurn = page.getByRole("button", { name: /^Cancel Turn/ });
    const chat = await vscode.chat();
    assert.equal(await cancelTurn.count(), 0, "no Cancel Turn before a turn runs");
    await vscode.ask(chat, "Edit the four files");

    // a.txt: follow-along shows the waiting approval's file in a pinned tab; Ctrl+Alt+Y from the panel.
    await chat.getByRole("region", { name: "Approval for edit_file" }).last().waitFor({ timeout: STEP_MS });
    await card(chat, "a.txt", "Waiting").waitFor({ timeout: STEP_MS });
    await tab(vscode, "a.txt").waitFor({ timeout: STEP_MS });
    assert.equal(await isPreview(tab(vscode, "a.txt")), false, "a.txt is pinned, not in the preview tab");
    await cancelTurn.first().waitFor({ timeout: STEP_MS });
    await chat.locator(".approval button:focus").waitFor({ timeout: STEP_MS }); // the new approval has the focus
    await vscode.screenshot("approvals-card-dark");
    await setTheme(vscode, chat, "Light Modern", "light");
    await vscode.screenshot("approvals-card-light");
    await setTheme(vscode, chat, "Dark Modern", "dark");
    await page.keyboard.press("Control+Alt+Y");
    await card(chat, "a.txt", "Done").waitFor({ timeout: STEP_MS });

    // b.txt: its own pinned tab next to a.txt's (a preview tab would have replaced it); Ctrl+Alt+N from the editor.
    await card(chat, "b.txt", "Waiting").waitFor({ timeout: STEP_MS });
    await tab(vscode, "b.txt").waitFor({ timeout: STEP_MS });
    await tab(vscode, "a.txt").waitFor({ timeout: STEP_MS });
    assert.equal(await isPreview(tab(vscode, "b.txt")), false, "b.txt is pinned");
    await tab(vscode, "b.txt").click();
    await page.locator(".editor-group-container.active .monaco-editor textarea").first().focus();
    await page.keyboard.press("Control+Alt+N");
    await card(chat, "b.txt", "Cancelled, Rejected").waitFor({ timeout: STEP_MS });

    // c.txt: Review in diff editor, then Accept Change in its title bar.
    const accept = page.getByRole("button", { name: /^Accept Change/ });
    const reject = page.getByRole("button", { name: /^Reject Change/ });
    await card(chat, "c.txt", "Waiting").waitFor({ timeout: STEP_MS });
    await card(chat, "c.txt", "Waiting").getByRole("button", { name: /Review in diff editor/ }).click();
    await accept.first().waitFor({ timeout: STEP_MS });
    await reject.first().waitFor({ timeout: STEP_MS });
    await vscode.screenshot("approvals-diff-editor");
    await accept.first().click();
    await card(chat, "c.txt", "Done").waitFor({ timeout: STEP_MS });
    await accept.first().waitFor({ state: "detached", timeout: STEP_MS }); // the review closes once answered

    // d.txt: Reject Change in the diff editor's title bar.
    await card(chat, "d.txt", "Waiting").waitFor({ timeout: STEP_MS });
    await card(chat, "d.txt", "Waiting").getByRole("button", { name: /Review in diff editor/ }).click();
    await reject.first().waitFor({ timeout: STEP_MS });
    await reject.first().click();
    await card(chat, "d.txt", "Cancelled, Rejected").waitFor({ timeout: STEP_MS });

    const end = chat.getByRole("region", { name: "End of turn" }).last();
    await end.waitFor({ timeout: STEP_MS });
    assert.match(await end.innerText(), /\bDone\b/);
    await cancelTurn.first().waitFor({ state: "detached", timeout: STEP_MS }); // gone once the turn ended
    assert.deepEqual(
      Object.keys(files).map((name) => readWorkspaceFile(workspace, name)),
      ["A\n", "b\n", "C\n", "d\n"],
      "the two allowed edits were written, the rejected ones not",
    );

    // Undo this turn: the cards of the changed files say so, and the open editor carries the note.
    await tab(vscode, "a.txt").click();
    await page.locator('.tab.active[aria-label^="a.txt"]').waitFor({ timeout: STEP_MS });
    await end.getByRole("button", { name: /Undo this turn/ }).click();
    await card(chat, "a.txt", "Done, Undone: the file is back").waitFor({ timeout: STEP_MS });
    await card(chat, "c.txt", "Done, Undone: the file is back").waitFor({ timeout: STEP_MS });
    await chat.locator(".card .undone").first().waitFor({ timeout: STEP_MS });
    await page.waitForFunction(
      () =>
        [...document.querySelectorAll(".editor-group-container.active .view-lines span")].some((node) =>
          /Undone/.test(getComputedStyle(node, "::after").content),
        ),
      undefined,
      { timeout: STEP_MS },
    );
    assert.deepEqual(
      Object.keys(files).map((name) => readWorkspaceFile(workspace, name)),
      Object.values(files),
      "every file is back",
    );
    await vscode.screenshot("approvals-undone-dark");
    await setTheme(vscode, chat, "Light Modern", "light");
    await vscode.screenshot("approvals-undone-light");
  });
});
