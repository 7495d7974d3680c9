/**
 * A unified diff as a person reads it: one row per line, added and removed lines marked by
 * their sign (not only by colour), the code syntax-highlighted by the file's language, long
 * lines wrapped at word boundaries. A long diff can start collapsed to its changed lines
 * (one line of context around each run, the rest as "N unchanged lines") with "Show all".
 */
import { Component } from "preact";
import { displayText } from "../../display";
import { highlightLine, languageFor } from "./highlight";

/** A diff longer than this many lines starts collapsed (when collapsing is asked for). */
export const COLLAPSE_LINES = 40;
/** Context lines kept around each changed run while collapsed. */
const CONTEXT = 1;
/** Last rows kept after "N more lines" when a long diff is cut short, so its end shows. */
export const TAIL_ROWS = 8;

export type Row =
  | { kind: "add" | "del" | "ctx"; text: string }
  | { kind: "hunk" | "file" | "note"; text: string }
  | { kind: "gap"; count: number; more?: boolean };

/** The rows of a unified diff's text. */
export function rowsOf(text: string): Row[] {
  const rows: Row[] = [];
  const lines = text.replace(/\n$/, "").split("\n");
  let inHunk = false;
  for (const line of lines) {
    if (line.startsWith("diff --git ")) {
      inHunk = false;
    }
    if (!inHunk && (line.startsWith("+++ ") || line.startsWith("--- ") || line.startsWith("diff --git ") || line.startsWith("index "))) {
      rows.push({ kind: "file", text: line });
    } else if (line.startsWith("@@")) {
      inHunk = true;
      rows.push({ kind: "hunk", text: line });
    } else if (line.startsWith("+")) {
      rows.push({ kind: "add", text: line.slice(1) });
    } else if (line.startsWith("-")) {
      rows.push({ kind: "del", text: line.slice(1) });
    } else if (line.startsWith("\\")) {
      rows.push({ kind: "note", text: line });
    } else {
      rows.push({ kind: "ctx", text: line.startsWith(" ") ? line.slice(1) : line });
    }
  }
  return rows;
}

/** The rows with unchanged runs away from changes folded into gaps. */
export function collapsed(rows: readonly Row[]): Row[] {
  const changed = rows.map((row) => row.kind === "add" || row.kind === "del");
  const keep = rows.map((row, i) => {
    if (row.kind !== "ctx") {
      return true;
    }
    for (let d = -CONTEXT; d <= CONTEXT; d++) {
      if (changed[i + d]) {
        return true;
      }
    }
    return false;
  });
  const out: Row[] = [];
  let gap = 0;
  rows.forEach((row, i) => {
    if (keep[i]) {
      if (gap > 0) {
        out.push({ kind: "gap", count: gap });
        gap = 0;
      }
      out.push(row);
    } else {
      gap++;
    }
  });
  if (gap > 0) {
    out.push({ kind: "gap", count: gap });
  }
  return out;
}

/**
 * A collapsed diff still too long to show (one long run of changes: a new file, a 16k-line
 * addition): its first {@link COLLAPSE_LINES} rows, "N more lines", its last {@link TAIL_ROWS}
 * rows — a bounded number of rows, however long the diff, with its start and its end in view.
 */
export function shortened(short: readonly Row[]): Row[] {
  if (short.length <= 2 * COLLAPSE_LINES) {
    return [...short];
  }
  const hidden = short.slice(COLLAPSE_LINES, short.length - TAIL_ROWS);
  const count = hidden.reduce((n, row) => n + (row.kind === "gap" ? row.count : 1), 0);
  return [...short.slice(0, COLLAPSE_LINES), { kind: "gap", count, more: true }, ...short.slice(short.length - TAIL_ROWS)];
}

const SIGN = { add: "+", del: "-", ctx: " " } as const;

/** Highlighted lines by language and text: a streaming card re-renders the same lines per piece. */
const highlighted = new Map<string, string>();
const HIGHLIGHT_CACHE = 4000;

