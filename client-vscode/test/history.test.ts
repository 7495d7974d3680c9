/**
 * The conversation export (src/panel/history.ts): whatever the conversation holds (a title or
 * a tool name with backticks or HTML, a stopped answer cut inside a code block, a user's stray
 * fence or `<!--`), the Markdown keeps its structure: every section is still a heading, the
 * title and names show literally, no raw HTML. Checked by parsing the export with marked (the
 * panel's own Markdown library).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Lexer, type Token } from "marked";
import { closedMarkdown, conversationMarkdown } from "../src/panel/history";
import type { SnapshotResult } from "../src/protocol";

function snapshot(messages: unknown[], model = "openai:gpt-4o-mini"): SnapshotResult {
  return { sessionId: "s1", model, messages } as unknown as SnapshotResult;
}

function flatten(tokens: Token[]): Token[] {
  return tokens.flatMap((t) => [t, ...flatten(((t as { tokens?: Token[] }).tokens ?? []) as Token[])]);
}

function headings(markdown: string): string[] {
  return Lexer.lex(markdown).filter((t) => t.type === "heading").map((t) => (t as { text: string }).text);
}

test("a stopped answer cut inside a code block, a stray fence or <!-- do not swallow the sections after them", () => {
  const md = conversationMarkdown(snapshot([
    { role: "user", content: "Show me ``` how" },
    { role: "assistant", content: "Here:\n\n```python\ndef f():\n    return 1" },
    { role: "user", content: "```\nand then" },
    { role: "assistant", content: "<!-- a comment never closed\nmore" },
    { role: "user", content: "<script>alert(1)" },
    { role: "assistant", content: "~~~\ntilde block" },
    { role: "user", content: "last" },
    { role: "assistant", content: "done" },
  ]), "A title");
  assert.deepEqual(headings(md), ["A title", "You", "Toolwire", "You", "Toolwire", "You", "Toolwire", "You", "Toolwire"]);
  const html = flatten(Lexer.lex(md)).filter((t) => t.type === "html");
  assert.deepEqual(html, [], "no raw HTML block or tag");
  const codes = Lexer.lex(md).filter((t) => t.type === "code").map((t) => (t as { text: string }).text);
  assert.deepEqual(codes, ["def f():\n    return 1", "and then", "tilde block"]);
});

test("a title with backticks, HTML, newlines or Markdown shows literally on one heading line", () => {
  const title = "Fix `a` <img src=x onerror=alert(1)> *now*\n# not a heading [link](http://x)";
  const md = conversationMarkdown(snapshot([{ role: "user", content: "hi" }]), title);
  const first = Lexer.lex(md)[0] as Token & { depth: number; tokens: Token[] };
  assert.equal(first.type, "heading");
  assert.equal(first.depth, 1);
  assert.deepEqual(first.tokens.map((t) => t.type).filter((t) => t !== "text" && t !== "escape"), []);
  assert.equal(first.tokens.map((t) => (t as { text?: string }).text ?? "").join(""), title.replace(/\s+/g, " "));
  assert.equal(headings(md).length, 2, "the title's newline made no heading of its own");
  assert.match(conversationMarkdown(snapshot([]), "  "), /^# Toolwire conversation\n/);
});

test("a model or tool name with backticks stays one code span", () => {
  const md = conversationMarkdown(snapshot([
    { role: "assistant", content: "", tool_calls: [{ id: "c1", function: { name: "odd`name``x", arguments: '{"a": "```"}' } }] },
    { role: "tool", tool_call_id: "c1", content: "ok ```` result" },
  ], "openai:`gpt`"));
  const spans = flatten(Lexer.lex(md)).filter((t) => t.type === "codespan").map((t) => (t as { text: string }).text);
  assert.deepEqual(spans, ["openai:`gpt`", "s1", "odd`name``x"]);
  const codes = Lexer.lex(md).filter((t) => t.type === "code").map((t) => (t as { text: string }).text);
  assert.deepEqual(codes, ['{"a": "```"}', "ok ```` result"]);
});

test("closedMarkdown leaves closed blocks and inline HTML-looking text as they are", () => {
  const text = "```js\nx\n```\n\n<!-- fine -->\n\na < b and `<script>`";
  assert.equal(closedMarkdown(text), text);
  assert.equal(closedMarkdown("````\n```\nstill code"), "````\n```\nstill code\n````");
});
