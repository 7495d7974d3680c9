/**
 * What the user reads is what is there: the client's copy of the server's display
 * rule (server/toolwire/workspace/names.py), character for character.
 *
 * A name or a text may hold characters that make it read as something else:
 * C0/C1 controls and DEL, the bidirectional formatting characters (U+202E turns
 * `invoice<U+202E>fdp.exe` into what reads as "invoiceexe.pdf"), zero-width and
 * other invisible format characters, the line and paragraph separators, and lone
 * surrogates (a name that is not UTF-8, as Python's `os.fsdecode` gives it).
 *
 * - {@link displayName} is for paths and file names: git's C-quoted form
 *   (`core.quotePath`, restricted to those characters), the form every path the
 *   server sends for display already has (permission subjects, `workspace_change`,
 *   undo results) and every tool accepts back.
 * - {@link displayText} is for any other text shown to a person (tool names,
 *   argument text, messages, diffs, results): each such character as a
 *   Python-style escape (`\x1b`, `\u202e`).
 *
 * tests/display.test.ts runs both rules and the server's over the same inputs.
 * Pure: no `vscode`, no DOM; the webview and the extension host both import it.
 */

/**
 * The characters the server escapes (names.py `_SUSPICIOUS`): C0/C1 controls and
 * DEL, ALM, the Hangul and Khmer fillers, the Mongolian vowel separator, ZWSP…RLM,
 * LS…RLO, WJ…U+206F, BOM, U+FFF9…U+FFFB, the musical-symbol format characters
 * and the tag characters.
 */
const SUSPICIOUS =
  "\\x00-\\x1f\\x7f-\\x9f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f" +
  "\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb\\u{1d173}-\\u{1d17a}\\u{e0000}-\\u{e007f}";

/** A lone surrogate (a surrogate pair is one code point with the `u` flag). */
const SURROGATE = "\\p{Cs}";

const UNUSUAL = new RegExp(`[${SUSPICIOUS}]|${SURROGATE}`, "u");
const UNUSUAL_ALL = new RegExp(UNUSUAL.source, "gu");
const SUSPICIOUS_ONE = new RegExp(`^[${SUSPICIOUS}]$`, "u");

/** git's short escapes, by byte (names.py `_ESCAPES`). */
const NAME_ESCAPES: Record<number, string> = { 7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\" };

const TEXT_ESCAPES: Record<string, string> = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };

/** True when `text` holds a character either rule escapes (one scan). */
export function hasUnusual(text: string): boolean {
  return UNUSUAL.test(text);
}

function escapeChar(ch: string): string {
  const short = TEXT_ESCAPES[ch];
  if (short !== undefined) {
    return short;
  }
  const code = ch.codePointAt(0) as number;
  const hex = code.toString(16);
  return code < 0x100 ? `\\x${hex.padStart(2, "0")}` : code < 0x10000 ? `\\u${hex.padStart(4, "0")}` : `\\U${hex.padStart(8, "0")}`;
}

/**
 * `text` made visible and inert (names.py `display_text`).
 *
 * @param text Any text a model, a file or a provider produced.
 * @param keep Characters left as they are, e.g. `"\n\t"` for text shown on several lines.
 * @returns `text` itself when nothing needs escaping; otherwise `\t \n \r` for those
 *   three, `\xNN` for the other C0/C1 controls and DEL, `\uNNNN` for bidirectional,
 *   zero-width and other invisible format characters, the line and paragraph
 *   separators and lone surrogates, `\UNNNNNNNN` above U+FFFF (tag characters). A
 *   backslash already in `text` stays as it is.
 */
export function displayText(text: string, keep = ""): string {
  if (!UNUSUAL.test(text)) {
    return text;
  }
  return text.replace(UNUSUAL_ALL, (ch) => (keep.includes(ch) ? ch : escapeChar(ch)));
}

/** The bytes `os.fsencode` gives for one code point (a surrogate U+DC80…U+DCFF is the byte it stands for). */
function nameBytes(ch: string): number[] {
  const code = ch.codePointAt(0) as number;
  if (code >= 0xdc80 && code <= 0xdcff) {
    return [code - 0xdc00];
  }
  if (code >= 0xd800 && code <= 0xdfff) {
    // No byte stands for it (the server's os.fsencode refuses it): show U+FFFD's bytes.
    return [0xef, 0xbf, 0xbd];
  }
  return Array.from(new TextEncoder().encode(ch));
}

