/**
 * The panel's first-run and history views (issue 26): the model picker of the header
 * (`toolwire/models/list`), the welcome of an empty panel (what Toolwire is, Select model,
 * Set API Key, Try the offline demo), the workspace's past conversations (open, delete), and
 * the buttons of a turn that ended for want of a key or at the end of the demo. Names and
 * titles from the server are shown in display form.
 */
import { Component } from "preact";
import { displayText } from "../display";
import type { WebviewMessage } from "../panel/messages";
import { NO_KEY_ADVICE } from "../panel/words";
import type { PanelState } from "../panel/reducer";
import type { SavedSessionWire } from "../protocol";

type Send = (message: WebviewMessage) => void;

/** Focuses the header's model picker (and asks for a fresh list). */
function focusPicker(send: Send): void {
  send({ type: "listModels" });
  (document.querySelector("select.model-picker") as HTMLSelectElement | null)?.focus();
}

/** The header's model picker: the active model and the ones to switch to. */
export function ModelPicker({ state, send }: { state: PanelState; send: Send }) {
  // the open conversation's model (the picker switches it, and the model of new ones); else the model setting
  const active = (state.sessionId !== null ? state.model : null) ?? state.models?.active ?? state.model ?? "replay";
  const choices = state.models?.models ?? [];
  const listed = choices.some((m) => m.spec === active) ? choices : [{ spec: active, name: active, source: "configured" as const }, ...choices];
  return (
    <select
      class="model-picker"
      aria-label="Model"
      title="Model of this conversation and of new ones"
      value={active}
      onFocus={() => send({ type: "listModels" })}
      onChange={(event) => {
        const spec = (event.currentTarget as HTMLSelectElement).value;
        if (spec !== active) {
          send({ type: "selectModel", spec });
        }
      }}
    >
      {listed.map((m) => (
        <option key={m.spec} value={m.spec}>
          {displayText(m.spec === "replay" ? m.name : m.name === m.spec ? m.spec : `${m.name}`)}
        </option>
      ))}
    </select>
  );
}

/** The empty panel: what Toolwire is, the first steps, and the workspace's past conversations. */
export function Welcome({ state, send }: { state: PanelState; send: Send }) {
  return (
    <section class="welcome" aria-label="Welcome">
      <p>
        <strong>Toolwire</strong> is a coding assistant for this workspace: it reads and searches your files, proposes
        edits you approve or reject one by one, runs git, and undoes whole turns.
      </p>
      <p class="empty">Choose a model and set its API key, or try the offline demo (no model, no network).</p>
      <div class="actions">
        <button type="button" onClick={() => focusPicker(send)}>
          <i class="codicon codicon-hubot" aria-hidden="true" /> Select model
        </button>
        <button type="button" class="secondary" onClick={() => send({ type: "setApiKey" })}>
          <i class="codicon codicon-key" aria-hidden="true" /> Set API Key
        </button>
        <button type="button" class="secondary" onClick={() => send({ type: "tryDemo" })}>
          <i class="codicon codicon-play" aria-hidden="true" /> Try the offline demo
        </button>
      </div>
      <HistoryList state={state} send={send} />
    </section>
  );
}

function when(seconds: number): string {
  const date = new Date(seconds * 1000);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString();
}

/** The workspace's past conversations, the most recent first: open or delete each. */
export function HistoryList({ state, send }: { state: PanelState; send: Send }) {
  if (state.history.length === 0) {
    return null;
  }
  return (
    <section class="history" aria-label="Past conversations">
      <h2>Past conversations</h2>
      <ul>
        {state.history.map((s) => {
          const title = displayText(s.title ?? "Untitled conversation");
          const current = s.sessionId === state.sessionId;
          return <HistoryRow key={s.sessionId} session={s} title={title} current={current} send={send} />;
        })}
      </ul>
    </section>
  );
}

/**
 * One past conversation: open it, or delete it. Deleting cannot be undone, so the trash button
 * asks first, in place (**Delete** / **Keep**, the focus on Keep; Escape keeps it).
 */
