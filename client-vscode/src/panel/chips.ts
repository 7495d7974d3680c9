/**
 * The prompt's context chips, host side: the `@` picker's choices (`mention`), chips attached from
 * commands, files kept from the model (asked about in a modal warning; **Send** allows the chip for
 * the next prompt that carries it) and the chips as the prompt's embedded resources. No `vscode` import.
 */
import type { Params } from "../protocol";
import { displayText } from "../display";
import type { ContextChip, HostMessage } from "./messages";
import { send, type PanelUi, type RpcConnection } from "./ports";

/** The question put before a file kept from the model is attached (protocol.md "Files kept from the model"). */
export function excludedQuestion(path: string, pattern: string): string {
  return `${path} is kept from the model (pattern ${pattern}). Send its content with this prompt?`;
}

/** A prompt's content blocks (`toolwire/session/prompt`'s `prompt` as an array). */
export type PromptBlocks = Exclude<Params<"toolwire/session/prompt">["prompt"], string>;

/** The panel's chips: one per panel host. `session` is the panel's session, started if needed. */
export class ContextChips {
  /** Chips of files kept from the model that the user allowed for the next prompt ({@link ContextChips.attachExcluded}). */
  private readonly allowedExcluded = new Set<string>();

  constructor(
    private readonly ui: PanelUi,
    private readonly post: (message: HostMessage) => void,
    private readonly session: () => Promise<{ id: string; rpc: RpcConnection }>,
  ) {}

  /**
   * `chips` as resource blocks pushed onto `prompt`; the chips attached (one that cannot be read is
   * not, and the user is told). Only a chip the user allowed carries the allowance.
   */
  async addResources(prompt: PromptBlocks, chips: readonly ContextChip[]): Promise<ContextChip[]> {
    const attached: ContextChip[] = [];
    for (const chip of chips) {
      const block = await this.ui.resource?.(chip);
      if (block === undefined) {
        this.ui.error(`Could not read ${chip.label}; it was not attached.`);
        continue;
      }
      // only a chip the user allowed here (attachExcluded) carries the allowance; the server refuses the others
      prompt.push(this.allowedExcluded.delete(allowKey(chip)) ? { ...block, _meta: { toolwire: { allowExcluded: true } } } : block);
      attached.push(chip);
    }
    return attached;
  }

  /**
   * The `@` picker chose a file kept from the model (findFiles' `excluded`): the user is asked (a modal
   * warning); **Send** adds the chip, allowed for the next prompt that carries it.
   */
  async attachExcluded(chip: ContextChip): Promise<void> {
    if (chip.excluded !== undefined && (await this.allowExcluded({ ...chip, excluded: chip.excluded }))) {
      this.post({ type: "attach", chip });
    }
  }

  /** Asks the user about `chip`, a file kept from the model by `chip.excluded`; **Send** allows it for the next prompt that carries it. */
  private async allowExcluded(chip: ContextChip & { excluded: string }): Promise<boolean> {
    if (!(await this.askExcluded(chip.path, chip.excluded))) {
      return false;
    }
    this.allowedExcluded.add(allowKey(chip));
    return true;
  }

  /** The one question about the workspace file `path`, kept from the model by `pattern`: true on **Send**. */
  private async askExcluded(path: string, pattern: string): Promise<boolean> {
    return this.ui.confirmExcluded !== undefined && (await this.ui.confirmExcluded(displayText(path), displayText(pattern)));
  }

  /**
   * A code action (`toolwire.runAction`) on the workspace file `path` (server.ts asks before running it):
   * undefined when the file is not kept from the model, else whether the user said **Send** to the same
   * question as the picker's (the action then carries `allowExcluded`; nothing is kept for a prompt).
   */
  async confirmAction(path: string): Promise<boolean | undefined> {
    const pattern = await this.keptBy(path);
    return pattern === undefined ? undefined : this.askExcluded(path, pattern);
  }

