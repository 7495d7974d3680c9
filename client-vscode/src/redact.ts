/**
 * Keeps secrets (the API key) out of every log and trace: a wrapper around an
 * output channel (or any logger) that replaces each secret in every string it is
 * given by `***` before the real channel sees it. No `vscode` import: the Node
 * test wraps vscode-jsonrpc's tracer with it.
 */

/** Placeholder written instead of a secret. */
export const REDACTED = "***";

/** `text` with every occurrence of every secret (and its JSON-escaped form) replaced. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length < 4) {
      continue; // too short to be a key; replacing it would mangle the log
    }
    out = out.split(secret).join(REDACTED);
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret) {
      out = out.split(escaped).join(REDACTED);
    }
  }
  return out;
}

/**
 * A proxy of `channel` whose methods receive their string arguments redacted.
 * Properties and events pass through unchanged.
 *
 * @param secrets Read at every call, so a key set later is covered too.
 */
export function redactingChannel<T extends object>(channel: T, secrets: () => readonly string[]): T {
  return new Proxy(channel, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") {
        return value;
      }
      return (...args: unknown[]) =>
        (value as (...a: unknown[]) => unknown).apply(
          target,
          args.map((arg) => (typeof arg === "string" ? redact(arg, secrets()) : arg)),
        );
    },
  });
}
