/**
 * Syntax highlighting for the cards' diffs and files: highlight.js core with a fixed set
 * of common languages (the whole library would add ~900 KB to the panel), chosen by the
 * file's extension or name.
 *
 * Safety: the only HTML the panel ever puts into the page from workspace or model text is
 * what {@link highlightLine} returns: highlight.js escapes the text it is given (`&`, `<`,
 * `>`, `"`, `'`) and adds only its own `<span class="hljs-…">` tags, and the text is put in
 * display form first (control and bidirectional characters as escapes).
 */
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import csharp from "highlight.js/lib/languages/csharp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import dockerfile from "highlight.js/lib/languages/dockerfile";
import go from "highlight.js/lib/languages/go";
import ini from "highlight.js/lib/languages/ini";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import kotlin from "highlight.js/lib/languages/kotlin";
import makefile from "highlight.js/lib/languages/makefile";
import markdown from "highlight.js/lib/languages/markdown";
import php from "highlight.js/lib/languages/php";
import python from "highlight.js/lib/languages/python";
import ruby from "highlight.js/lib/languages/ruby";
import rust from "highlight.js/lib/languages/rust";
import scss from "highlight.js/lib/languages/scss";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import swift from "highlight.js/lib/languages/swift";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { displayText } from "../../display";

const LANGUAGES = {
  bash, c, cpp, csharp, css, diff, dockerfile, go, ini, java, javascript, json, kotlin, makefile, markdown, php,
  python, ruby, rust, scss, shell, sql, swift, typescript, xml, yaml,
};
for (const [name, language] of Object.entries(LANGUAGES)) {
  hljs.registerLanguage(name, language);
}

/** Extension (lower case, no dot) → registered language. */
const BY_EXTENSION: Record<string, keyof typeof LANGUAGES> = {
  sh: "bash", bash: "bash", zsh: "bash",
  c: "c", h: "c",
  cc: "cpp", cpp: "cpp", cxx: "cpp", hpp: "cpp", hh: "cpp", hxx: "cpp",
  cs: "csharp",
  css: "css", scss: "scss", less: "scss",
  diff: "diff", patch: "diff",
  go: "go",
  ini: "ini", cfg: "ini", toml: "ini", properties: "ini", editorconfig: "ini",
  java: "java",
  js: "javascript", mjs: "javascript", cjs: "javascript", jsx: "javascript",
  json: "json", jsonc: "json", jsonl: "json",
  kt: "kotlin", kts: "kotlin",
  mk: "makefile",
  md: "markdown", markdown: "markdown",
  php: "php",
  py: "python", pyi: "python", pyw: "python",
  rb: "ruby",
  rs: "rust",
  sql: "sql",
  swift: "swift",
  ts: "typescript", tsx: "typescript", mts: "typescript", cts: "typescript",
  html: "xml", htm: "xml", xml: "xml", svg: "xml", vue: "xml",
  yml: "yaml", yaml: "yaml",
};

/** File names without a telling extension. */
const BY_NAME: Record<string, keyof typeof LANGUAGES> = {
  makefile: "makefile", gnumakefile: "makefile", dockerfile: "dockerfile", containerfile: "dockerfile",
  ".bashrc": "bash", ".zshrc": "bash", ".profile": "bash", ".gitconfig": "ini",
};

/** The language for a file path, or undefined (plain text). */
export function languageFor(path: string | null | undefined): string | undefined {
  if (!path) {
    return undefined;
  }
  const name = path.slice(path.lastIndexOf("/") + 1).toLowerCase();
  if (name in BY_NAME) {
    return BY_NAME[name];
  }
  const dot = name.lastIndexOf(".");
  return dot >= 0 ? BY_EXTENSION[name.slice(dot + 1)] : undefined;
}

/** Highlighted lines by language and text: a line already shown is not highlighted again. */
const cache = new Map<string, string>();
const CACHE_LIMIT = 5000;

/**
 * One line of code as HTML: escaped by highlight.js, in display form (see the module
 * comment), with highlight.js's spans; plain escaped text when no language applies.
 * A multi-line construct (a string or comment spanning lines) is highlighted per line.
 */
export function highlightLine(line: string, language: string | undefined): string {
  const text = displayText(line, "\t");
  if (language === undefined) {
    return escapeHtml(text);
  }
  const key = `${language}\u0000${text}`;
  let html = cache.get(key);
  if (html === undefined) {
    html = hljs.highlight(text, { language, ignoreIllegals: true }).value;
    if (cache.size >= CACHE_LIMIT) {
      cache.clear();
    }
    cache.set(key, html);
  }
  return html;
}

/** Text as HTML text: what highlight.js does for text outside its spans. */
export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
}
