/**
 * Tool cards shown as what the calls do (issue 25, "Calls shown as what they do"): an edit
 * as a diff appearing while its arguments stream, syntax-highlighted, long lines wrapped at
 * word boundaries; create_file as the file growing; delete/rename as one line; git tools as
 * the command a person types with files and a diffstat; read and search tools as their
 * target; the raw arguments one click away; in an approval the diff first, collapsed to the
 * changed lines with "Show all"; model text never becomes markup. The webview bundle in
 * headless Chromium, the real PanelHost, a real `toolwire serve` playing a replay script.
 * Screenshots of the cards (dark and light) go to test-artifacts/cards-*.png; with
 * TOOLWIRE_UPDATE_SCREENSHOT=1 the dark one also replaces docs/panel.png, the README's.
 */
import assert from "node:assert/strict";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import * as path from "node:path";
import { test } from "node:test";
import { openWorkspacePanel, usePanelSite, type Panel } from "./panel/harness";
import { PACKAGE_ROOT } from "./panel/server";

const TIMEOUT_MS = 90_000;
const ARTIFACTS = path.join(PACKAGE_ROOT, "test-artifacts");

const site = usePanelSite();

const APP_PY = 'def greet(name):\n    """Say hello."""\n    return "hello " + name\n\n\nprint(greet("world"))\n';
/** Each update of a streaming call is watched for: a slow frame rate makes the stream last, never fail. */
const SLOW = { chunk_size: 6, delay: 0.02 };

async function ask(panel: Panel, text: string): Promise<void> {
  const box = panel.page.getByRole("textbox", { name: "Prompt" });
  await box.fill(text);
  await box.press("Enter");
}

function card(panel: Panel, name: string, nth = 0) {
  return panel.page.locator("article.card", { has: panel.page.locator(".tool-name", { hasText: new RegExp(`^${name}$`) }) }).nth(nth);
}

/**
 * Records, on every change of the page, what each card still `generating` shows in its
 * diff (`pre.diff` text): an event-driven record of the live view, no polling, no sleep.
 */
