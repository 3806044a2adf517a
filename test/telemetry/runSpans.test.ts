// OpenTelemetry spans of real runs, collected with the SDK's in-memory exporter: a run span per run, a chat span per
// model call, a tool span per tool call, each delegation's child run under its caller's call_subordinate span (also
// when another process restores it from the traceparent stored on PostgreSQL), and a failed run redacted.
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from "@opentelemetry/sdk-trace-base";
import { SpanStatusCode } from "@opentelemetry/api";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  ModelError,
  openPostgresStore,
  scriptedModel,
  type EventStore,
  type ModelRequest,
  type ModelTurn,
  type RecordedEvent,
} from "../../src/index.ts";
import { LiveDeltas } from "../../src/runtime/liveDeltas.ts";
import { RunObserver } from "../../src/runtime/runObserver.ts";
import { actorzeroTracer } from "../../src/telemetry/tracing.ts";
import { freshPgliteStore } from "../support/pglite.ts";
import { describeWithPostgres, usePostgresDatabase } from "../support/postgres.ts";
import { call, closeRuntimes, isFirstStep, last, runtimeWith } from "../delegation/support.ts";

let exporter: InMemorySpanExporter;
let provider: BasicTracerProvider;
beforeEach(() => {
  exporter = new InMemorySpanExporter();
  provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
});
afterEach(closeRuntimes);

/** The spans as an indented tree; siblings in a fixed order (by their own subtree), since parallel jobs race. */
const render = (spans: ReadableSpan[]): string => {
  const label = (s: ReadableSpan) => {
    const a = s.attributes;
    if (s.name.startsWith("invoke_agent"))
      return `${s.name} A${a["actorzero.agent_number"]} ${a["actorzero.run.status"]}`;
    return s.name;
  };
  const childrenOf = (id: string | undefined) => spans.filter((s) => s.parentSpanContext?.spanId === id);
  const known = new Set(spans.map((s) => s.spanContext().spanId));
  const subtree = (s: ReadableSpan, depth: number): string =>
    [
      `${"  ".repeat(depth)}${label(s)}`,
      ...childrenOf(s.spanContext().spanId)
        .map((c) => subtree(c, depth + 1))
        .sort(),
    ].join("\n");
  return spans
    .filter((s) => !s.parentSpanContext || !known.has(s.parentSpanContext.spanId))
    .map((s) => subtree(s, 0))
    .sort()
    .join("\n");
};

/** A0 runs two delegations as parallel jobs; the "deep" A1 delegates once more, to an A2. */
const treeModel = (req: ModelRequest): ModelTurn => {
  const usage = { inputTokens: 10 + req.agentNumber, outputTokens: 2 };
  const text = String(last(req).content);
  if (req.agentNumber === 0) {
    if (!isFirstStep(req)) return { text: "all done", usage };
    return {
      ...call("parallel", {
        tool_calls: [
          { name: "call_subordinate", arguments: { message: "deep: look into it", reset: true } },
          { name: "call_subordinate", arguments: { message: "shallow", reset: true } },
        ],
      }),
      usage,
    };
  }
  if (req.agentNumber === 1 && isFirstStep(req) && text.startsWith("deep:"))
    return { ...call("call_subordinate", { message: "the leaf" }), usage };
  return { text: `answer of A${req.agentNumber}`, usage };
};

