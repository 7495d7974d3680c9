/**
 * **Edit selection…** asks what to do (src/instruction.ts, the `executeCommand` middleware's step
 * before `toolwire.runAction`): typed text is the instruction, empty means "improve it" (none
 * sent: the server's default), Escape runs nothing; Explain and Fix are never asked about.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { askExcludedAction, askInstruction, type InstructionBox } from "../src/instruction";

const edit = { kind: "edit", uri: "file:///ws/a.py", range: { start: { line: 0, character: 0 }, end: { line: 1, character: 0 } } };

function answering(answer: string | undefined): { asked: InstructionBox[]; ask: (box: InstructionBox) => Promise<string | undefined> } {
  const asked: InstructionBox[] = [];
  return { asked, ask: async (box) => (asked.push(box), answer) };
}

test("Edit selection… asks what to do; the answer is the instruction", async () => {
  const { asked, ask } = answering("  add type hints ");
  assert.deepEqual(await askInstruction([edit], ask), [{ ...edit, instruction: "add type hints" }]);
  assert.equal(asked.length, 1);
  assert.match(asked[0].prompt, /leave empty to improve it/);
});

test("an empty answer sends no instruction (the server improves it); Escape runs nothing", async () => {
  assert.deepEqual(await askInstruction([edit], answering("").ask), [edit]);
  assert.equal(await askInstruction([edit], answering(undefined).ask), undefined);
});

test("Explain, Fix and an edit that carries its instruction are not asked about", async () => {
  for (const args of [[{ ...edit, kind: "explain" }], [{ ...edit, kind: "fix" }], [{ ...edit, instruction: "x" }], [edit, edit]]) {
    const { asked, ask } = answering("never");
    assert.deepEqual(await askInstruction(args, ask), args);
    assert.equal(asked.length, 0);
  }
});

test("a code action on a file kept from the model: Send adds allowExcluded, Cancel runs nothing, another file goes as it is", async () => {
  const asked: string[] = [];
  const confirm = (answer: boolean | undefined) => async (uri: string) => (asked.push(uri), answer);
  assert.deepEqual(await askExcludedAction([edit], confirm(true)), [{ ...edit, allowExcluded: true }]);
  assert.equal(await askExcludedAction([edit], confirm(false)), undefined);
  assert.deepEqual(await askExcludedAction([edit], confirm(undefined)), [edit]);
  assert.deepEqual(asked, [edit.uri, edit.uri, edit.uri]);
  const allowed = [{ ...edit, allowExcluded: true }];
  assert.deepEqual(await askExcludedAction(allowed, confirm(false)), allowed); // already allowed: not asked again
  assert.equal(asked.length, 3);
});