async function watchLive(panel: Panel): Promise<void> {
  await panel.page.evaluate(() => {
    const seen: { tool: string; diff: string; adds: number }[] = [];
    (window as unknown as { __live: typeof seen }).__live = seen;
    new MutationObserver(() => {
      for (const article of document.querySelectorAll("article.card.status-generating")) {
        const pre = article.querySelector("pre.diff");
        if (pre !== null) {
          const diff = (pre as HTMLElement).innerText;
          if (seen.length === 0 || seen[seen.length - 1].diff !== diff) {
            seen.push({ tool: article.querySelector(".tool-name")?.textContent ?? "", diff, adds: pre.querySelectorAll(".diff-add").length });
          }
        }
      }
    }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  });
}

async function liveViews(panel: Panel): Promise<{ tool: string; diff: string; adds: number }[]> {
  return panel.page.evaluate(() => (window as unknown as { __live: { tool: string; diff: string; adds: number }[] }).__live);
}

test("edit_file: a diff appears while its arguments stream, highlighted and wrapped; the approval's diff comes first; raw arguments one click away", { timeout: TIMEOUT_MS }, async (t) => {
  const OLD = '    """Say hello."""\n    return "hello " + name\n';
  const longLine = "    return " + Array.from({ length: 40 }, (_, i) => `"word${i}"`).join(" + ");
  const { panel, workspace } = await openWorkspacePanel(t, site, {
    name: "cards-edit",
    gitInit: ["-q"],
    files: { "app.py": APP_PY },
    script: [
      { tool_calls: [{ name: "edit_file", arguments: { path: "app.py", old_string: OLD, new_string: `    """Say hello."""\n${longLine}\n` } }], ...SLOW },
      { text: "Edited." },
    ],
  });
  const { page } = panel;
  await watchLive(panel);
  await ask(panel, "Make greet long.");
  const edit = card(panel, "edit_file");
  const approval = edit.getByRole("region", { name: "Approval for edit_file" });
  await approval.waitFor();

  const live = (await liveViews(panel)).filter((view) => view.tool === "edit_file");
  assert.ok(live.length >= 2, `the diff grew while streaming (${live.length} views)`);
  assert.ok(live.some((view) => view.diff.includes("Say hello") && view.adds === 0), "the replaced text first, before the new text came");
  assert.ok(live.some((view) => view.adds > 0 && !view.diff.includes("word39")), "the new text appeared as it streamed");
  assert.ok(live.every((view) => !view.diff.includes("\\n") && !view.diff.includes('"old_string"')), "a diff, not JSON");

  // The approval: its diff (the server's exact one) comes before the question and the buttons.
  const order = await approval.evaluate((region) => [...region.children].map((child) => child.className));
  assert.deepEqual(order.slice(0, 2), ["diff-view", "ask"], "the diff first");
  const diff = approval.locator("pre.diff");
  assert.match(await diff.innerText(), /^@@ /m, "the server's unified diff");
  assert.ok((await diff.locator(".diff-add .hljs-string").count()) > 0, "Python strings highlighted");
  assert.ok((await diff.locator(".diff-ctx .hljs-keyword").count()) > 0, "keywords highlighted (def)");
  assert.equal(await edit.locator("pre.diff").count(), 1, "one diff in the card: the approval's");
  const box = await diff.boundingBox();
  assert.ok(box !== null && box.y + Math.min(box.height, 200) < (page.viewportSize()?.height ?? 0), "the diff starts in view");
  // Wrapped at word boundaries: the long line takes several rows and no word is cut.
  const added = diff.locator(".diff-add").first();
  const wrap = await added.evaluate((row) => {
    const style = getComputedStyle(row.closest("pre") as Element);
    return { rows: Math.round(row.getBoundingClientRect().height / (row.closest("pre") as Element).querySelector(".diff-ctx")!.getBoundingClientRect().height), wordBreak: style.wordBreak, whiteSpace: style.whiteSpace, scroll: (row.closest("pre") as HTMLElement).scrollWidth <= (row.closest("pre") as HTMLElement).clientWidth };
  });
  assert.ok(wrap.rows > 1, `the long line wraps (${wrap.rows} rows)`);
  assert.equal(wrap.wordBreak, "normal", "at word boundaries");
  assert.equal(wrap.whiteSpace, "pre-wrap");
  assert.ok(wrap.scroll, "no horizontal scrolling");

  // Raw arguments: closed by default, one click away.
  const raw = edit.locator("details.raw-args");
  assert.equal(await raw.locator("pre").count(), 0);
  await raw.locator("summary").click();
  assert.match(await raw.locator("pre").innerText(), /"old_string": ?"    \\"\\"\\"Say hello/, "the text the model sent");

  await approval.getByRole("button", { name: "Allow once" }).click();
  await page.locator(".turn-end").waitFor();
  assert.ok((await readFile(path.join(workspace, "app.py"), "utf8")).includes("word39"));
  // After the call: still a diff (result.data.diff when the server gives one, else the approval's).
  assert.match(await edit.locator("pre.diff").innerText(), /^@@ /m);
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations), []);
});

test("multi_edit: each edit's hunk appears as it streams; a long diff in the approval collapses to its changed lines with Show all", { timeout: TIMEOUT_MS }, async (t) => {
  const lines = Array.from({ length: 120 }, (_, i) => `value_${i} = ${i}`);
  const edits = [5, 25, 45, 65, 85, 105].map((n) => ({ old_string: `value_${n} = ${n}\n`, new_string: `value_${n} = ${n * 10}  # scaled\n` }));
  const { panel } = await openWorkspacePanel(t, site, {
    name: "cards-multi",
    gitInit: ["-q"],
    files: { "values.py": lines.join("\n") + "\n" },
    script: [{ tool_calls: [{ name: "multi_edit", arguments: { path: "values.py", edits } }], ...SLOW }, { text: "Scaled." }],
  });
  const { page } = panel;
  await watchLive(panel);
  await ask(panel, "Scale six values.");
  const edit = card(panel, "multi_edit");
  const approval = edit.getByRole("region", { name: "Approval for multi_edit" });
  await approval.waitFor();
  const live = (await liveViews(panel)).filter((view) => view.tool === "multi_edit");
  assert.ok(live.some((view) => view.diff.includes("Edit 2") && !view.diff.includes("Edit 6")), "hunks appeared one by one");
  assert.ok(live.some((view) => view.diff.includes("Edit 6")));

  const diff = approval.locator("pre.diff");
  const all = await diff.locator(":scope > span").count();
  assert.ok((await diff.locator(".diff-gap").count()) > 0, "unchanged lines folded");
  assert.equal(await diff.locator(".diff-add").count(), 6, "every change shown");
  assert.equal(await diff.locator(".diff-hunk").count(), 6, "every hunk shown");
  const show = approval.getByRole("button", { name: /^Show all \(\d+ lines\)$/ });
  await show.click();
  assert.equal(await diff.locator(".diff-gap").count(), 0, "all of it");
  assert.ok((await diff.locator(":scope > span").count()) > all);
  assert.equal(await diff.locator(".diff-ctx").count(), 6 * 6, "three lines of context each side");
  await approval.getByRole("button", { name: "Allow once" }).click();
  await page.locator(".turn-end").waitFor();
});

