// Who is calling: named bearer tokens with roles, the routes each role may use, and the name a decision is recorded under.
// Requirements:
// - Roles: `read` (GET routes and event streams), `act` (read, and create, send, stop, pause, resume, fork),
//   `approve` (read, and approve/reject), `admin` (everything). A route outside the caller's role is a 403.
// - A given token is compared with every known one in constant time (hashes of equal length, no early exit), so
//   the time taken says nothing about which one, or how much of one, matched.
// - Names and secrets are unique; a tokens file is JSON, `{ "tokens": [{ "name", "token", "role" }] }`, checked
//   strictly (an unknown key or role is refused, naming it and the file).
// - No HTTP stack imported here: the CLI checks a tokens file before it opens anything.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { userInfo } from "node:os";
import { z } from "zod";

export const ROLES = ["read", "act", "approve", "admin"] as const;
export type Role = (typeof ROLES)[number];
/** What a route needs: reading, acting on contexts, or deciding approvals. */
export type Permission = "read" | "act" | "approve";

/** The single `--token` (`serve({ token })`) is an admin token by this name. */
export const SINGLE_TOKEN_NAME = "admin";
const MIN_SECRET = 16;

export const NamedToken = z.strictObject({
  name: z.string({ error: "must be a name (letters, digits, . _ @ -)" }).regex(/^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$/, {
    error: "must be a name of 1 to 100 letters, digits, . _ @ - (starting with a letter or digit)",
  }),
  token: z
    .string({ error: `must be a secret of at least ${MIN_SECRET} characters` })
    .min(MIN_SECRET, { error: `must be a secret of at least ${MIN_SECRET} characters` }),
  role: z.enum(ROLES, { error: `must be one of ${ROLES.join(", ")}` }),
});
export type NamedToken = z.infer<typeof NamedToken>;

/** The first problem with a list of tokens as one line (null if none): a bad field, a repeated name or secret. */
export const tokensProblem = (tokens: readonly unknown[]): string | null => {
  const r = z.array(NamedToken).safeParse(tokens);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    const where = `tokens[${String(issue.path[0] ?? 0)}]`;
    if (issue.code === "unrecognized_keys")
      return `${where}: unknown field ${issue.keys.map((k) => `'${k}'`).join(", ")}`;
    return `${where}${issue.path.length > 1 ? `.${issue.path.slice(1).join(".")}` : ""}: ${issue.message}`;
  }
  const names = new Set<string>();
  const secrets = new Set<string>();
  for (const t of r.data) {
    if (names.has(t.name)) return `tokens: the name '${t.name}' is given twice`;
    if (secrets.has(t.token)) return `tokens: '${t.name}' has the same secret as another token`;
    names.add(t.name);
    secrets.add(t.token);
  }
  return null;
};

/** Reads and checks a tokens file; throws an Error whose message is one line naming the file and the problem. */
export const readTokensFile = (file: string): NamedToken[] => {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new Error(
      `cannot read the tokens file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new Error(`the tokens file ${file} is not JSON (${(e as Error).message})`);
  }
  const shape = z.strictObject({ tokens: z.array(z.unknown()).min(1) }).safeParse(json);
  if (!shape.success) {
    // A misspelt key says more than the list it left out.
    const unknown = shape.error.issues.find((i) => i.code === "unrecognized_keys");
    const detail = unknown
      ? `unknown field ${unknown.keys.map((k) => `'${k}'`).join(", ")}`
      : "it must list at least one token";
    throw new Error(`the tokens file ${file}: ${detail} (expected { "tokens": [{ "name", "token", "role" }] })`);
  }
  const list = shape.data.tokens;
  const problem = tokensProblem(list);
  if (problem !== null) throw new Error(`the tokens file ${file}: ${problem}`);
  return list as NamedToken[];
};

/** What a request needs, from its method and path. Anything that writes and is not a decision is acting. */
export const permissionFor = (method: string, path: string): Permission => {
  if (method === "GET" || method === "HEAD") return "read";
  if (/^\/v1\/approvals\/[^/]+\/(approve|reject)$/.test(path)) return "approve";
  return "act";
};

export const allows = (role: Role, need: Permission): boolean => role === "admin" || need === "read" || role === need;

export type Caller = { name: string; role: Role };

const digest = (s: string) => createHash("sha256").update(s).digest();

/** The known tokens, looked up in constant time. */
export class TokenTable {
  private readonly entries: { hash: Buffer; caller: Caller }[];

  constructor(tokens: readonly NamedToken[]) {
    this.entries = tokens.map((t) => ({ hash: digest(t.token), caller: { name: t.name, role: t.role } }));
  }

  get size(): number {
    return this.entries.length;
  }

  /** The caller a bearer secret belongs to, or null. Every entry is compared, whichever matches. */
  find(given: string): Caller | null {
    const h = digest(given);
    let found: Caller | null = null;
    for (const e of this.entries) if (timingSafeEqual(h, e.hash) && found === null) found = e.caller;
    return found;
  }
}

/** The OS user of this process: who decides over the control socket (0600: only that user, or root, can connect). */
export const processUser = (): string => {
  try {
    return userInfo().username;
  } catch {
    return process.env["USER"] ?? process.env["USERNAME"] ?? `uid ${process.getuid?.() ?? "unknown"}`;
  }
};