class HistoryRow extends Component<{ session: SavedSessionWire; title: string; current: boolean; send: Send }, { confirming: boolean }> {
  override state = { confirming: false };
  private keep: HTMLButtonElement | null = null;

  override componentDidUpdate(_: unknown, before: { confirming: boolean }): void {
    if (this.state.confirming && !before.confirming) {
      this.keep?.focus();
    }
  }

  override render() {
    const { session: s, title, current, send } = this.props;
    return (
      <li class={current ? "current" : ""}>
        <button type="button" class="link open-session" title={`Open: ${title}`} onClick={() => send({ type: "openSession", sessionId: s.sessionId })}>
          {title}
        </button>
        <span class="meta">
          {when(s.updatedAt)} · {s.turns} {s.turns === 1 ? "turn" : "turns"}
        </span>
        {this.state.confirming ? (
          <span
            class="confirm-delete"
            role="group"
            aria-label={`Delete ${title}?`}
            onKeyDown={(event) => {
              if (event.key === "Escape") {
                event.preventDefault();
                this.setState({ confirming: false });
              }
            }}
          >
            <button type="button" class="danger" aria-label={`Delete ${title} for good`} onClick={() => send({ type: "deleteSession", sessionId: s.sessionId })}>
              Delete
            </button>
            <button
              type="button"
              class="secondary"
              ref={(button) => {
                this.keep = button;
              }}
              onClick={() => this.setState({ confirming: false })}
            >
              Keep
            </button>
          </span>
        ) : (
          <button
            type="button"
            class="icon delete-session"
            aria-label={`Delete: ${title}`}
            title="Delete this conversation"
            onClick={() => this.setState({ confirming: true })}
          >
            <i class="codicon codicon-trash" aria-hidden="true" />
          </button>
        )}
      </li>
    );
  }
}

/**
 * Under a turn that ended for want of a key, or at the end of the offline demo: what to do
 * next, said once. A `no_api_key` turn's end line says "Needs an API key": the advice says how,
 * and the server's message (it names the endpoint) stays under Details. The demo's own answer
 * already says it is over: only its buttons follow.
 */
export function TurnAdvice({ errorCode, notice, detail, send }: { errorCode?: string; notice?: string; detail?: string; send: Send }) {
  const noKey = errorCode === "no_api_key";
  if (!noKey && notice !== "demo_finished") {
    return null;
  }
  return (
    <>
      <div
        class={`turn-advice ${noKey ? "no_api_key" : "demo_finished"}`}
        role={noKey ? "note" : "group"}
        aria-label={noKey ? undefined : "Choose a real model"}
      >
        {noKey ? <span>{NO_KEY_ADVICE}</span> : null}
        <button type="button" class="set-api-key" onClick={() => send({ type: "setApiKey" })}>
          <i class="codicon codicon-key" aria-hidden="true" /> Set API Key
        </button>
        <button type="button" class="secondary select-model" onClick={() => focusPicker(send)}>
          <i class="codicon codicon-hubot" aria-hidden="true" /> Select model
        </button>
      </div>
      {noKey && detail ? (
        <details class="turn-detail">
          <summary>Details</summary>
          <span class="detail-text">{displayText(detail, "\n")}</span>
        </details>
      ) : null}
    </>
  );
}

/** Past conversations while one is open: a collapsed list under the header (asked for when opened). */
export function HistoryMenu({ state, send }: { state: PanelState; send: Send }) {
  if (state.entries.length === 0) {
    return null; // the welcome lists them
  }
  return (
    <details
      class="history-menu"
      onToggle={(event) => {
        if ((event.currentTarget as HTMLDetailsElement).open) {
          send({ type: "listSessions" });
        }
      }}
    >
      <summary>Past conversations</summary>
      {state.history.length === 0 ? <p class="empty">No other conversation in this workspace yet.</p> : <HistoryList state={state} send={send} />}
    </details>
  );
}