test("create_file shows the file growing; delete_file and rename_file are one line", { timeout: TIMEOUT_MS }, async (t) => {
  const content = Array.from({ length: 30 }, (_, i) => `export const n${i} = ${i};`).join("\n") + "\n";
  const { panel } = await openWorkspacePanel(t, site, {
    name: "cards-files",
    gitInit: ["-q"],
    files: { "old.txt": "old\n", "gone.txt": "gone\n" },
    settings: { permissions: { edits: "auto" } },
    script: [
      { tool_calls: [{ name: "create_file", arguments: { path: "src/numbers.ts", content } }], ...SLOW },
      { tool_calls: [{ name: "delete_file", arguments: { path: "gone.txt" } }] },
      { tool_calls: [{ name: "rename_file", arguments: { path: "old.txt", new_path: "docs/new name.txt" } }] },
      { text: "Done." },
    ],
  });
  const { page } = panel;
  await watchLive(panel);
  await ask(panel, "Make the files.");
  await page.locator(".turn-end").waitFor();
  const live = (await liveViews(panel)).filter((view) => view.tool === "create_file");
  assert.ok(live.length >= 2, "the file grew while streaming");
  assert.ok(live.some((view) => view.adds > 0 && view.adds < 30), "part of the file, then more");
  const created = card(panel, "create_file").locator("pre.diff");
  assert.equal(await created.locator(".diff-add").count(), 30);
  assert.ok((await created.locator(".hljs-keyword").count()) > 0, "TypeScript highlighted");
  assert.equal((await card(panel, "delete_file").locator(".tool-line").innerText()).trim(), "Delete gone.txt");
  assert.equal((await card(panel, "rename_file").locator(".tool-line").innerText()).trim(), "Rename old.txt → docs/new name.txt");
  assert.equal(await card(panel, "delete_file").locator("details.raw-args").count(), 1, "raw arguments one click away");
});

