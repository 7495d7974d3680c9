/**
 * The prompt box: Enter sends, Shift+Enter starts a new line; `@` opens the context picker
 * (the selection, the current file's problems, open editors, then the workspace's files from
 * `toolwire/workspace/findFiles`), each choice a chip above the box; **Attach Selection** adds
 * one too. The chips go with the prompt (the host sends them as embedded resources).
 */
import { Component } from "preact";
import { displayText } from "../display";
import type { ContextChip, WebviewMessage } from "../panel/messages";
import type { PanelState } from "../panel/reducer";

type Send = (message: WebviewMessage) => void;

interface Props {
  running: boolean;
  send: Send;
  mentions: PanelState["mentions"];
  attached: PanelState["attached"];
}

interface State {
  text: string;
  chips: ContextChip[];
  /** The `@` word being typed (without the `@`), null when the picker is closed. */
  query: string | null;
  /** The highlighted choice. */
  active: number;
}

/** The `@word` right before the caret, if any (`@` at the start or after a space). */
export function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const match = /(^|\s)@([^\s@]*)$/.exec(text.slice(0, caret));
  return match === null ? null : { start: caret - match[2].length - 1, query: match[2] };
}

const SAME = (a: ContextChip, b: ContextChip) =>
  a.kind === b.kind && a.path === b.path && JSON.stringify(a.range ?? null) === JSON.stringify(b.range ?? null);

const GROUPS: Record<NonNullable<ContextChip["source"]>, string> = {
  selection: "Selection",
  problems: "Problems",
  open: "Open editor",
  workspace: "File",
};

const ICONS: Record<ContextChip["kind"], string> = { file: "file", selection: "selection", problems: "warning" };

export class Composer extends Component<Props, State> {
  override state: State = { text: "", chips: [], query: null, active: 0 };
  private seenAttach = 0;
  private box: HTMLTextAreaElement | null = null;

  override componentDidMount(): void {
    this.takeAttached();
  }

  override componentDidUpdate(): void {
    this.takeAttached();
  }

  /** A chip **Attach Selection** sent, added once. */
  private takeAttached(): void {
    const attached = this.props.attached;
    if (attached !== undefined && attached.seq > this.seenAttach) {
      this.seenAttach = attached.seq;
      this.addChip(attached.chip);
      this.box?.focus();
    }
  }

  private addChip(chip: ContextChip): void {
    if (!this.state.chips.some((c) => SAME(c, chip))) {
      this.setState({ chips: [...this.state.chips, chip] });
    }
  }

  private items(): readonly ContextChip[] {
    const mentions = this.props.mentions;
    return this.state.query !== null && mentions !== undefined && mentions.query === this.state.query ? mentions.items : [];
  }

  private submit = (): void => {
    const { text, chips } = this.state;
    if ((text.trim() === "" && chips.length === 0) || this.props.running) {
      return;
    }
    this.props.send(chips.length > 0 ? { type: "prompt", text, chips } : { type: "prompt", text });
    this.setState({ text: "", chips: [], query: null });
  };

  private onInput = (box: HTMLTextAreaElement): void => {
    const text = box.value;
    const mention = mentionAt(text, box.selectionStart ?? text.length);
    const query = mention?.query ?? null;
    if (query !== null && query !== this.state.query) {
      this.props.send({ type: "mention", query });
    }
    this.setState({ text, query, active: query === this.state.query ? this.state.active : 0 });
  };

  /** Takes a choice: the `@word` leaves the text, the chip joins the prompt. */
  private pick(chip: ContextChip): void {
    const box = this.box;
    const text = this.state.text;
    const caret = box?.selectionStart ?? text.length;
    const mention = mentionAt(text, caret);
    const next = mention === null ? text : text.slice(0, mention.start) + text.slice(caret);
    this.setState({ text: next, query: null, active: 0 });
    if (chip.excluded !== undefined) {
      this.props.send({ type: "attachExcluded", chip }); // the host asks the user; Send comes back as `attach`
    } else {
      this.addChip(chip);
    }
    box?.focus();
  }

