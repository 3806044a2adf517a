// `actorzero mcp`: the runtime as an MCP server on stdio, driven by the MCP SDK's own client, with a real OpenAI-
// compatible model server; a stop from the CLI (through the data dir's control socket) ends the MCP call.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { copyPgliteTemplate, removeDir } from "../support/pglite.ts";
import { startFakeOpenAIServer, type FakeOpenAIServer } from "../support/fakeOpenAIServer.ts";
import { cli, cliEnv, MAIN, TSX } from "../cli/support.ts";

const text = (r: unknown): string => (r as { content: { text: string }[] }).content[0]?.text ?? "";

describe("given actorzero mcp on stdio", () => {
  let dataDir: string;
  let model: FakeOpenAIServer;
  let client: Client;
  let transport: StdioClientTransport;

  beforeAll(async () => {
    dataDir = await copyPgliteTemplate();
    model = await startFakeOpenAIServer();
    transport = new StdioClientTransport({
      command: process.execPath,
      args: ["--import", TSX, MAIN, "mcp", "--data-dir", dataDir, "--base-url", model.baseURL],
      // cliEnv drops any key of the caller's; this one reaches only the local fake model server.
      env: { ...(cliEnv() as Record<string, string>), OPENAI_API_KEY: "sk-test" },
      stderr: "pipe",
    });
    client = new Client({ name: "test-client", version: "1.0.0" });
    await client.connect(transport);
  }, 120_000);
  afterAll(async () => {
    await client?.close();
    await model?.close();
    await removeDir(dataDir);
  });

  it("lists the profiles as tools", async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      "delegate_to_default",
      "delegate_to_developer",
      "delegate_to_researcher",
    ]);
  });

  it("runs a call, then continues the same context", async () => {
    model.reply({ text: "first answer" }, (req) => ({
      text: `second answer after ${req.body.messages.filter((m: { role: string }) => m.role === "user").length} user messages`,
    }));
    const first = await client.callTool({
      name: "delegate_to_developer",
      arguments: { message: "build it", name: "builder" },
    });
    expect(first.isError).toBeFalsy();
    expect(text(first)).toBe("first answer");
    const { contextId } = first.structuredContent as { contextId: string };
    const second = await client.callTool({
      name: "delegate_to_developer",
      arguments: { message: "and test it", context_id: contextId },
    });
    expect(text(second)).toBe("second answer after 2 user messages");
    expect((second.structuredContent as { contextId: string }).contextId).toBe(contextId);
  }, 60_000);

  it("returns a tool error naming the reason when the run fails", async () => {
    model.reply({ status: 400, message: "no such model here" });
    const r = await client.callTool({ name: "delegate_to_default", arguments: { message: "fail" } });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/failed \(model_error\).*bad_request.*no such model here/);
  }, 60_000);

  it("ends the call when the run is stopped from the CLI, and the log says it came over MCP", async () => {
    const before = model.requests.length;
    model.reply({ hang: true });
    const call = client.callTool({
      name: "delegate_to_researcher",
      arguments: { message: "take your time", name: "slow one" },
    });
    await model.waitForRequest(before);
    const listed = await cli(["contexts", "--json", "--data-dir", dataDir]);
    const running = (JSON.parse(listed.stdout) as { id: string; status: string; name: string }[]).find(
      (c) => c.name === "slow one",
    );
    expect(running?.status).toBe("running");
    const stop = await cli(["stop", running!.id, "--data-dir", dataDir]);
    expect(stop.code).toBe(0);
    const r = await call;
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(new RegExp(`context ${running!.id} was stopped`));
    const events = await cli(["events", "--json", "--data-dir", dataDir, "--context", running!.id]);
    const received = events.stdout
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> })
      .find((e) => e.type === "MessageReceived");
    expect(received?.data).toMatchObject({ sender: "user", via: "mcp", text: "take your time" });
    const audit = await cli(["audit", running!.id, "--data-dir", dataDir]);
    expect(audit.stdout).toMatch(/user over MCP: "take your time"/);
  }, 120_000);
});