test("git tools: the command a person would type, the files and a diffstat", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel, server } = await openWorkspacePanel(t, site, {
    name: "cards-git",
    gitInit: ["-q"],
    files: { "hello.txt": "hello\n" },
    untracked: { "notes file.txt": "one\ntwo\n" },
    script: [
      { tool_calls: [{ name: "git_status", arguments: {} }] },
      { tool_calls: [{ name: "git_log", arguments: { max_count: 5 } }] },
      { tool_calls: [{ name: "git_add", arguments: { paths: ["notes file.txt"] } }] },
      { tool_calls: [{ name: "git_commit", arguments: { message: 'Add notes "v1"', paths: ["notes file.txt"] } }] },
      { text: "Committed." },
    ],
  });
  const { page } = panel;
  await ask(panel, "Commit the notes.");
  const add = card(panel, "git_add");
  const addApproval = add.getByRole("region", { name: "Approval for git_add" });
  await addApproval.waitFor();
  const told = (server.permissions.at(-1)?.subject as { command?: string }).command;
  assert.equal((await addApproval.locator("pre.command").innerText()).split("\n")[0], told ?? 'git add -- "notes file.txt"', "the server's command when it sends one");
  assert.ok(!(await addApproval.locator("pre.command").innerText()).includes("-c "), "never the hardened argv");
  await addApproval.getByRole("button", { name: "Allow once" }).click();
  const commit = card(panel, "git_commit");
  const approval = commit.getByRole("region", { name: "Approval for git_commit" });
  await approval.waitFor();
  const subject = server.permissions.at(-1)?.subject as {
    command?: string; files?: { path: string; added: number; removed: number }[]; diffstat?: { files: number; added: number; removed: number } };
  const typed = subject.command ?? 'git commit -m "Add notes \\"v1\\"" -- "notes file.txt"';
  assert.equal((await approval.locator("pre.command").innerText()).split("\n")[0], typed, "the approval's command");
  assert.equal(await commit.locator("pre.command").count(), 1, "shown once: in the approval");
  assert.equal(await approval.locator(".covers").innerText(), `Allow always: ${typed} (same paths and flags) for this conversation`, "the rule quoted as typed");
  if (subject.files !== undefined) {
    // The server's files and diffstat (issue 25 srv25): listed as sent.
    const listed = await approval.getByRole("list", { name: "Files" }).innerText();
    for (const file of subject.files) {
      assert.ok(listed.includes(file.path) && listed.includes(`+${file.added}`), listed);
    }
  }
  if (subject.files?.length === 1) {
    assert.equal(await approval.locator(".diffstat").count(), 1, "one file: its line, no total repeating it");
  } else if (subject.diffstat !== undefined) {
    assert.equal(await approval.locator(".diffstat").last().getAttribute("aria-label"), `${subject.diffstat.files} file${subject.diffstat.files === 1 ? "" : "s"}, ${subject.diffstat.added} added, ${subject.diffstat.removed} removed`);
  }
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, "cards-git-dark.png") });
  await approval.getByRole("button", { name: "Allow once" }).click();
  await page.locator(".turn-end").waitFor();
  assert.equal((await commit.locator(".git-view pre.command").innerText()).trim(), `$ ${typed}`, "the card's command once answered");
  assert.equal(await add.locator(".git-view .diffstat").count(), 1, "git_add of one file: no total repeating its line");
  assert.equal((await card(panel, "git_status").locator("pre.command").innerText()).trim(), "$ git status");
  assert.equal((await card(panel, "git_log").locator("pre.command").innerText()).trim(), "$ git log -n 5");
});

test("read and search tools: their target and a result summary", { timeout: TIMEOUT_MS }, async (t) => {
  const { panel } = await openWorkspacePanel(t, site, {
    name: "cards-look",
    files: { "hello.txt": "hello\nworld\nhello again\n" },
    script: [
      { tool_calls: [{ name: "read_file", arguments: { path: "hello.txt", start_line: 2, end_line: 3 } }] },
      { tool_calls: [{ name: "search_files", arguments: { query: "hello", include: "*.txt" } }] },
      { tool_calls: [{ name: "list_files", arguments: {} }] },
      { text: "Looked." },
    ],
  });
  const { page } = panel;
  await ask(panel, "Look around.");
  await page.locator(".turn-end").waitFor();
  assert.equal((await card(panel, "read_file").locator(".tool-line").innerText()).trim(), "Read hello.txt · lines 2–3");
  assert.equal((await card(panel, "search_files").locator(".tool-line").innerText()).trim(), "Search “hello” in . (*.txt)");
  assert.equal((await card(panel, "list_files").locator(".tool-line").innerText()).trim(), "List .");
  for (const name of ["read_file", "search_files", "list_files"]) {
    assert.ok((await card(panel, name).locator(".result summary").innerText()).trim().length > 0, `${name}: a result summary`);
    assert.equal(await card(panel, name).locator("pre").count(), 0, `${name}: no raw JSON shown`);
  }
});