  /**
   * Chips built outside the picker (Attach Selection, Ask About Selection, Fix Diagnostics in File):
   * the server says which of their files are kept from the model (findFiles' `excluded` of the exact
   * path) and the user is asked as the picker asks; the chips (marked), or undefined when the user
   * cancelled one.
   */
  async confirmChips(chips: readonly ContextChip[]): Promise<ContextChip[] | undefined> {
    const out: ContextChip[] = [];
    for (const chip of chips) {
      const pattern = chip.excluded ?? (await this.keptBy(chip.path));
      if (pattern === undefined) {
        out.push(chip);
        continue;
      }
      const marked = { ...chip, excluded: pattern };
      if (!(await this.allowExcluded(marked))) {
        return undefined;
      }
      out.push(marked);
    }
    return out;
  }

  /** The `modelExclude` pattern that keeps the workspace file `path` from the model (the server's findFiles), else undefined. */
  private async keptBy(path: string): Promise<string | undefined> {
    const session = await this.session();
    const { files } = await send(session.rpc, "toolwire/workspace/findFiles", { sessionId: session.id, query: path, limit: 50 });
    const excluded = files.find((file) => file.path === path)?.excluded;
    return typeof excluded === "string" ? excluded : undefined;
  }

  /**
   * **Attach Selection**: a chip for the prompt box, shown there until the prompt is sent or it is
   * removed; a file kept from the model is asked about first ({@link ContextChips.confirmChips}).
   * False when the user cancelled (nothing attached).
   */
  async attachChip(chip: ContextChip): Promise<boolean> {
    const [allowed] = (await this.confirmChips([chip])) ?? [];
    if (allowed === undefined) {
      return false;
    }
    this.post({ type: "attach", chip: allowed });
    return true;
  }

  /** A chip for the prompt box as given, not asked about (the server refuses a file kept from the model in it). */
  attachUnasked(chip: ContextChip): void {
    this.post({ type: "attach", chip });
  }

  /**
   * The `@` picker's choices for `query`: the selection, the current file's problems and the open
   * editors that match, then the workspace's files (`toolwire/workspace/findFiles`, fuzzy).
   */
  async mention(query: string): Promise<ContextChip[]> {
    const context = this.ui.editorContext?.() ?? { open: [] };
    const needle = query.toLowerCase();
    const fits = (chip: ContextChip) => needle === "" || chip.label.toLowerCase().includes(needle);
    const items: ContextChip[] = [];
    for (const chip of [context.selection, context.problems, ...context.open]) {
      if (chip !== undefined && fits(chip)) {
        items.push(chip);
      }
    }
    const seen = new Set(items.filter((c) => c.kind === "file").map((c) => c.path));
    try {
      const session = await this.session();
      const { files } = await send(session.rpc, "toolwire/workspace/findFiles", { sessionId: session.id, query, limit: 50 });
      const kept = new Map(files.flatMap((file) => (typeof file.excluded === "string" ? [[file.path, file.excluded] as const] : [])));
      for (const [index, chip] of items.entries()) {
        const pattern = kept.get(chip.path); // an open editor's (or its selection's) file kept from the model
        if (pattern !== undefined) {
          items[index] = { ...chip, excluded: pattern };
        }
      }
      for (const file of files) {
        if (!seen.has(file.path)) {
          const chip: ContextChip = { kind: "file", path: file.path, label: file.path, source: "workspace" };
          items.push(typeof file.excluded === "string" ? { ...chip, excluded: file.excluded } : chip);
        }
      }
    } catch (error) {
      this.ui.error(`Could not list the workspace's files: ${error instanceof Error ? error.message : String(error)}`);
    }
    this.post({ type: "mentions", query, items });
    return items;
  }
}

/** Which chip an allowance of {@link ContextChips.attachExcluded} is for (its kind, file and label). */
function allowKey(chip: ContextChip): string {
  return JSON.stringify([chip.kind, chip.path, chip.label]);
}
