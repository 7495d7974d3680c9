// Per-hunk review of an edit waiting for approval (issue 26): each hunk of the subject's diff
// (subject.hunks) with Accept / Reject, a reason for a rejected one (sent to the model), and one
// button that answers with every hunk (allow once + `hunks`, protocol.md "Per-hunk answers").
// A component of its own so the card hosts it wherever its approval box puts it.
import { Component } from "preact";
import { displayText } from "../../display";
import type { HunkAnswer, SubjectHunk } from "../../protocol";
import { Diff } from "./diff";

interface Props {
  hunks: readonly SubjectHunk[];
  path: string | null | undefined;
  /** Sends the answer: every hunk once, by index. */
  onAnswer: (hunks: HunkAnswer[]) => void;
}

interface State {
  /** The details are open: the hunks are rendered only then (a long edit's rows once, in the diff above). */
  open: boolean;
  rejected: ReadonlySet<number>;
  reasons: Readonly<Record<number, string>>;
}

/** The text of the button that sends the answer. */
export function applyText(accepted: number, total: number): string {
  return accepted === 0 ? "Reject all hunks" : accepted === total ? `Apply all ${total} hunks` : `Apply ${accepted} of ${total} hunks`;
}

export class HunkReview extends Component<Props, State> {
  override state: State = { open: false, rejected: new Set(), reasons: {} };

  private set(index: number, accepted: boolean): void {
    const rejected = new Set(this.state.rejected);
    if (accepted) {
      rejected.delete(index);
    } else {
      rejected.add(index);
    }
    this.setState({ rejected });
  }

  private answer(): void {
    const { rejected, reasons } = this.state;
    this.props.onAnswer(this.props.hunks.map((hunk) => {
      const reason = (reasons[hunk.index] ?? "").trim();
      return !rejected.has(hunk.index) ? { index: hunk.index, accepted: true }
        : reason !== "" ? { index: hunk.index, accepted: false, reason } : { index: hunk.index, accepted: false };
    }));
  }

  render() {
    const { hunks, path } = this.props;
    const { open, rejected, reasons } = this.state;
    const accepted = hunks.filter((h) => !rejected.has(h.index)).length;
    return (
      <details class="hunk-review" open={open} onToggle={(event) => this.setState({ open: (event.currentTarget as HTMLDetailsElement).open })}>
        <summary>Review each hunk ({hunks.length})</summary>
        {open ? (<>
        <ol class="hunks">
          {hunks.map((hunk) => {
            const no = rejected.has(hunk.index);
            const name = `hunk ${hunk.index + 1} of ${hunks.length}`;
            return (
              <li key={hunk.index} class={`hunk ${no ? "rejected" : "accepted"}`} data-index={hunk.index}>
                <div class="hunk-head">
                  <span class="hunk-name">Hunk {hunk.index + 1}</span>
                  <button type="button" class={no ? "secondary" : "primary"} aria-pressed={!no} aria-label={`Accept ${name}`}
                    onClick={() => this.set(hunk.index, true)}>
                    <i class="codicon codicon-check" aria-hidden="true" /> Accept
                  </button>
                  <button type="button" class={no ? "primary" : "secondary"} aria-pressed={no} aria-label={`Reject ${name}`}
                    onClick={() => this.set(hunk.index, false)}>
                    <i class="codicon codicon-close" aria-hidden="true" /> Reject
                  </button>
                </div>
                <Diff text={`${hunk.header}\n${hunk.diff}`} path={path} collapse label={displayText(`Hunk ${hunk.index + 1}`)} />
                {no ? (
                  <input type="text" class="hunk-reason" aria-label={`Reason for rejecting ${name} (optional, sent to the model)`}
                    placeholder="Reason (optional, sent to the model)" value={reasons[hunk.index] ?? ""}
                    onInput={(event) => this.setState({ reasons: { ...this.state.reasons, [hunk.index]: (event.currentTarget as HTMLInputElement).value } })} />
                ) : null}
              </li>
            );
          })}
        </ol>
        <button type="button" class={accepted === 0 ? "danger apply-hunks" : "primary apply-hunks"} onClick={() => this.answer()}>
          {applyText(accepted, hunks.length)}
        </button>
        </>) : null}
      </details>
    );
  }
}
