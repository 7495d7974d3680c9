// Builds the extension bundle (dist/extension.js) and the chat webview's bundle
// (dist/webview/: panel.js, panel.css, codicons) or, with --test, the Node tests
// (test/*.test.ts -> out/test/*.test.js). Type checking is `npm run typecheck`.
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import { build } from "esbuild";

const forTest = process.argv.includes("--test");

const common = {
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  sourcemap: true,
  logLevel: "warning",
};

/** Fails the test build if anything it imports reaches for the `vscode` module. */
const noVscode = {
  name: "no-vscode",
  setup(b) {
    b.onResolve({ filter: /^vscode$/ }, (args) => ({
      errors: [{ text: `the Node test must not import vscode (from ${args.importer})` }],
    }));
  },
};

if (forTest) {
  // The test talks to the real server through vscode-jsonrpc; it must never load `vscode`.
  await build({
    ...common,
    entryPoints: [
      ...readdirSync("test")
        .filter((name) => name.endsWith(".test.ts"))
        .map((name) => ({ in: `test/${name}`, out: `test/${name.slice(0, -3)}` })),
      { in: "bench/panel.ts", out: "bench/panel" },
    ],
    outdir: "out",
    packages: "external",
    plugins: [noVscode],
  });
} else {
  // The webview: a browser bundle (Preact, marked, DOMPurify) beside the extension's.
  await build({
    bundle: true,
    platform: "browser",
    target: "es2022",
    format: "iife",
    sourcemap: true,
    logLevel: "warning",
    entryPoints: { panel: "src/webview/main.tsx", "panel-style": "src/webview/style.css" },
    outdir: "dist/webview",
    jsx: "automatic",
    jsxImportSource: "preact",
    minify: process.argv.includes("--minify"),
    plugins: [noVscode],
  });
  mkdirSync("dist/webview/codicons", { recursive: true });
  for (const name of ["codicon.css", "codicon.ttf"]) {
    copyFileSync(`node_modules/@vscode/codicons/dist/${name}`, `dist/webview/codicons/${name}`);
  }
  await build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    external: ["vscode"],
    minify: process.argv.includes("--minify"),
  });
}
