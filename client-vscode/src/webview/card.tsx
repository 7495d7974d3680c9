/**
 * One tool call's card: name, target path (opens the file), status badge with
 * cancel reason or error, the argument text live while `generating` (only its last
 * lines unless expanded), the result, and the inline approval when one is waiting.
 *
 * Everything the model wrote is shown in display form (src/display.ts): the path as
 * git quotes it (`"invoice\342\200\256fdp.exe"`, as the approval's subject and the CLI
 * show it), the tool name, argument text, result and messages with control,
 * bidirectional and invisible characters as escapes (`\u202e`).
 */
import { Component } from "preact";
import { displayPath, displayText } from "../display";
import type { PendingPermission, WebviewMessage } from "../panel/messages";
import { allowAlwaysText, optionOf, type CallView } from "../panel/reducer";
import { excludedNotice, hintsText, mcpOrigin, undoNotice } from "../permission";
import { imagesOf } from "../panel/images";
import { problemsOf } from "../panel/problems";
import { cancelWords, statusWords, undoneWords } from "../panel/words";
import { ResultImages } from "./mcp";
import { Problems } from "./problems";
import { StreamedArgs, type ArgsSoFar, type JsonObject } from "./cards/args";
import { Diff, Stat } from "./cards/diff";
import { HunkReview } from "./cards/hunk-review";
import { gitCommand, GitFiles, hasView, ToolView, type ServerChange } from "./cards/views";

type Send = (message: WebviewMessage) => void;

/** Lines of argument text shown while collapsed. */
const TAIL_LINES = 6;
/** Characters of argument text shown while collapsed. */
const TAIL_CHARS = 1200;

const STATUS_ICONS: Record<string, string> = {
  generating: "loading codicon-modifier-spin",
  generated: "clock",
  calling: "sync codicon-modifier-spin",
  done: "pass",
  errored: "error",
  canceled: "circle-slash",
  history: "history",
};


interface Props {
  call: CallView;
  pending: PendingPermission | undefined;
  send: Send;
}

interface State {
  expanded: boolean;
  /** The raw arguments' <details> is open (tools with a view of their own). */
  rawOpen: boolean;
  /** The result's <details> is open: only then is the whole result put in the page. */
  resultOpen: boolean;
  reason: string;
  rejecting: boolean;
}

/** The card; re-renders only when its call or its permission request changed. */
export class CallCard extends Component<Props, State> {
  override state: State = { expanded: false, rawOpen: false, resultOpen: false, reason: "", rejecting: false };
  /** The streamed argument text, parsed as it grows. */
  private reader = new StreamedArgs();
  /** What the server's approval said of the change, kept once the approval is answered. */
  private asked: ServerChange = {};

  override shouldComponentUpdate(next: Props, nextState: State): boolean {
    return next.call !== this.props.call || next.pending !== this.props.pending || nextState !== this.state;
  }

  override render() {
    const { call, pending, send } = this.props;
    const status = call.status ?? "history";
    const provider = call.kind !== "function";
    const detail = reasonOf(call);
    const name = displayText(call.name);
    const path = call.path ? displayPath(call.path) : "";
    const undone = call.undo ? `, ${displayText(undoneWords(call.undo))}` : "";
    const label = `Tool call ${name || "(unnamed)"}${path ? ` on ${path}` : ""}: ${statusWords(status)}${detail ? `, ${detail}` : ""}${undone}`;
    const cancellable = !provider && (status === "generated" || status === "calling") && call.toolCallId !== "";
    return (
      <article class={`card status-${status}${pending ? " asking" : ""}`} role="group" aria-label={label} data-call={call.key}>
        <div class="card-head">
          <i class={`codicon codicon-${STATUS_ICONS[status]}`} aria-hidden="true" />
          <span class="tool-name">{name || "…"}</span>
          {call.path ? (
            <button type="button" class="link path" title={`Open ${path}`} onClick={() => send({ type: "openFile", path: call.path as string })}>
              {path}
            </button>
          ) : null}
          {provider ? <span class="provider" title="Run by the model provider, not in this workspace">provider · {displayText(call.kind)}</span> : null}
          <span class={`badge ${status}`}>{statusWords(status)}</span>
          {cancellable ? (
            <button type="button" class="icon" aria-label={`Cancel ${name}`} title="Cancel this call" onClick={() => send({ type: "cancelCall", toolCallId: call.toolCallId })}>
              <i class="codicon codicon-close" aria-hidden="true" />
            </button>
          ) : null}
        </div>
        {detail ? <div class={`reason ${status}`}>{detail}</div> : null}
        {call.undo ? <div class={`undone ${call.undo.outcome}`}><i class="codicon codicon-discard" aria-hidden="true" /> {displayText(undoneWords(call.undo))}</div> : null}
        {this.args()}
        {this.images()}
        {this.result()}
        {this.problems()}
        {pending && !provider ? this.approval(pending) : null}
      </article>
    );
  }

