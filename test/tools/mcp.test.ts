// MCP tools through the official SDK: a real server from the registry over stdio, an SDK streamable-HTTP server,
// a crashing stdio server, and servers that are down or slow.
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { RepairableToolError, type Tool, type ToolContext } from "../../src/tools/defineTool.ts";
import { mcpHub, type McpHub } from "../../src/tools/mcp.ts";
import { toolSpec } from "../../src/models/toolSpec.ts";
import { startMcpHttpServer } from "../support/mcpHttpServer.ts";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const crashy = fileURLToPath(new URL("../support/mcpCrashServer.mjs", import.meta.url));

const ctx = (signal = new AbortController().signal): ToolContext =>
  ({
    contextId: "ctx-1",
    runId: "run-1",
    agentNumber: 0,
    profile: "default",
    toolCallId: "call-1",
    signal,
  }) as ToolContext;

const byName = (tools: Tool<Record<string, unknown>>[], name: string) => {
  const tool = tools.find((t) => t.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${tools.map((t) => t.name).join(", ")}`);
  return tool;
};

const rejection = async (promise: unknown): Promise<Error> => {
  const error = await Promise.resolve(promise).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return error as Error;
};

const hubs: McpHub[] = [];
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(hubs.splice(0).map((h) => h.close()));
  await Promise.all(closers.splice(0).map((c) => c()));
});
const hubOf = (...args: Parameters<typeof mcpHub>) => {
  const hub = mcpHub(...args);
  hubs.push(hub);
  return hub;
};

describe("given the registry's everything server over stdio", () => {
  it("offers its tools as <server>__<tool> with the server's JSON schema, and calls them", async () => {
    const hub = hubOf({ everything: { type: "stdio", command: process.execPath, args: [everything, "stdio"] } });

    const { tools, unavailable } = await hub.toolsFor(["everything"]);

    expect(unavailable).toEqual([]);
    const echo = byName(tools, "everything__echo");
    const spec = toolSpec(echo);
    expect(spec.parameters).toMatchObject({
      type: "object",
      properties: { message: { type: "string" } },
      required: ["message"],
    });
    expect(tools.every((t) => /^[a-zA-Z0-9_-]{1,64}$/.test(t.name))).toBe(true);
    expect(await echo.run({ message: "hello mcp" }, ctx())).toBe("Echo: hello mcp");
  }, 30_000);

  it("shares one connection and one listing between the contexts that ask", async () => {
    const hub = hubOf({ everything: { type: "stdio", command: process.execPath, args: [everything, "stdio"] } });
    const [first, second] = await Promise.all([hub.toolsFor(["everything"]), hub.toolsFor(["everything"])]);
    expect(second.tools).toHaveLength(first.tools.length);
    expect(second.tools.every((t, i) => t === first.tools[i])).toBe(true);
  }, 30_000);
});

describe("given an SDK server over streamable HTTP", () => {
  it("calls a tool with the model's arguments", async () => {
    const server = await startMcpHttpServer();
    closers.push(server.close);
    const { tools } = await hubOf({ calc: { type: "http", url: server.url } }).toolsFor(["calc"]);
    expect(tools.map((t) => t.name).sort()).toEqual(["calc__add", "calc__fail", "calc__slow"]);
    expect(await byName(tools, "calc__add").run({ a: 2, b: 40 }, ctx())).toBe("42");
  });

  it("turns an error result into a repairable tool error naming the server", async () => {
    const server = await startMcpHttpServer();
    closers.push(server.close);
    const { tools } = await hubOf({ calc: { type: "http", url: server.url } }).toolsFor(["calc"]);
    const error = await rejection(byName(tools, "calc__fail").run({}, ctx()));
    expect(error).toBeInstanceOf(RepairableToolError);
    expect(error.message).toContain("'calc'");
    expect(error.message).toContain("the fail tool failed");
  });

  it("turns a call past the timeout into a repairable tool error naming the server", async () => {
    const server = await startMcpHttpServer();
    closers.push(server.close);
    const { tools } = await hubOf({ calc: { type: "http", url: server.url } }, { timeoutMs: 300 }).toolsFor(["calc"]);
    const error = await rejection(byName(tools, "calc__slow").run({ ms: 5_000 }, ctx()));
    expect(error).toBeInstanceOf(RepairableToolError);
    expect(error.message).toMatch(/'calc'.*timed out/i);
  });

  it("gives a repairable error naming the server while it is down, and works again once it is back", async () => {
    const server = await startMcpHttpServer();
    const { tools } = await hubOf({ calc: { type: "http", url: server.url } }).toolsFor(["calc"]);
    const add = byName(tools, "calc__add");
    await server.close();

    const error = await rejection(add.run({ a: 1, b: 1 }, ctx()));
    expect(error).toBeInstanceOf(RepairableToolError);
    expect(error.message).toContain("'calc'");

    const back = await startMcpHttpServer(server.port);
    closers.push(back.close);
    expect(await add.run({ a: 1, b: 1 }, ctx())).toBe("2");
  });
});

describe("given a server that cannot start or crashes", () => {
  it("lists a server whose command does not exist as unavailable, naming it, and still offers the others", async () => {
    const server = await startMcpHttpServer();
    closers.push(server.close);
    const hub = hubOf({
      missing: { type: "stdio", command: "/nonexistent/mcp-server" },
      calc: { type: "http", url: server.url },
    });
    const { tools, unavailable } = await hub.toolsFor(["missing", "calc"]);
    expect(unavailable.map((u) => u.server)).toEqual(["missing"]);
    expect(unavailable[0]?.message).toContain("'missing'");
    expect(tools.some((t) => t.name === "calc__add")).toBe(true);
  });

  it("reports a crash mid-call as a repairable error naming the server, then reconnects to a fresh process", async () => {
    const { tools } = await hubOf({ crashy: { type: "stdio", command: process.execPath, args: [crashy] } }).toolsFor([
      "crashy",
    ]);
    const echo = byName(tools, "crashy__echo");
    const before = String(await echo.run({ text: "a" }, ctx()));

    const error = await rejection(byName(tools, "crashy__crash").run({}, ctx()));
    expect(error).toBeInstanceOf(RepairableToolError);
    expect(error.message).toContain("'crashy'");

    const after = String(await echo.run({ text: "b" }, ctx()));
    expect(after.endsWith(":b")).toBe(true);
    expect(after.split(":")[0]).not.toBe(before.split(":")[0]); // another process id
  }, 30_000);
});