describe("given a tracer provider and a three-level tree with parallel jobs", () => {
  let store: EventStore;
  beforeAll(async () => {
    store = await freshPgliteStore();
  });
  afterAll(async () => {
    await store.close();
  });

  it("gives exactly one trace: each run under the call_subordinate span that started it, with its model and tool calls", async () => {
    const { rt } = await runtimeWith(store, treeModel, { tracerProvider: provider });
    const root = await rt.createContext();

    const outcome = await rt.send(root.id, "split the work");

    expect(outcome.status).toBe("completed");
    const spans = exporter.getFinishedSpans();
    expect(render(spans)).toBe(
      [
        "invoke_agent default A0 completed",
        "  chat gpt-4o-mini",
        "  chat gpt-4o-mini",
        "  execute_tool call_subordinate",
        "    invoke_agent default A1 completed",
        "      chat gpt-4o-mini",
        "  execute_tool call_subordinate",
        "    invoke_agent default A1 completed",
        "      chat gpt-4o-mini",
        "      chat gpt-4o-mini",
        "      execute_tool call_subordinate",
        "        invoke_agent default A2 completed",
        "          chat gpt-4o-mini",
        "  execute_tool parallel",
      ].join("\n"),
    );
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1);
    const rootSpan = spans.find((s) => s.attributes["actorzero.agent_number"] === 0)!;
    expect(rootSpan.attributes).toMatchObject({
      "actorzero.context_id": root.id,
      "actorzero.profile": "default",
      "actorzero.run.status": "completed",
    });
    const chat = spans.find(
      (s) => s.name.startsWith("chat") && s.parentSpanContext?.spanId === rootSpan.spanContext().spanId,
    )!;
    expect(chat.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "gpt-4o-mini",
      "gen_ai.usage.input_tokens": 10,
      "gen_ai.usage.output_tokens": 2,
    });
    const tool = spans.find((s) => s.name === "execute_tool parallel")!;
    expect(tool.attributes).toMatchObject({ "gen_ai.tool.name": "parallel" });
  });

  it("marks a failed run's span as an error and records the exception without its secrets", async () => {
    const secretUrl = "https://agent:hunter2-secret@models.example/v1";
    const { rt } = await runtimeWith(
      store,
      () => {
        throw new ModelError("authentication", `rejected at ${secretUrl}`, false);
      },
      { tracerProvider: provider },
    );
    const root = await rt.createContext();

    const outcome = await rt.send(root.id, "go");

    expect(outcome.status).toBe("failed");
    const run = exporter.getFinishedSpans().find((s) => s.name.startsWith("invoke_agent"))!;
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(run.attributes["actorzero.run.status"]).toBe("failed");
    expect(run.attributes["error.type"]).toBe("model_error");
    const exception = run.events.find((e) => e.name === "exception")!;
    expect(String(exception.attributes?.["exception.message"])).toContain("Model call failed");
    const everything = JSON.stringify(exporter.getFinishedSpans().map((s) => [s.attributes, s.events, s.status]));
    expect(everything).not.toContain("hunter2");
    expect(exporter.getFinishedSpans().find((s) => s.name.startsWith("chat"))!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it("changes nothing in the log when no provider is registered: no traceparent is stored", async () => {
    const { rt } = await runtimeWith(store, treeModel);
    const root = await rt.createContext();
    await rt.send(root.id, "split the work");
    const tree = new Set((await rt.contexts({ rootContextId: root.id })).map((c) => c.id));
    const starts = (await rt.events()).filter((e) => e.type === "RunStarted" && tree.has(e.streamId));
    expect(starts.length).toBe(4);
    expect(starts.every((e) => e.metadata.traceparent === undefined)).toBe(true);
  });
});

describeWithPostgres("given runs on PostgreSQL and another process that runs the child", () => {
  const db = usePostgresDatabase("actorzero_spans");

  it("stores the call_subordinate span's traceparent on the child's RunStarted, and the other process parents the child's spans to it", async () => {
    const store = await openPostgresStore({ url: db.url() });
    const other = await openPostgresStore({ url: db.url() });
    try {
      const { rt } = await runtimeWith(
        store,
        (req) =>
          req.agentNumber === 0 && isFirstStep(req) ? call("call_subordinate", { message: "help" }) : { text: "ok" },
        {
          tracerProvider: provider,
        },
      );
      const root = await rt.createContext();
      await rt.send(root.id, "delegate");
      const [child] = await rt.children(root.id);
      const delegation = exporter.getFinishedSpans().find((s) => s.name === "execute_tool call_subordinate")!;

      // What another process reads from the log.
      const stream = await other.readStream(child!.id);
      const started = stream.find((e): e is Extract<RecordedEvent, { type: "RunStarted" }> => e.type === "RunStarted")!;
      const { traceId, spanId } = delegation.spanContext();
      expect(started.metadata.traceparent).toBe(`00-${traceId}-${spanId}-01`);

      // That process, with its own provider, runs a model call of the child's run: the span tree is restored from the log.
      const otherExporter = new InMemorySpanExporter();
      const otherProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(otherExporter)] });
      const observer = new RunObserver(actorzeroTracer(otherProvider), new LiveDeltas());
      observer.observe(other);
      await other.append(
        child!.id,
        [{ type: "ModelCalled", data: { runId: started.data.runId, step: 2, attempt: 1, model: "m" } }],
        {
          expectedVersion: stream.at(-1)!.streamVersion,
        },
      );
      await observer.model(scriptedModel(() => ({ text: "later" }))).call({
        contextId: child!.id,
        agentNumber: 1,
        profile: "default",
        model: "m",
        messages: [],
        tools: [],
        signal: new AbortController().signal,
      });
      const [chat] = otherExporter.getFinishedSpans();
      const runSpan = (observer as unknown as { runs: Map<string, { span: ReadableSpan }> }).runs.get(child!.id)!.span;
      expect(chat!.parentSpanContext?.spanId).toBe(runSpan.spanContext().spanId);
      expect(runSpan.spanContext().traceId).toBe(traceId);
      expect(runSpan.parentSpanContext?.spanId).toBe(spanId);
      expect(runSpan.name).toBe("invoke_agent default");
    } finally {
      await closeRuntimes();
      await other.close();
      await store.close();
    }
  });
});
