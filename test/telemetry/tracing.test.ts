// Span helpers against the SDK's in-memory exporter: names, gen_ai attributes, parenting across a stored traceparent.
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace-base";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  actorzeroTracer,
  contextFromTraceparent,
  contextWith,
  endModelSpan,
  endRunSpan,
  endToolSpan,
  startModelSpan,
  startRunSpan,
  startToolSpan,
  traceparentOf,
} from "../../src/telemetry/tracing.ts";
import { ModelError } from "../../src/models/port.ts";

let exporter: InMemorySpanExporter;
let provider: BasicTracerProvider;
beforeEach(() => {
  exporter = new InMemorySpanExporter();
  provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
});

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
const named = (spans: ReadableSpan[], name: string) => {
  const found = spans.find((s) => s.name === name);
  if (!found) throw new Error(`no span ${name} among ${spans.map((s) => s.name).join(", ")}`);
  return found;
};

describe("given a registered provider", () => {
  it("gives a delegation tree: run → model call and call_subordinate → the child run (restored from a traceparent) → its model call", () => {
    const tracer = actorzeroTracer(provider);
    const run = startRunSpan(tracer, { contextId: "c0", runId: "r0", agentNumber: 0, profile: "default" });
    const model = startModelSpan(tracer, { system: "openai", model: "gpt-test", parent: contextWith(run) });
    endModelSpan(model, { usage: { inputTokens: 12, outputTokens: 3 }, finishReason: "tool_calls" });
    const delegate = startToolSpan(tracer, {
      name: "call_subordinate",
      toolCallId: "call_1",
      parent: contextWith(run),
    });

    // What the process running the child reads back from the event metadata.
    const stored = traceparentOf(delegate);
    const childTracer = actorzeroTracer(provider);
    const child = startRunSpan(childTracer, {
      contextId: "c1",
      runId: "r1",
      agentNumber: 1,
      profile: "researcher",
      parent: contextFromTraceparent(stored),
    });
    endModelSpan(startModelSpan(childTracer, { system: "openai", model: "gpt-mini", parent: contextWith(child) }), {});
    endRunSpan(child, { status: "completed" });
    endToolSpan(delegate);
    endRunSpan(run, { status: "completed" });

    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name).sort()).toEqual(
      [
        "chat gpt-mini",
        "chat gpt-test",
        "execute_tool call_subordinate",
        "invoke_agent default",
        "invoke_agent researcher",
      ].sort(),
    );
    const root = named(spans, "invoke_agent default");
    expect(parentOf(root)).toBeUndefined();
    expect(parentOf(named(spans, "chat gpt-test"))).toBe(root.spanContext().spanId);
    const tool = named(spans, "execute_tool call_subordinate");
    expect(parentOf(tool)).toBe(root.spanContext().spanId);
    const childSpan = named(spans, "invoke_agent researcher");
    expect(parentOf(childSpan)).toBe(tool.spanContext().spanId);
    expect(childSpan.spanContext().traceId).toBe(root.spanContext().traceId);
    expect(parentOf(named(spans, "chat gpt-mini"))).toBe(childSpan.spanContext().spanId);

    expect(named(spans, "chat gpt-test").attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.system": "openai",
      "gen_ai.request.model": "gpt-test",
      "gen_ai.usage.input_tokens": 12,
      "gen_ai.usage.output_tokens": 3,
      "gen_ai.response.finish_reasons": ["tool_calls"],
    });
    expect(childSpan.attributes).toMatchObject({
      "actorzero.context_id": "c1",
      "actorzero.agent_number": 1,
      "actorzero.profile": "researcher",
      "actorzero.run.status": "completed",
    });
  });

  it("marks a failed run as an error and records the exception without the secret", () => {
    const tracer = actorzeroTracer(provider);
    const run = startRunSpan(tracer, { contextId: "c0", runId: "r0", agentNumber: 0, profile: "default" });
    const secret = "sk-live-SECRET";
    endRunSpan(run, {
      status: "failed",
      error: new ModelError("authentication", `bad key ${secret}`, false),
      redact: (text) => text.split(secret).join("[redacted]"),
    });

    const [span] = exporter.getFinishedSpans();
    expect(span?.status).toEqual({ code: SpanStatusCode.ERROR, message: "bad key [redacted]" });
    expect(span?.attributes["error.type"]).toBe("authentication");
    expect(span?.events.map((e) => e.name)).toEqual(["exception"]);
    expect(JSON.stringify(span?.events)).not.toContain(secret);
  });

  it("redacts URL credentials and keys by default when the caller passes no redaction", () => {
    const tracer = actorzeroTracer(provider);
    const run = startRunSpan(tracer, { contextId: "c0", runId: "r0", agentNumber: 0, profile: "default" });
    endRunSpan(run, {
      status: "failed",
      error: new Error("connect to http://user:hunter2@model.local/v1 failed with sk-proj-abcdefghijklmnop1234"),
    });

    const [span] = exporter.getFinishedSpans();
    const recorded = JSON.stringify([span?.status, span?.events]);
    expect(recorded).not.toContain("hunter2");
    expect(recorded).not.toContain("sk-proj-abcdefghijklmnop1234");
    expect(recorded).toContain("user:***@model.local");
  });
});

describe("given no provider", () => {
  it("starts no-op spans that carry no traceparent", () => {
    const span = startRunSpan(actorzeroTracer(), { contextId: "c0", runId: "r0", agentNumber: 0, profile: "default" });
    expect(traceparentOf(span)).toBeUndefined();
    endRunSpan(span, { status: "completed" });
    expect(exporter.getFinishedSpans()).toEqual([]);
  });

  it("reads a malformed traceparent as no parent", () => {
    const tracer = actorzeroTracer(provider);
    const span = startRunSpan(tracer, {
      contextId: "c",
      runId: "r",
      agentNumber: 0,
      profile: "p",
      parent: contextFromTraceparent("00-zz-1-01"),
    });
    span.end();
    expect(parentOf(exporter.getFinishedSpans()[0]!)).toBeUndefined();
  });
});

describe("given a provider registered globally only after the tracer was made", () => {
  afterEach(() => trace.disable());

  it("records the spans started after the registration, parented through contextWith, and none before", () => {
    const tracer = actorzeroTracer();
    const before = startRunSpan(tracer, { contextId: "c0", runId: "r0", agentNumber: 0, profile: "early" });
    expect(traceparentOf(before)).toBeUndefined();
    endRunSpan(before, { status: "completed" });
    trace.setGlobalTracerProvider(provider);
    const run = startRunSpan(tracer, { contextId: "c1", runId: "r1", agentNumber: 0, profile: "late" });
    expect(traceparentOf(run)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    endToolSpan(startToolSpan(tracer, { name: "response", toolCallId: "call_1", parent: contextWith(run) }));
    endRunSpan(run, { status: "completed" });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name).sort()).toEqual(["execute_tool response", "invoke_agent late"]);
    expect(parentOf(named(spans, "execute_tool response"))).toBe(
      named(spans, "invoke_agent late").spanContext().spanId,
    );
  });
});
