// MCP tools: servers connected lazily, shared by every context of a runtime, offered as actorzero tools.
// Requirements: connect on first use and share one client per server; list each server's tools once
// (`<server>__<tool>`, the JSON schema exactly as the server gives it); a call to a server that is down,
// too slow (timeout) or answers with an error is a RepairableToolError naming the server, never a failed run;
// a server whose connection closed (a crashed process) is reconnected on the next call.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { z } from "zod";
import { RepairableToolError, type Tool } from "./defineTool.ts";
import { addSecrets, redactSecrets } from "../events/redact.ts";
import {
  mcpSecretValues,
  mcpToolName,
  validateMcpServers,
  type McpServerConfig,
  type McpServers,
} from "./mcpConfig.ts";

export type McpHubOptions = {
  /** One tool call's deadline. Default 30 s. */
  timeoutMs?: number;
  /** Connecting to a server and listing its tools. Default 30 s. */
  connectTimeoutMs?: number;
  /** Tool names already in use beside the MCP tools (built-in and your own): an MCP tool never takes one. */
  reservedNames?: readonly string[];
};

export type McpHub = {
  /** The tools of these servers; a server that cannot be reached is left out and reported in `unavailable`. */
  toolsFor(
    servers: readonly string[],
  ): Promise<{ tools: Tool<Record<string, unknown>>[]; unavailable: { server: string; message: string }[] }>;
  close(): Promise<void>;
};

type Listed = { name: string; description?: string | undefined; inputSchema: Record<string, unknown> };
type Connection = { client: Client; closed: boolean };

// Redacted: a server may quote the headers or environment it was given (a 401 page, an echoed variable), and
// whatever a tool answers is stored, served and shown to the model.
const messageOf = (error: unknown): string => redactSecrets(error instanceof Error ? error.message : String(error));

/**
 * @example
 * const hub = mcpHub({ everything: { type: "stdio", command: "npx", args: ["mcp-server-everything"] } });
 * const { tools } = await hub.toolsFor(["everything"]); // everything__echo, everything__add, …
 */