  private onKeyDown = (event: KeyboardEvent): void => {
    const items = this.items();
    if (this.state.query !== null && items.length > 0) {
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : items.length - 1;
        this.setState({ active: (this.state.active + step) % items.length });
        return;
      }
      if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        this.pick(items[Math.min(this.state.active, items.length - 1)]);
        return;
      }
    }
    if (event.key === "Escape" && this.state.query !== null) {
      event.preventDefault();
      this.setState({ query: null });
      return;
    }
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      this.submit();
    }
  };

  override render() {
    const { running, send } = this.props;
    const items = this.items();
    const open = this.state.query !== null && items.length > 0;
    return (
      <form
        class="composer"
        onSubmit={(event) => {
          event.preventDefault();
          this.submit();
        }}
      >
        <div class="composer-main">
          {this.state.chips.length > 0 ? (
            <ul class="chips" aria-label="Attached context">
              {this.state.chips.map((chip, index) => (
                <li class={`chip ${chip.kind}${chip.excluded !== undefined ? " kept" : ""}`} key={`${chip.kind}:${chip.label}`}
                  title={chip.excluded !== undefined ? `Kept from the model (${displayText(chip.excluded)}): sent with this prompt, as you allowed` : undefined}>
                  <i class={`codicon codicon-${ICONS[chip.kind]}`} aria-hidden="true" />
                  <span class="chip-label">{displayText(chip.label)}</span>
                  <button
                    type="button"
                    class="icon"
                    aria-label={`Remove ${displayText(chip.label)}`}
                    title="Remove"
                    onClick={() => this.setState({ chips: this.state.chips.filter((_, i) => i !== index) })}
                  >
                    <i class="codicon codicon-close" aria-hidden="true" />
                  </button>
                </li>
              ))}
            </ul>
          ) : null}
          {open ? (
            <ul class="mentions" id="mentions" role="listbox" aria-label="Add context">
              {items.map((chip, index) => (
                <li
                  id={`mention-${index}`}
                  role="option"
                  aria-selected={index === this.state.active}
                  class={index === this.state.active ? "mention active" : "mention"}
                  key={`${chip.source ?? ""}:${chip.kind}:${chip.label}`}
                  onMouseDown={(event) => {
                    event.preventDefault(); // keeps the caret in the box
                    this.pick(chip);
                  }}
                >
                  <i class={`codicon codicon-${ICONS[chip.kind]}`} aria-hidden="true" />
                  <span class="chip-label">{displayText(chip.label)}</span>
                  {chip.excluded !== undefined ? (
                    <span class="mention-kept">
                      <i class="codicon codicon-lock" aria-hidden="true" /> kept from the model ({displayText(chip.excluded)})
                    </span>
                  ) : null}
                  <span class="mention-group">{GROUPS[chip.source ?? "workspace"]}</span>
                </li>
              ))}
            </ul>
          ) : null}
          <textarea
            ref={(box) => {
              this.box = box;
            }}
            aria-label="Prompt"
            aria-autocomplete="list"
            aria-controls={open ? "mentions" : undefined}
            aria-activedescendant={open ? `mention-${Math.min(this.state.active, items.length - 1)}` : undefined}
            aria-expanded={open}
            placeholder="Ask Toolwire… (@ adds context, Enter to send, Shift+Enter for a new line)"
            rows={3}
            value={this.state.text}
            onInput={(event) => this.onInput(event.currentTarget as HTMLTextAreaElement)}
            onKeyDown={this.onKeyDown}
          />
        </div>
        {running ? (
          <button type="button" class="stop" onClick={() => send({ type: "stop" })}>
            <i class="codicon codicon-debug-stop" aria-hidden="true" /> Stop
          </button>
        ) : (
          <button type="submit" class="send">
            <i class="codicon codicon-send" aria-hidden="true" /> Send
          </button>
        )}
      </form>
    );
  }
}

/** The chips of a user's message in the transcript. */
export function ChipList({ chips }: { chips: readonly ContextChip[] }) {
  return (
    <ul class="chips sent" aria-label="Attached context">
      {chips.map((chip) => (
        <li class={`chip ${chip.kind}`} key={`${chip.kind}:${chip.label}`}>
          <i class={`codicon codicon-${ICONS[chip.kind]}`} aria-hidden="true" />
          <span class="chip-label">{displayText(chip.label)}</span>
        </li>
      ))}
    </ul>
  );
}
