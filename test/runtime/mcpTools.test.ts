// MCP tools through the runtime: real servers (the registry's everything server and a crashing one over stdio, an SDK
// server over streamable HTTP), chosen per profile and project, recorded like any tool call, closed with the runtime.
import { createRequire } from "node:module";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  createRuntime,
  scriptedModel,
  type EventStore,
  type McpServers,
  type ModelRequest,
  type ModelTurn,
} from "../../src/index.ts";
import { loadConfig } from "../../src/cli/config.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { startMcpHttpServer } from "../support/mcpHttpServer.ts";
import { eventually } from "../support/async.ts";
import { call, closeRuntimes, eventsOf, repliesSoFar, runtimeWith, toolResults } from "../delegation/support.ts";

const require = createRequire(import.meta.url);
const everything = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");
const crashy = fileURLToPath(new URL("../support/mcpCrashServer.mjs", import.meta.url));

let store: EventStore;
let profilesDir: string;
let calc: Awaited<ReturnType<typeof startMcpHttpServer>>;
let servers: McpServers;
beforeAll(async () => {
  store = await freshPgliteStore();
  calc = await startMcpHttpServer();
  servers = {
    everything: { type: "stdio", command: process.execPath, args: [everything, "stdio"] },
    crashy: { type: "stdio", command: process.execPath, args: [crashy] },
    calc: { type: "http", url: calc.url },
  };
  profilesDir = mkdtempSync(join(tmpdir(), "actorzero-mcp-profiles-"));
  const profile = (key: string, json: unknown) => {
    mkdirSync(join(profilesDir, key));
    writeFileSync(join(profilesDir, key, "profile.json"), JSON.stringify(json));
  };
  profile("lead", { title: "Lead", context: "Plans and delegates.", mcpServers: ["calc", "crashy"] });
  profile("fetcher", { title: "Fetcher", context: "Fetches things.", mcpServers: ["everything"] });
  profile("bare", { title: "Bare", context: "No tools of its own.", mcpServers: [] });
});
afterEach(closeRuntimes);
afterAll(async () => {
  await calc.close();
  await store.close();
  rmSync(profilesDir, { recursive: true, force: true });
});

