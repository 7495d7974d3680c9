/**
 * The client's display rule (src/display.ts) and the server's
 * (server/toolwire/workspace/names.py) agree: the real Python module is run over
 * the same inputs, and over every code point, and both must give the same text.
 *
 * The interpreter is $TOOLWIRE_PYTHON, else ../.venv/bin/python next to client-vscode.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { displayName, displayPath, displayText, hasUnusual, parseQuoted } from "../src/display";

const PACKAGE_ROOT = path.resolve(__dirname, path.basename(path.dirname(__dirname)) === "out" ? "../.." : "..");

function python(): string {
  const command = process.env.TOOLWIRE_PYTHON ?? path.resolve(PACKAGE_ROOT, "../.venv/bin/python");
  assert.ok(existsSync(command), `no interpreter: set TOOLWIRE_PYTHON or create ${command}`);
  return command;
}

/** Runs `script` with the server's names module; `input` goes in and the answer comes out as JSON. */
function server<T>(script: string, input: unknown): T {
  const out = execFileSync(python(), ["-c", `import json, sys\nfrom toolwire.workspace.names import display_name, display_text, has_unusual\n${script}`], {
    input: JSON.stringify(input),
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(out) as T;
}

/** Names that read as another, or hold what a terminal or a bidi algorithm acts on. */
const ODD = [
  "plain.txt",
  "",
  "invoice\u202efdp.exe",
  "evil\u202etxt.exe",
  "a\u200bb.txt",
  "zero\u200cwidth\u200djoin",
  "\u200eleft\u200fright\u061carabic",
  "\u202aembed\u202bembed\u202cpop\u202doverride",
  "\u2066isolate\u2067\u2068first\u2069",
  "line\u2028sep",
  "para\u2029sep",
  "next\u0085line",
  "nul\u0000.txt",
  "\u0001\u0002\u0003",
  "bell\u0007back\u0008",
  "tab\tname",
  "new\nline",
  "vt\u000bff\u000ccr\r",
  "e\u001b[2Jvil.txt",
  "\u001b]0;pwned\u0007.txt",
  "del\u007f",
  "csi\u009b2J",
  "c1\u0080\u009f",
  "back\\slash.txt",
  "back\\slash\u202e.txt",
  'say "hi".txt',
  '"quoted".txt',
  '"caf\\351.txt"',
  "it's.txt",
  "😀.txt",
  "👨\u200d👩\u200d👧.txt",
  "flag🏳\ufe0f\u200d🌈",
  "e\u0301.txt",
  "cafe\u0301\u0327",
  "café.txt",
  "ملف.txt",
  "שלום\u200f.txt",
  "日本語.md",
  "\ufeffbom.txt",
  "word\u2060joiner\u2061\u2062\u2063\u2064",
  "\u206a\u206b\u206c\u206d\u206e\u206f",
  "hangul\u115f\u1160\u3164\uffa0",
  "khmer\u17b4\u17b5",
  "mongolian\u180e",
  "anchor\ufff9\ufffa\ufffb",
  "music\u{1d173}\u{1d17a}",
  "tag\u{e0001}\u{e0041}\u{e007f}",
  "after tags\u{e0080}",
  "nbsp\u00a0narrow\u202fmath\u205f",
  "\u2027\u2030\u2070\u200a",
  "caf\udce9.txt",
  "\udc80\udcff",
  "mixed\udce9\u202e\n\"\\",
  "dir/sub\u202e/file.txt",
];

test("displayName and displayText give the server's text for every odd name", () => {
  const theirs = server<{ name: string; text: string; lines: string }[]>(
    'print(json.dumps([{"name": display_name(s), "text": display_text(s), "lines": display_text(s, keep="\\n\\t")} for s in json.load(sys.stdin)]))',
    ODD,
  );
  assert.equal(theirs.length, ODD.length);
  ODD.forEach((input, i) => {
    const what = JSON.stringify(input);
    assert.equal(displayName(input), theirs[i].name, `displayName(${what})`);
    assert.equal(displayText(input), theirs[i].text, `displayText(${what})`);
    assert.equal(displayText(input, "\n\t"), theirs[i].lines, `displayText(${what}, "\\n\\t")`);
  });
});

test("the server's form of the issue's name is git's octal quoting, and the text form a \\u escape", () => {
  assert.equal(displayName("invoice\u202efdp.exe"), '"invoice\\342\\200\\256fdp.exe"');
  assert.equal(displayText("invoice\u202efdp.exe"), "invoice\\u202efdp.exe");
  assert.equal(displayName("caf\udce9.txt"), '"caf\\351.txt"');
  assert.equal(displayName("plain.txt"), "plain.txt");
  assert.equal(displayText('{"path": "a\u200bb"}\n', "\n"), '{"path": "a\\u200bb"}\n');
});

test("both rules escape exactly the same code points, over all of Unicode", () => {
  // Ranges [first, last] of the code points the server's has_unusual flags, one char at a time.
  const theirs = server<[number, number][]>(
    [
      "ranges = []",
      "for c in range(0x110000):",
      "    if has_unusual(chr(c)):",
      "        if ranges and ranges[-1][1] == c - 1:",
      "            ranges[-1][1] = c",
      "        else:",
      "            ranges.append([c, c])",
      "print(json.dumps(ranges))",
    ].join("\n"),
    null,
  );
  const ours: [number, number][] = [];
  for (let c = 0; c < 0x110000; c++) {
    if (hasUnusual(String.fromCodePoint(c))) {
      const last = ours[ours.length - 1];
      if (last !== undefined && last[1] === c - 1) {
        last[1] = c;
      } else {
        ours.push([c, c]);
      }
    }
  }
  assert.deepEqual(ours, theirs);
  assert.ok(theirs.some(([first, last]) => first <= 0x202e && 0x202e <= last), "U+202E is among them");
});

test("displayPath reads a written path as the tools do: git's quoted form is the name it stands for", () => {
  const written = [...ODD, ...ODD.map(displayName), '"abc"', '"bad\\9"', '""', '"a\\"b\\\\c"', '"\\377\\300\\355\\240\\200\\364\\220\\200\\200"',
    '"\\342\\200"', '"\\360\\237\\230\\200.txt"', '"caf\udce9"', "\"x\u202e\""];
  const theirs = server<string[]>(
    "from toolwire.workspace.names import display_path\nprint(json.dumps([display_path(s) for s in json.load(sys.stdin)]))",
    written,
  );
  written.forEach((input, i) => assert.equal(displayPath(input), theirs[i], `displayPath(${JSON.stringify(input)})`));
  // both spellings of the name read as the approval subject names it
  assert.equal(displayPath("invoice\u202efdp.exe"), '"invoice\\342\\200\\256fdp.exe"');
  assert.equal(displayPath('"invoice\\342\\200\\256fdp.exe"'), '"invoice\\342\\200\\256fdp.exe"');
  assert.equal(parseQuoted('"caf\\351.txt"'), "caf\udce9.txt");
  assert.equal(parseQuoted("plain.txt"), undefined);
});
