// Checks the packaged .vsix (built by `make package`; path in $TOOLWIRE_VSIX):
// - `vsce ls` (what .vscodeignore lets through) and the zip's own listing hold every file
//   the extension needs and none of the development files;
// - LICENSE is the repository's Apache-2.0 text; the notices name every bundled package;
// - the server bundled in the .vsix runs with a bare `python3` (nothing installed in it):
//   it answers LSP `initialize` over stdio, importing toolwire from the extracted .vsix.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import rpc from "vscode-jsonrpc/node";

const extensionDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const repo = path.resolve(extensionDir, "..");
const vsix = process.env.TOOLWIRE_VSIX;
const python = process.env.TOOLWIRE_PYTHON ?? path.join(repo, ".venv/bin/python");
const PYTHON_TAGS = ["311", "312", "313", "314"];

/** Files every .vsix must hold (paths inside the extension folder). */
const REQUIRED = [
  "package.json",
  "README.md",
  "CHANGELOG.md",
  "LICENSE",
  "THIRD-PARTY-NOTICES.txt",
  "images/icon.png",
  "dist/extension.js",
  "bundled/libs/toolwire/__main__.py",
  "bundled/libs/toolwire/lsp/server.py",
  "bundled/libs/pygls/__init__.py",
  "bundled/libs/openai/__init__.py",
  ...PYTHON_TAGS.map((tag) => `bundled/libs/pydantic_core/_pydantic_core.cpython-${tag}-x86_64-linux-gnu.so`),
];

