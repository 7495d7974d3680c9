/**
 * Each tool's arguments for a person, live while they stream (issue 25, "Calls shown as
 * what they do"): edit_file/multi_edit as a diff (the server's once it gave one:
 * `subject.diff` in an approval, `result.data.diff` after the call; until then the
 * replaced and replacing text as each edit's hunk), create_file as the file growing,
 * delete_file/rename_file as one line, git tools as the command a person would type (the
 * server's `subject.command` when it sent one) with the files and a diffstat, read and
 * search tools as their target. Unknown tools: undefined (the card shows the raw text).
 *
 * While the call streams only the end of a long text is split and shown (TAIL_CHARS), so
 * an update costs what its piece does; the whole text is shown once the call is complete.
 */
import type { ComponentChildren } from "preact";
import { displayPath, displayText } from "../../display";
import type { CallView } from "../../panel/reducer";
import { stringAt, type ArgsSoFar, type Json } from "./args";
import { Diff, DiffRows, Stat, type Row } from "./diff";

/** Characters of a streaming text shown (its end). */
const TAIL_CHARS = 3000;

/** What the server told about the call's change: from its approval or its result. */
export interface ServerChange {
  diff?: string;
  diffstat?: { files?: number; added: number; removed: number };
  command?: string;
  files?: { path: string; added?: number; removed?: number }[];
}

export interface ToolViewProps {
  call: CallView;
  args: ArgsSoFar;
  change: ServerChange;
  /** An approval waits and shows the change itself (diff, command): the body then shows none. */
  approving: boolean;
}

const EDIT_TOOLS = new Set(["edit_file", "multi_edit", "create_file", "delete_file", "rename_file"]);
const GIT_TOOLS = new Set(["git_status", "git_diff", "git_log", "git_show", "git_add", "git_restore", "git_commit", "git_branch"]);
const LOOK_TOOLS = new Set(["read_file", "list_files", "search_files"]);

/** Whether the card has a view of its own for this tool. */
export function hasView(name: string): boolean {
  return EDIT_TOOLS.has(name) || GIT_TOOLS.has(name) || LOOK_TOOLS.has(name);
}

/** The view of a call's arguments (see the module comment); null when there is nothing to show yet. */
const FILE_TOOLS = new Set(["edit_file", "multi_edit", "create_file", "delete_file", "rename_file"]);

/**
 * A call's view; a file tool that failed or was cancelled says above its diff (or line) that
 * none of it was written: at a glance a red/green diff reads as a change made.
 */
export function ToolView(props: ToolViewProps) {
  const view = viewOf(props);
  const { call } = props;
  if (view === null || !FILE_TOOLS.has(call.name) || (call.status !== "errored" && call.status !== "canceled")) {
    return view;
  }
  return (
    <div class="not-written">
      <p class="caption">
        <i class="codicon codicon-circle-slash" aria-hidden="true" /> Not written: what the model proposed
      </p>
      {view}
    </div>
  );
}

function viewOf({ call, args, change, approving }: ToolViewProps) {
  const root = args.root;
  const str = (key: string): string | undefined => (root === undefined ? undefined : stringAt(args, root, key));
  const live = call.status === "generating";
  const path = str("path") ?? call.path ?? undefined;
  switch (call.name) {
    case "edit_file":
    case "multi_edit": {
      if (approving) {
        return null;
      }
      if (change.diff !== undefined) {
        return <Diff text={change.diff} path={path} collapse label="Change" />;
      }
      return <LiveEdits call={call} args={args} path={path} live={live} />;
    }
    case "create_file": {
      if (approving) {
        return null;
      }
      if (change.diff !== undefined) {
        return <Diff text={change.diff} path={path} collapse label="Change" />;
      }
      const content = str("content");
      if (content === undefined) {
        return null;
      }
      return <Growing text={content} path={path} live={live} />;
    }
    case "delete_file":
      return path === undefined ? null : <Line icon="trash" label="Delete">{displayPath(path)}</Line>;
    case "rename_file": {
      const to = str("new_path");
      return path === undefined ? null : (
        <Line icon="arrow-right" label="Rename">
          {displayPath(path)}
          {to !== undefined ? ` → ${displayPath(to)}` : ""}
        </Line>
      );
    }
    case "read_file": {
      if (path === undefined) {
        return null;
      }
      const start = root?.start_line;
      const end = root?.end_line;
      const range = typeof start === "number" ? ` · lines ${start}–${typeof end === "number" ? end : "end"}` : typeof end === "number" ? ` · lines 1–${end}` : "";
      return <Line icon="file" label="Read">{`${displayPath(path)}${range}`}</Line>;
    }
    case "list_files": {
      const pattern = str("pattern");
      return <Line icon="list-tree" label="List">{`${displayPath(str("path") ?? ".")}${pattern !== undefined ? ` matching ${displayText(pattern)}` : ""}`}</Line>;
    }
    case "search_files": {
      const query = str("query");
      if (query === undefined) {
        return null;
      }
      const include = str("include");
      const where = str("path") ?? ".";
      return (
        <Line icon="search" label="Search">
          {`${root?.regex === true ? "/" + displayText(query) + "/" : `“${displayText(query)}”`} in ${displayPath(where)}${include !== undefined ? ` (${displayText(include)})` : ""}`}
        </Line>
      );
    }
    default:
      if (GIT_TOOLS.has(call.name)) {
        return approving ? null : <GitView call={call} args={args} change={change} />;
      }
      return null;
  }
}