  /** The arguments as far as written: whole once known, else parsed from the streamed text. */
  private argsSoFar(): ArgsSoFar {
    const { call } = this.props;
    if (call.arguments !== null) {
      return { root: call.arguments as JsonObject, partial: undefined, complete: true };
    }
    return this.reader.read(call.argumentsText);
  }

  /** What the server said of the change: the approval's subject, then the result's data. */
  private change(): ServerChange {
    const { call, pending } = this.props;
    if (pending !== undefined) {
      const subject = pending.params.subject as { kind: string; diff?: unknown; diffstat?: unknown; command?: unknown; files?: unknown };
      if (subject.kind === "edit" && typeof subject.diff === "string") {
        this.asked = { diff: subject.diff, diffstat: statOf(subject.diffstat) };
      } else if (subject.kind === "git") {
        this.asked = { command: typeof subject.command === "string" ? subject.command : undefined, files: filesOf(subject.files), diffstat: statOf(subject.diffstat) };
      }
    }
    const data = call.result && "data" in call.result ? (call.result.data as { diff?: unknown; diffstat?: unknown } | null) : null;
    if (data && typeof data === "object" && typeof data.diff === "string") {
      return { ...this.asked, diff: data.diff, diffstat: statOf(data.diffstat) ?? this.asked.diffstat };
    }
    return this.asked;
  }

  private args() {
    const { call, pending } = this.props;
    const text = call.argumentsText;
    if (text === "") {
      return null;
    }
    if (hasView(call.name)) {
      // The approval shows the change itself (diff, command and files): the body does not repeat it.
      const approving = pending !== undefined && (pending.params.subject.kind === "edit" || pending.params.subject.kind === "git");
      const open = this.state.rawOpen;
      return (
        <div class="args">
          <ToolView call={call} args={this.argsSoFar()} change={this.change()} approving={approving} />
          <details class="raw-args" onToggle={(event) => this.setState({ rawOpen: (event.currentTarget as HTMLDetailsElement).open })}>
            <summary>Arguments</summary>
            {open ? (
              <pre aria-label="Arguments">{displayText(text, "\n\t")}</pre>
            ) : null}
          </details>
        </div>
      );
    }
    const expanded = this.state.expanded;
    let shown = text;
    let clipped = false;
    if (!expanded) {
      shown = tail(text);
      clipped = shown.length < text.length;
    }
    return (
      <div class="args">
        <pre class={call.status === "generating" ? "live" : ""} aria-label="Arguments">
          {clipped ? "…" : ""}
          {displayText(shown, "\n\t")}
        </pre>
        {clipped || expanded ? (
          <button type="button" class="link" aria-expanded={expanded} onClick={() => this.setState({ expanded: !expanded })}>
            {expanded ? "Show less" : `Show all arguments (${call.argumentsLength} characters)`}
          </button>
        ) : null}
      </div>
    );
  }