/** Patterns no file in the .vsix may match. */
const FORBIDDEN = [
  [/^src\//, "TypeScript sources"],
  [/^test\//, "tests"],
  [/^e2e\//, "end-to-end tests"],
  [/^out\//, "test builds"],
  [/(^|\/)node_modules\//, "node_modules"],
  [/\.map$/, "source maps"],
  [/\.ts$/, "TypeScript"],
  [/^(tsconfig\.json|esbuild\.mjs|\.npmrc|\.vscodeignore|package-lock\.json)$/, "build configuration"],
  [/__pycache__|\.pyc$/, "Python bytecode"],
  [/^bundled\/libs\/bin\//, "console scripts naming the build machine's Python"],
  [/\.vsix$/, "packages"],
];

let vsceFiles;
let zipFiles;
let extracted;

before(() => {
  assert.ok(vsix, "TOOLWIRE_VSIX must name the .vsix (run `make test-package`)");
  const vsce = path.join(extensionDir, "node_modules/.bin/vsce");
  vsceFiles = execFileSync(vsce, ["ls", "--no-dependencies"], { cwd: extensionDir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
  const listing = execFileSync(python, ["-c", "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))", vsix], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  zipFiles = listing
    .split("\n")
    .filter((name) => name.startsWith("extension/"))
    .map((name) => name.slice("extension/".length));
  extracted = mkdtempSync(path.join(tmpdir(), "toolwire-vsix-"));
  execFileSync(python, ["-m", "zipfile", "-e", vsix, extracted]);
});

after(() => {
  if (extracted !== undefined) {
    rmSync(extracted, { recursive: true, force: true });
  }
});

/** vsce renames README/CHANGELOG/LICENSE inside the zip; compare case-insensitively, without .txt. */
function normalise(name) {
  return name.toLowerCase().replace(/^license\.txt$/, "license");
}

for (const [label, files] of [
  ["vsce ls", () => vsceFiles],
  [".vsix zip", () => zipFiles],
]) {
  test(`${label}: every required file is there`, () => {
    const have = new Set(files().map(normalise));
    const missing = REQUIRED.filter((file) => !have.has(normalise(file)));
    assert.deepEqual(missing, []);
  });

  test(`${label}: no development files`, () => {
    const bad = files().flatMap((file) => FORBIDDEN.filter(([pattern]) => pattern.test(file)).map(([, why]) => `${file} (${why})`));
    assert.deepEqual(bad, []);
  });
}

test("LICENSE in the .vsix is the repository's Apache-2.0 text", () => {
  const inVsix = readFileSync(path.join(extracted, "extension/LICENSE.txt"), "utf8");
  assert.equal(inVsix, readFileSync(path.join(repo, "LICENSE"), "utf8"));
  assert.match(inVsix, /Apache License\s+Version 2\.0, January 2004/);
  assert.match(inVsix, /END OF TERMS AND CONDITIONS/);
});

test("the notices name every bundled Python distribution and carry licence texts", () => {
  const notices = readFileSync(path.join(extracted, "extension/THIRD-PARTY-NOTICES.txt"), "utf8");
  const libs = path.join(extracted, "extension/bundled/libs");
  const dists = readdirSync(libs)
    .filter((name) => name.endsWith(".dist-info") && !name.startsWith("toolwire-"))
    .map((name) => name.replace(/\.dist-info$/, ""));
  assert.ok(dists.length >= 10, `expected the server's dependencies, found ${dists.join(", ")}`);
  for (const dist of dists) {
    const [name, version] = [dist.slice(0, dist.lastIndexOf("-")), dist.slice(dist.lastIndexOf("-") + 1)];
    const heading = new RegExp(`^${name.replace(/[-_.]/g, "[-_.]")} ${version.replace(/\./g, "\\.")} \\(Python\\)$`, "im");
    assert.match(notices, heading, `${dist} is not in the notices`);
  }
  for (const npmPackage of ["vscode-languageclient", "vscode-jsonrpc"]) {
    assert.match(notices, new RegExp(`^${npmPackage} [0-9.]+ \\(npm\\)$`, "m"));
  }
  assert.match(notices, /Permission is hereby granted, free of charge/, "MIT licence texts are reproduced");
});

test("package.json: activation only on Toolwire's commands and views, icon and licence set", () => {
  const manifest = JSON.parse(readFileSync(path.join(extracted, "extension/package.json"), "utf8"));
  const events = manifest.activationEvents ?? [];
  assert.ok(!events.includes("*") && !events.includes("onStartupFinished"), `activates on startup: ${events}`);
  for (const event of events) {
    assert.match(event, /^(onCommand|onView|onWebviewPanel):toolwire/, `unexpected activation event ${event}`);
  }
  assert.equal(manifest.license, "Apache-2.0");
  assert.equal(manifest.icon, "images/icon.png");
  assert.deepEqual(manifest.contributes.configuration.properties["toolwire.importStrategy"].enum, ["useBundled", "fromEnvironment"]);
});

test("the bundled server answers initialize with a bare python3 (nothing installed in it)", async () => {
  const libs = path.join(extracted, "extension/bundled/libs");
  const env = { PATH: process.env.PATH, HOME: extracted, PYTHONPATH: libs, PYTHONNOUSERSITE: "1" };
  const where = execFileSync("python3", ["-c", "import sys, toolwire; print(sys.version_info >= (3, 11), toolwire.__file__)"], {
    env,
    encoding: "utf8",
  }).trim();
  assert.equal(where, `True ${path.join(libs, "toolwire/__init__.py")}`);
  const server = spawn("python3", ["-m", "toolwire", "serve"], { env, cwd: extracted, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => server.on("exit", (code) => resolve(code)));
  const connection = rpc.createMessageConnection(new rpc.StreamMessageReader(server.stdout), new rpc.StreamMessageWriter(server.stdin));
  connection.listen();
  try {
    const result = await connection.sendRequest("initialize", {
      processId: process.pid,
      rootUri: null,
      capabilities: {},
      workspaceFolders: null,
    });
    assert.equal(result.serverInfo?.name, "toolwire");
    connection.sendNotification("initialized", {});
    await connection.sendRequest("shutdown");
    connection.sendNotification("exit");
    assert.equal(await exited, 0);
  } finally {
    connection.dispose();
    server.kill();
  }
});