function Line({ icon, label, children }: { icon: string; label: string; children: ComponentChildren }) {
  return (
    <div class="tool-line" aria-label={label}>
      <i class={`codicon codicon-${icon}`} aria-hidden="true" /> <span class="verb">{label}</span> <span class="target">{children}</span>
    </div>
  );
}

/** The end of a streaming text (whole lines from its last TAIL_CHARS), and whether it was cut. */
function tailOf(text: string, live: boolean): { text: string; cut: boolean } {
  if (!live || text.length <= TAIL_CHARS) {
    return { text, cut: false };
  }
  const end = text.slice(-TAIL_CHARS);
  const nl = end.indexOf("\n");
  return { text: nl >= 0 ? end.slice(nl + 1) : end, cut: true };
}

function linesOf(text: string): string[] {
  return text === "" ? [] : text.replace(/\n$/, "").split("\n");
}

/** Each edit as a hunk of removed then added lines, as far as written. */
function LiveEdits({ call, args, path, live }: { call: CallView; args: ArgsSoFar; path: string | undefined; live: boolean }) {
  const root = args.root;
  if (root === undefined) {
    return null;
  }
  const edits: unknown[] = call.name === "multi_edit" ? (Array.isArray(root.edits) ? (root.edits as Json[]) : []) : [root];
  const rows: Row[] = [];
  edits.forEach((edit, i) => {
    const old = stringAt(args, edit, "old_string");
    const replacement = stringAt(args, edit, "new_string");
    if (old === undefined && replacement === undefined) {
      return;
    }
    if (edits.length > 1) {
      rows.push({ kind: "hunk", text: `Edit ${i + 1}${(edit as Record<string, unknown>).replace_all === true ? " (every occurrence)" : ""}` });
    } else if ((edit as Record<string, unknown>).replace_all === true) {
      rows.push({ kind: "hunk", text: "Every occurrence" });
    }
    for (const [text, kind] of [[old, "del"], [replacement, "add"]] as const) {
      if (text === undefined) {
        continue;
      }
      const tail = tailOf(text, live);
      if (tail.cut) {
        rows.push({ kind: "gap", count: -1 });
      }
      for (const line of linesOf(tail.text)) {
        rows.push({ kind, text: line });
      }
    }
  });
  if (rows.length === 0) {
    return null;
  }
  if (!live) {
    // All of it written (no diff from the server yet, or none coming): bounded, with Show all.
    return <Diff rows={rows} path={path} collapse label="Change" />;
  }
  return (
    <div class="diff-view">
      <pre class="diff live" aria-label="Change">
        <DiffRows rows={rows.map((row) => (row.kind === "gap" && row.count < 0 ? { kind: "note", text: "⋯" } : row))} path={path} />
      </pre>
    </div>
  );
}

