/**
 * The answers to `toolwire/editor/*` (src/intel/answers.ts): what VS Code's commands return,
 * as the server reads it (LocationLink → its target selection range, references without the
 * declaration, the documents of a diagnostics answer), bad params and failures as JSON-RPC
 * errors, and the batching of `diagnosticsChanged`. VS Code's objects are stood in for by
 * plain ones and a converter of the same shape as the language client's.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ResponseError } from "vscode-jsonrpc";
import {
  DIAGNOSTICS_BATCH_MS,
  EDITOR_CAPABILITY,
  INVALID_PARAMS,
  REQUEST_FAILED,
  UriBatch,
  diagnosticsAnswer,
  diagnosticsUris,
  documentPosition,
  locationsAnswer,
  requestFailed,
  symbolsAnswer,
  symbolsQuery,
  withoutDeclarations,
  type LspRange,
  type Timers,
} from "../src/intel/answers";

/** A stand-in VS Code Uri and Range. */
interface Uri {
  scheme: string;
  path: string;
}
type Range = [number, number, number, number];
interface Diagnostic {
  message: string;
  range: Range;
}
interface Symbol {
  name: string;
  range?: Range;
  uri: Uri;
}

const file = (path: string): Uri => ({ scheme: "file", path });
const range = (sl: number, sc: number, el: number, ec: number): LspRange => ({ start: { line: sl, character: sc }, end: { line: el, character: ec } });
const convert = {
  asUri: (uri: Uri) => `${uri.scheme}://${uri.path}`,
  asRange: ([sl, sc, el, ec]: Range) => range(sl, sc, el, ec),
  asDiagnosticsSync: (items: Diagnostic[]) => items.map((d) => ({ message: d.message, range: convert.asRange(d.range) })),
  asWorkspaceSymbol: (s: Symbol) => ({ name: s.name, kind: 12, location: { uri: convert.asUri(s.uri), range: convert.asRange(s.range as Range) } }),
};

test("the capability declares all four answers", () => {
  assert.deepEqual(EDITOR_CAPABILITY, { diagnostics: true, symbols: true, definition: true, references: true });
});

test("a Location is kept; a LocationLink becomes its target URI and target selection range (else its target range)", () => {
  const answer = locationsAnswer<Uri, Range>(
    [
      { uri: file("/w/a.ts"), range: [1, 2, 1, 7] },
      { targetUri: file("/w/b.ts"), targetRange: [3, 0, 9, 1], targetSelectionRange: [3, 16, 3, 21] },
      { targetUri: file("/w/c.ts"), targetRange: [4, 0, 4, 9] },
    ],
    convert,
  );
  assert.deepEqual(answer, {
    locations: [
      { uri: "file:///w/a.ts", range: range(1, 2, 1, 7) },
      { uri: "file:///w/b.ts", range: range(3, 16, 3, 21) },
      { uri: "file:///w/c.ts", range: range(4, 0, 4, 9) },
    ],
  });
  assert.deepEqual(locationsAnswer(undefined, convert), { locations: [] }, "no provider for the language: no locations");
});

test("references without the declaration: a reference inside a definition's location is dropped", () => {
  const declaration = { uri: "file:///w/utils.ts", range: range(0, 16, 0, 21) };
  const references = [
    { uri: "file:///w/utils.ts", range: range(0, 16, 0, 21) }, // the declaration itself
    { uri: "file:///w/utils.ts", range: range(5, 9, 5, 14) },
    { uri: "file:///w/app.ts", range: range(0, 16, 0, 21) }, // same range, other file: kept
  ];
  assert.deepEqual(withoutDeclarations(references, [declaration]), references.slice(1));
  assert.deepEqual(withoutDeclarations(references, []), references);
});

test("diagnostics: null asks for every file with problems; named URIs are answered even when clean", () => {
  const entries: [Uri, Diagnostic[]][] = [
    [file("/w/broken.json"), [{ message: "Expected comma", range: [2, 4, 2, 5] }]],
    [file("/w/clean.ts"), []],
    [{ scheme: "git", path: "/w/broken.json" }, [{ message: "in a git view", range: [0, 0, 0, 1] }]],
  ];
  assert.deepEqual(diagnosticsAnswer(entries, false, convert, (u) => u.scheme === "file"), {
    items: [{ uri: "file:///w/broken.json", diagnostics: [{ message: "Expected comma", range: range(2, 4, 2, 5) }] }],
  });
  assert.deepEqual(diagnosticsAnswer(entries.slice(0, 2), true, convert, (u) => u.scheme === "file"), {
    items: [
      { uri: "file:///w/broken.json", diagnostics: [{ message: "Expected comma", range: range(2, 4, 2, 5) }] },
      { uri: "file:///w/clean.ts", diagnostics: [] },
    ],
  });
});