  private result() {
    const { call } = this.props;
    const content = call.result && "content" in call.result ? call.result.content : call.historyResult;
    if (content === undefined || content === "") {
      return null;
    }
    const first = displayText(content.split("\n", 1)[0]);
    // A long turn has hundreds of results: each is rendered only once its card is expanded.
    return (
      <details class="result" onToggle={(event) => this.setState({ resultOpen: (event.currentTarget as HTMLDetailsElement).open })}>
        <summary>{first.length > 160 ? `${first.slice(0, 160)}…` : first}</summary>
        {this.state.resultOpen ? <pre>{displayText(content, "\n\t")}</pre> : null}
      </details>
    );
  }

  /** The images the tool returned (an MCP tool's): always shown, whatever the model got of them. */
  private images() {
    const { call } = this.props;
    const images = imagesOf(call.result);
    return images.length > 0 ? <ResultImages images={images} tool={call.name} /> : null;
  }

  /** The problems an edit introduced (`data.diagnostics`), under its result. */
  private problems() {
    const problems = problemsOf(this.props.call.result);
    return problems === undefined ? null : <Problems problems={problems} send={this.props.send} />;
  }

  private approval(pending: PendingPermission) {
    const { send } = this.props;
    const { params, requestId } = pending;
    const subject = params.subject;
    const once = optionOf(params.options, "allow_once");
    const kept = excludedNotice(subject);
    // A file kept from the model is allowed per call only: no "always" for it.
    const always = kept !== undefined ? undefined : optionOf(params.options, "allow_always");
    const reject = optionOf(params.options, "reject_once");
    const answer = (optionId: string, reason?: string) => send({ type: "answer", requestId, optionId, reason });
    const tool = displayText(subject.tool);
    const covers = displayText(allowAlwaysText(params));
    const change = this.change();
    // Paths and argv come in display form from the server; displayText leaves them as
    // they are and escapes only what should not be there.
    return (
      <div class="approval" role="region" aria-label={`Approval for ${tool}`}>
        {kept !== undefined ? (
          <div class="excluded" role="alert">
            <i class="codicon codicon-lock" aria-hidden="true" /> {displayText(kept)}
          </div>
        ) : null}
        {"irreversible" in subject && subject.irreversible ? (
          <div class="irreversible" role="alert">
            <i class="codicon codicon-warning" aria-hidden="true" /> {displayText(`This change cannot be undone: ${subject.irreversible.reason}`)}
          </div>
        ) : null}
        {undoNotice(subject) !== undefined ? (
          <div class="cannot-undo" role="alert">
            <i class="codicon codicon-warning" aria-hidden="true" /> {displayText(undoNotice(subject) ?? "")}
          </div>
        ) : null}
        {subject.kind === "edit" ? <Diff text={subject.diff} path={subject.path} collapse label="Proposed change" /> : null}
        {subject.kind === "edit" && once && subject.hunks && subject.hunks.length > 1 ? (
          <HunkReview hunks={subject.hunks} path={subject.path} onAnswer={(hunks) => send({ type: "answer", requestId, optionId: once.optionId, hunks })} />
        ) : null}
        <div class="ask">
          <i class="codicon codicon-shield" aria-hidden="true" /> Toolwire wants to run <b>{tool}</b>
          {subject.kind === "edit" ? displayText(` on ${subject.path}${subject.new_path ? ` → ${subject.new_path}` : ""}`) : ""}
          {subject.kind === "mcp" ? displayText(` (${mcpOrigin(subject)})`) : ""}
          :
          {subject.kind === "edit" && change.diffstat ? (
            <>
              {" "}
              <Stat added={change.diffstat.added} removed={change.diffstat.removed} />
            </>
          ) : null}
        </div>
        {subject.kind === "mcp" && hintsText(subject.hints) !== undefined ? <div class="hints">{displayText(hintsText(subject.hints) ?? "")}</div> : null}
        {subject.kind === "git" ? (
          <div class="git-view">
            <pre class="argv command" aria-label="Command">
              {displayText(change.command ?? gitCommand(subject.tool, this.argsSoFar()) ?? subject.argv.map(quote).join(" "))}
              {"\n"}in {displayText(subject.cwd)}
            </pre>
            <GitFiles change={change} />
          </div>
        ) : null}
        {subject.kind === "tool" || subject.kind === "mcp" ? <pre aria-label="Arguments">{displayText(JSON.stringify(subject.arguments ?? {}, null, 2), "\n")}</pre> : null}
        <div class="buttons">
          {once ? (
            <button type="button" class="primary" onClick={() => answer(once.optionId)}>
              <i class="codicon codicon-check" aria-hidden="true" /> Allow once
            </button>
          ) : null}
          {always ? (
            <button type="button" class="secondary" title={covers} aria-label={covers} onClick={() => answer(always.optionId)}>
              <i class="codicon codicon-check-all" aria-hidden="true" /> Allow always
            </button>
          ) : null}
          {reject ? (
            <button type="button" class="secondary" aria-expanded={this.state.rejecting} onClick={() => this.setState({ rejecting: !this.state.rejecting })}>
              <i class="codicon codicon-close" aria-hidden="true" /> Reject…
            </button>
          ) : null}
          {subject.kind === "edit" ? (
            <button type="button" class="secondary" onClick={() => send({ type: "review", toolCallId: params.toolCall.toolCallId })}>
              <i class="codicon codicon-diff" aria-hidden="true" /> Review in diff editor
            </button>
          ) : null}
        </div>
        {always ? <div class="covers">{covers}</div> : null}
        {this.state.rejecting && reject ? (
          <form
            class="reject"
            onSubmit={(event) => {
              event.preventDefault();
              answer(reject.optionId, this.state.reason);
            }}
          >
            <input
              type="text"
              aria-label="Reason for rejecting (optional, sent to the model)"
              placeholder="Reason (optional, sent to the model)"
              value={this.state.reason}
              onInput={(event) => this.setState({ reason: (event.currentTarget as HTMLInputElement).value })}
            />
            <button type="submit" class="danger">
              Reject
            </button>
          </form>
        ) : null}
      </div>
    );
  }
}

