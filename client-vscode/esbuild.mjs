// Builds the extension bundle (dist/extension.js) or, with --test, the Node
// tests (test/*.test.ts -> out/test/*.test.js). Type checking is `npm run typecheck`.
import { readdirSync } from "node:fs";
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
    entryPoints: readdirSync("test")
      .filter((name) => name.endsWith(".test.ts"))
      .map((name) => `test/${name}`),
    outdir: "out/test",
    packages: "external",
    plugins: [noVscode],
  });
} else {
  await build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    external: ["vscode"],
    minify: process.argv.includes("--minify"),
  });
}
