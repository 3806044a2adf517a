// Secrets out of every text that is stored or printed: one redaction for errors, banners and suggestions.
//
// Requirements:
// - Lowest layer (events), so the store, the model clients and the CLI all use the same rules.
// - Redacts: URL userinfo passwords (`scheme://user:secret@`), credential query parameters
//   (`?password=`, `token=`, `api_key=` …), known API-key shapes, `Bearer` tokens, and the values of
//   PGPASSWORD and OPENAI_API_KEY wherever they appear, and the values configuration marks as secret
//   (`addSecrets`: MCP servers' `headers` and `env`), once it has been read, for the rest of the process;
//   and the values of the variables marked secret (`markSecretEnv`: a remote profile's credentials).
// - Idempotent and cheap on text without secrets (the patterns are anchored on rare characters).

export const REDACTED = "***";

const USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/@:]*):([^\s/@]*)@/gi;
const QUERY_SECRET =
  /([?&;\s](?:password|passwd|pwd|pass|token|access_token|api[_-]?key|apikey|secret|sslpassword)=)([^&\s#'"]+)/gi;
const KEY_SHAPES = [
  /\bsk-[A-Za-z0-9_-]{16,}/g, // OpenAI-style keys, sk-proj-… included
  /\b(?:ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{20,}/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}\b/g,
];
const BEARER = /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/g;
/** Environment variables whose values are secrets wherever they show up. */
const SECRET_ENV = new Set(["PGPASSWORD", "OPENAI_API_KEY"]);

/**
 * Marks the variable `name` as holding a secret from now on (a remote profile's `credentialsEnv`): its value is
 * redacted like OPENAI_API_KEY's. Process-wide, as the environment is.
 */
export const markSecretEnv = (name: string): void => void SECRET_ENV.add(name);

/** Shorter values are not treated as secrets: `1` or `true` would be cut out of every text. */
export const MIN_SECRET_LENGTH = 6;

/** Secret values from configuration, longest first (a secret holding another is cut whole). */
let configured: string[] = [];

/**
 * Marks `values` as secrets for every later redaction in this process (values under MIN_SECRET_LENGTH
 * characters are left out). Configuration calls it as it is read, so errors, printouts, the log and spans
 * never carry a configured credential, whichever path the text takes.
 */
export const addSecrets = (values: Iterable<string>): void => {
  const fresh = [...values].filter((v) => v.length >= MIN_SECRET_LENGTH && !configured.includes(v));
  if (fresh.length > 0) configured = [...configured, ...fresh].sort((a, b) => b.length - a.length);
};

/** `text` with every secret it holds replaced by `***`. */
export const redactSecrets = (text: string, extraSecrets: readonly string[] = []): string => {
  let out = text
    .replace(
      USERINFO,
      (_m, scheme: string, user: string, pass: string) => `${scheme}${user}${pass ? `:${REDACTED}` : ""}@`,
    )
    .replace(QUERY_SECRET, (_m, key: string) => `${key}${REDACTED}`)
    .replace(BEARER, (_m, b: string) => `${b}${REDACTED}`);
  for (const shape of KEY_SHAPES) out = out.replace(shape, REDACTED);
  for (const secret of [...extraSecrets, ...configured, ...envSecrets()])
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
};

/** The values of the secret environment variables long enough not to match ordinary text. */
const envSecrets = (): string[] => {
  const env = typeof process === "undefined" ? {} : process.env;
  return [...SECRET_ENV]
    .map((k) => env[k])
    .filter((v): v is string => typeof v === "string" && v.length >= MIN_SECRET_LENGTH);
};

/**
 * The passwords a URL carries (userinfo, `?password=`), decoded: a driver's error may quote them in
 * another form than the URL's, so a message about that URL is redacted of these too.
 */
export const urlPasswords = (url: string): string[] => {
  try {
    const u = new URL(url);
    return [decodeURIComponent(u.password), u.searchParams.get("password") ?? ""].filter((p) => p.length >= 4);
  } catch {
    return [];
  }
};
