// MCP server configuration, the model-facing names of MCP tools, and which servers a profile may use.
// Requirements: pure (no I/O); names within OpenAI's function-name rules ^[a-zA-Z0-9_-]{1,64}$ and unique;
// a profile's selection is a list of configured server names or "*", and an unknown name is a clear error.
import { createHash } from "node:crypto";
import { z } from "zod";

/** One MCP server: a local process over stdio, or a streamable-HTTP endpoint. */
export type McpServerConfig =
  | { type: "stdio"; command: string; args?: string[]; env?: Record<string, string>; cwd?: string }
  | { type: "http"; url: string; headers?: Record<string, string> };

/** Servers by name; the name prefixes each of its tools (`<server>__<tool>`). */
export type McpServers = Readonly<Record<string, McpServerConfig>>;

/** The same shape as a schema, for configuration read at a boundary (`actorzero.config.json`, runtime options). */
export const McpServersSchema = z.record(
  z.string().regex(/^[a-zA-Z0-9_-]{1,32}$/, "a server name of 1-32 characters of [a-zA-Z0-9_-]"),
  z.discriminatedUnion("type", [
    z
      .object({
        type: z.literal("stdio"),
        command: z.string().min(1),
        args: z.array(z.string()).optional(),
        env: z.record(z.string(), z.string()).optional(),
        cwd: z.string().min(1).optional(),
      })
      .strict(),
    z.object({ type: z.literal("http"), url: z.url(), headers: z.record(z.string(), z.string()).optional() }).strict(),
  ]),
);

/**
 * The values of configured servers that are credentials: every header value (and the token after an
 * `Authorization` scheme such as `Bearer`) and every environment value. Redacted wherever a text is stored
 * or printed, as the API key is.
 *
 * @example
 * mcpSecretValues({ gh: { type: "http", url, headers: { Authorization: "Bearer t0ken-123" } } }) // ["Bearer t0ken-123", "t0ken-123"]
 */
export function mcpSecretValues(servers: McpServers): string[] {
  const values: string[] = [];
  for (const config of Object.values(servers)) {
    const given = config.type === "http" ? Object.values(config.headers ?? {}) : Object.values(config.env ?? {});
    for (const value of given) {
      values.push(value);
      const token = /^[A-Za-z]+\s+(\S.*)$/.exec(value)?.[1];
      if (config.type === "http" && token !== undefined) values.push(token);
    }
  }
  return values;
}

/** What a profile (or a project) allows: every configured server, or these by name. */
export type McpSelection = "*" | readonly string[];

const NAME_RULE = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The tool name the model sees for `tool` of `server`: `<server>__<tool>`, characters outside [a-zA-Z0-9_-]
 * replaced by `_`; past 64 characters, or when already `taken`, cut and suffixed with a hash of the original
 * so two different tools never share a name.
 *
 * @example
 * mcpToolName("files", "read.file") // "files__read_file"
 */
export function mcpToolName(server: string, tool: string, taken: ReadonlySet<string> = new Set()): string {
  const plain = `${server}__${tool}`.replace(/[^a-zA-Z0-9_-]/g, "_");
  if (NAME_RULE.test(plain) && !taken.has(plain)) return plain;
  const hash = createHash("sha256").update(`${server}\u0000${tool}`).digest("hex").slice(0, 8);
  return `${plain.slice(0, 55)}_${hash}`;
}

/**
 * The servers a context may use: its profile's selection, narrowed by its project's when there is one.
 * No selection means every configured server. A name that is not configured throws, naming it and the configured ones.
 *
 * @example
 * allowedMcpServers({ configured: ["files", "web"], profile: ["web"] }) // ["web"]
 */
export function allowedMcpServers(options: {
  configured: readonly string[];
  profile?: McpSelection | undefined;
  project?: McpSelection | undefined;
  /** Who the selection belongs to, for the error message. */
  owner?: string;
}): string[] {
  const { configured } = options;
  const resolve = (selection: McpSelection | undefined, who: string): string[] => {
    if (selection === undefined || selection === "*") return [...configured];
    const unknown = selection.filter((name) => !configured.includes(name));
    if (unknown.length > 0) {
      const known = configured.length > 0 ? configured.map((n) => `'${n}'`).join(", ") : "none";
      throw new Error(
        `${who} names MCP server(s) ${unknown.map((n) => `'${n}'`).join(", ")} that are not configured (configured: ${known}).`,
      );
    }
    return configured.filter((name) => selection.includes(name));
  };
  const byProfile = resolve(options.profile, options.owner ?? "The profile");
  const byProject = resolve(options.project, "The project");
  return byProfile.filter((name) => byProject.includes(name));
}

/** Checks a configuration before anything connects: names usable as prefixes, each entry complete. */
export function validateMcpServers(servers: McpServers): void {
  for (const [name, config] of Object.entries(servers)) {
    if (!/^[a-zA-Z0-9_-]{1,32}$/.test(name)) {
      throw new Error(
        `MCP server name '${name}' must be 1-32 characters of [a-zA-Z0-9_-] (it prefixes its tools' names).`,
      );
    }
    if (config.type === "stdio" && !(typeof config.command === "string" && config.command.length > 0)) {
      throw new Error(`MCP server '${name}' (stdio) needs a command.`);
    }
    if (config.type === "http") {
      try {
        new URL(config.url);
      } catch {
        throw new Error(`MCP server '${name}' (http) needs a valid url; got ${JSON.stringify(config.url)}.`);
      }
    }
    if (config.type !== "stdio" && config.type !== "http") {
      throw new Error(
        `MCP server '${name}' has type ${JSON.stringify((config as { type?: unknown }).type)}; expected "stdio" or "http".`,
      );
    }
  }
}
