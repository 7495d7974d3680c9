/**
 * The keyboard around approvals. A new approval takes the focus (its first button, **Allow
 * once**), unless the user is typing: a text field with text in it keeps the focus (Space or
 * Enter typed there must never answer an approval). In the panel, Alt+A allows once and Alt+R
 * rejects the approval the focus is in, else the first one shown; VS Code's own keybindings
 * (toolwire.allowOnce / toolwire.reject, package.json) work from anywhere.
 */
import type { WebviewMessage } from "../panel/messages";
import { optionOf, type PanelState } from "../panel/reducer";

/** The approval region of the card of call `key`. */
function approvalOf(key: string): HTMLElement | null {
  return document.querySelector<HTMLElement>(`article.card[data-call="${CSS.escape(key)}"] .approval`);
}

/** True while the user is typing: the focus is in a text field that has text. */
function typing(): boolean {
  const active = document.activeElement;
  return (active instanceof HTMLTextAreaElement || active instanceof HTMLInputElement) && active.value !== "";
}

/** Tracks the approvals shown; call {@link focusNew} after each render. */
export class ApprovalKeys {
  private readonly seen = new Set<string>();

  constructor(
    private readonly state: () => PanelState,
    private readonly send: (message: WebviewMessage) => void,
  ) {
    document.addEventListener("keydown", (event) => this.onKey(event));
  }

  /** Moves the focus to an approval that was not shown at the last render. */
  focusNew(): void {
    const permissions = this.state().permissions;
    let fresh: string | undefined;
    for (const [key, pending] of permissions) {
      if (!this.seen.has(pending.requestId)) {
        this.seen.add(pending.requestId);
        fresh ??= key;
      }
    }
    const live = new Set([...permissions.values()].map((p) => p.requestId));
    for (const id of this.seen) {
      if (!live.has(id)) {
        this.seen.delete(id);
      }
    }
    if (fresh === undefined || typing()) {
      return;
    }
    approvalOf(fresh)?.querySelector<HTMLButtonElement>("button")?.focus();
  }

  private onKey(event: KeyboardEvent): void {
    if (!event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || (event.code !== "KeyA" && event.code !== "KeyR")) {
      return;
    }
    const permissions = this.state().permissions;
    const focused = document.activeElement?.closest("article.card")?.getAttribute("data-call");
    let pending = focused ? permissions.get(focused) : undefined;
    if (pending === undefined) {
      // The first approval shown in the transcript.
      const first = document.querySelector(".approval")?.closest("article.card")?.getAttribute("data-call");
      pending = first ? permissions.get(first) : undefined;
    }
    if (pending === undefined) {
      return;
    }
    const option = optionOf(pending.params.options, event.code === "KeyA" ? "allow_once" : "reject_once");
    if (option !== undefined) {
      event.preventDefault();
      this.send({ type: "answer", requestId: pending.requestId, optionId: option.optionId });
    }
  }
}