const toolNames = (req: ModelRequest) => req.tools.map((t) => t.name);
const subordinateDescription = (req: ModelRequest) => req.tools.find((t) => t.name === "call_subordinate")!.description;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("given MCP servers and profiles that choose among them", () => {
  it("offers a parent and its child the tools of their own profiles, records the calls, and closes the servers with the runtime", async () => {
    const seen: ModelRequest[] = [];
    const { rt } = await runtimeWith(
      store,
      (req): ModelTurn => {
        seen.push(req);
        const n = repliesSoFar(req);
        if (req.agentNumber === 0) {
          if (n === 0)
            return {
              toolCalls: [
                { id: "add", name: "calc__add", arguments: '{"a":2,"b":40}' },
                { id: "pid", name: "crashy__echo", arguments: '{"text":"x"}' },
              ],
            };
          if (n === 1) return call("call_subordinate", { profile: "fetcher", message: "echo hi" }, "delegate");
          return { text: "done" };
        }
        if (n === 0) return call("everything__echo", { message: "hi" }, "echo");
        return { text: "child done" };
      },
      { profiles: [profilesDir], mcpServers: servers },
    );
    const root = await rt.createContext({ profile: "lead" });

    const outcome = await rt.send(root.id, "go");

    expect(outcome.status).toBe("completed");
    const parent = seen.find((r) => r.agentNumber === 0)!;
    const child = seen.find((r) => r.agentNumber === 1)!;
    expect(toolNames(parent)).toEqual(
      expect.arrayContaining(["calc__add", "calc__fail", "crashy__echo", "call_subordinate"]),
    );
    expect(toolNames(parent).some((n) => n.startsWith("everything__"))).toBe(false);
    expect(toolNames(child)).toEqual(expect.arrayContaining(["everything__echo", "call_subordinate"]));
    expect(toolNames(child).some((n) => n.startsWith("calc__") || n.startsWith("crashy__"))).toBe(false);
    // The schema the model sees is the server's own.
    expect(child.tools.find((t) => t.name === "everything__echo")!.parameters).toMatchObject({
      properties: { message: { type: "string" } },
    });
    // Delegation tells the model which servers each profile may use.
    const description = subordinateDescription(parent);
    expect(description).toContain("fetcher (Fetcher): Fetches things. (MCP tools from: everything)");
    expect(description).toContain("lead (Lead): Plans and delegates. (MCP tools from: calc, crashy)");
    expect(description).toContain("bare (Bare): No tools of its own. (MCP tools from: none)");
    expect(description).toContain("(MCP tools from: calc, crashy, everything)"); // a profile without a selection gets them all

    const returned = await eventsOf(rt, root.id, "ToolReturned");
    expect(returned.find((e) => e.data.toolCallId === "add")?.data).toMatchObject({ name: "calc__add", result: "42" });
    const called = await eventsOf(rt, root.id, "ToolCalled");
    expect(called.find((e) => e.data.toolCallId === "add")?.data.arguments).toBe('{"a":2,"b":40}');
    const [childView] = await rt.children(root.id);
    const childReturned = await eventsOf(rt, childView!.id, "ToolReturned");
    expect(childReturned.map((e) => [e.data.name, e.data.result])).toEqual([["everything__echo", "Echo: hi"]]);

    const pid = Number(String(returned.find((e) => e.data.toolCallId === "pid")?.data.result).split(":")[0]);
    expect(alive(pid)).toBe(true);
    await rt.close();
    await eventually(() => !alive(pid), 5_000, "the MCP server process to exit");
  }, 60_000);

  it("gives the model a repairable error naming the server when a tool fails, and the run goes on", async () => {
    const { rt } = await runtimeWith(
      store,
      (req): ModelTurn =>
        repliesSoFar(req) === 0 ? call("calc__fail", {}, "fail") : { text: `saw: ${toolResults(req).at(-1)}` },
      { profiles: [profilesDir], mcpServers: servers },
    );
    const root = await rt.createContext({ profile: "lead" });

    const outcome = await rt.send(root.id, "try it");

    expect(outcome.status).toBe("completed");
    const [failed] = await eventsOf(rt, root.id, "ToolFailed");
    expect(failed?.data).toMatchObject({ name: "calc__fail", repairable: true });
    expect(failed?.data.error).toContain("MCP server 'calc'");
    expect(outcome.response).toContain("the fail tool failed");
  }, 30_000);

  it("narrows a profile's servers by its project's selection", async () => {
    const seen: ModelRequest[] = [];
    const { rt } = await runtimeWith(
      store,
      (req) => {
        seen.push(req);
        return { text: "ok" };
      },
      { mcpServers: { calc: servers.calc! }, projects: { offline: { mcpServers: [] } } },
    );
    await rt.send((await rt.createContext({ project: "offline" })).id, "hi");
    await rt.send((await rt.createContext()).id, "hi");
    expect(toolNames(seen[0]!).some((n) => n.startsWith("calc__"))).toBe(false);
    expect(toolNames(seen[1]!)).toContain("calc__add");
  });

  it("refuses a profile that names a server that is not configured, before anything is written", async () => {
    const head = await store.headPosition();
    const opening = createRuntime({
      store,
      model: scriptedModel(() => ({ text: "x" })),
      profiles: [profilesDir],
      mcpServers: { calc: servers.calc! },
    });
    await expect(opening).rejects.toThrow(/Profile 'fetcher'.*'everything'.*not configured/);
    await expect(
      createRuntime({
        store,
        model: scriptedModel(() => ({ text: "x" })),
        mcpServers: { bad: { type: "ftp" } as never },
      }),
    ).rejects.toThrow(/mcpServers\.bad/);
    expect(await store.headPosition()).toBe(head);
  });
});

describe("given actorzero.config.json with MCP servers", () => {
  it("reads them, and names the field of a bad one", () => {
    const dir = mkdtempSync(join(tmpdir(), "actorzero-mcp-config-"));
    try {
      writeFileSync(
        join(dir, "actorzero.config.json"),
        JSON.stringify({ mcpServers: { files: { type: "stdio", command: "files-server", args: ["--root", "."] } } }),
      );
      expect(loadConfig(dir).mcpServers).toEqual({
        files: { type: "stdio", command: "files-server", args: ["--root", "."] },
      });
      writeFileSync(
        join(dir, "actorzero.config.json"),
        JSON.stringify({ mcpServers: { web: { type: "http", url: "not a url" } } }),
      );
      expect(() => loadConfig(dir)).toThrow(/mcpServers\.web\.url/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
