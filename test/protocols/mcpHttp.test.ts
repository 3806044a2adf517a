// The runtime as an MCP server over streamable HTTP (`/mcp` of serve), driven by the MCP SDK's own client.
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ModelError, type ModelRequest } from "../../src/index.ts";
import { gate, served, type Served } from "../server/support.ts";
import { deployTool } from "../support/approvalTools.ts";

let open: Served | null = null;
afterEach(async () => {
  await open?.close();
  open = null;
});

const connect = async (url: string, token?: string): Promise<Client> => {
  const client = new Client({ name: "test-client", version: "1.0.0" });
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
  return client;
};

const lastUserText = (req: ModelRequest): string =>
  String(req.messages.filter((m) => m.role === "user").at(-1)?.content ?? "");
const text = (r: unknown): string => (r as { content: { text: string }[] }).content[0]?.text ?? "";

describe("when another agent reaches the runtime over MCP (HTTP)", () => {
  it("lists one delegate_to_<profile> tool per enabled profile", async () => {
    open = await served(() => ({ text: "unused" }));
    const client = await connect(open.url);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      open.rt
        .profiles()
        .map((p) => `delegate_to_${p.key}`)
        .sort(),
    );
    expect(tools.map((t) => t.name)).toContain("delegate_to_researcher");
    const researcher = tools.find((t) => t.name === "delegate_to_researcher")!;
    expect(Object.keys(researcher.inputSchema.properties ?? {}).sort()).toEqual(["context_id", "message", "name"]);
    await client.close();
  });

  it("runs a root of the profile, answers with its response, and records the message as come over MCP", async () => {
    open = await served((req) => ({ text: `${req.profile} says: ${lastUserText(req)}` }));
    const client = await connect(open.url);
    const r = await client.callTool({
      name: "delegate_to_researcher",
      arguments: { message: "find the moon", name: "moon search" },
    });
    expect(r.isError).toBeFalsy();
    expect(text(r)).toBe("researcher says: find the moon");
    const { contextId, runId, status } = r.structuredContent as { contextId: string; runId: string; status: string };
    expect(status).toBe("completed");
    const view = await open.rt.context(contextId);
    expect(view).toMatchObject({ profile: "researcher", kind: "root", name: "moon search", status: "idle" });
    const received = (await open.rt.events({ contextId })).find((e) => e.type === "MessageReceived");
    expect(received?.data).toMatchObject({ runId, text: "find the moon", sender: "user", via: "mcp" });
    await client.close();
  });

  it("continues the same context when context_id is given", async () => {
    open = await served((req) => ({ text: `seen ${req.messages.filter((m) => m.role === "user").length} messages` }));
    const client = await connect(open.url);
    const first = await client.callTool({ name: "delegate_to_default", arguments: { message: "one" } });
    const { contextId } = first.structuredContent as { contextId: string };
    const second = await client.callTool({
      name: "delegate_to_default",
      arguments: { message: "two", context_id: contextId },
    });
    expect((second.structuredContent as { contextId: string }).contextId).toBe(contextId);
    expect(text(second)).toBe("seen 2 messages");
    expect((await open.rt.contexts()).length).toBe(1);
    const foreign = await client.callTool({
      name: "delegate_to_researcher",
      arguments: { message: "x", context_id: contextId },
    });
    expect(foreign.isError).toBe(true);
    expect(text(foreign)).toMatch(/belongs to profile 'default'/);
    await client.close();
  });

  it("returns a tool error with the reason when the run fails", async () => {
    open = await served(() => {
      throw new ModelError("bad_request", "the model refused the request", false);
    });
    const client = await connect(open.url);
    const r = await client.callTool({ name: "delegate_to_default", arguments: { message: "fail please" } });
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(/failed \(model_error\): .*bad_request.*the model refused the request/);
    await client.close();
  });

  it("ends the call with a tool error when the run is stopped", async () => {
    const held = gate();
    const called = gate();
    open = await served(async (req) => {
      called.open();
      await new Promise<void>((_, reject) => req.signal.addEventListener("abort", () => reject(req.signal.reason)));
      await held.opened;
      return { text: "never" };
    });
    const client = await connect(open.url);
    const call = client.callTool({ name: "delegate_to_default", arguments: { message: "long task" } });
    await called.opened;
    const [running] = await open.rt.contexts({ status: "running" });
    expect(await open.rt.stop(running!.id)).toMatchObject({ status: "stopped" });
    const r = await call;
    expect(r.isError).toBe(true);
    expect(text(r)).toMatch(new RegExp(`context ${running!.id} was stopped`));
    await client.close();
  });

  it("keeps the call open while its run awaits approval, and answers once it is approved", async () => {
    open = await served(
      (req) =>
        req.messages.some((m) => m.role === "tool")
          ? { text: "deployed, as approved" }
          : { toolCalls: [{ id: "d1", name: "deploy", arguments: { env: "prod" } }] },
      {},
      { tools: [deployTool()] },
    );
    const requested = new Promise<string>((resolve) => {
      void open!.rt.subscribe((e) => {
        if (e.type === "ApprovalRequested") resolve(e.data.approvalId);
      });
    });
    const client = await connect(open.url);
    const call = client.callTool({ name: "delegate_to_default", arguments: { message: "deploy to prod" } });
    const approvalId = await requested;
    await open.rt.approve(approvalId, { by: "operator" });
    const r = await call;
    expect(r.isError).toBeFalsy();
    expect(text(r)).toBe("deployed, as approved");
    await client.close();
  });

  it("sits behind the server's bearer token", async () => {
    open = await served(() => ({ text: "ok" }), { token: "s3cret" });
    await expect(connect(open.url)).rejects.toThrow(/401|bearer/i);
    const client = await connect(open.url, "s3cret");
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
  });
});