export function mcpHub(servers: McpServers, options: McpHubOptions = {}): McpHub {
  validateMcpServers(servers);
  addSecrets(mcpSecretValues(servers));
  const timeout = options.timeoutMs ?? 30_000;
  const connectTimeout = options.connectTimeoutMs ?? 30_000;
  const connections = new Map<string, Promise<Connection>>();
  const listings = new Map<string, Promise<Tool<Record<string, unknown>>[]>>();
  const taken = new Set<string>(options.reservedNames ?? []);

  const connect = (server: string): Promise<Connection> => {
    const existing = connections.get(server);
    if (existing) return existing;
    const config = servers[server];
    if (!config) return Promise.reject(new Error(`MCP server '${server}' is not configured.`));
    const pending = (async () => {
      const client = new Client({ name: "actorzero", version: "0.1.0" });
      const connection: Connection = { client, closed: false };
      // A closed transport (the process exited, the endpoint went away) is forgotten so the next use reconnects.
      client.onclose = () => {
        connection.closed = true;
        if (connections.get(server) === pending) connections.delete(server);
      };
      try {
        await withTimeout(
          client.connect(transportFor(config)),
          connectTimeout,
          `connecting took longer than ${connectTimeout} ms`,
        );
      } catch (error) {
        await client.close().catch(() => {});
        throw error;
      }
      return connection;
    })();
    connections.set(server, pending);
    pending.catch(() => {
      if (connections.get(server) === pending) connections.delete(server);
    });
    return pending;
  };

  const forget = (server: string, connection: Connection) => {
    void connections.get(server)?.then((current) => {
      if (current !== connection) return;
      connections.delete(server);
      void connection.client.close().catch(() => {});
    });
  };

  const list = (server: string): Promise<Tool<Record<string, unknown>>[]> => {
    const cached = listings.get(server);
    if (cached) return cached;
    const pending = (async () => {
      const { client } = await connect(server);
      const listed: Listed[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: connectTimeout });
        listed.push(...(page.tools as Listed[]));
        cursor = page.nextCursor;
      } while (cursor);
      return listed.map((tool) => {
        const name = mcpToolName(server, tool.name, taken);
        taken.add(name);
        return toolOf(server, tool, name);
      });
    })();
    listings.set(server, pending);
    pending.catch(() => listings.delete(server));
    return pending;
  };

  const toolOf = (server: string, listed: Listed, name: string): Tool<Record<string, unknown>> => ({
    name,
    description: listed.description ?? `${listed.name} (MCP server ${server})`,
    // Any object passes here (the server validates its own input); the schema the model sees is the server's own.
    input: z.looseObject({}).meta({ ...listed.inputSchema, type: "object" }) as unknown as z.ZodType<
      Record<string, unknown>
    >,
    async run(input, ctx) {
      let connection: Connection;
      try {
        connection = await connect(server);
      } catch (error) {
        throw new RepairableToolError(`MCP server '${server}' is unavailable: ${messageOf(error)}`);
      }
      let result: { content?: unknown; structuredContent?: unknown; isError?: unknown };
      try {
        result = (await connection.client.callTool(
          {
            name: listed.name,
            arguments: input,
            ...(ctx.traceparent ? { _meta: { traceparent: ctx.traceparent } } : {}),
          },
          undefined,
          { signal: ctx.signal, timeout },
        )) as typeof result;
      } catch (error) {
        if (ctx.signal.aborted) throw error;
        // The connection may be broken (a crashed process, a restarted endpoint): the next call starts a fresh one.
        forget(server, connection);
        throw new RepairableToolError(`MCP server '${server}' failed on '${listed.name}': ${messageOf(error)}`);
      }
      const text = redactSecrets(resultText(result));
      if (result.isError)
        throw new RepairableToolError(`MCP server '${server}' returned an error from '${listed.name}': ${text}`);
      return text;
    },
  });

  return {
    async toolsFor(names) {
      const settled = await Promise.allSettled(names.map((server) => list(server)));
      const tools: Tool<Record<string, unknown>>[] = [];
      const unavailable: { server: string; message: string }[] = [];
      settled.forEach((outcome, i) => {
        if (outcome.status === "fulfilled") tools.push(...outcome.value);
        else
          unavailable.push({
            server: names[i]!,
            message: `MCP server '${names[i]}' is unavailable: ${messageOf(outcome.reason)}`,
          });
      });
      return { tools, unavailable };
    },
    async close() {
      const open = [...connections.values()];
      connections.clear();
      await Promise.allSettled(open.map(async (pending) => (await pending).client.close()));
    },
  };
}

const transportFor = (config: McpServerConfig) =>
  config.type === "stdio"
    ? new StdioClientTransport({
        command: config.command,
        ...(config.args ? { args: config.args } : {}),
        // The SDK's default environment (PATH, HOME, …) plus the configured variables.
        ...(config.env ? { env: { ...safeEnv(), ...config.env } } : {}),
        ...(config.cwd ? { cwd: config.cwd } : {}),
        stderr: "ignore",
      })
    : new StreamableHTTPClientTransport(
        new URL(config.url),
        config.headers ? { requestInit: { headers: config.headers } } : undefined,
      );

const safeEnv = (): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const key of ["PATH", "HOME", "USER", "SHELL", "TERM", "LOGNAME", "TMPDIR", "SYSTEMROOT", "APPDATA"]) {
    const value = process.env[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
};

/** Text content joined; other content summarised; structured content when there is no text. */
const resultText = (result: { content?: unknown; structuredContent?: unknown }): string => {
  const parts = Array.isArray(result.content)
    ? (result.content as { type?: string; text?: string; mimeType?: string }[])
    : [];
  const texts = parts.map((part) =>
    part.type === "text" && typeof part.text === "string"
      ? part.text
      : `[${part.type ?? "content"}${part.mimeType ? ` ${part.mimeType}` : ""}]`,
  );
  if (texts.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent);
  return texts.join("\n");
};

const withTimeout = <T>(promise: Promise<T>, ms: number, message: string): Promise<T> => {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
};
