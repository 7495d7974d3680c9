/**
 * The panel's view: a function of the store's state. Every button is a real
 * <button> (keyboard-usable), cards are ARIA groups with a label, and status
 * changes are announced through a polite live region. Text from the conversation
 * and the server is shown in display form (src/display.ts): control, bidirectional
 * and invisible characters as escapes, so it reads as what it is.
 */
import type { ComponentChildren } from "preact";
import { displayText } from "../display";
import { CONTINUE_LABEL, type UndoOutcome, type UndoRequest, type WebviewMessage } from "../panel/messages";
import { canContinue, type CallView, type Entry, type PanelState } from "../panel/reducer";
import { endWords, outcomeWords, turnWords } from "../panel/words";
import { CallCard } from "./card";
import { ChipList, Composer } from "./composer";
import { HistoryMenu, ModelPicker, TurnAdvice, Welcome } from "./history";
import { Markdown } from "./markdown-view";
import { McpServersBar } from "./mcp";
import { PlanList } from "./plan";
import { RulesBar } from "./rules";

type Send = (message: WebviewMessage) => void;

/** The whole panel. */
export function App({ state, send }: { state: PanelState; send: Send }) {
  return (
    <div class="panel">
      <header class="toolbar" role="toolbar" aria-label="Conversation">
        <span class="model">
          <i class="codicon codicon-hubot" aria-hidden="true" /> <ModelPicker state={state} send={send} />
        </span>
        <span class={`turn-state${state.permissions.size > 0 ? " waiting" : ""}`} aria-hidden="true">
          {turnWords({ running: state.running, turnState: state.turnState, waiting: state.permissions.size })}
        </span>
        {state.entries.length > 0 ? (
          <IconButton icon="export" label="Export as Markdown" onClick={() => send({ type: "exportConversation" })} />
        ) : null}
        <IconButton icon="add" label="New Conversation" onClick={() => send({ type: "newConversation" })} />
      </header>
      <HistoryMenu state={state} send={send} />
      <RulesBar files={state.instructions} send={send} />
      <McpServersBar servers={state.mcpServers} />
      <main class="transcript" aria-label="Conversation transcript">
        {state.entries.length === 0 ? <Welcome state={state} send={send} /> : null}
        {state.entries.map((entry) => (
          <EntryView key={entry.id} entry={entry} state={state} send={send} />
        ))}
      </main>
      <div class="sr-only" role="status" aria-live="polite">
        {displayText(state.announcement)}
      </div>
      <Composer running={state.running} send={send} mentions={state.mentions} attached={state.attached} />
    </div>
  );
}

function EntryView({ entry, state, send }: { entry: Entry; state: PanelState; send: Send }) {
  switch (entry.kind) {
    case "user":
      return (
        <section class="message user" aria-label="You">
          <div class="who">You</div>
          <div class="plain">{displayText(entry.text, "\n\t")}</div>
          {entry.chips !== undefined && entry.chips.length > 0 ? <ChipList chips={entry.chips} /> : null}
        </section>
      );
    case "assistant":
      return (
        <section class="message assistant" aria-label="Toolwire">
          <Markdown text={entry.text} send={send} />
        </section>
      );
    case "thought":
      return (
        <details class="thought">
          <summary>Reasoning</summary>
          <div class="plain">{displayText(entry.text, "\n\t")}</div>
        </details>
      );
    case "call": {
      const call = state.calls.get(entry.id) as CallView;
      return <CallCard call={call} pending={state.permissions.get(entry.id)} send={send} />;
    }
    case "plan":
      return <PlanList steps={entry.steps} />;
    case "notice":
      return (
        <p class="notice">
          <i class="codicon codicon-info" aria-hidden="true" /> {displayText(entry.text, "\n")}
        </p>
      );
    case "turnEnd":
      return (
        <TurnEnd
          entry={entry}
          undoable={entry.turnId !== null && state.undoable.has(entry.turnId) && !state.running}
          continuable={canContinue(state, entry)}
          send={send}
        />
      );
  }
}