/**
 * The name as text that reads as what it is (names.py `display_name`).
 *
 * @param name A file name or workspace-relative path, as the model or the server gave it.
 * @returns `name` itself when it is plain; otherwise git's quoted form: the name
 *   between double quotes, `\t \n \r \" \\` and friends for the usual escapes and
 *   `\ooo` octal for every other byte of an offending character, e.g.
 *   `"invoice\342\200\256fdp.exe"` for `invoice<U+202E>fdp.exe`. Letters of any
 *   script stay as they are. A name that starts with `"` is quoted too.
 */
export function displayName(name: string): string {
  if (!name.startsWith('"') && !UNUSUAL.test(name)) {
    return name;
  }
  let out = '"';
  for (const ch of name) {
    if (ch === '"' || ch === "\\" || SUSPICIOUS_ONE.test(ch) || /^\p{Cs}$/u.test(ch)) {
      for (const byte of nameBytes(ch)) {
        const short = NAME_ESCAPES[byte];
        out += short !== undefined ? `\\${short}` : `\\${byte.toString(8).padStart(3, "0")}`;
      }
    } else {
      out += ch;
    }
  }
  return `${out}"`;
}

/** git's quoted form (names.py `_QUOTED`): a whole string between double quotes. */
const QUOTED = /^"(?:[^"\\]|\\(?:[abtnvfr"\\]|[0-3][0-7]{2}))*"$/su;
const NAME_UNESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };

/** Bytes as `os.fsdecode` reads them: UTF-8, each byte of an invalid sequence as U+DC80…U+DCFF. */
function fsDecode(bytes: number[]): string {
  let out = "";
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i];
    const need = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    let code = need === 0 ? b : need === 1 ? b & 0x1f : need === 2 ? b & 0x0f : b & 0x07;
    let ok = need >= 0;
    for (let k = 1; ok && k <= need; k++) {
      const c = bytes[i + k];
      // the second byte's range is narrower after E0, ED, F0 and F4 (no overlong form, no surrogate, ≤ U+10FFFF)
      const lo = k === 1 && b === 0xe0 ? 0xa0 : k === 1 && b === 0xf0 ? 0x90 : 0x80;
      const hi = k === 1 && b === 0xed ? 0x9f : k === 1 && b === 0xf4 ? 0x8f : 0xbf;
      ok = c !== undefined && c >= lo && c <= hi;
      code = (code << 6) | (c & 0x3f);
    }
    if (ok) {
      out += String.fromCodePoint(code);
      i += need + 1;
    } else {
      out += String.fromCharCode(0xdc00 + b);
      i += 1;
    }
  }
  return out;
}

/**
 * The name git's quoted form stands for (names.py `parse_quoted`), or undefined when
 * `text` is not one (or holds a character no byte stands for).
 */
export function parseQuoted(text: string): string | undefined {
  if (text.length < 2 || !QUOTED.test(text)) {
    return undefined;
  }
  const body = text.slice(1, -1);
  const bytes: number[] = [];
  for (let i = 0; i < body.length; ) {
    const ch = String.fromCodePoint(body.codePointAt(i) as number);
    if (ch !== "\\") {
      const code = ch.codePointAt(0) as number;
      if (code >= 0xdc80 && code <= 0xdcff) {
        bytes.push(code - 0xdc00);
      } else if (code >= 0xd800 && code <= 0xdfff) {
        return undefined; // the server's encoder refuses it too
      } else {
        bytes.push(...new TextEncoder().encode(ch));
      }
      i += ch.length;
    } else if (NAME_UNESCAPES[body[i + 1]] !== undefined) {
      bytes.push(NAME_UNESCAPES[body[i + 1]]);
      i += 2;
    } else {
      bytes.push(parseInt(body.slice(i + 1, i + 4), 8));
      i += 4;
    }
  }
  return fsDecode(bytes);
}

/**
 * A path argument as the model wrote it, in display form, read as the name it stands
 * for (names.py `display_path`): git's quoted form, which models copy from results and
 * the tools take as that name, is shown as the approval subject shows it, not quoted
 * a second time (`"\"invoice\\342…\""`, a name that is not the file the tool acts on).
 */
export function displayPath(written: string): string {
  return displayName(parseQuoted(written) ?? written);
}