/** create_file's content: the file as it grows (its end while streaming), then all of it (collapsible). */
function Growing({ text, path, live }: { text: string; path: string | undefined; live: boolean }) {
  if (!live) {
    const lines = linesOf(text);
    return <Diff text={`@@ -0,0 +1,${lines.length} @@\n${lines.map((line) => `+${line}`).join("\n")}`} path={path} collapse label="New file" />;
  }
  const tail = tailOf(text, live);
  const rows: Row[] = linesOf(tail.text).map((line) => ({ kind: "add", text: line }));
  if (tail.cut) {
    rows.unshift({ kind: "note", text: "⋯" });
  }
  return (
    <div class="diff-view">
      <pre class="diff file-content live" aria-label="New file">
        <DiffRows rows={rows} path={path} />
      </pre>
    </div>
  );
}

/** A git tool: the command as typed, the files it touches and a diffstat. */
function GitView({ call, args, change }: { call: CallView; args: ArgsSoFar; change: ServerChange }) {
  const command = change.command ?? gitCommand(call.name, args);
  if (command === undefined) {
    return null;
  }
  return (
    <div class="git-view">
      <pre class="command" aria-label="Command">
        <span class="prompt" aria-hidden="true">
          ${" "}
        </span>
        {displayText(command, "\n")}
      </pre>
      <GitFiles change={change} />
    </div>
  );
}

/** The files a git action touches, each with its line counts, and their total when there are several. */
export function GitFiles({ change }: { change: ServerChange }) {
  const files = change.files ?? [];
  return (
    <>
      {files.length > 0 ? (
        <ul class="git-files" aria-label="Files">
          {files.map((file) => (
            <li key={file.path}>
              <span class="path">{displayPath(file.path)}</span>{" "}
              {typeof file.added === "number" && typeof file.removed === "number" ? <Stat added={file.added} removed={file.removed} /> : null}
            </li>
          ))}
        </ul>
      ) : null}
      {/* the total only sums several files: one file's line already says it */}
      {change.diffstat && files.length !== 1 ? <Stat added={change.diffstat.added} removed={change.diffstat.removed} files={change.diffstat.files} /> : null}
    </>
  );
}

/** Shell quoting as a person types it: bare when safe, else in double quotes. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `"${arg.replace(/(["\\$`])/g, "\\$1")}"`;
}

/** The git command for a git tool's arguments (display only: the server runs its own argv). */
export function gitCommand(tool: string, args: ArgsSoFar): string | undefined {
  const root = args.root;
  if (root === undefined) {
    return undefined;
  }
  const str = (key: string): string | undefined => stringAt(args, root, key);
  const list = (key: string): string[] => (Array.isArray(root[key]) ? (root[key] as Json[]).filter((p): p is string => typeof p === "string") : []);
  const paths = (key: string): string[] => {
    const items = list(key);
    return items.length > 0 ? ["--", ...items.map(shellQuote)] : [];
  };
  const parts = ["git"];
  switch (tool) {
    case "git_status":
      parts.push("status");
      break;
    case "git_diff": {
      parts.push("diff");
      if (root.staged === true) parts.push("--staged");
      const ref = str("ref");
      if (ref) parts.push(shellQuote(ref));
      parts.push(...paths("paths"));
      break;
    }
    case "git_log": {
      parts.push("log", "-n", String(typeof root.max_count === "number" ? root.max_count : 20));
      const ref = str("ref");
      if (ref) parts.push(shellQuote(ref));
      const one = str("path");
      if (one) parts.push("--", shellQuote(one));
      break;
    }
    case "git_show": {
      parts.push("show");
      const rev = str("rev");
      if (rev) parts.push(shellQuote(rev));
      break;
    }
    case "git_add":
      parts.push("add", ...paths("paths"));
      break;
    case "git_restore":
      parts.push("restore");
      if (root.staged === true) parts.push("--staged");
      parts.push(...paths("paths"));
      break;
    case "git_commit": {
      parts.push("commit");
      const message = str("message");
      if (message !== undefined) parts.push("-m", shellQuote(message));
      parts.push(...paths("paths"));
      break;
    }
    case "git_branch": {
      const action = str("action") ?? "list";
      const name = str("name");
      if (action === "switch") parts.push("switch", ...(name ? [shellQuote(name)] : []));
      else if (action === "create") parts.push("switch", "-c", ...(name ? [shellQuote(name)] : []));
      else parts.push("branch");
      break;
    }
    default:
      return undefined;
  }
  return parts.join(" ");
}