test("symbols: one without a range (left for a resolve that did not find it) is dropped", () => {
  const symbols: Symbol[] = [
    { name: "greet", range: [0, 16, 0, 21], uri: file("/w/utils.ts") },
    { name: "lazy", uri: file("/w/lazy.ts") },
  ];
  assert.deepEqual(symbolsAnswer(symbols, (s) => s.range !== undefined, convert), {
    symbols: [{ name: "greet", kind: 12, location: { uri: "file:///w/utils.ts", range: range(0, 16, 0, 21) } }],
  });
  assert.deepEqual(symbolsAnswer(undefined, () => true, convert), { symbols: [] });
});

test("params are checked: a wrong shape is InvalidParams", () => {
  assert.deepEqual(documentPosition({ textDocument: { uri: "file:///w/a.ts" }, position: { line: 3, character: 0 } }), {
    uri: "file:///w/a.ts",
    position: { line: 3, character: 0 },
  });
  for (const bad of [null, {}, { textDocument: { uri: "" }, position: { line: 0, character: 0 } }, { textDocument: { uri: "file:///a" }, position: { line: -1, character: 0 } }, { textDocument: { uri: "file:///a" }, position: { line: 1.5, character: 0 } }]) {
    assert.throws(() => documentPosition(bad), (e: unknown) => e instanceof ResponseError && e.code === INVALID_PARAMS, JSON.stringify(bad));
  }
  assert.equal(diagnosticsUris({ uris: null }), null);
  assert.equal(diagnosticsUris({}), null);
  assert.deepEqual(diagnosticsUris({ uris: ["file:///w/a.ts"] }), ["file:///w/a.ts"]);
  assert.throws(() => diagnosticsUris({ uris: "file:///w/a.ts" }), (e: unknown) => e instanceof ResponseError && e.code === INVALID_PARAMS);
  assert.throws(() => diagnosticsUris({ uris: [3] }), (e: unknown) => e instanceof ResponseError && e.code === INVALID_PARAMS);
  assert.equal(symbolsQuery({ query: "greet" }), "greet");
  assert.throws(() => symbolsQuery({}), (e: unknown) => e instanceof ResponseError && e.code === INVALID_PARAMS);
});

test("a command that fails in VS Code is a RequestFailed error naming the method and the editor's message", () => {
  const error = requestFailed("toolwire/editor/definition", new Error("provider crashed"));
  assert.ok(error instanceof ResponseError);
  assert.equal(error.code, REQUEST_FAILED);
  assert.equal(error.message, "toolwire/editor/definition: the editor could not answer: provider crashed");
});

/** Timers run by hand: `fire()` runs what is due. */
function manualTimers(): Timers & { pending: { callback: () => void; ms: number }[]; fire(): void } {
  const pending: { callback: () => void; ms: number }[] = [];
  return {
    pending,
    setTimeout: (callback, ms) => {
      const entry = { callback, ms };
      pending.push(entry);
      return entry;
    },
    clearTimeout: (handle) => {
      const i = pending.indexOf(handle as { callback: () => void; ms: number });
      if (i >= 0) {
        pending.splice(i, 1);
      }
    },
    fire() {
      for (const entry of pending.splice(0)) {
        entry.callback();
      }
    },
  };
}

test("diagnosticsChanged: URIs changed within one window go out once, in the order first seen", () => {
  const timers = manualTimers();
  const sent: string[][] = [];
  const batch = new UriBatch((uris) => sent.push(uris), DIAGNOSTICS_BATCH_MS, timers);
  batch.add(["file:///w/a.ts"]);
  batch.add(["file:///w/b.json", "file:///w/a.ts"]);
  batch.add([]);
  assert.equal(timers.pending.length, 1, "one window, opened by the first change");
  assert.equal(timers.pending[0].ms, 100);
  assert.deepEqual(sent, []);
  timers.fire();
  assert.deepEqual(sent, [["file:///w/a.ts", "file:///w/b.json"]]);
  // A later change opens the next window; changes never extend a window already open.
  batch.add(["file:///w/a.ts"]);
  timers.fire();
  assert.deepEqual(sent, [["file:///w/a.ts", "file:///w/b.json"], ["file:///w/a.ts"]]);
  timers.fire();
  assert.equal(sent.length, 2, "nothing pending: nothing sent");
});

test("diagnosticsChanged: a disposed batch (the client stopped) sends nothing more", () => {
  const timers = manualTimers();
  const sent: string[][] = [];
  const batch = new UriBatch((uris) => sent.push(uris), DIAGNOSTICS_BATCH_MS, timers);
  batch.add(["file:///w/a.ts"]);
  batch.dispose();
  assert.equal(timers.pending.length, 0);
  batch.add(["file:///w/b.ts"]);
  timers.fire();
  assert.deepEqual(sent, []);
});

test("diagnosticsChanged with real timers: sent about 100 ms after the first change", async () => {
  const sent: string[][] = [];
  const done = new Promise<void>((resolve) => {
    const batch = new UriBatch((uris) => {
      sent.push(uris);
      resolve();
    });
    batch.add(["file:///w/a.ts"]);
    batch.add(["file:///w/a.ts"]);
  });
  await done;
  assert.deepEqual(sent, [["file:///w/a.ts"]]);
});