function highlightCached(text: string, language: string | undefined): string {
  const key = `${language ?? ""}\0${text}`;
  let html = highlighted.get(key);
  if (html === undefined) {
    html = highlightLine(text, language);
    if (highlighted.size >= HIGHLIGHT_CACHE) {
      highlighted.clear();
    }
    highlighted.set(key, html);
  }
  return html;
}

/** Rows as `<span>`s; the code of add/del/context rows is highlight.js's escaped HTML. */
export function DiffRows({ rows, path }: { rows: readonly Row[]; path: string | null | undefined }) {
  const language = languageFor(path);
  return (
    <>
      {rows.map((row, i) => {
        if (row.kind === "gap") {
          return (
            <span key={i} class="diff-gap">
              {row.more ? `⋯ ${row.count} more line${row.count === 1 ? "" : "s"}` : `⋯ ${row.count} unchanged line${row.count === 1 ? "" : "s"}`}
              {"\n"}
            </span>
          );
        }
        if (row.kind === "add" || row.kind === "del" || row.kind === "ctx") {
          return (
            <span key={i} class={`diff-${row.kind}`}>
              <span class="diff-sign">{SIGN[row.kind]}</span>
              <code class="hljs" dangerouslySetInnerHTML={{ __html: highlightCached(row.text, language) }} />
              {"\n"}
            </span>
          );
        }
        return (
          <span key={i} class={`diff-${row.kind}`}>
            {displayText(row.text, "\t")}
            {"\n"}
          </span>
        );
      })}
    </>
  );
}

interface DiffProps {
  /** The unified diff (the server's: subject.diff or result.data.diff). */
  text?: string;
  /** Or its rows (a proposed edit as the model wrote it), in place of `text`. */
  rows?: Row[];
  path: string | null | undefined;
  /** Start collapsed to the changed lines when longer than {@link COLLAPSE_LINES}. */
  collapse?: boolean;
  label?: string;
}

/** The server's diff; collapsed to its changed lines with "Show all" when long. */
export class Diff extends Component<DiffProps, { all: boolean }> {
  override state = { all: false };
  private parsed: { source: string | Row[]; rows: Row[]; short: Row[] } | undefined;

  private rows(): { rows: Row[]; short: Row[] } {
    const source = this.props.rows ?? this.props.text ?? "";
    if (this.parsed?.source !== source) {
      const rows = typeof source === "string" ? rowsOf(source) : source;
      const short = shortened(rows.length > COLLAPSE_LINES ? collapsed(rows) : rows);
      this.parsed = { source, rows, short };
    }
    return this.parsed;
  }

  override render() {
    const { path, collapse, label } = this.props;
    const { rows, short } = this.rows();
    const folding = collapse === true && short.length < rows.length;
    const shown = folding && !this.state.all ? short : rows;
    return (
      <div class="diff-view">
        <pre class="diff" aria-label={label ?? "Change"}>
          <DiffRows rows={shown} path={path} />
        </pre>
        {folding ? (
          <button type="button" class="link" aria-expanded={this.state.all} onClick={() => this.setState({ all: !this.state.all })}>
            {this.state.all ? "Show changed lines only" : `Show all (${rows.length} lines)`}
          </button>
        ) : null}
      </div>
    );
  }
}

/** A diffstat in words and signs: `+3 −1`. */
export function Stat({ added, removed, files }: { added: number; removed: number; files?: number }) {
  return (
    <span class="diffstat" aria-label={`${files !== undefined ? `${files} file${files === 1 ? "" : "s"}, ` : ""}${added} added, ${removed} removed`}>
      {files !== undefined ? <span class="stat-files">{`${files} file${files === 1 ? "" : "s"}`}</span> : null}
      <span class="stat-add">{`+${added}`}</span>
      <span class="stat-del">{`−${removed}`}</span>
    </span>
  );
}
