/**
 * Keeps secrets out of every log and trace, by the server's rule (protocol.md,
 * "Redaction"): a wrapper around an output channel (or any logger) that redacts
 * every string it is given before the real channel sees it.
 *
 * - A secret the client holds (the API key; the user info and key-like query values
 *   of `toolwire.baseUrl`, see {@link urlSecrets}; the env and header values and URLs
 *   of `toolwire.mcpServers`, see {@link mcpSecrets}) of {@link MIN_SECRET} or more
 *   characters is replaced wherever it occurs (and its JSON-escaped form).
 * - In every URL, its user info and key-like query values are masked whatever their
 *   length (`http://***@host/v1?api-key=***`), and so are `"apiKey": "…"`-like fields
 *   and `Bearer …` tokens: a shorter secret is masked there, in its place only.
 *
 * No `vscode` import: the Node test wraps vscode-jsonrpc's tracer with it.
 */

/** Placeholder written instead of a secret. */
export const REDACTED = "***";

/** Shortest secret replaced wherever it occurs (shorter ones only in their place). */
export const MIN_SECRET = 8;

/** Query parameter names whose values are secrets, normalized (lower case, no `-`/`_`): a copy of the server's (server/toolwire/secret_names.py; tests/test_redaction.py checks they agree). */
const KEY_NAMES = new Set([
  "key", "apikey", "xapikey", "apitoken", "accesskey", "secretkey", "privatekey", "subscriptionkey",
  "ocpapimsubscriptionkey", "token", "accesstoken", "refreshtoken", "idtoken", "authtoken", "sessiontoken",
  "securitytoken", "privatetoken", "bearer", "jwt", "auth", "authorization", "proxyauthorization", "xauthtoken",
  "sig", "signature", "xamzsignature", "xamzcredential", "xamzsecuritytoken", "xgoogsignature",
  "xgoogcredential", "xgoogapikey", "password", "passwd", "pwd", "pass", "passphrase", "secret",
  "clientsecret", "credential", "credentials", "code", "cookie", "setcookie", "session", "sessionid", "sid",
  "hmac", "otp",
]);
const KEY_SUFFIXES = ["key", "token", "secret", "password", "passwd", "signature", "credential", "credentials", "auth"];
/** Quoted field names masked in any text (narrower: `code`, `sessionId` are ordinary fields). */
const FIELD_NAMES = new Set(["apikey", "xapikey", "apitoken", "accesstoken", "refreshtoken", "idtoken", "authtoken",
  "token", "authorization", "password", "passwd", "secret", "clientsecret", "credential", "credentials", "bearer"]);
const FIELD_SUFFIXES = ["apikey", "token", "secret", "password", "passwd"];