test("model text in a card never becomes markup: highlight.js escapes it, names in display form", { timeout: TIMEOUT_MS }, async (t) => {
  const evil = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> \u202eexe.txt';
  const { panel } = await openWorkspacePanel(t, site, {
    name: "cards-evil",
    gitInit: ["-q"],
    files: { "page.html": "<p>hi</p>\n" },
    script: [{ tool_calls: [{ name: "edit_file", arguments: { path: "page.html", old_string: "<p>hi</p>", new_string: evil } }], ...SLOW }, { text: "Edited." }],
  });
  const { page } = panel;
  await ask(panel, "Edit the page.");
  const approval = card(panel, "edit_file").getByRole("region", { name: "Approval for edit_file" });
  await approval.waitFor();
  assert.equal(await page.locator(".card img, .card script").count(), 0);
  assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
  const text = await approval.locator("pre.diff").innerText();
  assert.ok(text.includes('<img src=x onerror="window.__pwned=1">'), "shown as text");
  assert.ok(text.includes("\\u202eexe.txt") && !text.includes("\u202e"), "bidi control as an escape");
  assert.ok((await approval.locator("pre.diff .hljs-tag").count()) > 0, "HTML highlighted");
  await approval.getByRole("button", { name: /^Reject/ }).click();
  await approval.getByRole("button", { name: "Reject", exact: true }).click();
  await page.locator(".turn-end").waitFor();
  assert.deepEqual(await page.evaluate(() => (window as unknown as { __cspViolations: string[] }).__cspViolations), []);
});

for (const theme of ["dark", "light"] as const) {
  test(`screenshot of the cards (${theme})`, { timeout: TIMEOUT_MS }, async (t) => {
    const { panel } = await openWorkspacePanel(t, site, {
      name: `cards-shot-${theme}`,
      gitInit: ["-q"],
      theme,
      files: { "app.py": APP_PY },
      script: [
        { text: "Let me read it first.", tool_calls: [{ name: "read_file", arguments: { path: "app.py" } }] },
        { tool_calls: [{ name: "git_status", arguments: {} }] },
        {
          tool_calls: [
            { name: "edit_file", arguments: { path: "app.py", old_string: '    """Say hello."""\n    return "hello " + name\n', new_string: '    """Greet someone by name."""\n    return f"Hello, {name}!"\n' } },
          ],
        },
      ],
    });
    await ask(panel, "Make the greeting friendlier.");
    const approval = card(panel, "edit_file").getByRole("region", { name: "Approval for edit_file" });
    await approval.waitFor();
    await mkdir(ARTIFACTS, { recursive: true });
    const file = path.join(ARTIFACTS, `cards-${theme}.png`);
    await panel.page.screenshot({ path: file });
    if (theme === "dark" && process.env.TOOLWIRE_UPDATE_SCREENSHOT === "1") {
      await copyFile(file, path.resolve(PACKAGE_ROOT, "../docs/panel.png"));
    }
  });
}

test("a huge all-additions edit renders a bounded number of rows, its start and its end; Show all renders the rest", { timeout: TIMEOUT_MS }, async (t) => {
  const added = Array.from({ length: 16_000 }, (_, i) => `x${i}`); // ~110 KB: under the server's diff cap
  const { panel } = await openWorkspacePanel(t, site, {
    name: "cards-huge",
    gitInit: ["-q"],
    files: { "big.py": "start\nOLD\nend\n" },
    script: [{ tool_calls: [{ name: "edit_file", arguments: { path: "big.py", old_string: "OLD\n", new_string: added.join("\n") + "\n" } }], chunk_size: 8192 }, { text: "Done." }],
  });
  await ask(panel, "Add many values.");
  const approval = card(panel, "edit_file").getByRole("region", { name: "Approval for edit_file" });
  await approval.waitFor();
  const diff = approval.locator("pre.diff");
  const rows = await diff.locator(":scope > span").count();
  assert.ok(rows <= 60, `bounded: ${rows} rows`);
  const text = await diff.innerText();
  assert.match(text, /^\+x0$/m, "its start");
  assert.match(text, /^\+x15999$/m, "its end");
  assert.match(text, /⋯ \d+ more lines/);
  await approval.getByRole("button", { name: /^Show all \(\d+ lines\)$/ }).click();
  await diff.locator(".diff-add").nth(15_999).waitFor({ state: "attached" });
  assert.equal(await diff.locator(".diff-gap").count(), 0, "all of it");
  await approval.getByRole("button", { name: "Show changed lines only" }).click();
  await diff.locator(".diff-gap").waitFor();
  assert.ok((await diff.locator(":scope > span").count()) <= 60);
  await approval.getByRole("button", { name: "Allow once" }).click();
  await panel.page.locator(".turn-end").waitFor();
  const done = card(panel, "edit_file").locator("pre.diff");
  assert.ok((await done.locator(":scope > span").count()) <= 60, "the done card is bounded too");
  assert.match(await done.innerText(), /^\+x15999$/m);
});