function TurnEnd({ entry, undoable, continuable, send }: {
  entry: Extract<Entry, { kind: "turnEnd" }>;
  undoable: boolean;
  continuable: boolean;
  send: Send;
}) {
  const undo = (request: UndoRequest) => send({ type: "undoTurn", turnId: entry.turnId, request });
  // A turn that only wants an API key is no failure (a first run): a neutral key, the panel's advice, the server's words in Details.
  const noKey = entry.errorCode === "no_api_key";
  const failed = !noKey && (entry.stopReason === "error" || entry.stopReason === "repeated_tool_failure");
  const usage = entry.usage;
  const parts: string[] = [];
  if (usage?.inputTokens != null || usage?.outputTokens != null) {
    parts.push(`${usage.inputTokens ?? "?"} in / ${usage.outputTokens ?? "?"} out tokens`);
  }
  if (usage?.durationMs != null) {
    parts.push(`${(usage.durationMs / 1000).toFixed(1)} s`);
  }
  return (
    <section class={`turn-end ${failed ? "failed" : noKey ? "needs-key" : ""}`} aria-label="End of turn">
      <div class="line">
        <i class={`codicon ${noKey ? "codicon-key" : failed ? "codicon-error" : entry.stopReason === "cancelled" ? "codicon-debug-stop" : "codicon-pass"}`} aria-hidden="true" />
        <span class="stop-reason" data-stop-reason={entry.stopReason}>{endWords(entry.stopReason, entry.errorCode)}</span>
        {entry.message && !noKey ? <span class="stop-message">{displayText(entry.message, "\n")}</span> : null}
        {parts.length > 0 ? <span class="usage">{parts.join(" · ")}</span> : null}
        {continuable ? (
          <button
            class="continue"
            title="Go on with the same history: the turn ran out of model requests (toolwire.maxModelRequests)"
            onClick={() => send({ type: "continue" })}
          >
            <i class="codicon codicon-debug-continue" aria-hidden="true" /> {CONTINUE_LABEL}
          </button>
        ) : null}
        {undoable && entry.undo === undefined ? (
          <>
            <button class="secondary" onClick={() => undo({})}>
              <i class="codicon codicon-discard" aria-hidden="true" /> Undo this turn
            </button>
            <button
              class="secondary"
              title="Undo the turn's changes and remove the turn from the conversation the model sees"
              onClick={() => undo({ rewind: true })}
            >
              <i class="codicon codicon-trash" aria-hidden="true" /> Undo and forget
            </button>
          </>
        ) : null}
      </div>
      <TurnAdvice errorCode={entry.errorCode} notice={entry.notice} detail={noKey ? entry.message : undefined} send={send} />
      {entry.undo ? <UndoView outcome={entry.undo} request={entry.undoRequest ?? {}} active={undoable} undo={undo} /> : null}
    </section>
  );
}

/**
 * The outcome of an undo under its turn: the message and what happened to each path and
 * git action. A `blocked` undo changed nothing: its blockers are listed (a kept path with
 * the diff the undo would make and **Overwrite**, which asks again with the path in
 * `force`), and **Undo the rest** asks again with `partial`.
 */
function UndoView({ outcome, request, active, undo }: {
  outcome: UndoOutcome;
  request: UndoRequest;
  active: boolean;
  undo: (request: UndoRequest) => void;
}) {
  const blocked = outcome.status === "blocked" && active;
  return (
    <div class={`undo ${outcome.status}`} role="status">
      <div>{displayText(outcome.message, "\n")}</div>
      <ul>
        {outcome.paths.map((p) => (
          <li key={p.path}>
            <span class={`outcome ${p.outcome}`}>{outcomeWords(p.outcome)}</span> {displayText(p.path)}
            {p.reason ? ` — ${displayText(p.reason)}` : ""}
            {blocked && p.outcome === "kept" ? (
              <button
                class="secondary"
                aria-label={`Overwrite ${displayText(p.path)}`}
                title="Restore this path anyway, discarding what changed since the turn"
                onClick={() => undo({ ...request, force: [...(request.force ?? []), p.path] })}
              >
                Overwrite
              </button>
            ) : null}
            {p.diff ? (
              <details class="undo-diff">
                <summary>What the undo would change</summary>
                <pre class="diff">{displayText(p.diff, "\n\t")}</pre>
              </details>
            ) : null}
          </li>
        ))}
        {(outcome.git ?? []).map((g, i) => (
          <li key={`git${i}`}>
            <span class={`outcome ${g.outcome}`}>{outcomeWords(g.outcome)}</span> {displayText(g.action)}
            {g.reason ? ` — ${displayText(g.reason)}` : ""}
          </li>
        ))}
        {(outcome.notUndone ?? []).map((c) => (
          <li key={`mcp${c.callId}`}>
            <span class="outcome not_undoable">Not undone</span> {displayText(c.tool)} ({displayText(c.callId)}) — outside the checkpoints (an MCP tool)
          </li>
        ))}
      </ul>
      {blocked ? (
        <button class="secondary" title="Restore everything else and leave these as they are" onClick={() => undo({ ...request, partial: true })}>
          Undo the rest
        </button>
      ) : null}
    </div>
  );
}

/** A button with a codicon and an accessible name. */
export function IconButton({ icon, label, onClick, children }: { icon: string; label: string; onClick: () => void; children?: ComponentChildren }) {
  return (
    <button type="button" class="icon" aria-label={label} title={label} onClick={onClick}>
      <i class={`codicon codicon-${icon}`} aria-hidden="true" />
      {children}
    </button>
  );
}