/** User info runs to the last "@" before the host (a password may hold a raw "@"). */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#"'<>\\]+)@/gi;
/** Query and fragment (OAuth's `#access_token=`) values. */
const QUERY_VALUE = /([?&;#]([A-Za-z0-9_.\-%[\]]+)=)((?:[^&#\s"'<>\\,;:.)\]]|[:.,)\]](?=[^\s&#"'<>]))+)/g;
const FIELD_VALUE = /(?<![\w-])(["']?)([A-Za-z][\w-]*)\1(\s*[:=]\s*)(["'])((?:(?!\4)[^\\]|\\.)*)\4/g;
const BEARER = /\b(bearer\s+)[^\s'",}\]]+/gi;

function normal(name: string): string {
  let decoded = name;
  try {
    decoded = decodeURIComponent(name);
  } catch {
    // not percent-encoded text: as it is
  }
  return decoded.toLowerCase().replace(/[-_]/g, "");
}

/** True when a query parameter (or header) name names a secret. */
export function isKeyName(name: string): boolean {
  const n = normal(name);
  return KEY_NAMES.has(n) || KEY_SUFFIXES.some((suffix) => n.endsWith(suffix));
}

function isFieldName(name: string): boolean {
  const n = normal(name);
  return FIELD_NAMES.has(n) || FIELD_SUFFIXES.some((suffix) => n.endsWith(suffix));
}

/** A URL's secrets: user name, password, the user info, and key-like query values (as written and decoded). */
export function urlSecrets(url: string | undefined): string[] {
  if (url === undefined || url === "") {
    return [];
  }
  const out: string[] = [];
  const add = (value: string) => {
    if (value !== "") {
      out.push(value);
      try {
        const decoded = decodeURIComponent(value);
        if (decoded !== value) {
          out.push(decoded);
        }
      } catch {
        // not percent-encoded
      }
    }
  };
  const userinfo = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)@/i.exec(url.trim())?.[1]; // greedy: to the last "@"
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(":");
    add(userinfo);
    add(colon < 0 ? userinfo : userinfo.slice(0, colon));
    if (colon >= 0) {
      add(userinfo.slice(colon + 1));
    }
  }
  const [beforeFragment, ...fragment] = url.split("#");
  const query = beforeFragment.split("?").slice(1).join("?");
  for (const piece of [...query.split(/[&;]/), ...fragment.join("#").split("&")]) {
    const eq = piece.indexOf("=");
    if (eq > 0 && isKeyName(piece.slice(0, eq))) {
      add(piece.slice(eq + 1));
    }
  }
  return out;
}

/** Authorization scheme words a header value may open with; the credential after one is the secret. */
const SCHEMES = ["bearer", "basic", "token", "digest"];

/**
 * The secrets of a `toolwire.mcpServers` value (any shape): every entry's `env` and `headers`
 * values (of `Bearer …`, the credential: the scheme word stays visible, as the server does)
 * and its `url`'s ({@link urlSecrets}).
 */
export function mcpSecrets(servers: unknown): string[] {
  const out: string[] = [];
  const strings = (map: unknown): string[] =>
    typeof map === "object" && map !== null ? Object.values(map).filter((v): v is string => typeof v === "string") : [];
  for (const entry of typeof servers === "object" && servers !== null ? Object.values(servers) : []) {
    if (typeof entry !== "object" || entry === null) {
      continue;
    }
    const { env, headers, url } = entry as { env?: unknown; headers?: unknown; url?: unknown };
    out.push(...strings(env));
    for (const value of strings(headers)) {
      const space = value.indexOf(" ");
      out.push(space > 0 && SCHEMES.includes(value.slice(0, space).toLowerCase()) ? value.slice(space + 1) : value);
    }
    out.push(...urlSecrets(typeof url === "string" ? url : undefined));
  }
  return out;
}

/** `text` with the structural secrets masked: URL user info, key-like query values, key-like fields, Bearer tokens. */
export function redactStructure(text: string): string {
  let out = text;
  if (out.includes("://") && out.includes("@")) {
    out = out.replace(URL_USERINFO, `$1${REDACTED}@`);
  }
  if (out.includes("=")) {
    out = out.replace(QUERY_VALUE, (whole: string, head: string, name: string) => (isKeyName(name) ? `${head}${REDACTED}` : whole));
  }
  if (out.includes(":") || out.includes("=")) {
    out = out.replace(FIELD_VALUE, (whole: string, q: string, name: string, sep: string, quote: string, value: string) =>
      value !== "" && value !== REDACTED && isFieldName(name) ? `${q}${name}${q}${sep}${quote}${REDACTED}${quote}` : whole,
    );
  }
  return out.replace(BEARER, `$1${REDACTED}`);
}

/** `text` with every secret of {@link MIN_SECRET}+ characters (and its JSON-escaped form) replaced, then the structural ones. */
export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  const long = [...new Set(secrets.filter((s) => s.trim().length >= MIN_SECRET))].sort((a, b) => b.length - a.length);
  for (const secret of long) {
    out = out.split(secret).join(REDACTED);
    const escaped = JSON.stringify(secret).slice(1, -1);
    if (escaped !== secret) {
      out = out.split(escaped).join(REDACTED);
    }
  }
  return redactStructure(out);
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
