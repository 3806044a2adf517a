// Configured MCP credentials (`headers` of an HTTP server, `env` of a stdio one) are redacted wherever the API key is:
// servers that repeat them, in a result or an error, leave no trace in the model's requests, the log, the spans,
// the HTTP API (events, history, errors), or the CLI's audit, events and contexts.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createRuntime,
  openPgliteStore,
  scriptedModel,
  serve,
  type McpServers,
  type ModelRequest,
  type ModelTurn,
} from "../../src/index.ts";
import { api } from "../server/support.ts";
import { cli, jsonLines } from "../cli/support.ts";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { call, repliesSoFar } from "../delegation/support.ts";

const SECRETS = { bearer: "HeaderTok-8d2e55aa", apiKey: "ApiKeyHdr-1f9a33bb", env: "EnvSecret-4b7c19cc" };
const planted = Object.values(SECRETS);
const leaks = (text: string) =>
  Object.entries(SECRETS)
    .filter(([, s]) => text.includes(s))
    .map(([name]) => name);

/** An HTTP MCP server whose `whoami` fails quoting the credentials it was sent. */
const startHeaderEcho = async (): Promise<{ url: string; close(): Promise<void> }> => {
  const http: Server = createServer(async (req, res) => {
    const mcp = new McpServer({ name: "web", version: "1.0.0" });
    mcp.registerTool("whoami", { description: "Says who you are.", inputSchema: {} }, async (_args, extra) => ({
      isError: true,
      content: [
        {
          type: "text",
          text: `not allowed: ${extra.requestInfo?.headers["authorization"]} / ${extra.requestInfo?.headers["x-api-key"]}`,
        },
      ],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => void transport.close().then(() => mcp.close()));
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  http.keepAliveTimeout = 0;
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: () => new Promise<void>((resolve) => (http.close(() => resolve()), http.closeAllConnections())),
  };
};

let web: Awaited<ReturnType<typeof startHeaderEcho>>;
let dataDir: string;
let cwd: string;
let servers: McpServers;
const requests: ModelRequest[] = [];
const exporter = new InMemorySpanExporter();
let rootId: string;
let apiTexts: string[] = [];

beforeAll(async () => {
  web = await startHeaderEcho();
  servers = {
    web: {
      type: "http",
      url: web.url,
      headers: { Authorization: `Bearer ${SECRETS.bearer}`, "X-Api-Key": SECRETS.apiKey },
    },
    envy: {
      type: "stdio",
      command: process.execPath,
      args: [fileURLToPath(new URL("../support/mcpEnvServer.mjs", import.meta.url))],
      env: { TEST_MCP_TOKEN: SECRETS.env },
    },
  };
  dataDir = await copyPgliteTemplate();
  cwd = mkdtempSync(path.join(tmpdir(), "az-mcp-secrets-"));
  writeFileSync(path.join(cwd, "actorzero.config.json"), JSON.stringify({ mcpServers: servers }));
  const store = await openPgliteStore({ dataDir });
  const rt = await createRuntime({
    store,
    mcpServers: servers,
    tracerProvider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    model: scriptedModel((req): ModelTurn => {
      requests.push(req);
      const n = repliesSoFar(req);
      if (n === 0) return call("web__whoami", {}, "whoami");
      if (n === 1) return call("envy__token", {}, "token");
      if (n === 2) return call("envy__fail", {}, "fail");
      return { text: "done" };
    }),
  });
  const server = await serve(rt, { port: 0 });
  try {
    const root = await rt.createContext();
    rootId = root.id;
    expect((await rt.send(root.id, "who am I?")).status).toBe("completed");
    for (const p of ["/v1/events?limit=10000", `/v1/contexts/${root.id}/history`, `/v1/contexts/${root.id}`]) {
      const r = await api(server.url, "GET", p);
      expect(r.status, p).toBe(200);
      apiTexts.push(JSON.stringify(r.body));
    }
    // An error the API answers with, quoting a secret given in the request.
    apiTexts.push(JSON.stringify((await api(server.url, "POST", "/v1/contexts", { project: SECRETS.env })).body));
  } finally {
    await server.close({ whileDraining: () => rt.close() });
    await store.close();
  }
}, 120_000);
afterAll(async () => {
  await web.close();
  await removeDir(dataDir);
  await removeDir(cwd);
});

describe("when MCP servers repeat the headers and environment they were configured with", () => {
  it("then the model reads the results and errors with the secrets redacted", () => {
    const toolTexts = requests
      .at(-1)!
      .messages.filter((m) => m.role === "tool")
      .map((m) => JSON.stringify(m));
    expect(toolTexts).toHaveLength(3);
    expect(toolTexts.join("\n")).toContain("not allowed: Bearer ***");
    expect(toolTexts.join("\n")).toContain("my token is ***");
    expect(leaks(JSON.stringify(requests))).toEqual([]);
  });

  it("then no column of any event in the log holds one", async () => {
    const store = await openPgliteStore({ dataDir });
    try {
      const { rows } = await store.sql.query<{ row: string }>(
        "SELECT e::text AS row FROM events e ORDER BY global_position",
      );
      const all = rows.map((r) => r.row).join("\n");
      expect(all).toContain("was refused");
      expect(leaks(all)).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("then neither the spans nor the HTTP API's events, history and errors hold one", () => {
    const spans = exporter.getFinishedSpans();
    expect(
      spans.some((s) => s.name.includes("envy__fail") || JSON.stringify(s.attributes).includes("envy__fail")),
    ).toBe(true);
    expect(
      leaks(
        JSON.stringify(
          spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status })),
        ),
      ),
    ).toEqual([]);
    expect(apiTexts.join("\n")).toContain("was refused");
    expect(apiTexts.at(-1)).toContain("Project '***' not found");
    expect(leaks(apiTexts.join("\n"))).toEqual([]);
  });

  it("then the CLI's audit, events and contexts, and its errors, print none of them", async () => {
    // One at a time: a PGlite data dir belongs to one process.
    const outputs = [];
    for (const args of [["audit", rootId, "--full"], ["events", "--json"], ["contexts"], ["audit", SECRETS.env]])
      outputs.push(await cli([...args, "--data-dir", dataDir], { cwd }));
    for (const r of outputs.slice(0, 3)) expect(r.code, r.stderr).toBe(0);
    expect(jsonLines(outputs[1]!.stdout).length).toBeGreaterThan(5);
    expect(outputs[0]!.stdout).toContain("was refused");
    expect(outputs[3]!.code).not.toBe(0);
    const all = outputs.map((r) => `${r.stdout}\n${r.stderr}`).join("\n");
    expect(leaks(all)).toEqual([]);
    expect(planted).toHaveLength(3);
  });
});