/** A diffstat from the wire, if it is one. */
function statOf(value: unknown): ServerChange["diffstat"] {
  const stat = value as { added?: unknown; removed?: unknown; files?: unknown } | null | undefined;
  return stat && typeof stat.added === "number" && typeof stat.removed === "number"
    ? { added: stat.added, removed: stat.removed, files: typeof stat.files === "number" ? stat.files : undefined }
    : undefined;
}

/** A git subject's files from the wire. */
function filesOf(value: unknown): ServerChange["files"] {
  if (!Array.isArray(value)) {
    return undefined;
  }
  return value
    .filter((file): file is { path: string; added?: unknown; removed?: unknown } => typeof file?.path === "string")
    .map((file) => ({ path: file.path, added: typeof file.added === "number" ? file.added : undefined, removed: typeof file.removed === "number" ? file.removed : undefined }));
}

function reasonOf(call: CallView): string {
  return displayText(reasonWords(call));
}

function reasonWords(call: CallView): string {
  if (call.status === "errored" && call.error) {
    return `${call.error.code}: ${call.error.message}`;
  }
  if (call.status === "canceled") {
    const why = cancelWords(call.cancelReason);
    const reason = call.result && "reason" in call.result ? ` — “${call.result.reason}”` : "";
    return `${why}${reason}`;
  }
  if (call.status === "done" && call.result && "ok" in call.result && !call.result.ok) {
    return `failed${call.result.errorCode ? `: ${call.result.errorCode}` : ""}`;
  }
  return "";
}

function tail(text: string): string {
  let start = Math.max(0, text.length - TAIL_CHARS);
  let lines = 0;
  for (let i = text.length - 1; i >= start; i--) {
    if (text.charCodeAt(i) === 10 && ++lines === TAIL_LINES) {
      start = i + 1;
      break;
    }
  }
  return text.slice(start);
}

function quote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
