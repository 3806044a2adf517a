// The W3C trace context across the hop: a delegation from one runtime to another over MCP is one trace (the callee's
// run span sits under the caller's tool span), and an A2A or MCP caller's traceparent parents the run it starts.
// Each side has its own tracer provider with an in-memory exporter, as two services would.
import { randomUUID } from "node:crypto";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterEach, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createRuntime, scriptedModel, type Runtime } from "../../src/index.ts";
import { a2aClient, userMessage } from "../../src/protocols/a2aClient.ts";
import { freshPgliteStore, type FreshPgliteStore } from "../support/pglite.ts";
import { call, isFirstStep, last } from "../delegation/support.ts";
import { served, type Served } from "../server/support.ts";

const side = () => {
  const exporter = new InMemorySpanExporter();
  return { exporter, provider: new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }) };
};
const runSpans = (exporter: InMemorySpanExporter) =>
  exporter.getFinishedSpans().filter((s) => s.name.startsWith("invoke_agent"));

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

describe("when a delegation crosses to another service", () => {
  it("over MCP, the callee's run span is a child of the caller's tool span, in the same trace", async () => {
    const b = side();
    const callee: Served = await served(() => ({ text: "the callee's answer" }), {}, { tracerProvider: b.provider });
    opened.push(callee);
    const a = side();
    const store: FreshPgliteStore = await freshPgliteStore();
    const caller: Runtime = await createRuntime({
      store,
      tracerProvider: a.provider,
      mcpServers: { other: { type: "http", url: `${callee.url}/mcp` } },
      model: scriptedModel((req) =>
        isFirstStep(req)
          ? call("other__delegate_to_researcher", { message: "research this" })
          : { text: `relayed: ${String(last(req).content)}` },
      ),
    });
    opened.push({ close: async () => (await caller.close(), await store.close()) });
    const root = await caller.createContext();
    const outcome = await caller.send(root.id, "ask the other service");
    expect(outcome.status).toBe("completed");
    expect(outcome.response).toMatch(/relayed: .*the callee's answer/);
    const tool = a.exporter.getFinishedSpans().find((s) => s.name === "execute_tool other__delegate_to_researcher");
    expect(tool).toBeDefined();
    const [remote] = runSpans(b.exporter);
    expect(remote?.spanContext().traceId).toBe(tool!.spanContext().traceId);
    expect(remote?.parentSpanContext?.spanId).toBe(tool!.spanContext().spanId);
    const callerRun = runSpans(a.exporter).find((s) => s.attributes["actorzero.context_id"] === root.id);
    expect(tool!.parentSpanContext?.spanId).toBe(callerRun?.spanContext().spanId);
  });

  it("over A2A, the traceparent header parents the run the message starts", async () => {
    const b = side();
    const callee: Served = await served(() => ({ text: "ok" }), {}, { tracerProvider: b.provider });
    opened.push(callee);
    const traceId = randomUUID().replace(/-/g, "");
    const parentSpan = randomUUID().replace(/-/g, "").slice(0, 16);
    const client = await a2aClient(callee.url, () => ({ traceparent: `00-${traceId}-${parentSpan}-01` }));
    await client.sendMessage({
      tenant: "",
      message: userMessage("hi", randomUUID()),
      configuration: undefined,
      metadata: undefined,
    });
    const [run] = runSpans(b.exporter);
    expect(run?.spanContext().traceId).toBe(traceId);
    expect(run?.parentSpanContext?.spanId).toBe(parentSpan);
  });

  it("over MCP, a traceparent in the call's _meta parents the run it starts", async () => {
    const b = side();
    const callee: Served = await served(() => ({ text: "ok" }), {}, { tracerProvider: b.provider });
    opened.push(callee);
    const traceId = randomUUID().replace(/-/g, "");
    const parentSpan = randomUUID().replace(/-/g, "").slice(0, 16);
    const client = new Client({ name: "t", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${callee.url}/mcp`)));
    await client.callTool({
      name: "delegate_to_default",
      arguments: { message: "hi" },
      _meta: { traceparent: `00-${traceId}-${parentSpan}-01` },
    });
    await client.close();
    const [run] = runSpans(b.exporter);
    expect(run?.spanContext().traceId).toBe(traceId);
    expect(run?.parentSpanContext?.spanId).toBe(parentSpan);
  });
});
