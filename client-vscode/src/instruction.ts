/**
 * **Edit selection…** asks what to do before `toolwire.runAction` runs (the client's
 * `executeCommand` middleware, server.ts). No `vscode` import: the input box is passed in, so
 * the Node tests run this exact code.
 */

/** What the input box is opened with (a subset of `vscode.InputBoxOptions`). */
export interface InstructionBox {
  title: string;
  prompt: string;
  placeHolder: string;
  ignoreFocusOut: boolean;
}

/**
 * The `toolwire.runAction` arguments to send: an `edit` without an instruction gets the one the
 * user types (empty means "improve it": the server's default, so none is sent); other actions,
 * and an edit that carries its instruction, go as they are. Undefined when the user dismissed
 * the box (no turn).
 */
export async function askInstruction(
  args: unknown[],
  ask: (box: InstructionBox) => Thenable<string | undefined>,
): Promise<unknown[] | undefined> {
  const action = args[0] as { kind?: unknown; instruction?: unknown } | null | undefined;
  if (args.length !== 1 || action === null || typeof action !== "object" || action.kind !== "edit" || typeof action.instruction === "string") {
    return args;
  }
  const instruction = await ask({
    title: "Toolwire: Edit Selection",
    prompt: "What should Toolwire do with the selected code? (leave empty to improve it)",
    placeHolder: "e.g. add type hints",
    ignoreFocusOut: true,
  });
  if (instruction === undefined) {
    return undefined;
  }
  return [instruction.trim() === "" ? action : { ...action, instruction: instruction.trim() }];
}

/**
 * A code action on a file kept from the model (`modelExclude`): `confirm(uri)` asks the user the panel's
 * question (PanelHost.confirmAction: undefined when the file is not kept, else whether they said Send).
 * The arguments to send (with `allowExcluded: true` after Send), or undefined when the user cancelled
 * (no turn). Without the allowance the server refuses the action (protocol.md, "Code actions").
 */
export async function askExcludedAction(
  args: unknown[],
  confirm: (uri: string) => Promise<boolean | undefined>,
): Promise<unknown[] | undefined> {
  const action = args[0] as { uri?: unknown; allowExcluded?: unknown } | null | undefined;
  if (args.length !== 1 || action === null || typeof action !== "object" || typeof action.uri !== "string" || action.allowExcluded === true) {
    return args;
  }
  const allowed = await confirm(action.uri);
  if (allowed === undefined) {
    return args;
  }
  return allowed ? [{ ...action, allowExcluded: true }] : undefined;
}
