/**
 * A call's arguments as far as the model has written them: the streamed argument text
 * parsed incrementally (@streamparser/json), so each update costs what its new piece does.
 *
 * The tokenizer keeps its place between writes; each render feeds only the text past
 * what it was fed. Values complete so far are in the parser's object; the one string
 * still being written (`old_string`, `content`, …) is kept beside it as `partial`, its
 * text so far. Text that does not parse (the model wrote something else than JSON) leaves
 * what was parsed before it; the card still shows the raw text under "Arguments".
 */
import { JSONParser } from "@streamparser/json";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface ArgsSoFar {
  /** The top-level object as parsed so far (complete values only); undefined before `{`. */
  root: JsonObject | undefined;
  /** The value being written: its container, key and text so far. */
  partial: { parent: unknown; key: string | number; value: string } | undefined;
  /** The whole text parsed: `root` is the arguments. */
  complete: boolean;
}

/** An incremental reader of one call's argument text. */
export class StreamedArgs {
  private parser: JSONParser;
  private fed = 0;
  private head = "";
  private failed = false;
  private state: ArgsSoFar = { root: undefined, partial: undefined, complete: false };

  constructor() {
    this.parser = this.makeParser();
  }

  private makeParser(): JSONParser {
    const parser = new JSONParser({ emitPartialTokens: true, emitPartialValues: true });
    parser.onValue = ({ value, key, parent, stack, partial }) => {
      if (this.state.root === undefined) {
        const root = stack.length > 1 ? stack[1].value : stack.length === 1 ? parent : value;
        if (root !== null && typeof root === "object" && !Array.isArray(root)) {
          this.state.root = root as JsonObject;
        }
      }
      if (partial && typeof value === "string" && key !== undefined) {
        this.state.partial = { parent, key, value };
      } else if (!partial) {
        this.state.partial = undefined;
        if (stack.length === 0) {
          this.state.complete = true;
          if (value !== null && typeof value === "object" && !Array.isArray(value)) {
            this.state.root = value as JsonObject;
          }
        }
      }
    };
    parser.onError = () => {
      this.failed = true;
    };
    parser.onEnd = () => undefined;
    return parser;
  }

  /**
   * Reads `text`, the call's whole argument text now: only its part past what was read
   * before when it grew by appending; from the start when it was replaced.
   */
  read(text: string): ArgsSoFar {
    if (text.length < this.fed || (this.fed > 0 && !text.startsWith(this.head))) {
      this.fed = 0;
      this.failed = false;
      this.state = { root: undefined, partial: undefined, complete: false };
      this.parser = this.makeParser();
    }
    if (this.fed === 0) {
      this.head = text.slice(0, 64);
    }
    if (text.length > this.fed && !this.failed && !this.state.complete) {
      const piece = text.slice(this.fed);
      this.fed = text.length;
      try {
        this.parser.write(piece);
      } catch {
        this.failed = true;
      }
    }
    return this.state;
  }
}

/** The string at `key` of `parent`: complete, or the part written so far. */
export function stringAt(args: ArgsSoFar, parent: unknown, key: string | number): string | undefined {
  if (parent !== null && typeof parent === "object") {
    const value = (parent as Record<string | number, unknown>)[key];
    if (typeof value === "string") {
      return value;
    }
  }
  const partial = args.partial;
  return partial !== undefined && partial.parent === parent && partial.key === key ? partial.value : undefined;
}
